"""Nearest chunk vectors found inside PostgreSQL: exact by a scan, approximate by a pgvector HNSW index.

A reader on another machine serves from the database alone (docs/decisions/0032): it holds no
vectors and builds no graph, because the database answers "the k nearest chunks" itself. These are
the statements, as functions of a connection; ``postgres.PostgresStore`` lends the connection.

The ``embeddings`` column has no fixed dimension (docs/decisions/0030), and pgvector indexes only a
typed column, so the index is an expression index on ``vector::halfvec(d)`` (half the size;
decision 0045; ``vector::vector(d)`` where an earlier kbseek built one, or pgvector is older than
0.7.0), partial on ``vector_dims(vector) = d``. The predicate keeps an insert of another dimension
(a new model after ``clear_vectors``) from evaluating a cast that would fail; the old index then
simply holds nothing and is dropped when the next one is built. A query names the same expression
and predicate, with ``d`` written into the statement (never a parameter: a generic plan could not
match the predicate), so the planner picks the index, and only the one :func:`usable_index` finds
valid.

Vectors are keyed by content hash and several chunks may share one: the index finds hashes, a join
turns them into chunk rowids, and only hashes some chunk (an allowed one, with a filter) still uses
are taken, so an orphan vector awaiting ``prune`` never takes a place in the top k.

What the statements use depends on the installed pgvector (``postgres_schema``: the minimum and
what each later version adds): the HNSW index from 0.5.0, which every open store has; iterative
index scans only from 0.8.0 (:func:`nearest` says what happens before).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from pgvector import Vector
from psycopg.rows import TupleRow

from kbseek.store.postgres import schema as postgres_schema
from kbseek.store.postgres.schema import (
    PGVECTOR_HALFVEC,
    PGVECTOR_ITERATIVE_SCAN,
    PGVECTOR_MINIMUM,
    PgvectorVersion,
)

Conn = psycopg.Connection[TupleRow]

log = logging.getLogger(__name__)

INDEX_PREFIX = "embeddings_hnsw_"
"""Every approximate index is named this plus its dimension (and ``_half`` for a ``halfvec`` one), so
one of another dimension or kind is found."""

HALF_SUFFIX = "_half"

HNSW_M = 24
HNSW_EF_CONSTRUCTION = 100
"""The graph's shape, measured with ``benchmarks/pg_vectors.py`` (decision 0045): at 250,000 vectors
pgvector's defaults (16, 64) reach recall@10 0.95 only at ``ef_search`` 400, this one at 200."""

EF_SEARCH = 200
"""Breadth of a query's search in the graph (never below the number asked for): measured for
recall@10 >= 0.95 against exact search (decision 0045)."""

EF_SEARCH_LARGE = 400
"""The breadth past :data:`LARGE` vectors, where recall at 200 falls (decision 0045: 0.968 at
250,000, 0.947 at 500,000, 0.852 at a million; at 400: 0.981 at 500,000, 0.925 at a million)."""

LARGE = 400_000


def breadth_for(vectors: int) -> int:
    """``hnsw.ef_search`` for an index of about ``vectors`` (the chunks the store last counted)."""
    return EF_SEARCH if vectors <= LARGE else EF_SEARCH_LARGE


EF_SEARCH_DEFAULT_SHAPE = 400
"""The breadth for an index built with pgvector's default shape by an earlier kbseek (decision 0032),
until the writer builds the current one."""

EF_SEARCH_MAX = 1_000
"""pgvector's upper bound for ``hnsw.ef_search``."""

EXACT_FILTER_MAX = 10_000
"""A filter allowing at most this many chunks is answered exactly over those chunks (their vectors
found by primary key); a larger one scans the graph iteratively, keeping allowed chunks only."""

MAX_SCAN_TUPLES = 40_000
"""How many graph entries one iterative scan may visit before it gives up; a filtered search that
found fewer than it asked for is then answered exactly over the allowed chunks."""

_NO_PGVECTOR = PgvectorVersion(0, 0, 0, "none")
# The version each connection read (:func:`installed_version`), forgotten with the connection: the
# pool's threads share this, hence the lock.
_versions: weakref.WeakKeyDictionary[Conn, PgvectorVersion] = weakref.WeakKeyDictionary()
_versions_lock = threading.Lock()

