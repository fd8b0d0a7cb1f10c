"""The PostgreSQL writer lock names its holder only while someone holds it.

The knowledge base records its writer (host, folder, pid) in ``meta`` when it takes the lock, and
the record stays after the writer released the lock or died: it then names nobody.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import postgres_server

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from kbseek.store.postgres.lock import PostgresPassLock  # noqa: E402
from kbseek.store.postgres.store import PostgresStore  # noqa: E402

HOST = socket.gethostname()


@pytest.fixture
def schema() -> Iterator[str]:
    store = PostgresStore(postgres_server.url(), postgres_server.kb_name("holder"))
    yield store.schema
    store.close()


def _lock(schema: str, pid: int) -> PostgresPassLock:
    return PostgresPassLock(
        postgres_server.url(),
        schema,
        application=f"kbseek pid {pid} on {HOST}"[:63],
        location="the test database",
    )


def _writer(schema: str, root: Path) -> PostgresPassLock:
    """A writer of ``root``, which records itself (with this process's pid) as it takes the lock."""
    lock = _lock(schema, os.getpid())
    lock.writes_from(root)
    return lock


def test_a_writer_is_named_while_it_holds_the_lock_and_not_after_it_released_it(
    schema: str, tmp_path: Path
) -> None:
    writer, onlooker = _writer(schema, tmp_path), _lock(schema, 4102)
    assert onlooker.holder() == ""
    with writer.hold():
        held = onlooker.holder()
    assert f"kbseek pid {os.getpid()}" in held and str(tmp_path.resolve()) in held
    assert onlooker.holder() == ""  # the record stays in meta, and names nobody
    writer.keep()
    assert str(tmp_path.resolve()) in onlooker.holder()
    writer.release()
    assert onlooker.holder() == ""


def test_a_writer_that_died_holding_the_lock_is_not_named(schema: str, tmp_path: Path) -> None:
    writer, onlooker = _writer(schema, tmp_path), _lock(schema, 4202)
    writer.keep()
    assert str(tmp_path.resolve()) in onlooker.holder()
    assert writer._kept is not None
    backend = writer._kept.info.backend_pid
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:  # its session ends, as at a crash
        admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
    deadline = time.monotonic() + 10
    while onlooker.holder() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert onlooker.holder() == ""
    writer.release()


def test_another_holder_than_the_recorded_writer_is_named_by_its_session(schema: str, tmp_path: Path) -> None:
    with _writer(schema, tmp_path).hold():
        pass  # recorded, then released
    other, onlooker = _lock(schema, 4302), _lock(schema, 4303)  # ``other`` writes no documents
    with other.hold():
        assert onlooker.holder() == f"kbseek pid 4302 on {HOST}"[:63]


def test_keeping_is_each_locks_own() -> None:
    assert "_keeping" not in vars(PostgresPassLock)
    lock = PostgresPassLock(postgres_server.url(), "kbseek_x", application="t", location="the test database")
    assert vars(lock)["_keeping"] is False
