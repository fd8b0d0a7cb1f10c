"""Connections to the index database for :class:`~kbseek.store.postgres.PostgresStore`.

The store's queries and transactions borrow a connection from here and never see the pool: how
connections are made, checked and replaced, and how a failure to connect reads to the person who
runs kbseek, is this module's business alone (docs/decisions/0030).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

from kbseek.errors import ConfigError

__all__ = ["Conn", "Connections", "setup_connection"]

Conn = psycopg.Connection[TupleRow]


@contextmanager
def setup_connection(url: str, *, application: str, location: str) -> Iterator[Conn]:
    """A connection of its own for creating or checking the schema, before the pool exists.

    Connection failures become a :class:`ConfigError` naming the database without its password:
    a wrong URL or a server that is down is the setup's fault, not kbseek's.
    """
    try:
        with psycopg.connect(url, autocommit=True, application_name=application) as conn:
            yield conn
    except psycopg.OperationalError as exc:  # libpq's messages never quote the password
        raise ConfigError(
            f"cannot connect to the index database {location}: {str(exc).strip()}; "
            "check the URL and that the server is running"
        ) from exc
    except psycopg.ProgrammingError:
        # libpq's complaint about a malformed string quotes a piece of it, which may be the
        # password: it is neither repeated nor chained.
        raise ConfigError(
            "the index database URL is not a PostgreSQL connection string; write it as "
            "postgresql://user:password@host:port/database"
        ) from None


class Connections:
    """The pool one store reads and writes through, each connection set to its schema."""

    def __init__(
        self, url: str, search_path: tuple[str, str], *, application: str, location: str, max_size: int
    ) -> None:
        self._location = location

        def configure(conn: Conn) -> None:
            conn.execute(sql.SQL("SET search_path TO {}, {}").format(*map(sql.Identifier, search_path)))
            register_vector(conn)

        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, "application_name": application},
            configure=configure,
            # A server restart or a dropped network leaves dead connections in the pool; checked
            # before each loan (one round trip), they are replaced instead of failing a search.
            check=ConnectionPool.check_connection,
            name=f"kbseek-{search_path[0]}",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=30.0)
        except PoolTimeout as exc:
            self._pool.close()
            raise ConfigError(f"cannot keep connections to {location} open ({exc})") from exc

    @contextmanager
    def loan(self) -> Iterator[Conn]:
        """A connection for one statement or one transaction, back to the pool when done."""
        with self._pool.connection() as conn:
            yield conn

    def close(self) -> None:
        self._pool.close()