BUILD_MEMORY_MB = 4_096
"""``maintenance_work_mem`` raised to this (never lowered) for the build's own session: a graph that
does not fit is built on disk, several times slower. The server's setting is left alone."""

_CHUNK_VECTORS = "FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"


def index_name(dim: int, *, half: bool = True) -> str:
    """The index of vectors of ``dim``: ``half`` a ``halfvec`` one (pgvector 0.7.0 on), else ``vector``."""
    return f"{INDEX_PREFIX}{int(dim)}{HALF_SUFFIX if half else ''}"


@dataclass(frozen=True)
class GraphIndex:
    """One approximate index on ``embeddings``: the vectors' dimension, its kind, whether usable."""

    dim: int
    half: bool
    """Built over ``vector::halfvec(d)`` (half the size; decision 0045), else ``vector::vector(d)``."""
    valid: bool
    """A build cut off midway (``CREATE INDEX CONCURRENTLY`` killed) leaves an invalid index that the
    planner ignores; the next build drops it."""

    @property
    def name(self) -> str:
        return index_name(self.dim, half=self.half)


def graph_indexes(conn: Conn) -> list[GraphIndex]:
    """The approximate indexes on ``embeddings`` in this schema."""
    rows = conn.execute(
        "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = 'embeddings'::regclass AND starts_with(c.relname, %s)",
        (INDEX_PREFIX,),
    ).fetchall()
    out = []
    for name, valid in rows:
        suffix = str(name)[len(INDEX_PREFIX) :]
        half = suffix.endswith(HALF_SUFFIX)
        digits = suffix.removesuffix(HALF_SUFFIX)
        if digits.isdigit():
            out.append(GraphIndex(int(digits), half, bool(valid)))
    return out


def vector_indexes(conn: Conn) -> dict[int, bool]:
    """Dimension -> whether a valid approximate index of it exists (any kind)."""
    out: dict[int, bool] = {}
    for index in graph_indexes(conn):
        out[index.dim] = out.get(index.dim, False) or index.valid
    return out


def usable_index(conn: Conn, dim: int) -> GraphIndex | None:
    """The index a search of ``dim`` uses: a valid ``halfvec`` one, else a valid ``vector`` one an earlier
    kbseek built (searches go on from it while the writer builds the current kind)."""
    valid = [i for i in graph_indexes(conn) if i.dim == dim and i.valid]
    return max(valid, key=lambda i: i.half, default=None)


def installed_version(conn: Conn) -> PgvectorVersion:
    """The pgvector this connection's database has, read once per connection.

    Read through ``postgres_schema.pgvector_version``, the one function that reads it (a test stands
    another version in there). The store refused a version below the minimum when it opened, so this
    only decides which features a statement may use; an extension updated meanwhile is seen by the
    pool's next connections. Not installed reads as 0.0.0: nothing but the exact scan.
    """
    with _versions_lock:
        known = _versions.get(conn)
    if known is not None:
        return known
    found = postgres_schema.pgvector_version(conn)
    if found is None:
        return _NO_PGVECTOR
    with _versions_lock:
        _versions[conn] = found
    return found


