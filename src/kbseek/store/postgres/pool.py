"""Connections to the index database for :class:`~kbseek.store.postgres.PostgresStore`.

The store's queries and transactions borrow a connection from here and never see the pool: how
connections are made, checked and replaced, and how a failure reads to the person who runs kbseek,
is this module's business alone (docs/decisions/0030).

A database that goes away must cost a search seconds, not minutes, and must not need kbseek
restarted when it comes back. Every wait is bounded (:data:`BOUNDS`, :data:`LOAN_SECONDS`), and
losing the database raises :class:`~kbseek.errors.StoreUnavailable`, which every surface reports as
"try again shortly". The pool keeps trying in the background, and each read that finds it empty
starts a new attempt, so the first reads after the database is back succeed without reopening the
store.

Only psycopg_pool's public API is used: the pool is ``ConnectionPool`` itself, given its
``connection_class`` (a :class:`~kbseek.store.postgres.deadline.BoundedConnection` that writes
down why connecting failed, :class:`_Attempts`), ``kwargs`` (libpq's bounds) and its ``configure``,
``check`` and ``reconnect_failed`` callbacks; ``tests/unit/test_postgres_deadline.py`` fails should
it be subclassed (its private ``_connect`` was overridden) again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

from kbseek.errors import ConfigError, StoreUnavailable
from kbseek.store.postgres.deadline import CHECK, READ, WRITE, Bound, BoundedConnection, busy, cut, deadlines

__all__ = [
    "BOUNDS", "LOAN_SECONDS", "Conn", "Connections", "bounded_options", "no_jit", "setup_connection",
]  # fmt: skip

log = logging.getLogger(__name__)

Conn = psycopg.Connection[TupleRow]

BOUNDS: dict[str, int] = {
    "connect_timeout": 2,
    "keepalives": 1,
    "keepalives_idle": 3,
    "keepalives_interval": 1,
    "keepalives_count": 3,
    "tcp_user_timeout": 4000,
}
"""libpq's own bounds, so no connection waits on a silent network for the kernel's default of minutes.

