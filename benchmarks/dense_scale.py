"""Dense leg at scale: the approximate (HNSW, int8) index against exact search, measured in one run.

    python benchmarks/dense_scale.py --n 1000000        # the target: a million chunk vectors
    python benchmarks/dense_scale.py --n 100000         # where the default threshold sits
    python benchmarks/dense_scale.py --expansion-search 64,128,256   # sweep the query breadth
    python benchmarks/dense_scale.py --connectivity 32 --expansion-add 128  # another graph shape

The vectors are random but clustered, so the task is not trivially easy: unit vectors drawn from a
mixture of Gaussians (one centre per thousand vectors) whose spread lies mostly in a shared
64-dimensional subspace plus a little isotropic noise, as text embeddings have a low intrinsic
dimension. A held-out point's best match is at a cosine of about 0.5 and its tenth at about 0.45,
so neighbours are close together and a coarse index confuses them. Queries are perturbed copies of
held-out points (never in the index).

The vectors are written to a real SQLite index (``SqliteStore``) in a temporary folder, as ingest
writes them, because the approximate index reads its build pages, its rescoring candidates and its
filtered rows from there. Every number is printed next to the exact baseline (``DenseIndex``, the
float32 matrix) measured in the same run on the same vectors and queries: build time, query
p50/p95 (one thread each, the GIL and usearch both), recall@10 against the exact top 10 and the
pipeline's depth (100), memory (usearch's count for the graph, the matrix's bytes for exact, and
the process RSS growth for both), filtered searches, and a restart (load from disk and reconcile).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kbseek.documents import Chunk
from kbseek.search.ann import ApproximateIndex, HnswParams
from kbseek.search.dense import DenseIndex, VectorIndex
from kbseek.search.pipeline import CANDIDATES_PER_LEG
from kbseek.store.records import ChunkInput, DocumentInput, EmbeddingRecord
from kbseek.store.sqlite.store import SqliteStore

CHUNKS_PER_DOCUMENT = 1_000
RANK = 64
"""Dimensions of the shared subspace the clusters spread in."""


def rss_mib() -> float:
    """The process's resident memory now (Linux ``/proc``); the peak where that is not available."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def clustered(n: int, dim: int, seed: int) -> Callable[[int], np.ndarray]:
    """A generator of unit vectors from one fixed mixture (same centres and subspace on every call)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(n // 1000, 10), dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    basis = (rng.normal(size=(RANK, dim)) / np.sqrt(dim)).astype(np.float32)

    def draw(m: int) -> np.ndarray:
        labels = rng.integers(0, len(centres), m)
        spread = (rng.normal(size=(m, RANK)).astype(np.float32) * 0.25) @ basis
        noise = rng.normal(size=(m, dim)).astype(np.float32) * (0.15 / np.sqrt(dim))
        v = centres[labels] + spread + noise
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    return draw


def write_store(store: SqliteStore, draw: Callable[[int], np.ndarray], n: int, dim: int) -> None:
    """``n`` chunks with a vector each, written through the store's own transactions."""
    for first in range(0, n, CHUNKS_PER_DOCUMENT):
        count = min(CHUNKS_PER_DOCUMENT, n - first)
        vectors = draw(count)
        path = f"d{first // CHUNKS_PER_DOCUMENT:05d}.md"
        chunks = tuple(
            ChunkInput(Chunk(f"{path}#{first + i}", i, i, i + 1, (), "x", f"h{first + i:09d}", 1, 1), "", "x")
            for i in range(count)
        )
        document = DocumentInput(
            path=path, parser="md", size=1, mtime_ns=1, content_hash=path, chars=count, text="x" * count, title=path,
            frontmatter={}, tags=("even",) if first // CHUNKS_PER_DOCUMENT % 2 == 0 else (), date=None,
            warnings=(), chunks=chunks,
        )  # fmt: skip
        with store.transaction() as tx:
            tx.write_document(document, replaces=None)
            tx.put_vectors({f"h{first + i:09d}": vectors[i] for i in range(count)})
    with store.transaction() as tx:
        tx.record_embedding(EmbeddingRecord("benchmark:clustered", dim, "benchmark"))


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def latencies(index: VectorIndex, queries: np.ndarray, k: int, allowed: set[int] | None = None) -> np.ndarray:
    return np.array([timed(lambda q=q: index.search(q, k, allowed)) for q in queries]) * 1e3


def recall(got: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(g) & set(t)) / max(len(t), 1) for g, t in zip(got, truth, strict=True)]))


def line(label: str, approx: str, exact: str, ratio: float | None = None) -> None:
    shown = f"  ({ratio:.2f}x exact)" if ratio is not None else ""
    print(f"  {label:<34} {approx:>14}   exact {exact:>14}{shown}")


