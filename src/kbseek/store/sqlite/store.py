"""The one SQLite file that holds the index: :class:`SqliteStore`, the ``Store`` implementation.

WAL mode lets searches read while an indexing pass writes; each thread gets
its own connection because ``sqlite3`` connections must not be shared across
threads. Writes go through :meth:`SqliteStore.transaction`, one per document, so a
crash mid-pass never leaves half a document behind.

The module holds the connections and the reads that are SQLite's own (the keyword index over FTS5,
counting); the reads both backends share are ``store.reader``'s over the statements in ``reads``,
the writes ``store.writer``'s over ``writer``, and the table layout with its upgrade rules is in
``schema``. The guarantees are the protocol's (``kbseek.store.base``); this file says only how
SQLite keeps them.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from kbseek.errors import IndexLocked, KbBug
from kbseek.filters import NO_FILTERS, SearchFilters
from kbseek.store import lexical_bound
from kbseek.store.conventions import BM25_WEIGHTS
from kbseek.store.lexical_bound import rare_terms
from kbseek.store.lock import PassLock
from kbseek.store.nearest import NearestVectors
from kbseek.store.reader import IndexReader, Row
from kbseek.store.records import (
    Counts,
    DocumentState,
)
from kbseek.store.sqlite.filters import AllowedSet, SqliteFacts, register_functions
from kbseek.store.sqlite.fts_match import match_expression
from kbseek.store.sqlite.reads import READS, marks, parameters
from kbseek.store.sqlite.schema import create_private, is_busy, open_schema
from kbseek.store.sqlite.writer import SqliteWriter
from kbseek.store.warming import Warming

__all__ = ["SqliteStore"]

BATCH = 500
"""Ids per ``IN (…)`` list: well under SQLite's limit on bound parameters."""

PASS_POLL_SECONDS = 0.25
"""How often :meth:`SqliteStore.wait_for_pass` reads the pass counter: a reader sees another process's
pass within this (a read of one small table)."""

ALLOWED_AS_JSON = 20_000
"""Up to this many allowed chunks the full lexical query binds them (``json_each``); above it, it
reads the best rows overall and keeps the allowed ones first (``_bm25``)."""


DF_CACHE_SECONDS = 60.0
"""How long a term's document frequency is reused. ``chunks_vocab`` counts a term by reading its
whole posting list (about 20 ms a query at 140k chunks, half the lexical leg), and coverage only
weighs terms by rarity, which a minute of edits barely moves."""
DF_CACHE_TERMS = 100_000


