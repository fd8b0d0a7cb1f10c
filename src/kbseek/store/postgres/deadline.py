"""Bounds on every statement kbseek sends to PostgreSQL, so no call waits without end.

Two kinds of wait need two kinds of bound:

- a server that answers but is slow or blocked (a long query, a table lock held by another
  session): the server's own ``statement_timeout`` and ``lock_timeout`` cancel the statement with a
  clean error, which :func:`busy` words as "busy, try again shortly";
- a server that does not answer at all (frozen, swapped out, its host paused): its kernel still
  acknowledges every packet, so neither libpq's TCP bounds nor the server's timeouts ever fire, and a
  statement would wait forever. :class:`Deadlines` watches each statement from the client side and,
  past its bound, shuts the connection's socket down: the waiting call fails at once with a broken
  connection, which the pool replaces.

The bounds follow the call: a search must fail within 5 s (:data:`READ`), the writer's statements
and bulk reads may take longer (:data:`WRITE`, :data:`BULK`), and building a vector index takes as
long as it takes (``None``: no bound, on a connection of its own).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import TupleRow

__all__ = ["BULK", "CHECK", "READ", "WRITE", "Bound", "BoundedConnection", "busy", "deadlines"]


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

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        with deadlines.watching(self, self.client_bound):
            return super().wait(*args, **kwargs)


class Deadlines:
    """One daemon thread that cuts the connections whose statement outlived its client bound."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: dict[int, tuple[float, BoundedConnection]] = {}
        self._tokens = itertools.count(1)
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self, conn: BoundedConnection, seconds: float | None) -> Iterator[None]:
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
                    conn.was_cut = True
                    _shut_down(conn)
                upcoming = [at for at, _ in self._watched.values()]
                self._cond.wait(timeout=(min(upcoming) - now) if upcoming else 60.0)


def _shut_down(conn: BoundedConnection) -> None:
    """Shut the connection's socket down under the thread blocked on it, which then fails at once.

    Shutting down (not closing) acts on the socket itself through a duplicate of its descriptor, so
    libpq's own descriptor stays valid until psycopg closes the broken connection.
    """
    with contextlib.suppress(OSError, psycopg.Error, ValueError):
        fd = conn.pgconn.socket
        dup = socket.socket(fileno=os.dup(fd))
        try:
            dup.shutdown(socket.SHUT_RDWR)
        finally:
            dup.close()


deadlines = Deadlines()
"""The process's one watcher: every store's connections share it."""
