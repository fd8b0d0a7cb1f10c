"""The search filters (``kbseek.filters``) as SQLite conditions, and the dated listings built on them.

Every condition is on the documents table as ``d``, so each leg adds them to its own query: the
lexical leg joins chunks to documents only when a filter is set, the dense leg reads the allowed
chunk ids once (``filtered_rowids``). The PostgreSQL twin (``store/postgres/filters.py``) must give
the same documents for the same filters; ``tests/unit/test_store_filters.py`` holds them to it.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from kbseek.errors import InvalidArgument
from kbseek.filters import SearchFilters
from kbseek.folding import ascii_lower
from kbseek.globs import GlobMatcher, path_forms
from kbseek.store.sqlite.reads import marks


def register_functions(conn: sqlite3.Connection) -> None:
    """``kbseek_glob(glob, path)``: whether a path matches a kept glob (``kbseek.globs``), in time
    linear in the path whatever the glob, where a backtracking regular expression was exponential."""
    conn.create_function("kbseek_glob", 2, _glob_matches, deterministic=True)


@functools.lru_cache(maxsize=256)
def _matcher(glob: str) -> GlobMatcher:
    return GlobMatcher(glob)


def _glob_matches(glob: str, path: str | None) -> bool:
    return path is not None and _matcher(glob).matches(ascii_lower(path))


def filter_sql(filters: SearchFilters, params: list[object]) -> list[str]:
    """SQL conditions (to be AND-ed) on ``d`` for the search filters; appends their parameters.

    Dates and fields are uncorrelated subqueries: SQLite runs each once, through its index, into a
    set that every document then probes once, where a correlated ``EXISTS`` would look up each
    document once per listed value (fifty values, fifty lookups a document).
    """
    clauses: list[str] = []
    if filters.path_prefix:
        either = []
        for form in path_forms(filters.path_prefix):
            escaped = form.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            either.append("d.path LIKE ? ESCAPE '\\'")
            params.append(escaped + "%")
        clauses.append("(" + " OR ".join(either) + ")")
    if filters.path_globs:
        # LIKE first, natively: a pattern every path matching the glob matches, so the matcher
        # (a Python call a row) runs only on the paths that may match. LIKE folds ASCII letters,
        # as the glob was folded; each Unicode normal form of the glob has its own LIKE.
        either = []
        for glob in filters.path_globs:
            likes = [glob_like(form) for form in path_forms(glob)]
            either.append(
                "(("
                + " OR ".join("d.path LIKE ? ESCAPE '\\'" for _ in likes)
                + ") AND kbseek_glob(?, d.path))"
            )
            params.extend((*likes, glob))
        clauses.append("(" + " OR ".join(either) + ")")
    if filters.types:
        clauses.append(f"d.parser IN ({marks(filters.types)})")
        params.extend(filters.types)
    for tag in filters.tags:
        clauses.append("EXISTS (SELECT 1 FROM json_each(d.tags) WHERE lower(json_each.value) = lower(?))")
        params.append(tag)
    if filters.tags_any:
        wanted = ",".join("lower(?)" for _ in filters.tags_any)
        clauses.append(f"EXISTS (SELECT 1 FROM json_each(d.tags) WHERE lower(json_each.value) IN ({wanted}))")
        params.extend(filters.tags_any)
    if filters.after or filters.before:
        bounds = []
        if filters.after:
            bounds.append("day >= ?")
            params.append(filters.after)
        if filters.before:
            bounds.append("day <= ?")
            params.append(filters.before)
        clauses.append(f"d.id IN (SELECT document FROM document_dates WHERE {' AND '.join(bounds)})")
    for condition in filters.where:
        sql = "SELECT document FROM document_fields WHERE field = ?"
        params.append(condition.field)
        if condition.values:
            sql += f" AND value IN ({marks(condition.values)})"
            params.extend(condition.values)
        clauses.append(f"d.id {'' if condition.exists else 'NOT '}IN ({sql})")
    return clauses


def glob_like(glob: str) -> str:
    """A ``LIKE`` pattern (escape ``\\``) that every path matching ``glob`` matches: ``**/`` and each
    other wildcard become ``%`` or ``_``, a literal ``%``, ``_`` or ``\\`` is escaped. A superset of
    the glob (``*`` may cross folders here), which the glob's matcher then decides exactly."""
    if "/" not in glob.rstrip("/"):
        glob = "**/" + glob
    out: list[str] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        step = 3 if glob.startswith("**/", i) else 1  # "**/" may match nothing, slash included
        if char == "*":
            if not out or out[-1] != "%":
                out.append("%")
        elif char == "?":  # one character, and the combining marks a decomposed name puts after it
            out.append("_%")
        elif char in "%_\\":
            out.append("\\" + char)
        else:
            out.append(char)
        i += step
    return "".join(out) + ("%" if glob.endswith("/") else "")


