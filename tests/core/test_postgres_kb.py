"""A knowledge base whose index lives in PostgreSQL: the same answers as the SQLite file.

The store contract (``tests/unit/test_store_contract.py``) pins the store alone; this drives the
whole path, through ``KnowledgeBase`` and the command line, against the real server the tests start.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kbseek import KnowledgeBase
from kbseek.cli import cli
from kbseek.config import Settings
from tests import postgres_server
from tests.fakes import FakeEmbedder

QUERIES = ("rollback load balancer", "猫の写真", "kitten pictures channel", "on-call handover")


def _open(root: Path, **store: str) -> KnowledgeBase:
    kb = KnowledgeBase(
        settings=Settings(root=root, freshness_interval_s=0.0, **store), embedder=FakeEmbedder()
    )
    kb.load_semantic()
    kb.index()
    return kb


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
    found = CliRunner().invoke(cli, ["search", "rollback", *flags])
    assert found.exit_code == 0 and "rollback" in found.output.lower()
