"""One writer per knowledge base across machines, for a serving writer's whole life.

Each write transaction already takes a transaction-level advisory lock (``PostgresStore``), which
keeps two transactions apart but lets two passes interleave document by document. Two writers are
two machines (or two folders) indexing the same knowledge base, which would undo each other's
documents: a pass over another folder deletes every document that folder lacks. So a writer holds
a *session* lock on a connection of its own:

- ``kbseek index`` holds it from its pass's first file to its last commit;
- a serving writer (``kbseek serve`` with the files) holds it from its start until it stops
  (:meth:`PostgresPassLock.keep`), so a ``kbseek index`` or a second ``serve`` run while it serves exits
  at once, naming the holder's host, pid and folder, instead of slipping in between two passes.

The knowledge base also records where it is written from (host and folder, in its ``meta`` table,
written by whoever holds the lock). A writer of another folder is refused with what it would replace
(:class:`~kbseek.errors.WrittenElsewhere`) even when nobody holds the lock, unless it takes the
knowledge base over on purpose (``--take-over``), which then says what it replaced. The SQLite
store needs none of this: its index lives beside the files it was built from (``store.lock``).

A session lock ends with its connection: a writer that crashes or loses the network releases it as
soon as PostgreSQL notices the session is gone, and never leaves it behind. A serving writer whose
connection was lost takes the lock again before its next pass.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from kbseek.errors import IndexLocked, StoreUnavailable, WrittenElsewhere
from kbseek.store.postgres.deadline import BoundedConnection
from kbseek.store.postgres.pool import Conn, bounded_options, no_jit
from kbseek.store.postgres.schema import LOCK_CLASS, lock_key

PASS_KEY_SUFFIX = ":pass"
"""The pass lock's key is cut from the schema name with this suffix, so it never equals the
transaction lock's key of the same knowledge base (a session holding one must not block itself)."""

META_WRITER = ("writer_host", "writer_root", "writer_pid", "writer_since")
"""The ``meta`` rows that say where the knowledge base is written from, and by which process."""


@dataclass(frozen=True)
class WriterRecord:
    """Where a knowledge base is written from, as its writer recorded it."""

    host: str
    root: str
    pid: int | None = None
    since: float | None = None

    def same_source(self, other: WriterRecord) -> bool:
        return (self.host, self.root) == (other.host, other.root)

    def describe(self) -> str:
        """``kbseek pid 12 on host-a, writing from /srv/docs`` (the pid only when known)."""
        who = f"kbseek pid {self.pid} on {self.host}" if self.pid else f"a kbseek writer on {self.host}"
        return f"{who}, writing from {self.root}"


