"""Planner statistics kept current by the writer, so a search's plan is right on any server's settings.

PostgreSQL plans from statistics that autovacuum's ANALYZE gathers, and autovacuum analyzes a table
only after enough of it changed (50 rows plus 10 % by default). A fresh knowledge base is never
analyzed that way: its one-row ``lexical_stats`` table in particular stays unanalyzed, the planner
guesses thousands of rows for it, and the BM25 query was estimated at a cost of two million where
it costs 40 — which on a stock server (``jit = on``) also made PostgreSQL JIT-compile it, 440 of a
472 ms search. Waiting for autovacuum fixed it only after some 550 file changes.

So the pass analyzes what it made stale, in the transaction that records the pass: the statistics
become visible with the pass itself, before any reader hears of it. What is stale:

- a table never analyzed (``pg_class.reltuples`` is -1 from PostgreSQL 14 on);
- a small table (under :data:`SMALL_ROWS` rows), whenever the pass changed anything: analyzing it
  reads every row, which costs a millisecond, and its estimates matter most (it is joined everywhere);
- a larger table once the rows changed since its last ANALYZE pass :data:`CHANGED_SHARE` of it,
  as autovacuum would, but without waiting for autovacuum's turn.

ANALYZE waits for no reader or writer (it takes a lock that only VACUUM and another ANALYZE
conflict with, and autovacuum gives way to it); it is still bounded, and skipped with a log line
rather than failing the pass, should something hold that lock.
"""

from __future__ import annotations

import logging

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from kbseek.store.postgres.schema import TABLES

__all__ = ["CHANGED_SHARE", "SMALL_ROWS", "refresh_statistics", "stale_tables"]

log = logging.getLogger(__name__)

SMALL_ROWS = 10_000
"""Below this many rows a table is analyzed whole, in about a millisecond: after every changing pass."""

CHANGED_SHARE = 0.1
"""A larger table is analyzed once this share of its rows changed since its last ANALYZE."""

LOCK_TIMEOUT = "2s"
"""How long the pass's ANALYZE waits for a VACUUM or ANALYZE of the same table before skipping it."""


def stale_tables(conn: psycopg.Connection[TupleRow], *, changed_documents: int) -> list[str]:
    """The knowledge base's tables (in the connection's current schema) whose statistics are stale.

    ``changed_documents`` is what the pass wrote or deleted: a pass that changed nothing makes no
    statistics stale (bar a table never analyzed). ``n_mod_since_analyze`` reaches the statistics
    views only when the writing sessions report (at most once a second), so the pass's own share of
    the documents counts too.
    """
    rows = conn.execute(
        "SELECT c.relname, c.reltuples, COALESCE(s.n_mod_since_analyze, 0),"
        " (SELECT reltuples FROM pg_class d WHERE d.relname = 'documents'"
        "  AND d.relnamespace = c.relnamespace)"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid"
        " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname = ANY(%s)",
        (list(TABLES),),
    ).fetchall()
    stale: list[str] = []
    for name, reltuples, modified, documents in rows:
        estimated = float(reltuples)
        if estimated < 0:
            stale.append(str(name))
        elif not changed_documents:
            continue
        elif estimated < SMALL_ROWS:
            stale.append(str(name))
        else:
            share = changed_documents / max(float(documents or 0), 1.0)
            if int(modified) > CHANGED_SHARE * estimated or share > CHANGED_SHARE:
                stale.append(str(name))
    return sorted(stale)


def refresh_statistics(conn: psycopg.Connection[TupleRow], *, changed_documents: int) -> list[str]:
    """ANALYZE the stale tables inside the open transaction; the tables analyzed.

    Each under a savepoint with a bounded lock wait, so a table whose lock is held elsewhere is
    skipped (left to the next pass or autovacuum) and the pass's transaction goes on.
    """
    analyzed: list[str] = []
    row = conn.execute("SELECT current_setting('lock_timeout')").fetchone()
    before = str(row[0]) if row else "0"
    conn.execute("SELECT set_config('lock_timeout', %s, true)", (LOCK_TIMEOUT,))
    try:
        for table in stale_tables(conn, changed_documents=changed_documents):
            conn.execute("SAVEPOINT statistics")
            try:
                conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
            except psycopg.errors.LockNotAvailable:
                conn.execute("ROLLBACK TO SAVEPOINT statistics")
                log.info("statistics of %s left for later: another ANALYZE or VACUUM holds it", table)
                continue
            conn.execute("RELEASE SAVEPOINT statistics")
            analyzed.append(table)
    finally:
        conn.execute("SELECT set_config('lock_timeout', %s, true)", (before,))
    return analyzed
