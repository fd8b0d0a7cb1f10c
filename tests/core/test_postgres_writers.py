"""One writer per knowledge base, across machines: the second is told at once who holds it.

Two writers of one PostgreSQL knowledge base share nothing but the database (each has its own copy
of the files, on its own machine), so the lock that keeps the second out is the database's: a
session lock held for the whole pass, not only for each document's transaction.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.errors import IndexLocked, WrittenElsewhere
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
        # Once the first pass is over, the other folder is still not this knowledge base's source.
        with pytest.raises(WrittenElsewhere):
            second.index()
    finally:
        first.close()
        second.close()


def _documents(name: str) -> int:
    reader = KnowledgeBase(
        settings=Settings(root=None, semantic=False, store_url=postgres_server.url(), kb_name=name),
        read_only=True,
    )
    try:
        return reader.store.counts().documents
    finally:
        reader.close()


def test_a_serving_writer_keeps_every_other_writer_out_for_its_whole_life(
    kb_root: Path, tmp_path: Path
) -> None:
    """The sequence a team met: with the real writer serving, ``kbseek index`` of another folder under
    the same name deleted 550 of 569 documents until the writer's next rescan put them back."""
    name = postgres_server.kb_name("serving")
    other = tmp_path / "other-docs"
    other.mkdir()
    (other / "only.md").write_text("# Only note\n\nNothing else is here.\n", encoding="utf-8")
    serving, intruder, second_server = _writer(kb_root, name), _writer(other, name), _writer(other, name)
    try:
        serving.claim_writer()
        indexed = len(serving.index().added)
        assert indexed > 1

        # Between the serving writer's passes, not only during one: refused at once, naming it.
        with pytest.raises(IndexLocked) as refused:
            intruder.index()
        message = str(refused.value)
        assert f"kbseek pid {os.getpid()} on {socket.gethostname()}" in message
        assert f"writing from {kb_root.resolve()}" in message
        with pytest.raises(IndexLocked):
            second_server.claim_writer()  # a second `serve` exits at once too
        assert _documents(name) == indexed, "nothing was deleted"

        serving.index()  # the serving writer's own passes go on under the lock it keeps
    finally:
        serving.close()
    # The writer stopped: the lock is free, but the knowledge base is still written from kb_root.
    with pytest.raises(WrittenElsewhere) as elsewhere:
        intruder.index()
    message = str(elsewhere.value)
    assert f"written from {kb_root.resolve()} and holds {indexed} documents" in message
    assert "--take-over" in message and "--kb-name" in message
    assert _documents(name) == indexed, "nothing was deleted"

    # Taking over on purpose says what it replaced, and later passes from the new folder need no flag.
    report = intruder.index(take_over=True)
    assert report.took_over_from is not None and str(kb_root.resolve()) in report.took_over_from
    assert report.added == ["only.md"] and len(report.deleted) == indexed
    intruder.index()
    intruder.close()
    second_server.close()


def test_a_writer_restarted_on_its_own_folder_needs_no_flag(kb_root: Path) -> None:
    name = postgres_server.kb_name("restart")
    first = _writer(kb_root, name)
    first.claim_writer()
    first.index()
    first.close()
    again = _writer(kb_root, name)
    try:
        again.claim_writer()
        report = again.index()
        assert report.unchanged > 0 and report.took_over_from is None
    finally:
        again.close()
