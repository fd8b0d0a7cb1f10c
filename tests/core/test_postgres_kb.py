"""A knowledge base whose index lives in PostgreSQL: the same answers as the SQLite file.

The store contract (``tests/unit/test_store_contract.py``) pins the store alone; this drives the
whole path, through ``KnowledgeBase`` and the command line, against the real server the tests start.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kbseek import KnowledgeBase
from kbseek.cli import cli
from kbseek.config import Settings
from kbseek.errors import ConfigError
from tests import postgres_server
from tests.fakes import FakeEmbedder

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from kbseek.store.postgres import vectors as postgres_vectors  # noqa: E402

QUERIES = ("rollback load balancer", "猫の写真", "kitten pictures channel", "on-call handover")


def _open(root: Path, **store: str) -> KnowledgeBase:
    kb = KnowledgeBase(
        settings=Settings(root=root, freshness_interval_s=0.0, **store), embedder=FakeEmbedder()
    )
    kb.load_semantic()
    kb.index()
    return kb


def _ranked(kb: KnowledgeBase, query: str) -> list[tuple[float, str, str]]:
    """The hits that scored, by score; among equal scores by path, since the order of a tie follows
    the store's rowids, which a copy assigns anew (and which of the hits scoring 0 fill the list)."""
    return sorted((-round(h.score, 6), h.path, h.chunk_id) for h in kb.search(query).hits if h.score > 0)


def test_a_postgres_index_answers_as_the_sqlite_one(kb_root: Path) -> None:
    sqlite = _open(kb_root)
    postgres = _open(kb_root, store_url=postgres_server.url(), kb_name=postgres_server.kb_name("kb"))
    try:
        assert "kbseek_" in postgres.index_path and postgres.summary().chunks == sqlite.summary().chunks
        for query in QUERIES:
            here = [(h.path, h.chunk_id, round(h.score, 6)) for h in sqlite.search(query, explain=True).hits]
            there = [
                (h.path, h.chunk_id, round(h.score, 6)) for h in postgres.search(query, explain=True).hits
            ]
            assert here == there, query
    finally:
        sqlite.close()
        postgres.close()


def test_the_command_line_indexes_into_the_database_named_by_the_flag(kb_root: Path) -> None:
    name = postgres_server.kb_name("cli")
    flags = ["--kb", str(kb_root), "--store", postgres_server.url(), "--kb-name", name, "--lexical-only"]
    indexed = CliRunner().invoke(cli, ["index", *flags])
    assert indexed.exit_code == 0, indexed.output
    assert f"kbseek_{name}" in indexed.output and "password" not in indexed.output.lower()
    assert not (kb_root / ".kbseek").exists()  # the index is in the database: nothing in the notes
    found = CliRunner().invoke(cli, ["search", "rollback", *flags])
    assert found.exit_code == 0 and "rollback" in found.output.lower()


def test_an_index_copied_into_postgres_and_back_answers_the_same_without_embedding(
    kb_root: Path, tmp_path: Path
) -> None:
    original = _open(kb_root)
    name = postgres_server.kb_name("copy")
    report = original.copy_index(postgres_server.url(), kb_name=name)
    summary = original.summary()
    assert (report.documents, report.chunks) == (summary.documents, summary.chunks) and report.vectors
    assert "kbseek_" + name in report.location
    embedder = FakeEmbedder()
    copied = KnowledgeBase(
        settings=Settings(
            root=kb_root, freshness_interval_s=0.0, store_url=postgres_server.url(), kb_name=name
        ),
        embedder=embedder,
    )
    assert copied.index().chunks_embedded == 0 and embedder.documents_embedded == 0  # nothing to embed again
    back = tmp_path / "back"
    copied.copy_index(str(back), kb_name="unused")
    returned = KnowledgeBase(
        settings=Settings(root=kb_root, index_dir=back, freshness_interval_s=0.0), embedder=FakeEmbedder()
    )
    try:
        for query in QUERIES:
            want = _ranked(original, query)
            assert _ranked(copied, query) == want and _ranked(returned, query) == want, query
        with pytest.raises(ConfigError, match="already holds documents"):
            original.copy_index(postgres_server.url(), kb_name=name)
    finally:
        for kb in (original, copied, returned):
            kb.close()


@pytest.mark.parametrize("above", [0, 100_000])
def test_a_copy_past_the_threshold_gets_its_vector_index_so_a_reader_never_scans_every_vector(
    kb_root: Path, above: int
) -> None:
    original = KnowledgeBase(
        settings=Settings(root=kb_root, freshness_interval_s=0.0, approximate_above=above),
        embedder=FakeEmbedder(),
    )
    try:
        original.load_semantic()
        original.index()
        name = postgres_server.kb_name(f"copyix{above}")
        report = original.copy_index(postgres_server.url(), kb_name=name)
    finally:
        original.close()
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"SET search_path TO kbseek_{name}")
        built = postgres_vectors.vector_indexes(conn)
    assert report.vector_index is (above == 0)
    assert built == ({FakeEmbedder().dim: True} if above == 0 else {})


def test_the_store_copy_command_says_where_without_the_password(kb_root: Path, tmp_path: Path) -> None:
    CliRunner().invoke(cli, ["index", "--kb", str(kb_root), "--lexical-only"])
    copied = CliRunner().invoke(
        cli, ["store", "copy", "--kb", str(kb_root), "--to", str(tmp_path / "copy.sqlite")]
    )
    assert copied.exit_code == 0, copied.output
    assert copied.output.startswith("copied ") and "copy.sqlite" in copied.output
