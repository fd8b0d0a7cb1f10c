"""An index in a PostgreSQL database shared by a team: :class:`PostgresStore`, a ``Store`` implementation.

Several kbseek servers can serve one index when it lives in PostgreSQL. Each knowledge base is a
schema of its own (``postgres_schema``); pgvector holds the vectors, and a postings table holds the
analyzed terms, from which the lexical leg computes the same BM25 that SQLite's FTS5 computes, so a
knowledge base ranks alike on either backend (docs/decisions/0030).

Connections come from a small pool, so any thread may read while another writes. Every read is one
statement: PostgreSQL gives a statement one snapshot of every table it reads, so a read never sees
half a transaction, and MVCC means it never waits for a writer. Writes go through
:meth:`PostgresStore.transaction`, serialised within the process by a lock and across processes by
an advisory lock on the knowledge base. The guarantees are the protocol's (``kbseek.store.base``);
this file says only how PostgreSQL keeps them.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import TupleRow

from kbseek.errors import IndexReadOnly, KbError, StoreUnavailable
from kbseek.filters import NO_FILTERS, SearchFilters
from kbseek.store.lock import PassLock
from kbseek.store.meta import META_PASSES
from kbseek.store.nearest import NearestVectors
from kbseek.store.postgres import lexical as postgres_lexical
from kbseek.store.postgres import vectors as postgres_vectors
from kbseek.store.postgres import warm as postgres_warm
from kbseek.store.postgres.deadline import BULK, READ, WRITE, Bound
from kbseek.store.postgres.filters import FACET_FIELDS, FACET_VALUES, NEWEST, filter_sql
from kbseek.store.postgres.listen import POLL_SECONDS, PassListener
from kbseek.store.postgres.lock import PostgresPassLock, lock_transaction
from kbseek.store.postgres.pool import Conn, Connections, setup_connection
from kbseek.store.postgres.reads import READS
from kbseek.store.postgres.schema import (
    LOCK_CLASS,
    display_url,
    extension_schema,
    lock_key,
    open_schema,
    schema_name,
    schema_version,
)
from kbseek.store.postgres.statistics import refresh_statistics
from kbseek.store.postgres.writer import PostgresWriter, from_bytes
from kbseek.store.reader import IndexReader, Row
from kbseek.store.records import (
    Counts,
    DocumentState,
    IndexMeta,
)
from kbseek.store.warming import Warmed, Warming

__all__ = ["PostgresStore"]

log = logging.getLogger(__name__)

REVIVE_SECONDS = 1.0
"""How often a knowledge base the database did not hold is looked for again (``holds_index``)."""

LOCK_WAIT_SECONDS = 10.0
"""How long a transaction waits for another process's to end before :class:`IndexLocked`: the
SQLite store's busy timeout. Transactions are one document each, so a pass that interleaves with
another process's waits milliseconds, and only a stuck writer is reported."""


