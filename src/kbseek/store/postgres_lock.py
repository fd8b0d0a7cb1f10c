"""One writer per knowledge base across machines: a session advisory lock held for a whole pass.

Each write transaction already takes a transaction-level advisory lock (``PostgresStore``), which
keeps two transactions apart but lets two passes interleave document by document. Two writers are
two machines indexing the same knowledge base from two copies of the files, which would undo each
other's documents; so a pass also holds a *session* lock on a connection of its own, from its
first file to its last commit, and a second writer is told at once who holds it, by the name its
connection gave itself (``kbseek pid … on <host>``). The SQLite store's equivalent is the file lock
beside the index (``store.lock``); this is the same interface over the database, the only thing two
machines share.

A session lock ends with its connection: a writer that crashes or loses the network releases it as
soon as PostgreSQL notices the session is gone, and never leaves it behind.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from kbseek.errors import IndexLocked, StoreUnavailable
from kbseek.store.postgres_pool import Conn, bounded_options
from kbseek.store.postgres_schema import LOCK_CLASS, lock_key

PASS_KEY_SUFFIX = ":pass"
"""The pass lock's key is cut from the schema name with this suffix, so it never equals the
transaction lock's key of the same knowledge base (a session holding one must not block itself)."""


class PassLock:
    """``with lock.hold():`` around a pass; raises :class:`IndexLocked` naming the other writer."""

    def __init__(self, url: str, schema: str, *, application: str, location: str) -> None:
        self._url = url
        self._key = (LOCK_CLASS, lock_key(schema + PASS_KEY_SUFFIX))
        self._application = application
        self._location = location

    def holder(self) -> str:
        """Who holds the lock now, as its connection named itself; "" when nobody does or it is unknown."""
        try:
            with self._connect() as conn:
                return self._holder(conn)
        except (psycopg.Error, StoreUnavailable):
            return ""

    @contextmanager
    def hold(self) -> Iterator[None]:
        conn = self._connect()
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", self._key).fetchone()
            if row is None or not row[0]:
                who = self._holder(conn) or "another kbseek process"
                raise IndexLocked(
                    f"the index {self._location} is being updated by another kbseek writer ({who}); one "
                    "writer per knowledge base: wait for its pass to finish, or stop it and run this again"
                )
            yield
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.close()  # the session's end releases the lock, on every path

    def _connect(self) -> Conn:
        try:
            return psycopg.connect(
                self._url, autocommit=True, application_name=self._application, **bounded_options(self._url)
            )
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"the index database {self._location} cannot be reached to take the writer lock "
                f"({str(exc).strip()}); kbseek reconnects by itself when the database is back"
            ) from exc

    def _holder(self, conn: Conn) -> str:
        row = conn.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s"
            " AND l.objsubid = 2 AND l.pid <> pg_backend_pid()",
            self._key,
        ).fetchone()
        return str(row[0]) if row is not None and row[0] else ""
