"""One writer per knowledge base, across machines: the second is told at once who holds it.

Two writers of one PostgreSQL knowledge base share nothing but the database (each has its own copy
of the files, on its own machine), so the lock that keeps the second out is the database's: a
session lock held for the whole pass, not only for each document's transaction.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.errors import IndexLocked
from tests import postgres_server
from tests.fixture_copies import copy_fixture

pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")


def _writer(root: Path, name: str) -> KnowledgeBase:
    return KnowledgeBase(
        settings=Settings(
            root=root, semantic=False, freshness_interval_s=0.0, store_url=postgres_server.url(), kb_name=name
        )
    )


def test_a_second_writer_on_another_copy_of_the_files_is_refused_for_the_whole_pass(
    kb_root: Path, tmp_path: Path
) -> None:
    name = postgres_server.kb_name("writers")
    elsewhere = tmp_path / "other-machine"
    copy_fixture(kb_root, elsewhere)
    first, second = _writer(kb_root, name), _writer(elsewhere, name)
    refusals: list[str] = []

    def midway(snapshot: object) -> None:
        # Between two documents of the first writer's pass, when no transaction is open: the
        # per-transaction lock alone would let the second pass run here and interleave.
        if not refusals:
            with pytest.raises(IndexLocked) as refused:
                second.index()
            refusals.append(str(refused.value))

    try:
        first.index(progress=midway)
        assert refusals, "the second writer was never tried during the first pass"
        assert f"on {socket.gethostname()}" in refusals[0] and "kbseek pid" in refusals[0]
        second.index()  # once the first pass is over, the other writer may run its own
    finally:
        first.close()
        second.close()
