"""Each wait for a server that stopped answering is cut at its bound, through psycopg's public API.

``store.postgres.deadline`` watches the calls that wait for the server (a cursor's ``execute``,
``executemany``, ``copy`` and ``stream``, a connection's ``commit``, ``rollback`` and
``transaction``) rather than psycopg's own wait loop, and the pool records why connecting failed
through its ``connection_class`` rather than by overriding ``ConnectionPool._connect``: so any
psycopg 3 from the tested one on may be installed. A backend stopped with SIGSTOP is the frozen
server of ``tests/core/test_postgres_bounds.py`` for one connection only: its kernel still
acknowledges, nothing answers.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests import postgres_server

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
psycopg_pool = pytest.importorskip("psycopg_pool", reason="the postgres dependencies are not installed")
from kbseek.store.postgres import deadline, lock, pool  # noqa: E402
from kbseek.store.postgres.deadline import BoundedConnection  # noqa: E402
from kbseek.store.postgres.store import PostgresStore  # noqa: E402

OVERRIDABLE = {"connect", "commit", "rollback", "transaction", "execute", "executemany", "copy", "stream"}
"""psycopg's documented methods that kbseek's subclasses may override: each waits for the server
(or, ``connect``, makes the connection), and keeps its meaning across psycopg 3's releases."""

CUT_AFTER = 0.5
"""The client bound the frozen connections are held to here."""


def _psycopg_members(cls: type) -> set[str]:
    """The methods ``cls`` defines itself that one of its psycopg (or psycopg_pool) bases defines too."""
    bases = [b for b in cls.__mro__[1:] if b.__module__.split(".")[0] in {"psycopg", "psycopg_pool"}]
    methods = {
        name
        for name, value in vars(cls).items()
        if isinstance(value, (classmethod, staticmethod, property)) or inspect.isfunction(value)
    }
    return {name for name in methods if any(name in vars(b) for b in bases)}


def _kbseeks_psycopg_classes() -> list[type]:
    """The classes of kbseek's PostgreSQL store that subclass one of psycopg's or psycopg_pool's."""
    found = []
    for module in (deadline, pool, lock):
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and any(b.__module__.split(".")[0] in {"psycopg", "psycopg_pool"} for b in value.__mro__[1:])
            ):
                found.append(value)
    return found


def test_kbseeks_psycopg_subclasses_override_only_public_methods() -> None:
    store = PostgresStore(postgres_server.url(), postgres_server.kb_name("public_api"))
    try:
        assert store._pool is not None
        connections = store._pool._pool
        in_use = [type(connections), connections.connection_class]
    finally:
        store.close()
    beyond = {
        cls.__qualname__: sorted(_psycopg_members(cls) - OVERRIDABLE)
        for cls in {*_kbseeks_psycopg_classes(), *in_use}
        if cls.__module__.startswith("kbseek.")
    }
    assert not any(beyond.values()), f"psycopg's methods overridden beyond its public API: {beyond}"
    # Subclassing the pool is how its private ``_connect`` was overridden: it is psycopg_pool's own.
    assert type(connections) is psycopg_pool.ConnectionPool


def test_the_public_api_the_bounds_rely_on_is_there() -> None:
    """What ``deadline`` and ``pool`` call on psycopg, so an upgrade that drops one fails here."""
    connect = inspect.signature(psycopg.Connection.connect).parameters
    assert "cursor_factory" in connect and "autocommit" in connect
    assert callable(psycopg.Connection.fileno) and callable(psycopg.Connection.transaction)
    parameters = inspect.signature(psycopg_pool.ConnectionPool).parameters
    for name in ("connection_class", "kwargs", "configure", "check", "reconnect_timeout", "reconnect_failed"):
        assert name in parameters, name
    assert callable(psycopg_pool.ConnectionPool.check_connection)


THAWED_AFTER = 5.0
"""Should a call not be cut, the server answers again after this, so the test fails, never hangs."""


@contextlib.contextmanager
def _frozen(conn: BoundedConnection) -> Iterator[None]:
    """The connection's server process stopped, then let go (it ends, its socket shut down)."""
    backend = conn.info.backend_pid
    try:
        os.kill(backend, signal.SIGSTOP)
    except PermissionError:
        pytest.skip("this user cannot stop the server's processes")
    thaw = threading.Timer(THAWED_AFTER, os.kill, (backend, signal.SIGCONT))
    thaw.start()
    try:
        yield
    finally:
        thaw.cancel()
        os.kill(backend, signal.SIGCONT)
        with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))


def _begun(conn: BoundedConnection) -> BoundedConnection:
    conn.execute("BEGIN")
    conn.execute("SELECT 1")
    return conn


def _copy(conn: BoundedConnection) -> None:
    with conn.cursor() as cur, cur.copy("COPY (SELECT 1) TO STDOUT") as copy:
        list(copy)


def _in_transaction(conn: BoundedConnection) -> Callable[[], None]:
    """A transaction block whose statements ran, left to commit once the server is frozen."""
    block = conn.transaction()
    block.__enter__()
    conn.execute("SELECT 1")

    def commit() -> None:
        block.__exit__(None, None, None)

    return commit


CALLS: dict[str, Callable[[BoundedConnection], Callable[[], object]]] = {
    "execute": lambda conn: lambda: conn.execute("SELECT 1"),
    "a cursor's execute": lambda conn: lambda: conn.cursor(binary=True).execute("SELECT 1"),
    "executemany": lambda conn: lambda: conn.cursor().executemany("SELECT %s", [(1,), (2,)]),
    "copy": lambda conn: lambda: _copy(conn),
    "stream": lambda conn: lambda: list(conn.cursor().stream("SELECT 1")),
    "commit": lambda conn: _begun(conn).commit,
    "rollback": lambda conn: _begun(conn).rollback,
    "a transaction's BEGIN": lambda conn: lambda: conn.transaction().__enter__(),
    "a transaction's COMMIT": _in_transaction,
}


@pytest.mark.parametrize("call", CALLS)
def test_each_wait_for_a_frozen_server_is_cut_at_the_client_bound(call: str) -> None:
    with BoundedConnection.connect(postgres_server.url(), autocommit=True) as conn:
        conn.client_bound = CUT_AFTER
        waiting = CALLS[call](conn)
        with _frozen(conn):
            started = time.monotonic()
            with pytest.raises(psycopg.OperationalError):
                waiting()
            took = time.monotonic() - started
        assert conn.was_cut and conn.broken
        assert took < CUT_AFTER + 2.0, f"{call} waited {took:.1f} s"


def test_a_live_connections_calls_are_not_cut() -> None:
    with BoundedConnection.connect(postgres_server.url(), autocommit=True) as conn:
        conn.client_bound = CUT_AFTER
        for call in CALLS.values():
            call(conn)()
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
        conn.execute("SELECT pg_sleep(%s)", (CUT_AFTER / 2,))
        time.sleep(CUT_AFTER * 2)  # between statements the connection is not watched
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert not conn.was_cut and not conn.broken