``connect_timeout`` (2 s, libpq's smallest) bounds reaching a host that does not answer. A statement
sent into a dead network is dropped after ``tcp_user_timeout`` (4 s unacknowledged), and one waiting
for an answer from a host that died after receiving it is probed from 3 s of silence on and dropped
at 4 s; a slow query on a live server answers the probes and is never cut. A value the URL gives
wins; over a Unix socket libpq ignores all but the first.
"""

LOAN_SECONDS = 3.0
"""How long a read or a transaction waits for a connection before :class:`StoreUnavailable`: a
failed check, the reconnection attempts and the wait together stay well under the 5 s a search may
take to fail, while a connection freed by a busy reader in that time is still taken."""

DOWN_LOAN_SECONDS = 0.1
"""The wait once the database is known to be gone (a loan failed for that and none succeeded since).
Then a loan takes what the pool has made in the meantime, or else connects once itself: the reads of
one request after the first fail at once (a refused connection fails in milliseconds), so the
request as a whole fails within the bound, and the first read after the database is back succeeds
even while the pool's own attempts are still backing off."""

LOAN_SLICE_SECONDS = 0.25
"""The slices a loan waits for the pool in, looking between them whether the database went away."""

RECONNECT_SECONDS = 5.0
"""How long one background attempt keeps retrying (psycopg_pool backs off 1, 2 … s) before it gives
its slot up. Kept short because a slot backing off delays the first read after the database is back
by up to half of this; once the slots are given up, each read that finds the pool empty makes a new
attempt at once, so the pool never stops trying while kbseek is asked for something."""


def no_jit(conn: Conn) -> None:
    """Turn PostgreSQL's JIT compiler off for this session.

    kbseek's statements are short: a search's BM25 query reads a few postings and answers in a
    millisecond. A stock server (Debian's, with ``jit = on``) JIT-compiles any plan whose *estimated*
    cost passes ``jit_above_cost`` (100,000), and an estimate made before the tables were analyzed
    can be millions: compiling then took 440 of a search's 472 ms. No query of kbseek's gains from
    JIT, so its sessions never use it, whatever the server's setting; ``SET`` is used rather than a
    startup option because connection poolers refuse unknown startup options.
    """
    conn.execute("SET jit = off")


@contextmanager
def setup_connection(url: str, *, application: str, location: str) -> Iterator[Conn]:
    """A connection of its own for creating or checking the schema, before the pool exists.

    Connection failures become a :class:`ConfigError` naming the database without its password:
    a wrong URL or a server that is down is the setup's fault, not kbseek's.
    """
    try:
        options = bounded_options(url)
        with BoundedConnection.connect(url, autocommit=True, application_name=application, **options) as conn:
            no_jit(conn)
            _apply(conn, WRITE)  # creating a schema waits for another's creation, never for ever
            yield conn
    except psycopg.OperationalError as exc:  # libpq's messages never quote the password
        raise ConfigError(
            f"cannot connect to the index database {location}: {str(exc).strip()}; {connect_hint(exc)}"
        ) from exc
    except psycopg.ProgrammingError:
        # libpq's complaint about a malformed string quotes a piece of it, which may be the
        # password: it is neither repeated nor chained.
        raise ConfigError(
            "the index database URL is not a PostgreSQL connection string; write it as "
            "postgresql://user:password@host:port/database"
        ) from None


PASSWORD_HINT = (
    "check the password: kbseek takes it from the URL (postgresql://user:password@host/db), the "
    "PGPASSWORD environment variable or ~/.pgpass, in that order, as every PostgreSQL client does"
)


def connect_hint(exc: BaseException) -> str:
    """What to do about a failed connection: the password's sources when the server refused the
    password (or was sent none), else the URL and the server."""
    text = str(exc).lower()
    if "password" in text or "authentication failed" in text:
        return PASSWORD_HINT
    return "check the URL and that the server is running"


def bounded_options(url: str) -> dict[str, Any]:
    """:data:`BOUNDS` less what the URL sets itself (raises ``ProgrammingError`` for a malformed URL)."""
    given = conninfo_to_dict(url)
    return {key: value for key, value in BOUNDS.items() if key not in given}


class _Attempts:
    """Why the pool's last attempt to connect failed (``None``: it succeeded), so the error a reader
    gets says "connection refused" or "timeout expired" rather than only that it waited."""

    last_failure: str | None = None


def _recording(attempts: _Attempts) -> type[BoundedConnection]:
    """The pool's ``connection_class``: a :class:`BoundedConnection` whose failures to connect are
    written down in ``attempts`` (one class per pool, so two stores never read each other's)."""

    class PooledConnection(BoundedConnection):
        @classmethod
        def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
            try:
                return super().connect(conninfo, **kwargs)
            except psycopg.Error as exc:
                attempts.last_failure = _cause(exc)
                raise

    return PooledConnection


class Connections:
    """The pool one store reads and writes through, each connection set to its schema."""

    def __init__(
        self, url: str, search_path: tuple[str, str], *, application: str, location: str, max_size: int
    ) -> None:
        self._location = location
        self._url = url
        self._options: dict[str, Any] = {
            "autocommit": True,
            "application_name": application,
            **bounded_options(url),
        }
        self._search_path = search_path
        self._retry_at = 0.0
        """While the database is gone: no loan connects by itself before this (``_own_connection``)."""
        self._last_cause = "no answer"
        self._down = threading.Event()
        """Set while the database is known to be gone: the last loan failed for that, none succeeded since."""
        self._attempts = _Attempts()

        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs=self._options,
            configure=self._configure_pooled,
            # A server restart or a dropped network leaves dead connections in the pool; checked
            # before each loan (one round trip), they are replaced instead of failing a search.
            check=self._check,
            connection_class=_recording(self._attempts),
            name=f"kbseek-{search_path[0]}",
            reconnect_timeout=RECONNECT_SECONDS,
            reconnect_failed=self._gave_up,
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=10.0)
        except PoolTimeout as exc:
            self._pool.close()
            raise ConfigError(f"cannot keep connections to {location} open ({exc})") from exc

    @contextmanager
    def loan(self, bound: Bound | None = READ) -> Iterator[Conn]:
        """A connection for one statement or one transaction, back to the pool when done.

        Each statement on it is held to ``bound`` (``postgres_deadline``; ``None``: no bound, for
        building an index). Raises :class:`StoreUnavailable` when no working connection comes within
        the wait, when the server gives up on a statement at its bound (busy), or when the connection
        breaks or stops answering while lent (the statement or transaction on it is lost with it:
        PostgreSQL rolls back whatever was not committed).
        """
        conn, pooled = self._borrow()
        other = bound is not READ
        try:
            if other:
                _apply(conn, bound)
            yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            why = busy(exc, bound) if bound is not None else None
            if why is not None and not (conn.broken or conn.closed):
                raise StoreUnavailable(
                    f"the index database {self._location} is {why}; try again shortly"
                ) from exc
            if not (conn.broken or conn.closed):
                raise  # the statement failed, not the connection
            self._down.set()
            if cut(conn) and bound is not None:
                raise self._unavailable(f"no answer within {bound.client:g} s", lost=True) from exc
            raise self._unavailable(f"the connection was lost: {_cause(exc)}", lost=True) from exc
        finally:
            if other and not (conn.broken or conn.closed):
                with contextlib.suppress(psycopg.Error):
                    _apply(conn, READ)
            if pooled:
                self._pool.putconn(conn)
            else:
                conn.close()

    def _borrow(self) -> tuple[Conn, bool]:
        """A working connection and whether it is the pool's (else it is this loan's own, closed after).

        The wait is taken in slices, so a loan that learns meanwhile that the database is gone (a
        check that got no answer, another loan's failure) stops waiting for the pool and tries the
        database once itself.
        """
        started = time.monotonic()
        deadline = started + (DOWN_LOAN_SECONDS if self._down.is_set() else LOAN_SECONDS)
        while True:
            remaining = deadline - time.monotonic()
            try:
                conn = self._pool.getconn(timeout=max(0.01, min(LOAN_SLICE_SECONDS, remaining)))
            except PoolTimeout as exc:
                if self._down.is_set():
                    return self._own_connection(), False
                if time.monotonic() < deadline:
                    continue
                cause = self._attempts.last_failure
                if cause is None:
                    busy = time.monotonic() - started
                    raise self._unavailable(f"every connection stayed busy for {busy:.1f} s") from exc
                self._down.set()
                raise self._unavailable(cause) from exc
            self._down.clear()
            return conn, True

    def _own_connection(self) -> Conn:
        """A connection of the loan's own while the database is known to be gone: refused at once
        for as long as the last such attempt took, so a database that does not answer (each attempt
        waits ``connect_timeout``) costs a call one attempt, not one per read."""
        now = time.monotonic()
        if now < self._retry_at:
            raise self._unavailable(self._last_cause)
        try:
            own = self._connect()
        except psycopg.Error as failed:
            self._last_cause = _cause(failed)
            self._retry_at = time.monotonic() + (time.monotonic() - now)
            raise self._unavailable(self._last_cause) from failed
        self._down.clear()
        return own

    def _check(self, conn: Conn) -> None:
        """psycopg_pool's check of a pooled connection, within :data:`CHECK` rather than a read's
        bound: on a server that stopped answering, the check is what waits. One that got no answer
        marks the database gone, so the loans waiting for the pool stop waiting."""
        try:
            with deadlines.watching(conn, CHECK.client):
                ConnectionPool.check_connection(conn)
        except psycopg.Error:
            if cut(conn):
                self._last_cause = f"no answer within {CHECK.client:g} s"
                self._down.set()
            raise

    def _connect(self) -> Conn:
        conn = BoundedConnection.connect(self._url, **self._options)
        try:
            self._configure(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _configure_pooled(self, conn: Conn) -> None:
        """psycopg_pool's ``configure``: a connection the pool made, which counts as a success of
        its attempts only once it is set up (see :class:`_Attempts`)."""
        try:
            self._configure(conn)
        except psycopg.Error as exc:
            self._attempts.last_failure = _cause(exc)
            raise
        self._attempts.last_failure = None

    def _configure(self, conn: Conn) -> None:
        conn.execute(sql.SQL("SET search_path TO {}, {}").format(*map(sql.Identifier, self._search_path)))
        no_jit(conn)
        _apply(conn, READ)
        # pgvector reads its types through psycopg's TypeInfo.fetch, on a cursor of its own.
        with deadlines.watching(conn, READ.client):
            register_vector(conn)

    def _unavailable(self, cause: str, *, lost: bool = False) -> StoreUnavailable:
        what = "stopped answering" if lost else "cannot be reached"
        return StoreUnavailable(
            f"the index database {self._location} {what} ({cause}); kbseek reconnects by itself "
            "when the database is back, so try again shortly"
        )

    def _gave_up(self, pool: ConnectionPool[Conn]) -> None:
        log.warning(
            "the index database %s has not answered for %.0f s (%s); kbseek tries again at the next request",
            self._location, RECONNECT_SECONDS, self._attempts.last_failure or "no reason given",
        )  # fmt: skip

    def close(self) -> None:
        self._pool.close()


def _apply(conn: Conn, bound: Bound | None) -> None:
    """Hold ``conn``'s statements to ``bound``, on the server and from the client."""
    if isinstance(conn, BoundedConnection):
        conn.client_bound = bound.client if bound is not None else None
    settings = bound.settings() if bound is not None else {"statement_timeout": "0", "lock_timeout": "0"}
    conn.execute(
        "SELECT set_config('statement_timeout', %s, false), set_config('lock_timeout', %s, false)",
        (settings["statement_timeout"], settings["lock_timeout"]),
    )


def _cause(exc: BaseException) -> str:
    """libpq's reason in a few words: the first line of its message, without the generic preface.

    libpq's messages never quote the password (the URL may hold one, but the message names only
    the host or socket).
    """
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for preface in (
        "connection is bad: ",
        "connection failed: ",
        "consuming input failed: ",
        "sending query failed: ",
    ):
        text = text.removeprefix(preface)
    return text