class PostgresStore(IndexReader):
    """Open (creating if needed) knowledge base ``kb_name``'s index in the database at ``url``.

    With ``create=False`` nothing is created: a knowledge base the database does not hold yet reads
    as an empty index and refuses to write, so a command that only reads (``kbseek status``) can say
    "nothing indexed yet" without leaving a schema behind.
    """

    def __init__(
        self,
        url: str,
        kb_name: str,
        *,
        create: bool = True,
        max_connections: int = 4,
        lock_wait: float = LOCK_WAIT_SECONDS,
    ) -> None:
        self.schema = schema_name(kb_name)
        self._location = f"{display_url(url)} (schema {self.schema})"
        self._lock_key = lock_key(self.schema)
        self._lock_wait = lock_wait
        self._write_lock = threading.Lock()
        self._changed_in_pass = 0
        """Documents written or deleted by this pass's transactions so far (``postgres_statistics``)."""
        self._commits = 0
        """This process's own commits: with the writers' pass count, what says the counts moved."""
        self._counts: tuple[tuple[str | None, int], Counts] | None = None
        """The last counts, with the (pass count, own commits) they were read at (:meth:`counts`)."""
        self._application = f"kbseek pid {os.getpid()} on {socket.gethostname()}"[:63]
        self._absent = False
        self._url = url
        self._looked_at = time.monotonic()
        """When an absent knowledge base was last looked for (``_revive``)."""
        self._revive_lock = threading.Lock()
        self._pool: Connections | None = None
        self._listener = PassListener(url, self.schema, self._application)
        self.pass_lock: PassLock | None = PostgresPassLock(
            url, self.schema, application=self._application, location=self._location
        )
        """One writer per knowledge base, held for a whole pass (``kbseek.store.postgres.lock``)."""
        self._max_connections = max_connections
        search_path = self._set_up(url, create)
        if not self._absent:
            assert search_path is not None
            self._open_pool(search_path)

    def _open_pool(self, search_path: tuple[str, str]) -> None:
        self._pool = Connections(
            self._url, search_path, application=self._application, location=self._location,
            max_size=max(2, self._max_connections),  # a reader never waits for the writer's connection
        )  # fmt: skip

    def holds_index(self) -> bool:
        """Whether the database holds this knowledge base: a reader may be started before the
        writer's first pass, or on a mistyped name; it looks again at most once a second."""
        self._revive()
        return not self._absent

    def _revive(self) -> None:
        """An absent knowledge base that a writer has since created is opened, so a reader started
        first serves it without a restart."""
        if not self._absent or time.monotonic() - self._looked_at < REVIVE_SECONDS:
            return
        with self._revive_lock:
            if not self._absent or time.monotonic() - self._looked_at < REVIVE_SECONDS:
                return
            self._looked_at = time.monotonic()
            try:
                search_path = self._set_up(self._url, False)
            except KbError as exc:
                raise StoreUnavailable(str(exc)) from exc
            if search_path is not None:
                self._open_pool(search_path)  # before the flag: a reader that sees it finds the pool
                self._absent = False

    def _set_up(self, url: str, create: bool) -> tuple[str, str] | None:
        """Create or check the schema on a connection of its own; the ``search_path`` for the pool."""
        with setup_connection(url, application=self._application, location=self._location) as conn:
            if create:
                open_schema(conn, self.schema, location=self._location)
            elif schema_version(conn, self.schema, location=self._location) is None:
                self._absent = True
                return None
            ext = extension_schema(conn)
        return self.schema, ext or "public"

    @property
    def location(self) -> str:
        return self._location

    @property
    def warming(self) -> Warming:
        """A restarted database or a fresh copy holds none of the index in its buffers
        (``postgres_warm``)."""
        return self

    def warm(self) -> Warmed:
        """The search relations read into the server's buffers, ``pg_prewarm`` where it has it."""
        if self._absent:
            return Warmed(postgres_warm.PREWARM, (), 0, 0.0, 0.0)
        with self._reading(BULK) as conn:
            return postgres_warm.warm(conn)

    def close(self) -> None:
        self._listener.close()
        if self._pool is not None:
            self._pool.close()

    # -- connections -------------------------------------------------------------------------------

    @contextmanager
    def _reading(self, bound: Bound | None = READ) -> Iterator[Conn]:
        """A connection whose statements are held to ``bound``: a search's by default, ``BULK`` for
        reads of a whole table (``postgres_deadline``)."""
        assert self._pool is not None
        with self._pool.loan(bound) as conn:
            yield conn

    def _rows(
        self, query: str, params: Sequence[Any] | dict[str, Any] = (), *, bound: Bound = READ
    ) -> list[TupleRow]:
        """The rows of one statement: one snapshot, whatever it joins. An absent index has none."""
        if self._absent:
            return []
        with self._reading(bound) as conn:
            return conn.execute(query, params).fetchall()

    reads = READS

    @property
    def nearest(self) -> NearestVectors:
        """pgvector finds the nearest vectors in the database (docs/decisions/0032)."""
        return self

    def _read(self, sql: str, params: Sequence[Any] = (), *, bulk: bool = False) -> list[Row]:
        return self._rows(sql, params, bound=BULK if bulk else READ)

    def _read_vectors(self, sql: str, params: Sequence[Any] = (), *, bulk: bool = False) -> list[Row]:
        return self._vector_rows(sql, params, bound=BULK if bulk else READ)

    def _vector(self, value: Any) -> np.ndarray:
        vector: np.ndarray = value.to_numpy()
        return vector

    def _text(self, value: Any) -> str:
        return from_bytes(value)

    def _vector_rows(self, query: str, params: Sequence[Any], *, bound: Bound = READ) -> list[TupleRow]:
        """Like :meth:`_rows`, in binary: a vector arrives as its float4 bytes, never as decimal text."""
        if self._absent:
            return []
        with self._reading(bound) as conn, conn.cursor(binary=True) as cur:
            return cur.execute(query, params).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[PostgresWriter]:
        """One write transaction; rolled back on any exception (``BaseException`` included)."""
        if self._absent or self._pool is None:
            raise IndexReadOnly(
                f"the database holds no index for {self._location} and it was opened to read only; "
                "run `kbseek index` to build it"
            )
        with self._write_lock, self._pool.loan(WRITE) as conn:
            conn.execute("BEGIN")
            try:
                lock_transaction(conn, self._lock_key, wait=self._lock_wait, location=self._location)
                writer = PostgresWriter(conn)
                yield writer
                writer.finish()  # the statistics it moved, once per transaction
                self._changed_in_pass += writer.documents_changed
                if (
                    writer.pass_recorded
                ):  # the planner's statistics arrive with the pass (postgres_statistics)
                    refresh_statistics(conn, changed_documents=self._changed_in_pass)
                    self._changed_in_pass = 0
            except BaseException:
                try:
                    conn.execute("ROLLBACK")
                except psycopg.Error as exc:  # the connection is gone, and the transaction with it
                    log.warning("rolling back on %s failed: %s", self._location, exc)
                raise
            else:
                conn.execute("COMMIT")
                self._commits += 1

    # -- meta --------------------------------------------------------------------------------------

    def meta(self) -> IndexMeta:
        self._revive()
        return super().meta()

    def follow_mode(self) -> str:
        """How a reader learns of the writer's passes, in words for its status."""
        if self._listener.standby:
            return f"polling every {POLL_SECONDS:g} s: a standby sends no notifications"
        return f"notified by the database, and polling every {POLL_SECONDS:g} s"

    def wait_for_pass(self, seen: int, timeout: float) -> int:
        """Woken by the writer's ``NOTIFY``, and reading the counter at least every second whatever
        happens to notifications (a standby gets none): ``store.postgres.listen``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                passes = self.meta().passes
            except (psycopg.Error, StoreUnavailable):  # the database away: polled again until the deadline
                passes = seen
            remaining = deadline - time.monotonic()
            if passes != seen or remaining <= 0:
                return passes
            self._listener.wait(min(remaining, POLL_SECONDS))

    # -- documents ---------------------------------------------------------------------------------

    def counts(self) -> Counts:
        """Counted again only when the index moved: a pass ended (every writer's pass adds one to
        ``passes``), or this process committed. A count reads the whole table (about 10 ms at 140,000
        chunks) and a search asks three times (the summary, and the IDF of each coverage); reading
        the pass count is one row. Another writer's documents committed during its pass are counted
        at its end, as a reader's dense leg sees them then too."""
        marker_rows = self._rows("SELECT value FROM meta WHERE key = %s", (META_PASSES,))
        marker = (str(marker_rows[0][0]) if marker_rows else None, self._commits)
        cached = self._counts
        if cached is not None and cached[0] == marker:
            return cached[1]
        rows = self._rows("SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)")
        counted = Counts(int(rows[0][0]), int(rows[0][1])) if rows else Counts(0, 0)
        self._counts = (marker, counted)
        return counted

    def document_states(
        self, paths: Collection[str] | None = None, folders: Collection[str] = ()
    ) -> dict[str, DocumentState]:
        query = "SELECT id, path, size, mtime_ns, content_hash, parser FROM documents"
        params: list[object] = []
        if paths is not None:
            # One statement, so the paths and the folders are read in the same snapshot. A folder is
            # a range: "a/" ≤ path < "a0" ('0' follows '/'), in code-point order (COLLATE "C").
            wanted = sorted({p for p in paths if "\x00" not in p})
            clauses = ["path = ANY(%s::text[])"]
            params.append(wanted)
            for folder in folders:
                if "\x00" not in folder:
                    clauses.append("(path >= %s AND path < %s)")
                    params += [folder + "/", folder + "0"]
            query += " WHERE " + " OR ".join(clauses)
        return {str(r[1]): DocumentState(*r) for r in self._rows(query, params, bound=BULK)}

    # -- chunks ------------------------------------------------------------------------------------

    # -- lexical candidates ------------------------------------------------------------------------

    def lexical_candidates(
        self,
        terms: Sequence[str],
        *,
        limit: int,
        filters: SearchFilters = NO_FILTERS,
        complete: bool = True,
    ) -> list[tuple[int, float]]:
        """BM25 as FTS5 computes it, over the postings, bounded as SQLite bounds it (``postgres_lexical``).
        ``complete`` is accepted for the protocol; this store always completes the list.

        A term is a bound parameter, compared for equality with stored terms: nothing in it is ever
        syntax (T7). A term with a NUL in it, which text cannot hold, matches nothing (stored terms
        never hold one), as in FTS5, where NUL separates words.
        """
        if isinstance(terms, str):  # a string is a sequence of characters: never what a caller means
            raise TypeError("lexical_candidates takes analyzed terms, not a query string")
        searchable = [t for t in terms if "\x00" not in t]
        if not searchable or self._absent:
            return []
        params: dict[str, Any] = {}
        clauses = filter_sql(filters, params)
        with self._reading() as conn:
            return postgres_lexical.candidates(
                conn, searchable, limit=limit, filters=clauses, filter_params=params
            )

    def holds_japanese(self) -> bool:
        # A range over the terms' index (code-point order): one seek, whatever the size of the index.
        rows = self._rows(
            "SELECT 1 FROM postings WHERE term >= %s AND term <= %s LIMIT 1", ("\u3041", "\u9fff")
        )
        return bool(rows)

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """Read from the vocabulary the writer keeps: exact and current, so no cache is needed."""
        if self._absent:
            return {}
        with self._reading() as conn:
            return postgres_lexical.document_frequencies(conn, terms)

    def rows_matching_each_term(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, set[str]]:
        """The postings are the analyzer's output as given, so this is the index's own view of the
        chunk, without re-analyzing its text."""
        out: dict[int, set[str]] = {int(r): set() for r in rowids}
        wanted = sorted({t for t in terms if "\x00" not in t})
        if not wanted or not out:
            return out
        rows = self._rows(
            "SELECT chunk, term FROM postings WHERE term = ANY(%s::text[]) AND chunk = ANY(%s::bigint[])",
            (wanted, list(out)),
        )
        for rowid, term in rows:
            out[int(rowid)].add(str(term))
        return out

    def filtered_rowids(self, filters: SearchFilters) -> frozenset[int] | None:
        params: dict[str, Any] = {}
        clauses = filter_sql(filters, params)
        if not clauses:
            return None
        where = " AND ".join(clauses)
        rows = self._rows(
            f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {where}", params
        )
        return frozenset(int(r[0]) for r in rows)

    def newest_chunks(self, filters: SearchFilters, *, limit: int) -> list[int]:
        params: dict[str, Any] = {"limit": max(limit, 0)}
        clauses = filter_sql(filters, params)
        where = ("AND " + " AND ".join(clauses)) if clauses else ""
        return [int(r[0]) for r in self._rows(NEWEST.format(where=where), params)]

    def field_facets(self, *, fields: int, values: int) -> list[tuple[str, int, list[tuple[str, int]]]]:
        out: list[tuple[str, int, list[tuple[str, int]]]] = []
        for field, documents in self._rows(FACET_FIELDS, (max(fields, 0),), bound=BULK):
            common = self._rows(FACET_VALUES, (field, max(values, 0)), bound=BULK)
            out.append((str(field), int(documents), [(str(v), int(n)) for v, n in common]))
        return out

    # -- vectors -----------------------------------------------------------------------------------

    # -- nearest vectors in the database (nearest.NearestVectors; postgres_vectors, decision 0032) -----

    def nearest_vectors(
        self, query: np.ndarray, k: int, allowed: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        if self._absent:
            return []
        # The index's size as last counted (no statement), or counted now by a reader's first search
        counted = self._counts
        chunks = counted[1].chunks if counted is not None else self.counts().chunks
        breadth = postgres_vectors.breadth_for(chunks)
        with self._reading() as conn:
            return postgres_vectors.nearest(conn, query, k, allowed=allowed, ef_search=breadth)

    def build_vector_index(self, dim: int) -> bool:
        if self._absent:
            return False
        with self._reading(None) as conn:  # autocommit, outside any transaction; as long as it takes
            return postgres_vectors.build_index(conn, dim, (LOCK_CLASS, lock_key(self.schema + "_vectors")))
