"""Inputs built to cost: how long the installed server takes to answer each, as a ratio to a plain
search in the same run, and how long ``/healthz`` waits while the worst of them run.

    python benchmarks/hostile_inputs.py                  # 2,000 generated notes beside examples/kb
    python benchmarks/hostile_inputs.py --files 20000    # a larger tree (indexing takes minutes)

The tree is ``examples/kb`` plus ``--files`` short notes under nested folders whose names hold the
letters the globs below look for, so every glob has paths to try. ``kbseek index`` builds it, then
``kbseek serve --http --lexical-only`` answers ``/api/search`` (the keyword leg and the filters are
what these inputs reach; the model would only add the same embedding time to every row).

Rows, each ``--rounds`` times after one warm-up, p50 and p95 in ms and the p50's ratio to the plain
search's (``q=failover``, no filter):

- the glob reported to freeze the server (24 stars, then ``k*/failover.md``) and each backtracking
  family of ``tests/unit/test_globs.py`` (held out from its tuning: the families were written to
  defeat a backtracking matcher, not measured against this one);
- refusals: a glob past the cap (600 characters), a 100,000-character glob (past the URL cap: 414), a
  query past ``max_query_chars``, contradictory ``where`` entries;
- a query at the cap: 2,000 characters of Japanese, read by the bilingual lexicon.

Then liveness: two clients send the worst globs back to back while ``/healthz`` is asked 200 times;
its p50, p99 and worst wait are printed beside its idle p50 from before.

For comparison, the backtracking regular expression the worst glob used to become (``.*`` once per
``**``) is timed in Python's ``re`` on one path of ``examples/kb`` (``runbooks/database/
backup-restore.md``, which holds a ``k``), for 4, 6 and 8 pairs of stars; 12 pairs (the reported
glob) is extrapolated from the growth per pair, not run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.unit.test_globs import BACKTRACKING_FAMILIES  # noqa: E402
from tests.wire.serving import wait_healthy  # noqa: E402

WORK = ROOT / "benchmarks" / ".work" / "hostile_inputs"
WORST = "*" * 24 + "k*/failover.md"
KBSEEK = str(Path(sys.executable).parent / "kbseek")


def build_tree(files: int) -> Path:
    root = WORK / f"kb-{files}"
    if root.exists():
        return root
    shutil.copytree(ROOT / "examples" / "kb", root, ignore=shutil.ignore_patterns(".kbseek"))
    for i in range(files):
        folder = root / f"area-{i % 20}" / f"k{'a' * (i % 7)}b-{i % 50}" / ("deep/" * (i % 4))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i}.md").write_text(
            f"# Note {i}\n\nThe failover of service {i % 97} and its checks.\n"
        )
    return root


def fetch(port: int, path: str) -> tuple[int, float]:
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=120) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as err:
        err.read()
        status = err.code
    return status, (time.perf_counter() - started) * 1000


def search_path(**params: str | list[str]) -> str:
    return "/api/search?" + urllib.parse.urlencode({"q": "failover", **params}, doseq=True)


def timed(port: int, path: str, rounds: int) -> tuple[int, list[float]]:
    fetch(port, path)
    results = [fetch(port, path) for _ in range(rounds)]
    return results[-1][0], [ms for _, ms in results]


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def old_regex_ms(pairs: int) -> float:
    """The worst glob as the backtracking translation read it: one ``.*`` per ``**``."""
    pattern = re.compile("^" + ".*" * pairs + "k[^/]*/failover\\.md$")
    path = "runbooks/database/backup-restore.md"
    started = time.perf_counter()
    pattern.search(path)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--port", type=int, default=8791)
    args = parser.parse_args()

    root = build_tree(args.files)
    started = time.perf_counter()
    subprocess.run([KBSEEK, "index", "--kb", str(root), "--lexical-only"], check=True, capture_output=True)
    print(f"indexed {args.files} notes + examples/kb in {time.perf_counter() - started:.1f} s")
    server = subprocess.Popen(
        [KBSEEK, "serve", "--kb", str(root), "--lexical-only", "--http", "--port", str(args.port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ},
    )  # fmt: skip
    try:
        wait_healthy(args.port, server, timeout=60)
        run(args.port, args.rounds)
    finally:
        server.terminate()
        server.wait(timeout=30)


def run(port: int, rounds: int) -> None:
    _, base = timed(port, search_path(), rounds)
    base_p50 = statistics.median(base)
    print(f"\n{'input':<44} {'status':>6} {'p50 ms':>8} {'p95 ms':>8} {'×plain':>7}")
    print(f"{'plain search (baseline)':<44} {200:>6} {base_p50:>8.1f} {p95(base):>8.1f} {1.0:>7.2f}")
    rows: list[tuple[str, str]] = [("worst glob (24 stars, k*/failover.md)", search_path(glob=WORST))]
    rows += [(f"family: {glob[:36]!r}", search_path(glob=glob)) for glob, _ in BACKTRACKING_FAMILIES]
    rows += [
        ("matching: area-*/k*b-*/**/*.md (automaton)", search_path(glob="area-*/k*b-*/**/*.md")),
        ("matching: *.md (regex)", search_path(glob="*.md")),
    ]
    rows += [
        ("refused: glob of 600 characters", search_path(glob="a" * 600)),
        ("refused: glob of 100,000 characters (414)", search_path(glob="a" * 100_000)),
        ("refused: query of 2,500 characters", search_path(q="rollback " * 278)),
        ("refused: where topic=x and !topic", search_path(where=["topic=x", "!topic"])),
        ("query at the cap: 2,000 Japanese characters", search_path(q=("障害対応の手順" * 286)[:2000])),
    ]
    for name, path in rows:
        status, times = timed(port, path, rounds)
        p50 = statistics.median(times)
        print(f"{name:<44} {status:>6} {p50:>8.1f} {p95(times):>8.1f} {p50 / base_p50:>7.2f}")

    _, idle = timed(port, "/healthz", 50)
    stop = threading.Event()
    answered = [0]

    def hammer() -> None:
        while not stop.is_set():
            for glob in [WORST, *(g for g, _ in BACKTRACKING_FAMILIES)]:
                fetch(port, search_path(glob=glob))
                answered[0] += 1

    workers = [threading.Thread(target=hammer, daemon=True) for _ in range(2)]
    for worker in workers:
        worker.start()
    busy = []
    for _ in range(200):
        busy.append(fetch(port, "/healthz")[1])
        time.sleep(0.01)
    stop.set()
    for worker in workers:
        worker.join(120)
    waits = sorted(busy)
    print(
        f"\n/healthz idle p50 {statistics.median(idle):.1f} ms; beside two clients sending the worst globs "
        f"({answered[0]} searches): p50 {statistics.median(waits):.1f} ms "
        f"({statistics.median(waits) / statistics.median(idle):.1f}×), p99 {waits[int(len(waits) * 0.99) - 1]:.1f} ms, "
        f"worst {waits[-1]:.1f} ms"
    )
    print("\nthe old backtracking expression for the worst glob, one path, in Python's re:")
    times = {pairs: old_regex_ms(pairs) for pairs in (4, 6, 8)}
    for pairs, ms in times.items():
        print(f"  {pairs} pairs of stars: {ms:9.1f} ms")
    growth = (times[8] / times[6]) ** 0.5
    print(
        f"  12 pairs (the reported glob): about {times[8] * growth**4 / 1000:,.0f} s a path (×{growth:.1f} a pair)"
    )


if __name__ == "__main__":
    main()