FEW_DOCUMENTS = 2_000
"""Up to this many passing documents their chunks are looked up by the chunks' index; past it, in
the map of every chunk's document (``chunk_documents``), read once per index state."""


def passing_chunks(
    conn: sqlite3.Connection, filters: SearchFilters, chunk_documents: Callable[[], tuple[Ids, Ids]]
) -> AllowedSet:
    """The chunks of the documents passing ``filters``.

    The documents are found first: the field and date conditions each through their own index, as
    one ``group_concat`` (a row of text, not a Python row per document), the others by reading the
    documents table once. Few documents: their chunks through the chunks' index. Many: half of
    140,000 chunks took 70 ms of index lookups, so they are picked from the map of every chunk's
    document instead, in NumPy (a few ms, after the map's one read per index state)."""
    documents = passing_documents(conn, filters)
    if len(documents) <= FEW_DOCUMENTS:
        sql = "SELECT group_concat(id) FROM chunks WHERE document_id IN (SELECT value FROM json_each(?))"
        row = conn.execute(sql, ("[" + ",".join(map(str, documents.tolist())) + "]",)).fetchone()
        return AllowedSet(frozenset(_ids(row[0]).tolist()))
    chunk_ids, owners = chunk_documents()
    return AllowedSet(frozenset(chunk_ids[np.isin(owners, documents)].tolist()))


Ids = npt.NDArray[np.int64]


def _ids(joined: str | None) -> Ids:
    """The integers of a ``group_concat``, which is NULL when it joined nothing."""
    return np.array(joined.split(","), dtype=np.int64) if joined else np.empty(0, dtype=np.int64)


FILTER_BUDGET_S = 3.0
"""How long the filters of one search may take to check against the documents, as PostgreSQL's
reads are bounded (``postgres_deadline.READ``). Every filter is linear in the documents, so this
is reached only by many globs over a very large knowledge base; the search is then refused."""


@contextmanager
def within_budget(conn: sqlite3.Connection, seconds: float | None = None) -> Iterator[None]:
    """Interrupt the statements run inside once ``seconds`` (:data:`FILTER_BUDGET_S`) have passed,
    and refuse the search in words: one call must never hold a connection, and the caller can
    narrow what it asked for. SQLite calls the handler every few thousand instructions."""
    budget = FILTER_BUDGET_S if seconds is None else seconds
    deadline = time.monotonic() + budget
    conn.set_progress_handler(lambda: time.monotonic() > deadline, 4000)
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "interrupted" not in str(exc):
            raise
        raise InvalidArgument(
            f"the filters took more than {budget:g} s to check against the documents; narrow "
            "them: a path_prefix, or fewer globs with fewer wildcards"
        ) from None
    finally:
        conn.set_progress_handler(None, 0)


def passing_documents(conn: sqlite3.Connection, filters: SearchFilters) -> Ids:
    """The ids of the documents passing ``filters``, ascending, within :data:`FILTER_BUDGET_S`."""
    with within_budget(conn):
        return _passing_documents(conn, filters)


def _passing_documents(conn: sqlite3.Connection, filters: SearchFilters) -> Ids:
    found: list[Ids] = []
    excluded: list[Ids] = []
    for condition in filters.where:
        sql = "SELECT group_concat(document) FROM document_fields WHERE field = ?"
        params: list[object] = [condition.field]
        if condition.values:
            sql += f" AND value IN ({marks(condition.values)})"
            params.extend(condition.values)
        ids = np.unique(_ids(conn.execute(sql, params).fetchone()[0]))
        (found if condition.exists else excluded).append(ids)
    if filters.after or filters.before:
        sql = "SELECT group_concat(document) FROM document_dates WHERE day >= ? AND day <= ?"
        found.append(
            np.unique(
                _ids(conn.execute(sql, (filters.after or "", filters.before or "\uffff")).fetchone()[0])
            )
        )
    rest = replace(filters, after=None, before=None, where=())
    if rest.narrows or not found:
        params = []
        clauses = filter_sql(rest, params) or ["1"]
        sql = f"SELECT group_concat(d.id) FROM documents d WHERE {' AND '.join(clauses)}"
        found.append(np.unique(_ids(conn.execute(sql, params).fetchone()[0])))
    documents = functools.reduce(lambda a, b: np.intersect1d(a, b, assume_unique=True), found)
    for ids in excluded:
        documents = np.setdiff1d(documents, ids, assume_unique=True)
    return documents


def chunk_documents(conn: sqlite3.Connection) -> tuple[Ids, Ids]:
    """Every chunk's rowid and its document's id, as two arrays (``passing_chunks``)."""
    row = conn.execute("SELECT group_concat(id), group_concat(document_id) FROM chunks").fetchone()
    return _ids(row[0]), _ids(row[1])