class PostgresPassLock:
    """``with lock.hold():`` around a pass; raises :class:`IndexLocked` naming the other writer.

    :meth:`writes_from` tells it this writer's folder, so the lock also checks (and records) where
    the knowledge base is written from; without it (a command that writes no documents) only the
    lock is taken.
    """

    def __init__(self, url: str, schema: str, *, application: str, location: str) -> None:
        self._url = url
        self._schema = schema
        self._key = (LOCK_CLASS, lock_key(schema + PASS_KEY_SUFFIX))
        self._application = application
        self._location = location
        self._me: WriterRecord | None = None
        self._kept: Conn | None = None
        self._guard = threading.Lock()
        """Serialises taking, checking and dropping the kept connection (the pass thread and ``close``)."""
        self._keeping = False
        """Between :meth:`keep` and :meth:`release`: the lock is kept between passes (and taken again
        before the next pass if its connection was lost)."""
        self.replaced: WriterRecord | None = None
        """The source this writer took the knowledge base over from (``--take-over``), once it has."""

    def writes_from(self, root: Path) -> None:
        """This writer indexes ``root`` on this host: the source it checks and records."""
        self._me = WriterRecord(socket.gethostname(), str(root.resolve()), os.getpid())

    # -- the protocol (store.lock.PassLock) --------------------------------------------------------

    def holder(self) -> str:
        """Who holds the lock now, as the holder recorded itself; "" when nobody does or it is unknown."""
        try:
            with self._connect() as conn:
                return self._holder(conn)
        except (psycopg.Error, StoreUnavailable):
            return ""

    @contextmanager
    def hold(self, *, take_over: bool = False) -> Iterator[None]:
        """The lock for one pass: the kept one if this process serves (taken again if its connection
        was lost), else a connection of the pass's own, closed (so released) when the pass ends."""
        with self._guard:
            if self._kept is not None and not _alive(self._kept):
                self._drop()
            if self._kept is None and self._keeping:
                self._kept = self._acquire(take_over=take_over)
            kept = self._kept is not None
        if kept:
            yield
            return
        conn = self._acquire(take_over=take_over)
        try:
            yield
        finally:
            _close(conn)

    # -- a serving writer's lock -------------------------------------------------------------------

    def keep(self, *, take_over: bool = False) -> None:
        """Hold the lock until :meth:`release`: a serving writer takes it at its start, so another
        writer is refused at once for as long as it serves, not only while one of its passes runs.

        Raises :class:`IndexLocked` (or :class:`WrittenElsewhere`) at once; a database that cannot
        be reached raises :class:`StoreUnavailable`, and the lock is then taken before the first
        pass that reaches it.
        """
        with self._guard:
            self._keeping = True
            if self._kept is None:
                self._kept = self._acquire(take_over=take_over)

    def took_over_from(self) -> str | None:
        return self.replaced.describe() if self.replaced is not None else None

    def release(self) -> None:
        with self._guard:
            self._keeping = False
            self._drop()

    def _drop(self) -> None:
        if self._kept is not None:
            _close(self._kept)
            self._kept = None

    # -- taking it ---------------------------------------------------------------------------------

    def _acquire(self, *, take_over: bool) -> Conn:
        conn = self._connect()
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", self._key).fetchone()
            if row is None or not row[0]:
                who = self._holder(conn) or "another kbseek process"
                raise IndexLocked(
                    f"the index {self._location} is being updated by another kbseek writer ({who}); one "
                    "writer per knowledge base: stop that writer (or wait for its pass to end) and run "
                    "this again, or give this folder a knowledge base of its own with another --kb-name"
                )
            if self._me is not None:
                self._claim(conn, take_over=take_over)
        except BaseException:
            _close(conn)  # the session's end releases the lock
            raise
        return conn

    def _claim(self, conn: Conn, *, take_over: bool) -> None:
        """Check the knowledge base is written from this writer's folder, and record that it is."""
        assert self._me is not None
        recorded = _record(conn)
        if recorded is not None and not recorded.same_source(self._me):
            if not take_over:
                raise WrittenElsewhere(self._elsewhere(conn, recorded))
            self.replaced = recorded
        values = {
            "writer_host": self._me.host, "writer_root": self._me.root,
            "writer_pid": str(self._me.pid), "writer_since": f"{time.time():.3f}",
        }  # fmt: skip
        with conn.transaction():
            for key, value in values.items():
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    (key, value),
                )

    def _elsewhere(self, conn: Conn, recorded: WriterRecord) -> str:
        assert self._me is not None
        row = conn.execute("SELECT count(*) FROM documents").fetchone()
        documents = int(row[0]) if row else 0
        where = recorded.root if recorded.host == self._me.host else f"{recorded.root} on {recorded.host}"
        mine = self._me.root if recorded.host == self._me.host else f"{self._me.root} on {self._me.host}"
        return (
            f"the knowledge base {self._location} is written from {where} and holds {documents} "
            f"documents; indexing {mine} into it would replace them with this folder's (a document "
            "not in this folder would be deleted). If this folder is now its source, run this again "
            "with --take-over; to index this folder separately, give it another --kb-name"
        )

    def _connect(self) -> Conn:
        try:
            conn: Conn = BoundedConnection.connect(
                self._url, autocommit=True, application_name=self._application, **bounded_options(self._url)
            )
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"the index database {self._location} cannot be reached to take the writer lock "
                f"({str(exc).strip()}); kbseek reconnects by itself when the database is back"
            ) from exc
        no_jit(conn)
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self._schema)))
        return conn

    def _holder(self, conn: Conn) -> str:
        """Who holds the lock, seen from ``conn`` (which does not): "" when nobody does.

        The knowledge base's record of its writer outlives the writer (a pass that ended, a writer
        that crashed), so it names the holder only while some other session holds the lock, and
        only when that session's name (when PostgreSQL shows it to this user) does not say it is
        another process than the recorded one.
        """
        row = conn.execute(
            "SELECT l.pid, a.application_name FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s"
            " AND l.objsubid = 2 AND l.pid <> pg_backend_pid() LIMIT 1",
            self._key,
        ).fetchone()
        if row is None:
            return ""
        seen = str(row[1]) if row[1] else ""
        recorded = _record(conn)
        if recorded is None or not _may_be(seen, recorded):
            return seen
        # The holder records itself as it takes the lock, with its folder, which its session's name
        # does not say.
        return recorded.describe()


