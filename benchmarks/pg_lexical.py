"""The lexical leg on PostgreSQL against SQLite, on the same ~140k chunks, in the same run.

    python benchmarks/pg_lexical.py                        # an embedded server, started and removed
    python benchmarks/pg_lexical.py --store postgresql://… # a server of your own (a schema is created)
    python benchmarks/pg_lexical.py --queries 300

The chunks are ``benchmarks/lexical_scale.py``'s large knowledge base (SciFact and JSQuAD written
again under sub-folders until about 140k chunks; built and indexed in SQLite on first use, then
reused). It is bulk-loaded into PostgreSQL with COPY: the documents, the chunks with the same rowids,
and the postings split from the very text FTS5 indexed (the analyzer's terms, as the writer splits
them), so both stores hold the same chunks, in about two minutes (``kbseek store copy`` would
analyze every chunk again and write document by document). The vocabulary is then left to the schema-3 upgrade to fill (it is
dropped and the version set back to 2, so opening the store counts it from the postings, timed).
``VACUUM ANALYZE`` runs before any timing: a real index gets autovacuum, and a freshly bulk-loaded
table has no visibility map, so every posting would be checked in the table (decision 0030
measured 3× slower before it).

Every query's lexical leg (``search.lexical.lexical_candidates``, 100 candidates) is timed warm and
interleaved on both stores, with two PostgreSQL baselines on the same queries: the full query with
IDF from the vocabulary (the bound switched off), and the statement as it was before the vocabulary
(each term's IDF counted from its posting list, no bound). Parity: how many queries return the same
100 chunks on both stores, and the largest score difference (docs/decisions/0033).

Keep the run within reach: the first build of the SQLite index takes about 4 minutes on a quiet
machine (8 on a busy one), the load into PostgreSQL a few more, the timing a few more.
"""

from __future__ import annotations

import argparse
import math
import shutil
import signal
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg

from beir import load, percentile
from kbseek.filters import NO_FILTERS
from kbseek.search.fts_query import CompiledQuery, compile_query
from kbseek.search.lexical import lexical_candidates
from kbseek.search.pipeline import CANDIDATES_PER_LEG
from kbseek.store import lexical_bound
from kbseek.store.base import Store
from kbseek.store.postgres import lexical as postgres_lexical
from kbseek.store.postgres.store import PostgresStore
from kbseek.store.sqlite.store import SqliteStore
from lexical_scale import SPLITS, build
from store_parity import embedded_server

KB_NAME = "lexical_scale"

# The statement before the vocabulary: each term's chunks counted from its postings on every query.
BEFORE = postgres_lexical.FULL_QUERY.format(join="").replace(
    "JOIN vocabulary v ON v.term = q.term",
    "CROSS JOIN LATERAL (SELECT count(*)::float8 AS chunks FROM postings p WHERE p.term = q.term) v"
    " WHERE v.chunks > 0",
)


@contextmanager
def unbounded() -> Iterator[None]:
    """Both stores without the rare-term bound (the full query)."""
    saved = lexical_bound.LEXICAL_POSTINGS_BUDGET
    lexical_bound.LEXICAL_POSTINGS_BUDGET = None
    try:
        yield
    finally:
        lexical_bound.LEXICAL_POSTINGS_BUDGET = saved


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _before(store: PostgresStore, terms: Sequence[str]) -> None:
    params: dict[str, Any] = {
        "terms": list(terms), "wh": 2.0, "wb": 1.0, "k1": postgres_lexical.BM25_K1,
        "b": postgres_lexical.BM25_B, "limit": CANDIDATES_PER_LEG,
    }  # fmt: skip
    with store._reading() as conn:  # the benchmark may look inside the store
        conn.execute(BEFORE, params).fetchall()