ALLOWED_CACHED = 8
"""Filters whose passing chunks a thread keeps for the index's current state (``_allowed``)."""


class SqliteFacts:
    """What the filters ask of the index (``Store.filtered_rowids``) and the reads of each
    document's date and front-matter fields (``newest_chunks``, ``has_field``, ``field_facets``,
    ``date_sources``): a mixin of ``SqliteStore``, which provides ``conn`` and a thread's cache,
    kept here beside the filters' SQL."""

    if TYPE_CHECKING:
        _local: threading.local

        @property
        def conn(self) -> sqlite3.Connection: ...

        def _version(self) -> tuple[int, int]: ...

    def filtered_rowids(self, filters: SearchFilters) -> frozenset[int] | None:
        allowed = self._allowed(filters)
        return None if allowed is None else allowed.rowids

    def _allowed(self, filters: SearchFilters) -> AllowedSet | None:
        """The chunks passing ``filters``, read once per filter and index state and kept for this
        thread: a search asks for them in every lexical query and in the dense leg, and an agent
        often narrows several searches the same way. ``None`` when the filters narrow nothing."""
        if not filters.narrows:
            return None
        version = self._version()
        cached: tuple[object, dict[SearchFilters, AllowedSet]] | None = getattr(self._local, "allowed", None)
        if cached is None or cached[0] != version:
            cached = (version, {})
            self._local.allowed = cached
        found = cached[1].get(filters)
        if found is None:
            found = passing_chunks(self.conn, filters, self._chunk_documents)
            if len(cached[1]) >= ALLOWED_CACHED:
                cached[1].clear()
            cached[1][filters] = found
        return found

    def _chunk_documents(self) -> tuple[Ids, Ids]:
        """``chunk_documents`` for the index's current state, kept for this thread."""
        version = self._version()
        cached: tuple[object, tuple[Ids, Ids]] | None = getattr(self._local, "chunk_documents", None)
        if cached is None or cached[0] != version:
            cached = (version, chunk_documents(self.conn))
            self._local.chunk_documents = cached
        return cached[1]

    def newest_chunks(self, filters: SearchFilters, *, limit: int) -> list[int]:
        return newest_chunks(self.conn, filters, limit)

    def field_facets(self, *, fields: int, values: int) -> list[tuple[str, int, list[tuple[str, int]]]]:
        return field_facets(self.conn, fields, values)


def newest_chunks(conn: sqlite3.Connection, filters: SearchFilters, limit: int) -> list[int]:
    """``Store.newest_chunks``: walks the dates newest first, so a listing reads ``limit`` documents
    and their first chunks, not the whole table, when the filters pass most documents."""
    params: list[object] = []
    clauses = filter_sql(filters, params)
    where = ("AND " + " AND ".join(clauses)) if clauses else ""
    sql = (
        "SELECT (SELECT c.id FROM chunks c WHERE c.document_id = d.id ORDER BY c.ordinal LIMIT 1) AS first"
        " FROM document_dates x JOIN documents d ON d.id = x.document"
        f" WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id) {where}"
        " ORDER BY x.day DESC, d.mtime_ns DESC, d.path LIMIT ?"
    )
    with within_budget(conn):
        return [int(r[0]) for r in conn.execute(sql, [*params, max(limit, 0)])]


def field_facets(
    conn: sqlite3.Connection, fields: int, values: int
) -> list[tuple[str, int, list[tuple[str, int]]]]:
    """``Store.field_facets``."""
    top = conn.execute(
        "SELECT field, count(DISTINCT document) AS n FROM document_fields GROUP BY field"
        " ORDER BY n DESC, field LIMIT ?",
        (max(fields, 0),),
    ).fetchall()
    out: list[tuple[str, int, list[tuple[str, int]]]] = []
    for field, documents in top:
        common = conn.execute(
            "SELECT value, count(*) AS n FROM document_fields WHERE field = ? GROUP BY value"
            " ORDER BY n DESC, value LIMIT ?",
            (field, max(values, 0)),
        ).fetchall()
        out.append((str(field), int(documents), [(str(v), int(n)) for v, n in common]))
    return out


class AllowedSet:
    """The chunk rowids narrow filters pass, as a frozen set (the dense leg, and ``filtered_rowids``)
    and as the JSON array the full lexical query binds (``rowid IN (SELECT value FROM json_each(?))``:
    one parameter however many rows). Shared between searches, so it cannot be changed: a cache keyed
    on the set (the graph's scanned rows, ``search/ann.py``) can trust that the same object holds the
    same rows."""

    __slots__ = ("_json", "rowids")

    def __init__(self, rowids: frozenset[int]) -> None:
        self.rowids = rowids
        self._json: str | None = None

    @property
    def json(self) -> str:
        if self._json is None:
            self._json = "[" + ",".join(map(str, self.rowids)) + "]"
        return self._json
