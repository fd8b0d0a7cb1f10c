"""Reading a knowledge base's search relations into PostgreSQL's buffers: ``PostgresStore.warm``.

A restarted database, or a copy just made, holds none of the index's pages in ``shared_buffers``; a
reader's first searches then each read their own (``store.warming``). Warming reads the relations a
search reads, the most used first: the vector graph, the vocabulary and the postings' key, the
chunks' keys, then the tables, as far as the server's buffers hold them; the rest is read into the
operating system's cache, whence a search reads a page in microseconds rather than from disk.

With the ``pg_prewarm`` extension (one of PostgreSQL's contrib modules, in most packagings of the
server) the server loads the pages itself. It is created when missing if the role may (``CREATE
EXTENSION pg_prewarm`` needs a superuser, once per database). Without it the relations are read by
queries: a sequential scan of each table, an ordered scan of each B-tree, and a few graph searches; a
table larger than a quarter of the buffers then reaches only the operating system's cache (PostgreSQL
reads such a scan through a small ring of buffers). Which method was used is in what
:func:`warm` returns, and the reason for a fallback is logged.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import psycopg
from psycopg import sql

from kbseek.store.postgres import vectors as postgres_vectors
from kbseek.store.postgres.pool import Conn
from kbseek.store.warming import PREWARM, READ, Warmed

__all__ = ["COLD", "PREWARM", "warm"]

log = logging.getLogger(__name__)

COLD = frozenset({"document_texts", "retired_chunks", "skipped", "next_embeddings"})
"""Tables no search reads (a document's whole text, retired ids, skips, a model switch's vectors):
never warmed, with their indexes, so they take no buffer a search could use."""

BUFFER_SHARE = 0.9
"""How much of ``shared_buffers`` warming may fill: the rest stays for what searches read besides."""

GRAPH_SAMPLES = 16
"""Graph searches run to warm a vector index without ``pg_prewarm``: each reads the entry point and
the upper layers, which every search reads, and a neighbourhood of the lowest layer."""

_RELATIONS = """
SELECT c.relname, c.relkind, coalesce(am.amname, ''), pg_relation_size(c.oid),
       coalesce(t.relname, c.relname),
       (SELECT a.attname FROM pg_attribute a
         WHERE i.indkey[0] <> 0 AND a.attrelid = i.indrelid AND a.attnum = i.indkey[0])
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_index i ON i.indexrelid = c.oid
LEFT JOIN pg_class t ON t.oid = i.indrelid
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')
"""


@dataclass(frozen=True)
class Relation:
    """A table or index of the schema, with what warming it needs."""

    name: str
    index: bool
    method: str
    """The index's access method (``btree``, ``hnsw``), empty for a table."""
    size: int
    table: str
    """The table itself, or the index's table."""
    column: str | None
    """An index's leading column, ``None`` for an expression (a vector graph)."""


def search_relations(conn: Conn) -> list[Relation]:
    """The schema's relations a search reads, in the order to warm them: the usable vector graph, then
    indexes, then tables, each smallest first (many small ones a search always reads, like the
    vocabulary, before the large ones it reads a few pages of)."""
    rows = conn.execute(_RELATIONS).fetchall()
    found = [Relation(str(n), k == "i", str(m), int(s), str(t), c) for n, k, m, s, t, c in rows]
    graphs = {g.name for g in postgres_vectors.graph_indexes(conn) if g.valid}
    kept = [r for r in found if r.table not in COLD and (r.method != "hnsw" or r.name in graphs)]
    return sorted(kept, key=lambda r: (r.method != "hnsw", not r.index, r.size, r.name))


def buffer_bytes(conn: Conn) -> int:
    """``shared_buffers``, in bytes."""
    row = conn.execute("SELECT pg_size_bytes(current_setting('shared_buffers'))").fetchone()
    return int(row[0]) if row else 0


def prewarm_schema(conn: Conn) -> tuple[str | None, str | None]:
    """(the schema ``pg_prewarm`` is installed in, or ``None``; why not, or ``None``).

    Created when missing if this role may: a reader's role usually may not, and is then told who can.
    """
    found = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'pg_prewarm'"
    ).fetchone()
    if found is not None:
        return str(found[0]), None
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None, (
            f"the extension pg_prewarm could not be created ({first}); an administrator can run "
            "`CREATE EXTENSION pg_prewarm` once in this database"
        )
    return prewarm_schema(conn)[0], None


def warm(conn: Conn, *, use_prewarm: bool = True) -> Warmed:
    """Read the search relations into the buffers, the most used first, within :data:`BUFFER_SHARE`
    of them; what does not fit is read into the operating system's cache. ``conn`` is in
    autocommit mode. ``use_prewarm=False`` reads by queries even where ``pg_prewarm`` exists (tests)."""
    started = time.perf_counter()
    relations = search_relations(conn)
    budget = int(buffer_bytes(conn) * BUFFER_SHARE)
    schema, why = prewarm_schema(conn) if use_prewarm else (None, "pg_prewarm not used")
    pages = 0
    done: list[str] = []
    for relation in relations:
        fits = relation.size <= budget
        if fits:
            budget -= relation.size
        try:
            if schema is not None:
                pages += _prewarm(conn, schema, relation, fits)
            else:
                pages += _read(conn, relation)
        except psycopg.Error as exc:  # one relation refused (its privileges, say): the others go on
            log.warning("warming %s failed: %s", relation.name, str(exc).strip())
            if schema is not None:
                why = why or f"pg_prewarm refused {relation.name}: {str(exc).strip()}"
            continue
        done.append(relation.name)
    megabytes = sum(r.size for r in relations if r.name in done) / 2**20
    took = time.perf_counter() - started
    if schema is not None:
        return Warmed(PREWARM, tuple(done), pages, megabytes, took)
    return Warmed(READ, tuple(done), pages, megabytes, took, fallback=why)


def _prewarm(conn: Conn, schema: str, relation: Relation, fits: bool) -> int:
    """The server's own load: into the buffers when it fits, else into the operating system's cache."""
    mode = "buffer" if fits else "read"
    statement = sql.SQL("SELECT {}.pg_prewarm({}::regclass, {})").format(
        sql.Identifier(schema), sql.Literal(relation.name), sql.Literal(mode)
    )
    row = conn.execute(statement).fetchone()
    return int(row[0]) if row and fits else 0


def _read(conn: Conn, relation: Relation) -> int:
    """The pages read by queries: a table scanned whole, a B-tree walked in order, a graph searched."""
    with conn.transaction():
        if relation.method == "hnsw":
            _search_graph(conn, relation)
        elif not relation.index:
            conn.execute("SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
            conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(relation.table)))
        elif relation.column is not None and relation.method == "btree":
            conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
            conn.execute("SET LOCAL enable_sort = off")
            column = sql.Identifier(relation.column)
            conn.execute(
                sql.SQL("SELECT count(*) FROM (SELECT {c} FROM {t} ORDER BY {c}) s").format(
                    c=column, t=sql.Identifier(relation.table)
                )
            )
        else:
            return 0
    return relation.size // 8192


def _search_graph(conn: Conn, relation: Relation) -> None:
    """A few searches of the vector graph from stored vectors: what every search reads of it."""
    dim = next((g.dim for g in postgres_vectors.graph_indexes(conn) if g.name == relation.name), None)
    if dim is None:
        return
    rows = conn.execute(
        "SELECT vector FROM embeddings WHERE vector_dims(vector) = %s LIMIT %s", (dim, GRAPH_SAMPLES)
    ).fetchall()
    for (vector,) in rows:
        postgres_vectors.nearest(conn, vector.to_numpy(), 10)
