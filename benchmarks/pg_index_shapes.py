"""pgvector HNSW index shapes side by side, and what holding the index in memory changes.

    python benchmarks/pg_index_shapes.py --n 250000 --shapes vector:16:64,halfvec:16:64,halfvec:24:100
    python benchmarks/pg_index_shapes.py --n 500000 --shapes halfvec:24:100 --held 3GB

The vectors are ``dense_scale.clustered``'s (the generator ``pg_vectors.py`` and decision 0017 use),
loaded with COPY into a bare table ``emb (id, v vector)`` on an embedded PostgreSQL 18 with stock
settings; 100 further draws are the queries, and the exact top 10 (NumPy, in this process) is
the truth recall@10 is counted against. Each shape ``kind:m:ef_construction`` (``kind`` ``vector``
or ``halfvec``, the expression kbseek indexes: decision 0045) is built, timed and sized, searched
at each ``--ef-search`` (p50 / p95 over the queries after ten warm-up ones), then dropped.

``--held SIZE`` then sets ``shared_buffers`` to SIZE, restarts the server, reads the last shape's
index in with ``pg_prewarm`` and searches again: the index held in the server's memory, against
the stock 128 MB of the first round. This measures pgvector itself, not kbseek's statement around
it (``pg_vectors.py`` does that, through ``PostgresStore``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from pgvector import HalfVector, Vector
from pgvector.psycopg import register_vector

from dense_scale import clustered
from scale import embedded_postgres

DIM = 512
K = 10


def connect(url: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)
    return conn


def load(conn: psycopg.Connection[Any], n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    draw = clustered(n, DIM, seed)
    conn.execute("CREATE TABLE emb (id bigint PRIMARY KEY, v vector)")
    blocks = []
    with conn.cursor().copy("COPY emb (id, v) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["bigint", "vector"])
        for first in range(0, n, 10_000):
            block = draw(min(10_000, n - first))
            blocks.append(block)
            for i, vector in enumerate(block):
                copy.write_row((first + i, vector))
    return np.concatenate(blocks), draw(100)


def statement(kind: str) -> str:
    return f"SELECT id FROM emb ORDER BY v::{kind}({DIM}) <=> %s::{kind}({DIM}) LIMIT {K}"


def search(
    conn: psycopg.Connection[Any], kind: str, queries: np.ndarray, truth: list[set[int]], ef: int
) -> tuple[float, float, float]:
    """p50 and p95 in ms, and recall@10, at ``hnsw.ef_search`` ``ef``."""
    conn.execute(f"SET hnsw.ef_search = {int(ef)}")
    cast = (lambda q: HalfVector(q.astype(np.float16))) if kind == "halfvec" else Vector
    sql = statement(kind)
    for q in queries[:10]:
        conn.execute(sql, (cast(q),)).fetchall()
    took, found = [], []
    for q, want in zip(queries, truth, strict=True):
        started = time.perf_counter()
        ids = {int(r[0]) for r in conn.execute(sql, (cast(q),)).fetchall()}
        took.append((time.perf_counter() - started) * 1000)
        found.append(len(ids & want) / K)
    return float(np.percentile(took, 50)), float(np.percentile(took, 95)), float(np.mean(found))


def sweep(
    conn: psycopg.Connection[Any], kind: str, queries: np.ndarray, truth: list[set[int]], breadths: list[int]
) -> None:
    """One line per breadth: :func:`search`'s p50, p95 and recall."""
    for ef in breadths:
        p50, p95, rec = search(conn, kind, queries, truth, ef)
        print(f"  ef_search {ef:4}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  recall@{K} {rec:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=250_000)
    parser.add_argument("--shapes", default="halfvec:24:100", help="kind:m:ef_construction, comma-separated")
    parser.add_argument("--ef-search", default="100,200,400")
    parser.add_argument("--held", metavar="SIZE", help="then shared_buffers = SIZE and the index prewarmed")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    breadths = [int(x) for x in args.ef_search.split(",") if x]
    shapes = [s.split(":") for s in args.shapes.split(",") if s]
    folder = Path(tempfile.mkdtemp(prefix="kbseek-shapes-"))
    url, stop = embedded_postgres(folder)  # kept until the end: --held restarts the server on it
    try:
        conn = connect(url)
        started = time.perf_counter()
        vectors, queries = load(conn, args.n, args.seed)
        truth = [set(np.argsort(-(vectors @ q))[:K].tolist()) for q in queries]
        print(f"{args.n:,} clustered {DIM}-d vectors loaded in {time.perf_counter() - started:.1f} s; "
              f"{len(queries)} queries; shared_buffers {conn.execute('SHOW shared_buffers').fetchone()[0]}",
              flush=True)  # fmt: skip
        conn.execute("SET maintenance_work_mem = '4GB'")
        for number, (kind, m, ef_construction) in enumerate(shapes):
            ops = f"{kind}_cosine_ops"
            started = time.perf_counter()
            conn.execute(
                f"CREATE INDEX ix ON emb USING hnsw ((v::{kind}({DIM})) {ops})"
                f" WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
            )
            size = conn.execute("SELECT pg_size_pretty(pg_relation_size('ix'))").fetchone()[0]
            print(f"{kind} m {m} ef_construction {ef_construction}: build {time.perf_counter() - started:.0f} s, "
                  f"{size}", flush=True)  # fmt: skip
            sweep(conn, kind, queries, truth, breadths)
            last = number == len(shapes) - 1
            if not (last and args.held):
                conn.execute("DROP INDEX ix")
        if args.held:
            kind = shapes[-1][0]
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{args.held}'")
            conn.close()
            stop()
            url, stop = embedded_postgres(folder)
            conn = connect(url)
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            started = time.perf_counter()
            pages = conn.execute("SELECT pg_prewarm('ix')").fetchone()[0]
            print(f"shared_buffers {conn.execute('SHOW shared_buffers').fetchone()[0]}, index prewarmed: "
                  f"{pages} pages in {time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
            sweep(conn, kind, queries, truth, breadths)
        conn.close()
    finally:
        stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
