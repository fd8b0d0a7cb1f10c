"""Fast on a stock server: statistics current right after a pass, and no JIT for kbseek's queries.

A team's server (Debian's PostgreSQL, stock settings: ``jit = on``) answered a fresh knowledge base's
searches in 421-588 ms where SQLite took 16: autovacuum had never analyzed the one-row
``lexical_stats`` table, the BM25 query was estimated at a cost of two million, and PostgreSQL
JIT-compiled it (440 of 472 ms). The embedded server the tests run has no JIT provider, so these
tests check the causes directly: the plan's estimate and the tables' statistics right after a pass,
and the setting of kbseek's own sessions.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.store.postgres.lexical import BM25_B, BM25_K1, BM25_WEIGHTS, FULL_QUERY
from kbseek.store.postgres.schema import TABLES
from kbseek.store.postgres.store import PostgresStore
from kbseek.text.analyzer import terms
from tests import postgres_server

pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")

JIT_ABOVE_COST = 100_000
"""PostgreSQL's default ``jit_above_cost``: a plan estimated above it is JIT-compiled where JIT is on."""


def _writer(root: Path, name: str) -> KnowledgeBase:
    settings = Settings(
        root=root, semantic=False, freshness_interval_s=0.0, store_url=postgres_server.url(), kb_name=name
    )
    return KnowledgeBase(settings=settings)


def _store(kb: KnowledgeBase) -> PostgresStore:
    assert isinstance(kb.store, PostgresStore)
    return kb.store


def _reltuples(kb: KnowledgeBase) -> dict[str, float]:
    with _store(kb)._reading() as conn:
        rows = conn.execute(
            "SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchall()
    return {str(name): float(tuples) for name, tuples in rows}


def _bm25_cost(kb: KnowledgeBase, query: str) -> float:
    params = {
        "terms": terms(query), "wh": BM25_WEIGHTS[0], "wb": BM25_WEIGHTS[1],
        "k1": BM25_K1, "b": BM25_B, "limit": 50,
    }  # fmt: skip
    with _store(kb)._reading() as conn:
        row = conn.execute("EXPLAIN (FORMAT JSON) " + FULL_QUERY.format(join=""), params).fetchone()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return float(plan[0]["Plan"]["Total Cost"])


def test_the_first_pass_leaves_every_table_analyzed_and_the_bm25_plan_cheap(kb_root: Path) -> None:
    kb = _writer(kb_root, postgres_server.kb_name("stats"))
    try:
        kb.index()
        tuples = _reltuples(kb)
        never = sorted(t for t in TABLES if tuples.get(t, -1) < 0)
        assert never == [], f"tables left without statistics by the first pass: {never}"
        assert tuples["lexical_stats"] == 1
        cost = _bm25_cost(kb, "rollback the deploy")
        assert cost < JIT_ABOVE_COST / 10, f"estimated cost {cost:,.0f}: a stock server would JIT-compile it"
    finally:
        kb.close()


def test_a_later_pass_brings_the_small_tables_statistics_along(kb_root: Path) -> None:
    kb = _writer(kb_root, postgres_server.kb_name("stats"))
    try:
        kb.index()
        before = _reltuples(kb)["documents"]
        for i in range(3):
            (kb_root / f"added{i}.md").write_text(f"# Added {i}\n\nword{i} here.\n", encoding="utf-8")
        kb.index()
        assert _reltuples(kb)["documents"] == before + 3
    finally:
        kb.close()


def test_kbseek_sessions_never_jit_compile_whatever_the_server_says(kb_root: Path) -> None:
    url = postgres_server.url()
    with psycopg.connect(url, autocommit=True) as plain:
        row = plain.execute("SHOW jit").fetchone()
        assert row is not None and row[0] == "on", "the server's default, which kbseek must not follow"
    kb = _writer(kb_root, postgres_server.kb_name("jit"))
    try:
        kb.index()
        with _store(kb)._reading() as conn:
            row = conn.execute("SHOW jit").fetchone()
        assert row is not None and row[0] == "off"
    finally:
        kb.close()