class SqliteStore(IndexReader, SqliteFacts):
    """Open (creating if needed) the index at ``path``.

    With ``create=False`` a missing index is opened as an empty one held in memory, so a command
    that only reads (``kbseek status``) can say "nothing indexed yet" without leaving an index
    folder behind in the user's notes.
    """

    pass_lock: PassLock | None = None
    """No lock of its own: the lock file beside the index keeps a second writer out (``store.lock``)."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        self._memory = (
            None if create or path.exists() else f"file:kbseek-empty-{id(self)}?mode=memory&cache=shared"
        )
        if create:
            create_private(path)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._commits = 0
        self._df: dict[str, int] = {}
        self._df_since = time.monotonic()
        self._open_schema_waiting()

    @property
    def location(self) -> str:
        return str(self.path)

    # -- connections -------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._memory or self.path, timeout=10.0, isolation_level=None, check_same_thread=False,
            uri=self._memory is not None,
        )  # fmt: skip
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=10000")
        register_functions(conn)
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    reads = READS
    nearest: NearestVectors | None = None
    """The dense leg searches the vectors it loaded: SQLite finds no nearest vectors itself."""
    warming: Warming | None = None
    """Nothing to warm: the operating system caches the file, and the dense leg loads its vectors."""

    def _read(self, sql: str, params: Sequence[Any] = (), *, bulk: bool = False) -> list[Row]:
        return self.conn.execute(sql, parameters(params)).fetchall()

    _read_vectors = _read

    def _vector(self, value: Any) -> np.ndarray:
        return np.frombuffer(value, dtype="<f4")

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection. SQLite's own, for this module and SQLite-specific tests and tools;
        search and ingest hold a ``Store`` and never see it."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def close(self) -> None:
        with self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    @contextmanager
    def transaction(self) -> Iterator[SqliteWriter]:
        """One write transaction; rolled back on any exception (``BaseException`` included)."""
        conn = self.conn
        with self._write_lock:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if is_busy(exc):
                    raise IndexLocked(
                        f"the index {self.path} is being written by another kbseek process; "
                        "wait for it to finish or stop it"
                    ) from exc
                raise
            try:
                yield SqliteWriter(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")
            finally:
                self._commits += 1  # this connection's own commits leave its data_version as it was

    def _open_schema_waiting(self, patience: float = 10.0) -> None:
        """Open the schema, waiting out another process that is creating the same index file.

        Two processes that open a new index at once race on switching it to WAL and creating the
        tables; SQLite answers the loser "database is locked" at once, without its busy handler,
        to avoid a deadlock. That loser is not looking at a foreign file, so it waits and tries again.
        """
        deadline = time.monotonic() + patience
        while True:
            try:
                open_schema(self.conn, self.path)
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() > deadline:
                    raise IndexLocked(
                        f"the index {self.path} is being set up by another kbseek process ({exc}); "
                        "wait for it to finish or stop it"
                    ) from exc
                self.close()
                time.sleep(0.05)

    # -- meta --------------------------------------------------------------------------------------

    def holds_index(self) -> bool:
        return self._memory is None or self.path.exists()

    def follow_mode(self) -> str:
        return f"reading the index every {PASS_POLL_SECONDS:g} s"

    def wait_for_pass(self, seen: int, timeout: float) -> int:
        """SQLite tells no other process of a commit, so the counter is read a few times a second."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                passes = self.meta().passes
            except sqlite3.Error:
                passes = seen
            if passes != seen or time.monotonic() >= deadline:
                return passes
            time.sleep(min(PASS_POLL_SECONDS, max(0.0, deadline - time.monotonic())))

    # -- documents ---------------------------------------------------------------------------------

    def _version(self) -> tuple[int, int]:
        """What changes when the index does: ``PRAGMA data_version`` moves when another connection
        commits, and this store's own commits are counted in ``_commits``."""
        return (self.conn.execute("PRAGMA data_version").fetchone()[0], self._commits)

    def counts(self) -> Counts:
        """Counted again only after a commit (:meth:`_version`): a count reads a whole index (7 ms at
        140k chunks), and a search asks for it twice."""
        conn = self.conn
        version = self._version()
        cached: tuple[object, Counts] | None = getattr(self._local, "counts", None)
        if cached is not None and cached[0] == version:
            return cached[1]
        docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        counted = Counts(int(docs), int(chunks))
        self._local.counts = (version, counted)
        return counted

    def document_states(
        self, paths: Collection[str] | None = None, folders: Collection[str] = ()
    ) -> dict[str, DocumentState]:
        sql = "SELECT id, path, size, mtime_ns, content_hash, parser FROM documents"
        if paths is None:
            return {r[1]: DocumentState(*r) for r in self.conn.execute(sql)}
        out: dict[str, DocumentState] = {}
        for part in _batches(sorted(set(paths))):
            out.update(
                (r[1], DocumentState(*r))
                for r in self.conn.execute(f"{sql} WHERE path IN ({marks(part)})", part)
            )
        for folder in folders:  # "a/" ≤ path < "a0": '0' follows '/', so this is the prefix as a range
            rows = self.conn.execute(f"{sql} WHERE path >= ? AND path < ?", (folder + "/", folder + "0"))
            out.update((r[1], DocumentState(*r)) for r in rows)
        return out

    # -- chunks ------------------------------------------------------------------------------------

    # -- lexical candidates ------------------------------------------------------------------------

    def lexical_candidates(
        self, terms: Sequence[str], *, limit: int, filters: SearchFilters = NO_FILTERS, complete: bool = True
    ) -> list[tuple[int, float]]:
        if isinstance(terms, str):  # a string is a sequence of characters: never what a caller means
            raise TypeError("lexical_candidates takes analyzed terms, not a query string")
        expression = match_expression(terms)
        if expression is None:
            return []
        allowed = self._allowed(filters)
        if allowed is not None and not allowed.rowids:
            return []
        budget = lexical_bound.LEXICAL_POSTINGS_BUDGET
        rare = None if budget is None else rare_terms(self._postings(terms, budget), budget, least=limit)
        if rare is not None:
            scored = self._weighty(terms, rare)
            rows = self._bm25_among(rare, scored, limit=limit, allowed=allowed)
            if len(rows) >= limit or (allowed is not None and not complete):
                return rows
            # Fewer than ``limit`` chunks hold a rare term: the full query's tail is made of chunks
            # holding only common ones, and the bounded query cannot rank those. Run it whole.
        return self._bm25(expression, limit=limit, allowed=allowed)

    def _weighty(self, terms: Sequence[str], rare: Sequence[str]) -> list[str]:
        """The terms a bounded query scores with: all but those most chunks hold.

        FTS5 weighs each term of a MATCH by its IDF, and to know it reads the term's whole posting
        list, for every query: at 140k chunks the words most chunks hold (``the``, ``of``, ``is``)
        made up most of the slowest bounded queries' time. Yet FTS5's BM25 clamps the IDF of a term
        held by half the rows or more to 1e-6, so such a term adds nothing to any score; it is left
        out (docs/decisions/0016). The counts may be a minute old, which only matters for a term
        crossing the half in that minute, where its IDF is near zero anyway.
        """
        if lexical_bound.NEGLIGIBLE_SHARE >= 1.0:
            return list(terms)
        _, total = self.counts()
        df = self.document_frequencies(terms)
        keep = set(rare)
        return [t for t in terms if t in keep or df.get(t, 0) < lexical_bound.NEGLIGIBLE_SHARE * total]

    def _postings(self, terms: Sequence[str], budget: int) -> dict[str, int]:
        """How many chunks hold each term, counted only as far as :func:`rare_terms` needs.

        Each count stops at a cap, so the cost is bounded however common the term (``chunks_vocab``
        would read a common term's whole posting list for its exact count). The cap is what is left
        of :data:`lexical_bound.FULL_QUERY_POSTINGS` (so the counts add up to at most that exactly when the true
        ones do), and never below ``budget + 1`` (so a count within ``budget`` is exact).
        """
        out: dict[str, int] = {}
        left = lexical_bound.FULL_QUERY_POSTINGS + 1
        sql = "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)"
        for term in dict.fromkeys(terms):
            expression = match_expression([term])
            assert expression is not None
            out[term] = int(self.conn.execute(sql, (expression, max(left, budget + 1))).fetchone()[0])
            left -= out[term]
        return out

    def _bm25_among(
        self,
        rare: Sequence[str],
        terms: Sequence[str],
        *,
        limit: int,
        allowed: AllowedSet | None,
    ) -> list[tuple[int, float]]:
        """The chunks holding any of ``rare``, scored by BM25 over all of ``terms``, best first.

        FTS5 has no optional terms, so the score is taken as a difference. ``(R) AND (R OR C)``
        matches exactly the chunks holding a rare term (the AND walks the common posting lists only
        to the rows the rare ones name) and BM25, a sum over the phrases of the expression, scores
        it as ``2·R + C``; the rare query ``R`` alone scores ``R``; ``2·R + C − R`` is the full
        query's score of that chunk, to rounding. Both scans touch only the rare terms' rows.
        """
        rare_expression, all_expression = match_expression(rare), match_expression(terms)
        assert rare_expression is not None and all_expression is not None
        bm25 = f"bm25(chunks_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]})"
        params: list[object] = [rare_expression, f"({rare_expression}) AND ({all_expression})"]
        sql = [
            f"WITH r AS MATERIALIZED (SELECT rowid AS id, {bm25} AS s FROM chunks_fts WHERE chunks_fts MATCH ?),"
            f" a AS (SELECT rowid AS id, {bm25} AS s FROM chunks_fts WHERE chunks_fts MATCH ?)"
            " SELECT a.id, r.s - a.s AS score FROM a JOIN r ON r.id = a.id"
        ]
        if allowed is None:
            return self._best_scored(sql, params, limit)
        # The rare terms' rows are few (their postings are the bound): kept when allowed, in Python.
        rows = self._best_scored(sql, params, -1)
        return [row for row in rows if row[0] in allowed.rowids][:limit]

    def _bm25(self, expression: str, *, limit: int, allowed: AllowedSet | None) -> list[tuple[int, float]]:
        """(chunk rowid, BM25 score, higher is better) for a compiled FTS5 expression.

        With ``allowed``, the MATCH is materialised first and its rows kept when allowed: given a
        ``rowid IN (…)`` beside MATCH, FTS5 evaluates the whole expression again for each rowid
        (about a millisecond each at 140k chunks). A wide filter first reads the best rows overall,
        about twice as many as it should keep, and keeps the allowed ones in Python, which costs less
        than binding tens of thousands of rowids; too few kept, they are bound."""
        bm25 = f"-bm25(chunks_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]})"
        plain = [f"SELECT chunks_fts.rowid, {bm25} AS score FROM chunks_fts WHERE chunks_fts MATCH ?"]
        if allowed is None:
            return self._best_scored(plain, [expression], limit)
        if len(allowed.rowids) > ALLOWED_AS_JSON:
            _, total = self.counts()
            wider = min(limit * 2 * -(-total // len(allowed.rowids)), lexical_bound.FULL_QUERY_POSTINGS)
            best = self._best_scored(plain, [expression], wider)
            kept = [row for row in best if row[0] in allowed.rowids]
            if len(kept) >= limit or len(best) < wider:
                return kept[:limit]
        sql = [
            f"WITH m AS MATERIALIZED (SELECT rowid AS id, {bm25} AS score FROM chunks_fts WHERE chunks_fts MATCH ?)"
            " SELECT id, score FROM m WHERE id IN (SELECT value FROM json_each(?))"
        ]
        return self._best_scored(sql, [expression, allowed.json], limit)

    def _best_scored(self, sql: list[str], params: list[object], limit: int) -> list[tuple[int, float]]:
        """Run a lexical query that selects ``(rowid, score)``: best ``limit`` first.

        FTS5 rejects some expressions only when it runs them, and the compiler should never produce
        one, so a rejection is a bug of ours, not bad input.
        """
        sql = [*sql, "ORDER BY score DESC LIMIT ?"]
        try:
            rows = self.conn.execute(" ".join(sql), [*params, limit]).fetchall()
        except sqlite3.OperationalError as exc:
            raise KbBug(f"the lexical engine rejected a compiled query ({exc})") from exc
        return [(int(r[0]), float(r[1])) for r in rows]

    def holds_japanese(self) -> bool:
        # A range over the vocabulary's terms: two index seeks, whatever the size of the index.
        row = self.conn.execute(
            "SELECT 1 FROM chunks_vocab WHERE term >= ? AND term <= ? LIMIT 1", ("\u3041", "\u9fff")
        ).fetchone()
        return row is not None

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        if not terms:
            return {}
        now = time.monotonic()
        if now - self._df_since > DF_CACHE_SECONDS or len(self._df) > DF_CACHE_TERMS:
            self._df, self._df_since = {}, now  # a new dict: a reader on another thread keeps the old one
        cache = self._df
        missing = [t for t in dict.fromkeys(terms) if t not in cache]
        if missing:
            # Only terms the index holds are kept: a term it lacks is asked again, so a word just
            # written into a note is found at once (an absent name makes a search low-confidence).
            rows = self.conn.execute(
                f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks(missing)})", missing
            )
            cache.update((r[0], int(r[1])) for r in rows if int(r[1]) > 0)
        return {t: cache[t] for t in terms if cache.get(t)}

    def rows_matching_each_term(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, set[str]]:
        """The FTS table keeps the analyzer's output as space-separated terms, so this is
        the index's own view of the chunk, without re-analyzing its text."""
        wanted = set(terms)
        out: dict[int, set[str]] = {r: set() for r in rowids}
        for part in _batches(rowids):
            sql = f"SELECT rowid, heading, body FROM chunks_fts WHERE rowid IN ({marks(part)})"
            for rowid, heading, body in self.conn.execute(sql, part):
                out[int(rowid)] = wanted.intersection([*heading.split(), *body.split()])
        return out

    # -- vectors -----------------------------------------------------------------------------------


def _batches(ids: Sequence[Any]) -> Iterator[list[Any]]:
    for i in range(0, len(ids), BATCH):
        yield list(ids[i : i + BATCH])