def nearest(
    conn: Conn,
    query: np.ndarray,
    k: int,
    *,
    allowed: Collection[int] | None = None,
    ef_search: int = EF_SEARCH,
    approximate: bool | None = None,
    pgvector: PgvectorVersion | None = None,
) -> list[tuple[int, float]]:
    """At most ``k`` (chunk rowid, cosine) best first, ties by rowid; with ``allowed``, only those rowids.

    ``approximate``: ``None`` uses the index when a valid one of the query's dimension exists;
    ``False`` is always exact (the benchmark's baseline). The cosine is pgvector's, of the stored
    float4 vector and the query, on both paths, so a score does not depend on which path found the
    row (it agrees with ``search.dense``'s float32 dot product to about 1e-7). ``pgvector``: the
    installed version, when the caller read it at open; else :func:`installed_version` reads it.

    A filter allowing more than :data:`EXACT_FILTER_MAX` chunks is searched in the graph. From
    pgvector 0.8.0 the scan is iterative: it goes on until it has ``k`` allowed rows (or
    :data:`MAX_SCAN_TUPLES`). Before 0.8.0 (``hnsw.iterative_scan`` does not exist, and setting it
    fails from 0.6.0 on) one scan gives at most ``ef_search`` rows, of which the filter may keep
    fewer than ``k``; so it runs once at the widest breadth pgvector allows (:data:`EF_SEARCH_MAX`),
    and when that still finds too few, the search is answered exactly over the allowed chunks, as
    an iterative scan that gives up is. Either way only allowed rows come back, ``k`` of them
    whenever ``k`` are allowed, as near as the graph finds them; a selective filter pays a graph
    search and a scan. Answering every such filter exactly was the other choice: correct too, but
    it reads every allowed chunk's vector (more than :data:`EXACT_FILTER_MAX`) for each search,
    where a filter keeping much of the knowledge base is answered from the graph alone.
    """
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    dim = len(q)
    if k <= 0 or dim == 0 or (allowed is not None and not allowed):
        return []
    wanted = None if allowed is None else sorted({int(r) for r in allowed})
    version = installed_version(conn) if pgvector is None else pgvector
    iterative = version >= PGVECTOR_ITERATIVE_SCAN
    with conn.transaction():
        graph = usable_index(conn, dim) if approximate is not False else None
        rows: list[TupleRow] | None = None
        if (
            graph is not None
            and version >= PGVECTOR_MINIMUM
            and (wanted is None or len(wanted) > EXACT_FILTER_MAX)
        ):
            breadth = ef_search if graph.half else max(ef_search, EF_SEARCH_DEFAULT_SHAPE)
            breadth = breadth if wanted is None or iterative else EF_SEARCH_MAX
            rows = _approximate_rows(
                conn, q, k, wanted, min(max(breadth, k), EF_SEARCH_MAX), iterative=iterative, half=graph.half
            )
        if rows is None:
            rows = _exact_rows(conn, q, k, wanted)
    return _scored(rows, k)


def _exact_rows(conn: Conn, q: np.ndarray, k: int, wanted: list[int] | None) -> list[TupleRow]:
    """Every (allowed) chunk's distance, computed by the server; the untyped column's operator,
    which no index serves, so this is a scan whatever indexes exist."""
    where = "" if wanted is None else "WHERE c.id = ANY(%(allowed)s::bigint[])"
    with conn.cursor(binary=True) as cur:
        return cur.execute(
            f"SELECT c.id, 1 - (e.vector <=> %(q)s) {_CHUNK_VECTORS} {where}"
            " ORDER BY e.vector <=> %(q)s, c.id LIMIT %(k)s",
            {"q": Vector(q), "k": k, "allowed": wanted},
        ).fetchall()


def _approximate_rows(
    conn: Conn,
    q: np.ndarray,
    k: int,
    wanted: list[int] | None,
    ef_search: int,
    *,
    iterative: bool,
    half: bool,
) -> list[TupleRow] | None:
    """The chunks of the ``k`` nearest used hashes by the graph; ``None`` when a filtered scan gave
    up before finding ``k`` (the caller answers exactly instead). ``iterative``: pgvector has
    iterative index scans (0.8.0), whose settings may then be set; an older one rejects them."""
    dim = len(q)
    if iterative:
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true),"
            " set_config('hnsw.max_scan_tuples', %s, true)",
            (str(ef_search), str(MAX_SCAN_TUPLES)),
        )
    else:
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
    params: dict[str, Any] = {"q": Vector(q), "k": k, "allowed": wanted}
    statement = approximate_statement(dim, filtered=wanted is not None, half=half)
    with conn.cursor(binary=True) as cur:
        rows = cur.execute(statement, params).fetchall()
    if wanted is not None and len({r[2] for r in rows}) < min(k, len(wanted)):
        return None
    return rows


