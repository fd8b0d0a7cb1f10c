"""Bounds on every statement kbseek sends to PostgreSQL, so no call waits without end.

Two kinds of wait need two kinds of bound:

- a server that answers but is slow or blocked (a long query, a table lock held by another
  session): the server's own ``statement_timeout`` and ``lock_timeout`` cancel the statement with a
  clean error, which :func:`busy` words as "busy, try again shortly";
- a server that does not answer at all (frozen, swapped out, its host paused): its kernel still
  acknowledges every packet, so neither libpq's TCP bounds nor the server's timeouts ever fire, and a
  statement would wait forever. A cancel request (``Connection.cancel_safe()``) goes unanswered
  too. :class:`Deadlines` watches each statement from the client side and, past its bound, shuts the
  connection's socket down: the waiting call fails at once with a broken connection, which the pool
  replaces.

The bounds follow the call: a search must fail within 5 s (:data:`READ`), the writer's statements
and bulk reads may take longer (:data:`WRITE`, :data:`BULK`), and building a vector index takes as
long as it takes (``None``: no bound, on a connection of its own).

Only psycopg's public API is used, so the ``postgres`` extra can accept any psycopg 3 from the one
tested on: :class:`BoundedConnection` is a ``Connection`` subclass (what ``connection_class`` and
``Connection.connect`` are for) whose cursors are :class:`BoundedCursor` (its ``cursor_factory``),
and what is watched is each call of the public methods that wait for the server, the cursor's
``execute``, ``executemany``, ``copy`` and ``stream`` and the connection's ``commit``, ``rollback``
and ``transaction``; the cut goes through ``Connection.fileno()``. psycopg's own wait loop
(``Connection.wait``, undocumented) is no longer overridden. A call that reaches the server some other
way (psycopg's ``TypeInfo.fetch`` opens a plain ``Cursor``) is watched as a whole with
:meth:`Deadlines.watching` by its caller. ``tests/unit/test_postgres_deadline.py`` fails should a
private name of psycopg be overridden again.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self, cast

import psycopg
from psycopg.rows import TupleRow

__all__ = [
    "BULK", "CHECK", "READ", "WRITE", "Bound", "BoundedConnection", "BoundedCursor", "busy", "cut", "deadlines",
]  # fmt: skip


@dataclass(frozen=True)
class Bound:
    """How long one statement may take: the server cancels it at ``statement``; the client cuts the
    connection at ``client`` (a little later, so a live server's clean cancel comes first)."""

    statement: float
    lock: float
    client: float

    def settings(self) -> dict[str, str]:
        """The session settings that make the server keep this bound."""
        return {"statement_timeout": _ms(self.statement), "lock_timeout": _ms(self.lock)}


READ = Bound(statement=3.0, lock=1.5, client=3.5)
"""A search's reads: with the pool's 0.1-3 s wait for a connection, a call fails within 5 s."""

CHECK = Bound(statement=1.0, lock=1.0, client=1.5)
"""The round trip that checks a pooled connection (or a kept writer lock) before it is used."""

BULK = Bound(statement=120.0, lock=10.0, client=125.0)
"""Reads of a whole table (every vector for the in-process dense index, every document's state)."""

WRITE = Bound(statement=60.0, lock=10.0, client=65.0)
"""One statement of a write transaction (a document's rows, a batch of vectors, ANALYZE)."""


def _ms(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def busy(exc: psycopg.Error, bound: Bound) -> str | None:
    """Why the server refused to go on, when it was one of the bounds (else ``None``)."""
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return f"busy: a lock another session holds was not released within {bound.lock:g} s"
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return f"busy: a statement did not finish within {bound.statement:g} s"
    return None


class BoundedConnection(psycopg.Connection[TupleRow]):
    """A connection whose every wait for the server (each statement, each commit) is watched by
    :data:`deadlines` for ``client_bound`` seconds (``None``: not watched), so a bound applies to
    each statement, however many a transaction sends."""

    client_bound: float | None = READ.client
    was_cut = False
    """Set when :data:`deadlines` cut this connection: its error then means "did not answer"."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        """``Connection.connect``, its cursors :class:`BoundedCursor` unless the caller names others.
        Connecting is bounded by libpq's ``connect_timeout`` (``store.postgres.pool.BOUNDS``)."""
        kwargs.setdefault("cursor_factory", BoundedCursor)
        return super().connect(conninfo, **kwargs)

    @contextmanager
    def watched(self) -> Iterator[None]:
        """Within the block, this connection is cut once ``client_bound`` seconds have passed."""
        with deadlines.watching(self, self.client_bound):
            yield

    def commit(self) -> None:
        with self.watched():
            super().commit()

    def rollback(self) -> None:
        with self.watched():
            super().rollback()

    @contextmanager
    def transaction(self, *args: Any, **kwargs: Any) -> Iterator[psycopg.Transaction]:
        """``Connection.transaction``, its ``BEGIN`` (or ``SAVEPOINT``) and its ``COMMIT`` (or
        ``ROLLBACK``) each watched as one statement; the block's own statements are watched by
        their cursors."""
        block = super().transaction(*args, **kwargs)
        with self.watched():
            tx = block.__enter__()
        try:
            yield tx
        except BaseException as exc:
            with self.watched():
                if not block.__exit__(type(exc), exc, exc.__traceback__):
                    raise
        else:
            with self.watched():
                block.__exit__(None, None, None)


class BoundedCursor(psycopg.Cursor[TupleRow]):
    """A cursor whose each statement is watched for its connection's ``client_bound``.

    A client-side cursor has every row once ``execute`` returns, so fetching waits for nothing.
    """

    @contextmanager
    def _watched(self) -> Iterator[None]:
        conn = self.connection
        with deadlines.watching(conn, conn.client_bound if isinstance(conn, BoundedConnection) else None):
            yield

    def execute(self, *args: Any, **kwargs: Any) -> Self:
        with self._watched():
            return super().execute(*args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> None:
        """All the rows as one statement, as psycopg sends them (in one pipeline)."""
        with self._watched():
            super().executemany(*args, **kwargs)

    @contextmanager
    def copy(self, *args: Any, **kwargs: Any) -> Iterator[psycopg.Copy]:
        """A ``COPY`` is one statement: its block as a whole is watched."""
        with self._watched(), super().copy(*args, **kwargs) as copy:
            yield copy

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[TupleRow]:
        """Each wait for the next rows is watched, not the caller's work between them."""
        rows = cast(Generator[TupleRow, None, None], super().stream(*args, **kwargs))
        try:
            while True:
                with self._watched():
                    row = next(rows, None)
                if row is None:
                    return
                yield row
        finally:
            with self._watched():
                rows.close()


class Deadlines:
    """One daemon thread that cuts the connections whose statement outlived its client bound."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: dict[int, tuple[float, psycopg.Connection[Any]]] = {}
        self._tokens = itertools.count(1)
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self, conn: psycopg.Connection[Any], seconds: float | None) -> Iterator[None]:
        """Within the block, ``conn`` is cut once ``seconds`` have passed (``None``: never)."""
        if seconds is None:
            yield
            return
        with self._cond:
            token = next(self._tokens)
            self._watched[token] = (time.monotonic() + seconds, conn)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kbseek-pg-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._watched.pop(token, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                for token in [t for t, (at, _) in self._watched.items() if at <= now]:
                    _, conn = self._watched.pop(token)
                    if isinstance(conn, BoundedConnection):
                        conn.was_cut = True
                    _shut_down(conn)
                upcoming = [at for at, _ in self._watched.values()]
                self._cond.wait(timeout=(min(upcoming) - now) if upcoming else 60.0)


def cut(conn: psycopg.Connection[Any]) -> bool:
    """Whether :data:`deadlines` cut ``conn``: its error then means "the server did not answer"."""
    return isinstance(conn, BoundedConnection) and conn.was_cut


def _shut_down(conn: psycopg.Connection[Any]) -> None:
    """Shut the connection's socket down under the thread blocked on it, which then fails at once.

    Shutting down (not closing) acts on the socket itself through a duplicate of its descriptor, so
    libpq's own descriptor stays valid until psycopg closes the broken connection.
    """
    with contextlib.suppress(OSError, psycopg.Error, ValueError):
        dup = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            dup.shutdown(socket.SHUT_RDWR)
        finally:
            dup.close()


deadlines = Deadlines()
"""The process's one watcher: every store's connections share it."""
