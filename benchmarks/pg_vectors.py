"""The dense leg inside PostgreSQL: pgvector's HNSW index against exact search, measured in one run.

    python benchmarks/pg_vectors.py --n 100000                 # starts an embedded PostgreSQL 18
    python benchmarks/pg_vectors.py --n 250000 --ef-search 40,100,200
    python benchmarks/pg_vectors.py --url postgresql://... --n 1000000 --keep   # a server of your own

The vectors are synthetic and clustered, never uniform: uniform random vectors in 512 dimensions
have no near neighbours at all and are HNSW's worst case, which no text collection resembles. They
come from ``dense_scale.clustered`` (the generator decision 0017 measured usearch with): unit
vectors around one Gaussian centre per thousand, spread mostly in a shared 64-dimensional subspace
plus a little isotropic noise; queries are further draws of the same mixture, never in the index.

The vectors are written through ``PostgresStore``'s own transactions (chunks and vectors, as ingest
writes them), then searched through ``PostgresStore.nearest_vectors``, the call the dense leg makes:
first with no index (exact: a scan computed by the server), then after ``build_vector_index`` (HNSW).
Reported: load and build time, p50/p95 latency of both, recall@10 against the exact top 10, the
in-process exact index (``DenseIndex``) for the threshold, an ``ef_search`` sweep, and filtered
searches (a prefix and a tag) through both paths. Every ratio is against exact in the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from pgvector.psycopg import register_vector

from dense_scale import clustered, write_store
from kbseek.filters import SearchFilters
from kbseek.search.dense import DenseIndex
from kbseek.store.postgres import vectors as postgres_vectors
from kbseek.store.postgres.store import PostgresStore
from scale import embedded_postgres

DIM = 512
"""The bundled model's dimension (the universal sentence encoder)."""
K = 10


def connect(url: str, schema: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(url, autocommit=True)
    conn.execute(f"SET search_path TO {schema}, public")
    register_vector(conn)
    return conn


def percentiles(values: Sequence[float]) -> tuple[float, float]:
    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


def run(
    search: Callable[[np.ndarray], list[tuple[int, float]]], queries: np.ndarray
) -> tuple[list[list[int]], list[float]]:
    found: list[list[int]] = []
    took: list[float] = []
    for q in queries:
        start = time.perf_counter()
        hits = search(q)
        took.append((time.perf_counter() - start) * 1e3)
        found.append([r for r, _ in hits])
    return found, took


def recall(got: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(g) & set(t)) / max(len(t), 1) for g, t in zip(got, truth, strict=True)]))


