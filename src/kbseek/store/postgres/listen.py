"""How a server that reads a PostgreSQL index hears that the writer committed a pass.

The writer's ``record_pass`` bumps the pass counter in ``meta`` and sends ``NOTIFY`` on the knowledge
base's channel (its schema's name) in the same transaction, so the notification arrives exactly when
the pass is visible. A reader waits on a connection of its own that ``LISTEN``\\ s there: a pooled
connection would carry the subscription to whichever thread borrowed it next.

A hot standby refuses ``LISTEN`` (nothing is notified during recovery), a connection can drop, and a
notification can be missed between two waits; so the counter is also read at least every
:data:`POLL_SECONDS` (``PostgresStore.wait_for_pass``), and the notification only makes that read
happen sooner. On a standby the poll is all there is.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""The longest a reader goes without reading the pass counter: how stale a reader on a standby, or
one whose listening connection dropped, can be."""

RECONNECT_SECONDS = 5.0
"""How long after a failed connection the listener tries again (the poll goes on meanwhile)."""


class PassListener:
    """One ``LISTEN`` connection, opened on first use and re-opened after a failure; thread-safe."""

    def __init__(self, url: str, channel: str, application: str) -> None:
        self._url = url
        self._channel = channel
        self._application = application
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._standby = False
        self._failed_at: float | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def standby(self) -> bool:
        """Whether the server is a hot standby, where readers only poll."""
        return self._standby

    def wait(self, seconds: float) -> None:
        """Return when a notification arrives or ``seconds`` have passed, whichever is first."""
        deadline = time.monotonic() + seconds
        with self._lock:
            conn = self._connected()
            if conn is not None:
                try:
                    for _ in conn.notifies(timeout=max(0.0, seconds), stop_after=1):
                        pass
                    return
                except psycopg.Error as exc:
                    log.info("listening for passes on %s stopped (%s); polling until it reconnects",
                             self._channel, str(exc).strip())  # fmt: skip
                    self._drop()
        time.sleep(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._drop()

    def _connected(self) -> psycopg.Connection[tuple[object, ...]] | None:
        if self._closed or self._standby:
            return None
        if self._conn is not None and not self._conn.closed:
            return self._conn
        if self._failed_at is not None and time.monotonic() - self._failed_at < RECONNECT_SECONDS:
            return None
        try:
            conn = psycopg.connect(
                self._url, autocommit=True, application_name=self._application, connect_timeout=5
            )
        except psycopg.Error:
            self._failed_at = time.monotonic()
            return None
        try:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row is not None and row[0]:
                self._standby = True  # LISTEN is refused during recovery: poll only, for good
                conn.close()
                return None
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
        except psycopg.Error:
            conn.close()
            self._failed_at = time.monotonic()
            return None
        self._conn, self._failed_at = conn, None
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
        self._conn = None
        self._failed_at = time.monotonic()