def bulk_load(lite: SqliteStore, url: str) -> None:
    """The SQLite index's documents, chunks (same rowids) and postings into an empty PostgreSQL one,
    then the vocabulary counted by the schema-3 upgrade, as an existing index gains it."""
    PostgresStore(url, KB_NAME).close()  # the schema, empty, of this version
    src = sqlite3.connect(f"file:{lite.path}?mode=ro", uri=True)
    chunk_columns = (
        'id, chunk_id, document_id, ordinal, start, "end", line_start, line_end, heading_path, text,'
        " content_hash"
    )
    doc_columns = (
        "id, path, parser, size, chars, mtime_ns, content_hash, title, frontmatter, tags, date, warnings,"
        " indexed_at"
    )
    started = time.perf_counter()
    chunks = terms = 0
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        cur.execute(f'SET search_path TO "kbseek_{KB_NAME}"')
        # As a superuser, skip the postings' foreign-key checks: the rowids are the chunks' own.
        cur.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if (cur.fetchone() or (False,))[0]:
            cur.execute("SET session_replication_role = replica")
        with cur.copy(f"COPY documents ({doc_columns}) FROM STDIN") as copy:
            for r in src.execute(f"SELECT {doc_columns} FROM documents"):
                copy.write_row((*r[:7], r[7].encode("utf-8", "surrogatepass"), *r[8:]))
        lengths = {
            int(rowid): (len(heading.split()), len(body.split()))
            for rowid, heading, body in src.execute("SELECT rowid, heading, body FROM chunks_fts")
        }
        with cur.copy(f"COPY chunks ({chunk_columns}, heading_terms, body_terms) FROM STDIN") as copy:
            for r in src.execute(f"SELECT {chunk_columns} FROM chunks"):
                h, b = lengths[int(r[0])]
                copy.write_row((*r[:9], r[9].encode("utf-8", "surrogatepass"), r[10], h, b))
                chunks, terms = chunks + 1, terms + h + b
        with cur.copy("COPY postings (term, chunk, tf_heading, tf_body, chunk_terms) FROM STDIN") as copy:
            for rowid, heading, body in src.execute("SELECT rowid, heading, body FROM chunks_fts"):
                hc, bc = Counter(heading.split()), Counter(body.split())
                n = sum(hc.values()) + sum(bc.values())
                for term in hc.keys() | bc.keys():
                    copy.write_row((term, rowid, hc[term], bc[term], n))
        cur.execute("UPDATE lexical_stats SET chunks = %s, terms = %s", (chunks, terms))
        cur.execute("DROP TABLE vocabulary")  # left to the upgrade to count, as an existing index is
        cur.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    src.close()
    print(f"loaded {chunks} chunks into PostgreSQL in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    started = time.perf_counter()
    PostgresStore(url, KB_NAME).close()
    print(f"schema 2 -> 3 (the vocabulary counted) in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def _tied_at_the_cut(a: dict[int, float], b: dict[int, float]) -> bool:
    """Whether two top lists of one length differ only in chunks scoring exactly the last score."""
    cut = min(a.values(), default=0.0)
    return len(a) == len(b) and all(
        math.isclose(a.get(k, b.get(k, 0.0)), cut, rel_tol=1e-9) for k in a.keys() ^ b.keys()
    )


def measure(lite: Store, pg: PostgresStore, queries: list[str], max_terms: int) -> None:
    compiled = [c for c in (compile_query(q, max_terms=max_terms) for q in queries) if c.terms]

    def leg(store: Store, c: CompiledQuery) -> list[tuple[int, float]]:
        return lexical_candidates(store, c, limit=CANDIDATES_PER_LEG, filters=NO_FILTERS)

    for c in compiled:  # warm: every page each path touches is read once before timing
        leg(lite, c)
        leg(pg, c)
        with unbounded():
            leg(pg, c)
        _before(pg, c.terms)
    times: dict[str, list[float]] = {
        "SQLite, bounded (shipped)": [],
        "PostgreSQL, bounded (shipped)": [],
        "PostgreSQL, full query, vocabulary IDF": [],
        "PostgreSQL, before (IDF counted, no bound)": [],
    }
    for c in compiled:  # interleaved: load on a shared machine hits every path alike
        times["SQLite, bounded (shipped)"].append(_timed(lambda c=c: leg(lite, c)))
        times["PostgreSQL, bounded (shipped)"].append(_timed(lambda c=c: leg(pg, c)))
        with unbounded():
            times["PostgreSQL, full query, vocabulary IDF"].append(_timed(lambda c=c: leg(pg, c)))
        times["PostgreSQL, before (IDF counted, no bound)"].append(_timed(lambda c=c: _before(pg, c.terms)))

    same, tied, worst, bounded = 0, 0, 0.0, 0
    budget = lexical_bound.LEXICAL_POSTINGS_BUDGET or 0
    for c in compiled:  # the rowids are the same on both stores (bulk_load)
        a, b = dict(leg(lite, c)), dict(leg(pg, c))
        counts = postgres_lexical.capped_counts(c.terms, pg.document_frequencies(c.terms), budget)
        bounded += lexical_bound.rare_terms(counts, budget, least=CANDIDATES_PER_LEG) is not None
        same += a.keys() == b.keys()
        tied += a.keys() != b.keys() and _tied_at_the_cut(a, b)
        worst = max([worst, *(abs(a[k] - b[k]) / max(abs(a[k]), 1e-12) for k in a.keys() & b.keys())])

    lite50 = percentile(times["SQLite, bounded (shipped)"], 50)
    lite95 = percentile(times["SQLite, bounded (shipped)"], 95)
    print(f"\n{pg.counts().chunks} chunks, {len(compiled)} queries, warm, in process, "
          f"{CANDIDATES_PER_LEG} candidates (ms):")  # fmt: skip
    print("| path | p50 | p95 | p50 / SQLite | p95 / SQLite |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        p50, p95 = percentile(values, 50), percentile(values, 95)
        print(f"| {name} | {p50:.2f} | {p95:.2f} | {p50 / lite50:.2f}× | {p95 / lite95:.2f}× |")
    print(f"\nsame 100 chunks on both stores: {same} of {len(compiled)}, and {tied} more that differ only "
          "by chunks scoring the same as the 100th (equal scores come in rowid order on PostgreSQL, "
          "in FTS5's order on SQLite); "
          f"largest relative score difference {worst:.1e}; "
          f"queries whose terms hold enough postings to bound: {bounded}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", help="a postgresql:// URL (default: an embedded server)")
    parser.add_argument("--queries", type=int, default=300, help="half SciFact, half JSQuAD")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stopped, the embedded server goes too
    collections = [load(name, split) for name, split in SPLITS.items()]
    kb = build(collections, rebuild=False)
    server, folder = None, None
    url = args.store
    if url is None:
        url, server, folder = embedded_server()
    try:
        lite = kb.retrieval().store
        assert isinstance(lite, SqliteStore)
        bulk_load(lite, url)
        started = time.perf_counter()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
            settings = [
                str(conn.execute(f"SHOW {s}").fetchone()[0]) for s in ("server_version", "shared_buffers")
            ]  # type: ignore[index]
        print(f"VACUUM ANALYZE took {time.perf_counter() - started:.0f} s; PostgreSQL {settings[0]}, "
              f"shared_buffers {settings[1]}", file=sys.stderr)  # fmt: skip
        pg = PostgresStore(url, KB_NAME)
        per = args.queries // len(collections)
        queries = [q for c in collections for q in list(c.queries.values())[:per]]
        measure(lite, pg, queries, kb.settings.limits.max_query_terms)
        pg.close()
    finally:
        kb.close()
        if server is not None:
            server.cleanup()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
