"""How soon a note an agent writes is found by search, at two sizes of knowledge base in one run.

    python benchmarks/write_latency.py                                   # the scale trees, if built
    python benchmarks/write_latency.py --small benchmarks/.work/scale/10000 \\
        --large benchmarks/.work/scale/100000 --writes 40

Each size is a folder holding ``kb/`` (the notes) and ``index/`` (its index), as
``benchmarks/scale.py`` leaves them. The knowledge base is opened with writing on (``inbox/``),
keywords only unless ``--semantic``, and no watcher: what makes a write searchable is the write's
own pass over the path it changed (docs/decisions/0058), not an event. Each of ``--writes`` notes
holds a word nothing else holds; the time from the start of ``notes.write`` to the first search that
ranks the note first is the latency, p50 and p95, the target being 1 s at p95 at 100,000 files.
The smaller tree is the baseline printed beside it (these machines are shared: read the ratio).

Everything written is deleted again (into a trash under a temporary state folder) and the trail of
the run removed, so the trees are left as they were.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCALE = HERE / ".work" / "scale"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def measure(folder: Path, writes: int, semantic: bool) -> tuple[int, list[float], list[float], float]:
    """Documents in the index, each write's latency and each write call's own time (ms), and the
    seconds the knowledge base took to open."""
    from kbseek import KnowledgeBase

    started = time.perf_counter()
    kb = KnowledgeBase(
        folder / "kb", index_dir=folder / "index", semantic=None if semantic else False, allow_write=True
    )
    opened = time.perf_counter() - started
    latencies: list[float] = []
    calls: list[float] = []
    written: list[tuple[str, str]] = []
    try:
        documents = kb.summary().documents
        kb.search("warm the model and the index up", limit=1)  # a first search loads what searches need
        run = f"{os.getpid()}{int(time.time())}"
        for i in range(writes):
            word = f"zq{run}x{i}"
            path = f"inbox/bench-{run}-{i}.md"
            began = time.perf_counter()
            change = kb.notes.write(path, f"# Bench note {i}\n\nThe {word} appears here only.\n")
            calls.append((time.perf_counter() - began) * 1000)
            while True:
                hits = kb.search(word, limit=1).hits
                if hits and hits[0].path == path:
                    break
                if time.perf_counter() - began > 30:
                    raise SystemExit(f"{path} not found by search 30 s after its write")
            latencies.append((time.perf_counter() - began) * 1000)
            written.append((path, change.hash or ""))
    finally:
        for path, digest in written:
            kb.notes.delete(path, expected_hash=digest)
        trail = kb.notes.trail.path
        kb.close()
        trail.unlink(missing_ok=True)
        inbox = folder / "kb" / "inbox"
        if inbox.is_dir() and not any(inbox.iterdir()):
            inbox.rmdir()
    return documents, latencies, calls, opened


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", type=Path, default=SCALE / "10000")
    parser.add_argument("--large", type=Path, default=SCALE / "100000")
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--semantic", action="store_true", help="embed each note too (the default model)")
    args = parser.parse_args()
    for folder in (args.small, args.large):
        if not (folder / "kb").is_dir() or not (folder / "index").is_dir():
            raise SystemExit(f"{folder} lacks kb/ and index/: build it with benchmarks/scale.py first")
    with tempfile.TemporaryDirectory(prefix="kbseek-write-latency-") as state:
        os.environ["XDG_STATE_HOME"] = state  # the trash of the notes deleted after the run
        rows = []
        for label, folder in (("baseline", args.small), ("target", args.large)):
            documents, latencies, calls, opened = measure(folder, args.writes, args.semantic)
            rows.append((label, documents, latencies, calls, opened))
    base = statistics.median(rows[0][2])
    legs = "keywords and embeddings" if args.semantic else "keywords only"
    print(f"{args.writes} writes each, {legs}, no watcher: write → first search that ranks it first")
    for label, documents, latencies, calls, opened in rows:
        p50, p95 = statistics.median(latencies), percentile(latencies, 95)
        print(
            f"  {label:8} {documents:>7} documents: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  max {max(latencies):7.1f} ms"
            f"  ({p50 / base:.2f}× the baseline's p50; opened in {opened:.1f} s)"
        )
        print(
            f"  {'':8} {'':>7}   the write call alone: p50 {statistics.median(calls):7.1f} ms"
            f"  p95 {percentile(calls, 95):7.1f} ms (the rest is the search that finds it)"
        )
    verdict = "met" if percentile(rows[1][2], 95) <= 1000 else "NOT met"
    print(f"  target: p95 ≤ 1000 ms at the large size: {verdict}")


if __name__ == "__main__":
    main()
