"""A knowledge base on PostgreSQL when the database goes away, and two writers started at once.

Through ``KnowledgeBase`` and the command line, against real servers: the outage tests stop and
start a server of their own (``StoppableServer``), since the rest of the run shares the other.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.errors import StoreUnavailable
from kbseek.progress import ProgressSnapshot
from kbseek.store.base import Store
from tests import postgres_server
from tests.conftest import make_core

pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from tests.postgres_server import StoppableServer
from tests.unit.test_postgres_faults import DOES_NOT_HANG

QUERY = "rollback load balancer"

Contents = dict[str, tuple[str, tuple[tuple[str, int, str, str], ...]]]


def _open(root: Path, url: str, name: str) -> KnowledgeBase:
    return make_core(root, store_url=url, kb_name=name)


def _contents(store: Store) -> Contents:
    """Every document with its chunks, without what differs between two builds (ids, times)."""
    return {
        d.path: (
            d.title,
            tuple(
                (c.chunk_id, c.ordinal, c.text, c.content_hash) for c in store.neighbours(d.id, 0, 1 << 30)
            ),
        )
        for d in store.documents()
    }


def _more_notes(root: Path, count: int) -> None:
    for i in range(count):
        (root / f"extra-{i:03}.md").write_text(
            f"# Extra note {i}\n\nThe rollback runbook, part {i}.\n\n## Details\n\nLoad balancer step {i}.\n",
            encoding="utf-8",
        )


def test_a_search_while_the_database_is_down_fails_fast_and_the_same_kb_answers_once_it_is_back(
    stoppable: StoppableServer, kb_root: Path
) -> None:
    kb = _open(kb_root, stoppable.url, "outage_search")
    try:
        kb.index()
        before = [(h.path, h.chunk_id) for h in kb.search(QUERY).hits]
        assert before
        stoppable.stop()
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="reconnects by itself") as raised:
                kb.search(QUERY)
            assert time.monotonic() - started < DOES_NOT_HANG
            assert "kbseek_outage_search" in str(raised.value)
        finally:
            stoppable.start()
        assert [(h.path, h.chunk_id) for h in kb.search(QUERY).hits] == before  # not reopened
    finally:
        kb.close()


def test_a_pass_the_database_stops_under_fails_cleanly_and_the_next_one_completes(
    stoppable: StoppableServer, kb_root: Path
) -> None:
    _more_notes(kb_root, 12)
    kb = _open(kb_root, stoppable.url, "outage_pass")
    fresh: KnowledgeBase | None = None
    stopped: list[int] = []

    def stop_after_two(snap: ProgressSnapshot) -> None:
        if snap.phase == "parse" and snap.done == 2 and not stopped:
            stopped.append(snap.done)
            stoppable.stop()

    try:
        try:
            with pytest.raises(StoreUnavailable):
                kb.index(progress=stop_after_two)
        finally:
            stoppable.start()
        assert stopped
        fresh = _open(kb_root, stoppable.url, "outage_fresh")
        fresh.index()
        want = _contents(fresh.store)
        partial = _contents(kb.store)
        assert 0 < len(partial) < len(want)  # the pass wrote some documents before it stopped …
        assert all(partial[path] == want[path] for path in partial)  # … each one whole
        report = kb.index()
        assert report.added and _contents(kb.store) == want
    finally:
        kb.close()
        if fresh is not None:
            fresh.close()


def test_a_pass_through_a_restart_between_documents_completes(
    stoppable: StoppableServer, kb_root: Path
) -> None:
    """The pool replaces the connections the restart cut, so only a transaction it cuts fails."""
    _more_notes(kb_root, 6)
    kb = _open(kb_root, stoppable.url, "outage_restart")
    fresh = _open(kb_root, stoppable.url, "outage_restart_fresh")
    restarted: list[int] = []

    def restart_after_two(snap: ProgressSnapshot) -> None:
        if snap.phase == "parse" and snap.done == 2 and not restarted:
            restarted.append(snap.done)
            stoppable.stop()
            stoppable.start()

    try:
        kb.index(progress=restart_after_two)
        assert restarted
        fresh.index()
        assert _contents(kb.store) == _contents(fresh.store)
    finally:
        kb.close()
        fresh.close()


_AT_THE_SIGNAL = """
import sys, time
from pathlib import Path
from kbseek.cli import main

ready, go = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.005)
sys.argv = ["kbseek", *sys.argv[3:]]
main()
"""
"""``kbseek`` itself, started when the test says so: the imports, which take a second or two and
more on a loaded machine, are done before, so the two passes really start together."""


def test_two_writers_started_at_once_one_wins_and_the_other_names_it(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    _more_notes(root, 300)  # a pass of a second or more, so the two processes overlap
    arguments = [
        "index", "--kb", str(root), "--store", postgres_server.url(),
        "--kb-name", postgres_server.kb_name("race"), "--lexical-only",
    ]  # fmt: skip
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _AT_THE_SIGNAL, str(tmp_path / f"ready{i}"), str(go), *arguments],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    results = [(w.pid, *w.communicate(timeout=300), w.returncode) for w in writers]
    succeeded = [r for r in results if r[3] == 0]
    failed = [r for r in results if r[3] != 0]
    assert len(succeeded) == 1 and len(failed) == 1, results
    winner, (_, _, said, status) = succeeded[0][0], failed[0]
    assert status == 1, said  # a refusal, not a bug (70)
    # Named by the database's lock, as it would be from another machine: the holder's pid and host.
    assert "being updated by another kbseek writer" in said and f"kbseek pid {winner} on" in said, said
    assert "Traceback" not in said
