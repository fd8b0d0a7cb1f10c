"""PostgreSQL going away under a store: connections cut, the server stopped, a reader process killed.

Cutting every connection a store holds (``pg_terminate_backend`` on the backends that carry its
``application_name``) is what a client sees when the server restarts; that runs on the shared
server. Stopping the server needs one of its own (:class:`StoppableServer`), since the rest of the
run shares the other.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbseek.errors import StoreUnavailable
from kbseek.store.records import Counts
from tests import postgres_server
from tests.postgres_server import StoppableServer
from tests.unit.test_store_contract import document, write

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from kbseek.store.postgres.pool import RECONNECT_SECONDS  # noqa: E402
from kbseek.store.postgres.store import PostgresStore  # noqa: E402

DOES_NOT_HANG = 8.0
"""A bound, not a benchmark: a read must fail within 5 s, and this leaves room for a busy machine."""


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    s = PostgresStore(postgres_server.url(), postgres_server.kb_name("fault"))
    yield s
    s.close()


def _cut_connections(application: str) -> int:
    """Terminate every backend of one process's pool (never this helper's own); how many went."""
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND application_name = %s",
            (application,),
        ).fetchall()
    return len(rows)


def test_reads_carry_on_after_the_servers_connections_were_cut(store: PostgresStore) -> None:
    write(store, document("a.md", "alpha bravo"))
    assert store.counts() == Counts(1, 1)
    assert _cut_connections(store._application) >= 1
    # The pool checks a connection before lending it, so the dead ones are replaced, not handed out.
    assert store.counts() == Counts(1, 1)
    assert store.lexical_candidates(["alpha"], limit=5)


def test_a_pass_cut_off_mid_transaction_leaves_nothing_half_written(store: PostgresStore) -> None:
    write(store, document("kept.md", "kept text"))
    with (
        pytest.raises(StoreUnavailable, match=r"stopped answering \(the connection was lost"),
        store.transaction() as tx,
    ):
        tx.write_document(document("first.md", "first text"), replaces=None)
        _cut_connections(store._application)
        tx.write_document(document("second.md", "second text"), replaces=None)
    assert store.counts() == Counts(1, 1)  # neither document of the cut transaction is there
    assert store.document("first.md") is None and store.document("kept.md") is not None
    write(store, document("after.md", "after text"))  # and the next pass writes as usual
    assert store.counts() == Counts(2, 2)


def test_a_read_on_a_stopped_server_fails_fast_and_the_same_store_reads_once_it_is_back(
    stoppable: StoppableServer,
) -> None:
    url = stoppable.url.replace("postgres:@", "postgres:s3cret@")  # trust auth ignores the password
    store = PostgresStore(url, "outage_store")
    try:
        write(store, document("a.md", "alpha bravo"))
        stoppable.stop()
        try:
            for _ in range(3):  # the first waits for the pool, the next ones know it is down
                started = time.monotonic()
                with pytest.raises(StoreUnavailable) as raised:
                    store.lexical_candidates(["alpha"], limit=5)
                assert time.monotonic() - started < DOES_NOT_HANG
            message = str(raised.value)
            assert store.location in message and "s3cret" not in message
            assert "cannot be reached" in message and "reconnects by itself" in message
            with pytest.raises(StoreUnavailable), store.transaction():
                pass
            # Down for longer than the pool's own attempts last: it must not have stopped trying.
            time.sleep(RECONNECT_SECONDS + 1)
            with pytest.raises(StoreUnavailable):
                store.counts()
        finally:
            stoppable.start()
        assert store.lexical_candidates(["alpha"], limit=5)  # the first read after, not a later one
        write(store, document("b.md", "bravo charlie"))
        assert store.counts() == Counts(2, 2)
    finally:
        store.close()


_READER = textwrap.dedent(
    """
    import sys, threading
    from kbseek.store.postgres.store import PostgresStore

    url, name, role, stop_file = sys.argv[1:]
    store = PostgresStore(url, name, create=False)
    if role == "victim":  # a statement that reads the chunks and is still running when the kill comes
        def stuck():
            with store._reading() as conn:
                conn.execute("SELECT (SELECT count(*) FROM chunks), pg_sleep(30)")
        threading.Thread(target=stuck, daemon=True).start()
    import os
    while not os.path.exists(stop_file):
        hits = store.lexical_candidates(["common", "word"], limit=10)
        assert len(hits) == 10, hits
        print("ok", flush=True)
    """
)


def test_a_reader_killed_mid_query_leaves_the_others_answering_and_the_writer_free(
    store: PostgresStore, tmp_path: Path
) -> None:
    write(store, *(document(f"d{i:03}.md", f"common word number {i}", f"more text {i}") for i in range(60)))
    name = store.schema.removeprefix("kbseek_")
    stop_file = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def reader(role: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", _READER, postgres_server.url(), name, role, str(stop_file)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip

    survivor, victim = reader("survivor"), reader("victim")
    answered = threading.Semaphore(0)
    threading.Thread(target=lambda: [answered.release() for _ in survivor.stdout or ()], daemon=True).start()
    victim_app = f"kbseek pid {victim.pid} on "
    try:
        assert all(answered.acquire(timeout=30) for _ in range(20)), (
            survivor.stderr and survivor.stderr.read()
        )
        with psycopg.connect(postgres_server.url(), autocommit=True) as admin:

            def backends(state: str | None = None) -> int:
                row = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE starts_with(application_name, %s)"
                    " AND (%s::text IS NULL OR (state = %s AND query LIKE '%%pg_sleep%%'))",
                    (victim_app, state, state),
                ).fetchone()
                return int(row[0]) if row else 0

            deadline = time.monotonic() + 30
            while backends("active") == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert backends("active") == 1, "the victim's statement never started"
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=10)

            # Its statement runs on (PostgreSQL notices a dead client only when it writes to it) and
            # holds its lock on the chunks, yet the writer and the other reader never wait for it.
            assert backends("active") == 1
            started = time.monotonic()
            write(store, document("after.md", "common word written after the kill"))
            assert time.monotonic() - started < DOES_NOT_HANG
            assert all(answered.acquire(timeout=30) for _ in range(20)), "the other reader stopped answering"
            assert survivor.poll() is None
            deadline = time.monotonic() + 10  # its idle connections end with it
            while backends() > 1 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert backends() == 1
        assert store.counts().documents == 61
        stop_file.touch()
        assert survivor.wait(timeout=30) == 0, survivor.stderr and survivor.stderr.read()
    finally:
        stop_file.touch()
        for process in (survivor, victim):
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
        _cut_connections_of_prefix(victim_app)


def _cut_connections_of_prefix(prefix: str) -> None:
    """Ends the killed reader's statement, which would otherwise sleep on for the rest of its 30 s."""
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE starts_with(application_name, %s)",
            (prefix,),
        )
