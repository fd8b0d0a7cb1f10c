"""A reader is warm from its first search: the index's pages are read in before it reports ready.

A restarted database, or a copy just made, holds none of a knowledge base's pages in its buffers
(``store.warming``). These tests hold a reader on a real PostgreSQL: it warms when it starts and
reports ready only after; the store says what it read and how (``pg_prewarm``, or queries where the
server or the role lacks it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.store.postgres.store import PostgresStore
from kbseek.store.warming import PREWARM, READ, Warmed
from tests import postgres_server
from tests.fakes import FakeEmbedder

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")


def _indexed(root: Path, url: str, name: str) -> None:
    kb = KnowledgeBase(
        settings=Settings(root=root, store_url=url, kb_name=name), embedder=FakeEmbedder()
    )  # fmt: skip
    try:
        kb.load_semantic()
        kb.index()
    finally:
        kb.close()


@pytest.fixture
def name(kb_root: Path) -> str:
    label = postgres_server.kb_name("warm")
    _indexed(kb_root, postgres_server.url(), label)
    return label


def _reader(url: str, name: str) -> KnowledgeBase:
    return KnowledgeBase(store=url, kb_name=name, read_only=True, embedder=FakeEmbedder())


def test_a_reader_reports_ready_only_once_its_store_is_warm(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()
    real = PostgresStore.warm
    warmed: list[Warmed] = []

    def held(store: PostgresStore) -> Warmed:
        started.set()
        assert release.wait(30)
        warmed.append(real(store))
        return warmed[-1]

    monkeypatch.setattr(PostgresStore, "warm", held)
    reader = _reader(postgres_server.url(), name)
    try:
        assert reader.readiness() is None  # nothing to wait for before the server starts
        reader.start_background()
        assert started.wait(30)
        why = reader.readiness()
        assert why is not None and why.startswith("warming")
        assert any(n.startswith("warming") for n in reader.status().notes)
        release.set()
        reader._runner.warmth.wait(30)
        assert reader.readiness() is None
        assert not any(n.startswith("warming") for n in reader.status().notes)
    finally:
        release.set()
        reader.close()
    [done] = warmed
    assert done.method == PREWARM and done.fallback is None
    assert done.pages > 0
    # the vector graph is not built at this size; the lexical leg's relations are read
    assert {"vocabulary_pkey", "postings_pkey", "lexical_stats", "chunks", "embeddings"} <= set(
        done.relations
    )
    assert "document_texts" not in done.relations  # no search reads a document's whole text


def test_pg_prewarm_fills_the_buffers_with_the_search_relations(name: str) -> None:
    store = PostgresStore(postgres_server.url(), name, create=False)
    try:
        done = store.warm()
    finally:
        store.close()
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
        row = conn.execute(
            "SELECT count(*) FROM pg_buffercache b JOIN pg_class c ON b.relfilenode = pg_relation_filenode(c.oid)"
            " WHERE c.oid = %s::regclass",
            (f"kbseek_{name}.postings_pkey",),
        ).fetchone()
    assert row is not None and row[0] > 0
    assert done.method == PREWARM


@pytest.fixture
def limited(kb_root: Path) -> Iterator[tuple[str, str]]:
    """A database without pg_prewarm, read by a role that may not create it: (its URL, the name)."""
    base = postgres_server.url()
    database = postgres_server.kb_name("warmdb")
    role = postgres_server.kb_name("warmrole")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
        conn.execute(f"CREATE ROLE {role} LOGIN")
    admin = base.replace("/postgres?", f"/{database}?")
    name = "limited"
    _indexed(kb_root, admin, name)
    store = PostgresStore(admin, name)
    try:  # a graph too, as past [index] approximate_above: warmed by searches without pg_prewarm
        embedding = store.meta().embedding
        assert embedding is not None and embedding.dim
        assert store.build_vector_index(embedding.dim)
    finally:
        store.close()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"GRANT USAGE ON SCHEMA kbseek_{name} TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA kbseek_{name} TO {role}")
        assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'").fetchone() is None
    try:
        yield admin.replace("postgresql://postgres", f"postgresql://{role}"), name
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {database} WITH (FORCE)")
            conn.execute(f"DROP ROLE {role}")


def test_a_role_that_may_not_create_pg_prewarm_reads_the_relations_instead(
    limited: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    url, name = limited
    reader = _reader(url, name)
    try:
        with caplog.at_level("WARNING"):
            reader.start_background()
            assert reader._runner.warmth.wait(60)
        warmed = reader._runner.warmth.warmed
        assert warmed is not None and warmed.method == READ
        assert warmed.fallback is not None and "CREATE EXTENSION pg_prewarm" in warmed.fallback
        assert {"vocabulary_pkey", "postings_pkey", "chunks"} <= set(warmed.relations)
        assert warmed.relations[0].startswith("embeddings_hnsw_")  # the graph first: every search reads it
        assert reader.readiness() is None
        assert any(
            "by reading the relations" in n for n in reader.status().notes
        )  # said where a person looks
        assert any("pg_prewarm" in r.getMessage() for r in caplog.records)  # and on stderr
        assert reader.search("rollback load balancer").hits  # served all the same
    finally:
        reader.close()