def ms(values: np.ndarray) -> tuple[float, float]:
    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000, help="chunk vectors in the index")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    defaults = HnswParams()
    parser.add_argument("--connectivity", type=int, default=defaults.connectivity)
    parser.add_argument("--expansion-add", type=int, default=defaults.expansion_add)
    parser.add_argument(
        "--expansion-search", default=str(defaults.expansion_search),
        help="comma-separated values to sweep; the first is the one the other measurements use",
    )  # fmt: skip
    args = parser.parse_args()
    sweep = [int(v) for v in args.expansion_search.split(",")]
    params = HnswParams(args.connectivity, args.expansion_add, sweep[0])
    n, dim = args.n, args.dim
    print(f"dense_scale: n={n:,} dim={dim} queries={args.queries} {params} ({os.cpu_count()} cores)")

    draw = clustered(n, dim, args.seed)
    with tempfile.TemporaryDirectory(prefix="kbseek-dense-scale-") as tmp:
        folder = Path(tmp)
        store = SqliteStore(folder / "index.sqlite")
        print(
            f"writing the SQLite index: {timed(lambda: write_store(store, draw, n, dim)):.1f} s (not counted)"
        )
        held_out = draw(args.queries)
        noise = np.random.default_rng(args.seed + 1).normal(size=held_out.shape).astype(np.float32)
        queries = held_out + noise * (0.1 / np.sqrt(dim))
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)

        base = rss_mib()
        start = time.perf_counter()
        approx = ApproximateIndex.open(dim, store, folder=folder, params=params)
        approx_build = time.perf_counter() - start
        approx_rss = rss_mib() - base
        saved = sum(p.stat().st_size for p in folder.glob("vectors-*.usearch"))

        base = rss_mib()
        exact = DenseIndex(dim)
        exact_build = timed(lambda: exact.reload(store))
        exact_rss = rss_mib() - base
        exact_bytes = exact._matrix.nbytes + exact._ids.nbytes

        truth10 = [[r for r, _ in exact.search(q, 10)] for q in queries]
        truth100 = [[r for r, _ in exact.search(q, CANDIDATES_PER_LEG)] for q in queries]
        print(f"\nbuild and memory ({len(approx):,} vectors)")
        line(
            "build (read store + index)",
            f"{approx_build:.1f} s",
            f"{exact_build:.1f} s",
            approx_build / exact_build,
        )
        line("memory (index's own count)", f"{approx.memory_bytes / 2**20:.0f} MiB", f"{exact_bytes / 2**20:.0f} MiB",
             approx.memory_bytes / exact_bytes)  # fmt: skip
        line(
            "process RSS growth",
            f"{approx_rss:.0f} MiB",
            f"{exact_rss:.0f} MiB",
            approx_rss / max(exact_rss, 1),
        )
        line("saved graph on disk", f"{saved / 2**20:.0f} MiB", "none")

        exact10, exact100 = (
            ms(latencies(exact, queries, 10)),
            ms(latencies(exact, queries, CANDIDATES_PER_LEG)),
        )
        for expansion in sweep:
            approx.params = HnswParams(args.connectivity, args.expansion_add, expansion)
            print(f"\nqueries, expansion_search={expansion} (rescored exactly from the store)")
            for k, exact_ms, truth in ((10, exact10, truth10), (CANDIDATES_PER_LEG, exact100, truth100)):
                got = [[r for r, _ in approx.search(q, k)] for q in queries]
                p50, p95 = ms(latencies(approx, queries, k))
                line(f"k={k} p50 / p95", f"{p50:.2f} / {p95:.2f} ms", f"{exact_ms[0]:.1f} / {exact_ms[1]:.1f} ms",
                     p50 / exact_ms[0])  # fmt: skip
                line(f"k={k} recall@{k}", f"{recall(got, truth):.4f}", "1.0000")
            approx.rescore = False
            got = [[r for r, _ in approx.search(q, 10)] for q in queries]
            p50, _ = ms(latencies(approx, queries, 10))
            line("k=10 int8 only: p50, recall@10", f"{p50:.2f} ms {recall(got, truth10):.3f}", "")
            approx.rescore = True
        approx.params = params

        print("\nscores (cosine of the same row, top 10 of every query)")
        by_row = [dict(exact.search(q, 1_000)) for q in queries]
        for rescore in (True, False):
            approx.rescore = rescore
            errors = [
                abs(s - by_row[i][r])
                for i, q in enumerate(queries)
                for r, s in approx.search(q, 10)
                if r in by_row[i]
            ]
            label = "rescored" if rescore else "int8 only"
            line(f"{label}: mean / max |error|", f"{np.mean(errors):.1e} / {np.max(errors):.1e}", "0")
        approx.rescore = True

        rows = store.vector_rowids()
        rng = np.random.default_rng(args.seed + 2)
        for size in sorted({min(4_000, n // 50), n // 50, n // 10}):
            allowed = {int(r) for r in rng.choice(rows, size=size, replace=False)}
            leaked = sum(r not in allowed for q in queries[:50] for r, _ in approx.search(q, 10, allowed))
            truth = [[r for r, _ in exact.search(q, 10, allowed)] for q in queries[:50]]
            got = [[r for r, _ in approx.search(q, 10, allowed)] for q in queries[:50]]
            a, e = (
                ms(latencies(approx, queries[:50], 10, allowed)),
                ms(latencies(exact, queries[:50], 10, allowed)),
            )
            print(f"\nfiltered: {size:,} allowed rows ({size / n:.0%}), 50 queries, k=10")
            line("p50 / p95", f"{a[0]:.2f} / {a[1]:.2f} ms", f"{e[0]:.1f} / {e[1]:.1f} ms", a[0] / e[0])
            line("recall@10, rows outside the filter", f"{recall(got, truth):.4f}, {leaked}", "1.0000, 0")
        ids = rows[rng.choice(len(rows), size=min(20_000, n), replace=False)]
        line(
            "store read of 20k vectors (for scale)",
            f"{timed(lambda: store.vectors_for_rowids(ids.tolist(), dim)) * 1e3:.0f} ms",
            "",
        )

        approx.close()
        del approx
        start = time.perf_counter()
        again = ApproximateIndex.open(dim, store, folder=folder, params=params)
        restart = time.perf_counter() - start
        print("\nrestart")
        line(
            "open: load saved graph + reconcile",
            f"{restart:.1f} s",
            f"{exact_build:.1f} s",
            restart / exact_build,
        )
        line("loaded from disk (not rebuilt)", str(again.loaded_from_disk), "")
        store.close()


if __name__ == "__main__":
    main()