def approximate_statement(dim: int, *, filtered: bool, half: bool = True) -> str:
    """The graph search: the ``k`` nearest hashes some (allowed) chunk uses, then those chunks.

    ``half``: the index is over ``halfvec`` (the expression must be the index's, or the planner
    scans); each row's cosine is computed from the stored float4 vector, as the exact scan's is, and
    only that number comes back (not the vector: 2 KB a row, a third of the search's time to send
    and read at 100 rows).

    A scalar subquery, not ``EXISTS``: the planner turns ``EXISTS`` into a semi-join that drains the
    whole index scan before the ``LIMIT``; a subquery stays a per-row filter, which the iterative
    scan applies as it goes. ``relaxed_order`` may return a few rows out of order; the caller sorts.
    """
    allowed = " AND c.id = ANY(%(allowed)s::bigint[])" if filtered else ""
    d = int(dim)
    kind = "halfvec" if half else "vector"
    return f"""
        WITH near AS MATERIALIZED (
            SELECT e.content_hash, e.vector FROM embeddings e
            WHERE vector_dims(e.vector) = {d}
              AND (SELECT true FROM chunks c WHERE c.content_hash = e.content_hash{allowed} LIMIT 1)
            ORDER BY e.vector::{kind}({d}) <=> %(q)s::vector({d})::{kind}({d}) LIMIT %(k)s
        )
        SELECT c.id, 1 - (near.vector <=> %(q)s), near.content_hash
        FROM near JOIN chunks c ON c.content_hash = near.content_hash
        {"WHERE true" + allowed if filtered else ""}
    """


def _scored(rows: list[TupleRow], k: int) -> list[tuple[int, float]]:
    """(rowid, cosine) best first, ties by rowid: the graph's relaxed order sorted."""
    if not rows:
        return []
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    sims = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
    order = np.lexsort((ids, -sims))[:k]
    return [(int(ids[i]), float(sims[i])) for i in order]


def build_index(conn: Conn, dim: int, lock: tuple[int, int]) -> bool:
    """Build the approximate index for vectors of ``dim`` unless a valid one exists; returns whether
    it built one. Drops invalid ones and those of other dimensions first.

    ``conn`` is in autocommit mode: ``CREATE INDEX CONCURRENTLY`` cannot run in a transaction, and
    it is what lets readers and the writer go on meanwhile (it takes no lock they wait for; it
    waits, at its phase changes, for their short transactions to end). ``lock`` is an advisory-lock
    key of this knowledge base's builds, not its writes' (a build of minutes must not lock the
    writer out): a second process finding it taken returns at once, the build being under way.
    """
    got = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", lock).fetchone()
    if got is None or not got[0]:
        return False
    try:
        return _build(conn, dim)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s, %s)", lock)


def _build(conn: Conn, dim: int) -> bool:
    """Build the current kind of index for ``dim`` if no valid one exists, then drop the others.

    The new index is made before the old one of this dimension is dropped, so searches keep a graph
    throughout; only invalid indexes and those of other dimensions (whose vectors are gone) are
    dropped first.
    """
    version = installed_version(conn)
    if version < PGVECTOR_MINIMUM:  # no HNSW: the store refuses this at open; never build a failing index
        log.warning(
            "pgvector %s has no HNSW index (%s added it): searching exactly", version, PGVECTOR_MINIMUM
        )
        return False
    half = version >= PGVECTOR_HALFVEC
    for index in graph_indexes(conn):
        if index.dim != dim or not index.valid:
            conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}")
    if any(i.dim == dim and i.half == half and i.valid for i in graph_indexes(conn)):
        return False
    memory = conn.execute(
        "SELECT setting::bigint / 1024 FROM pg_settings WHERE name = 'maintenance_work_mem'"
    ).fetchone()
    kind, ops = ("halfvec", "halfvec_cosine_ops") if half else ("vector", "vector_cosine_ops")
    try:
        if memory is not None and int(memory[0]) < BUILD_MEMORY_MB:
            conn.execute(f"SET maintenance_work_mem = '{BUILD_MEMORY_MB}MB'")
        conn.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name(dim, half=half)} ON embeddings"
            f" USING hnsw ((vector::{kind}({int(dim)})) {ops})"
            f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
            f" WHERE vector_dims(vector) = {int(dim)}"
        )
    finally:
        conn.execute("RESET maintenance_work_mem")
    built = any(i.dim == dim and i.half == half and i.valid for i in graph_indexes(conn))
    if built:
        for index in graph_indexes(conn):
            if index.dim == dim and index.half != half:
                conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}")
    return built


def drop_indexes(conn: Conn) -> None:
    """Drop every approximate index (concurrently, in autocommit mode): a benchmark's clean start."""
    for index in graph_indexes(conn):
        conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}")