def report(
    label: str, took: Sequence[float], base: Sequence[float] | None = None, rec: float | None = None
) -> None:
    p50, p95 = percentiles(took)
    ratio = f"  ({p50 / percentiles(base)[0]:.2f}x exact p50)" if base else ""
    shown = f"  recall@{K} {rec:.3f}" if rec is not None else ""
    print(f"  {label:<40} p50 {p50:8.2f} ms  p95 {p95:8.2f} ms{shown}{ratio}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="chunk vectors to load")
    parser.add_argument("--url", help="a PostgreSQL server with pgvector (default: start an embedded one)")
    parser.add_argument("--name", default="pgbench", help="knowledge-base name (schema kbseek_<name>)")
    parser.add_argument("--keep", action="store_true", help="reuse a schema already holding --n vectors")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef-search", default="100,200,400", help="breadths swept after the build")
    parser.add_argument("--no-dense", action="store_true", help="skip the in-process exact index")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    stop = None
    url = args.url
    if url is None:
        url, stop = embedded_postgres()
    try:
        measure(url, args)
    finally:
        if stop is not None:
            stop()


def measure(url: str, args: argparse.Namespace) -> None:
    n = args.n
    name = f"{args.name}_{n}"
    store = PostgresStore(url, name)
    conn = connect(url, store.schema)
    draw = clustered(n, DIM, args.seed)
    print(f"{n:,} clustered unit vectors of {DIM} dims, {args.queries} queries, k={K}", flush=True)
    try:
        if not (args.keep and store.embedded_count() == n):
            conn.execute(f"DROP SCHEMA IF EXISTS {store.schema} CASCADE")
            store.close()
            store = PostgresStore(url, name)
            start = time.perf_counter()
            write_store(store, draw, n, DIM)  # type: ignore[arg-type]  # any Store will do
            print(f"  load through the store: {time.perf_counter() - start:.1f} s", flush=True)
        else:
            for _ in range(n // 1000):  # the same generator state as a fresh load leaves behind
                draw(1000)
        queries = draw(args.queries)
        postgres_vectors.drop_indexes(conn)
        start = time.perf_counter()
        conn.execute("VACUUM ANALYZE embeddings")
        conn.execute("VACUUM ANALYZE chunks")
        print(f"  VACUUM ANALYZE: {time.perf_counter() - start:.1f} s", flush=True)

        exact, exact_ms = run(lambda q: store.nearest_vectors(q, K), queries)
        report("exact in PostgreSQL (no index)", exact_ms)
        if not args.no_dense:
            dense = DenseIndex(DIM)
            start = time.perf_counter()
            dense.reload(store)
            loaded = time.perf_counter() - start
            got, dense_ms = run(lambda q: dense.search(q, K), queries)
            report(
                f"exact in process (DenseIndex, load {loaded:.1f} s)", dense_ms, exact_ms, recall(got, exact)
            )
            del dense

        start = time.perf_counter()
        built = store.build_vector_index(DIM)
        took = time.perf_counter() - start
        size = conn.execute(
            "SELECT pg_relation_size(%s::regclass)", (postgres_vectors.index_name(DIM),)
        ).fetchone()
        mib = int(size[0]) / 2**20 if size else 0.0
        print(
            f"  HNSW build (m={postgres_vectors.HNSW_M}, ef_construction={postgres_vectors.HNSW_EF_CONSTRUCTION}):"
            f" {took:.1f} s, {mib:.0f} MiB, built={built}; x{1_000_000 / n:.0f} to 1M (linear): ~{took * 1_000_000 / n / 60:.0f} min",
            flush=True,
        )
        got, hnsw_ms = run(lambda q: store.nearest_vectors(q, K), queries)
        report(
            f"HNSW via the store (ef_search {postgres_vectors.EF_SEARCH})",
            hnsw_ms,
            exact_ms,
            recall(got, exact),
        )
        for ef in [int(x) for x in args.ef_search.split(",") if x]:
            got, took_ms = run(lambda q, ef=ef: postgres_vectors.nearest(conn, q, K, ef_search=ef), queries)
            report(f"HNSW ef_search {ef}", took_ms, exact_ms, recall(got, exact))

        filters = (
            ("prefix d00001 (1 document)", "d00001", ()),
            ("prefix d0000 (10 documents)", "d0000", ()),
            ("tag even (half)", None, ("even",)),
        )
        for label, prefix, tags in filters:
            allowed = store.filtered_rowids(SearchFilters(path_prefix=prefix, tags=tags)) or set()
            truth, base = run(
                lambda q, a=allowed: postgres_vectors.nearest(conn, q, K, allowed=a, approximate=False),
                queries,
            )
            report(f"filtered {label}: exact, {len(allowed):,} rows", base)
            got, took_ms = run(lambda q, a=allowed: store.nearest_vectors(q, K, a), queries)
            path = "exact path" if len(allowed) <= postgres_vectors.EXACT_FILTER_MAX else "iterative scan"
            report(f"filtered {label}: store ({path})", took_ms, base, recall(got, truth))
            leaked = any(r not in allowed for hits in got for r in hits)
            print(f"    a row outside the filter returned: {leaked}", flush=True)
    finally:
        conn.close()
        store.close()


if __name__ == "__main__":
    main()