def lock_transaction(conn: Conn, key: int, *, wait: float, location: str) -> None:
    """Take a knowledge base's advisory lock for the open transaction, waiting up to ``wait`` seconds.

    Every write transaction takes it, so two processes' transactions never interleave within one
    knowledge base. A transaction-level lock is released by the commit or rollback itself, so a
    crashed or killed writer never leaves the index locked.
    """
    pair = (LOCK_CLASS, key)
    row = conn.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", pair).fetchone()
    if row is not None and row[0]:
        return
    if wait > 0:
        before = conn.execute("SELECT current_setting('lock_timeout')").fetchone()
        conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{max(1, round(wait * 1000))}ms",))
        try:
            conn.execute("SAVEPOINT waiting")
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", pair)
            conn.execute("RELEASE SAVEPOINT waiting")
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (before[0] if before else "0",))
            return
        except psycopg.errors.LockNotAvailable:
            conn.execute("ROLLBACK TO SAVEPOINT waiting")
    raise IndexLocked(
        f"the index {location} is being written by another kbseek process "
        f"({_transaction_holder(conn, key)}); wait for it to finish or stop it"
    )


def _transaction_holder(conn: Conn, key: int) -> str:
    """Who holds a transaction lock, as its connection named itself; PostgreSQL hides that from a
    user without the right to see other users' sessions, hence the plainer fallback."""
    row = conn.execute(
        "SELECT a.application_name, a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s::bigint::oid"
        " AND l.objid = %s::bigint::oid AND l.objsubid = 2 AND l.pid <> pg_backend_pid() LIMIT 1",
        (LOCK_CLASS, key),
    ).fetchone()
    if row is None:
        return "another connection"
    return str(row[0]) if row[0] else f"server process {row[1]}"


def _record(conn: Conn) -> WriterRecord | None:
    try:
        found = conn.execute("SELECT key, value FROM meta WHERE key = ANY(%s)", (list(META_WRITER),))
        rows: dict[str, str] = {str(k): str(v) for k, v in found}
    except psycopg.errors.UndefinedTable:
        return None
    if "writer_host" not in rows or "writer_root" not in rows:
        return None
    pid = rows.get("writer_pid")
    since = rows.get("writer_since")
    return WriterRecord(
        str(rows["writer_host"]), str(rows["writer_root"]),
        int(pid) if pid and pid.isdigit() else None, float(since) if since else None,
    )  # fmt: skip


def _may_be(seen: str, recorded: WriterRecord) -> bool:
    """Whether a session named ``seen`` may be the recorded writer: kbseek names its sessions
    ``kbseek pid <pid> on <host>`` (cut to PostgreSQL's 63 characters); an empty name (hidden from
    this user) or another application's may be anyone."""
    if not seen.startswith("kbseek pid ") or recorded.pid is None:
        return True
    return seen == f"kbseek pid {recorded.pid} on {recorded.host}"[:63]


def _alive(conn: Conn) -> bool:
    """Whether a kept connection still answers (its session, and so the lock, still exists)."""
    if conn.closed or conn.broken:
        return False
    try:
        conn.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


def _close(conn: Conn) -> None:
    """Close a lock's connection, releasing its locks first when it still can: the server frees a
    session's locks only when its backend has exited, after the client has gone, so a writer that
    starts right after another stopped could otherwise find the lock still held."""
    with contextlib.suppress(psycopg.Error):
        if not (conn.closed or conn.broken):
            conn.execute("SELECT pg_advisory_unlock_all()")
        conn.close()
