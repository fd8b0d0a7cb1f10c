"""Two processes on one index: one writer at a time, a clear message for the other, no corruption."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbseek import KnowledgeBase
from kbseek.errors import IndexLocked
from kbseek.store.lock import WriterLock
from tests.conftest import installed_script, make_core, write_notes

HOLDER = """
import sys
from pathlib import Path
from kbseek.store.lock import WriterLock
with WriterLock(Path(sys.argv[1])).hold():
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def held_by_other_process(core: KnowledgeBase) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the writer lock of ``core``'s index until the test ends."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(core.index_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=20)


def test_a_second_writer_is_refused_with_a_message_naming_the_holder(
    core: KnowledgeBase, held_by_other_process: subprocess.Popen[str]
) -> None:
    with pytest.raises(IndexLocked) as err:
        core.index()
    message = str(err.value)
    assert f"pid {held_by_other_process.pid}" in message
    assert "being updated by another kbseek process" in message and "wait for it to finish" in message


def test_the_cli_says_who_holds_the_index_and_exits_1(
    core: KnowledgeBase, held_by_other_process: subprocess.Popen[str]
) -> None:
    done = subprocess.run(
        [installed_script(), "index", "--kb", str(core.root), "--lexical-only"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"pid {held_by_other_process.pid}" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_server_skips_its_pass_and_says_why_while_searches_still_answer(
    core: KnowledgeBase, held_by_other_process: subprocess.Popen[str]
) -> None:
    (core.root / "notes" / "new.md").write_text("# Fresh\n\nA note about zeppelins.\n", encoding="utf-8")
    core.refresh()  # must not raise: the other process indexes the same files
    assert core.search("load balancer").hits
    notes = " ".join(core.status().notes)
    assert f"pid {held_by_other_process.pid}" in notes


def test_the_lock_is_released_when_its_holder_ends(core: KnowledgeBase) -> None:
    subprocess.run([sys.executable, "-c", HOLDER, str(core.index_dir)], input="", text=True, check=True)
    core.index()  # would raise IndexLocked if the lock had outlived its process
    with WriterLock(core.index_dir).hold():  # and this process can take it again
        pass


def test_two_index_processes_racing_leave_a_sound_complete_index(tmp_path: Path) -> None:
    root = tmp_path / "many"
    write_notes(root, {f"n/{i:03}.md": f"# Note {i}\n\nBody of note number {i} about topic {i % 7}.\n"
                       for i in range(300)})  # fmt: skip
    cmd = [installed_script(), "index", "--kb", str(root), "--lexical-only"]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    for p in procs:
        for stream in (p.stdout, p.stderr):
            if stream:
                stream.close()
    assert any(code == 0 for code, _ in results), results
    for code, err in results:
        assert code == 0 or (code == 1 and "being updated by another kbseek process" in err), err
    check = make_core(root)
    try:
        assert check.store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert check.store.counts()[0] == 300
        assert check.store.conn.execute("SELECT count(DISTINCT path) FROM documents").fetchone()[0] == 300
    finally:
        check.close()


def _open_store(path: str, barrier: Any, results: Any) -> None:
    from kbseek.store.sqlite.store import SqliteStore

    barrier.wait()
    try:
        SqliteStore(Path(path)).close()
        results.put("ok")
    except Exception as exc:  # the test reports whatever went wrong
        results.put(repr(exc))


def test_processes_creating_the_same_new_index_at_once_all_open_it(tmp_path: Path) -> None:
    """A process that saw another's half-made schema once dropped its tables ("no such table: meta")."""
    ctx = multiprocessing.get_context("fork")
    failures = []
    for trial in range(12):
        path = str(tmp_path / f"index-{trial}.sqlite")
        barrier, results = ctx.Barrier(6), ctx.Queue()
        procs = [ctx.Process(target=_open_store, args=(path, barrier, results)) for _ in range(6)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        failures += [o for o in outcomes if o != "ok"]
    assert failures == []
