"""The search filters (``kbseek.filters``) as SQLite conditions, and the dated listings built on them.

Every condition is on the documents table as ``d``, so each leg adds them to its own query: the
lexical leg joins chunks to documents only when a filter is set, the dense leg reads the allowed
chunk ids once (``filtered_rowids``). The PostgreSQL twin (``store/postgres_filters.py``) must give
the same documents for the same filters; ``tests/core/test_filters_both_stores.py`` holds them to it.
"""

from __future__ import annotations

import functools
import re
import sqlite3

from kbseek.filters import SearchFilters, glob_regex


def register_functions(conn: sqlite3.Connection) -> None:
    """``X REGEXP Y``, which SQLite parses but leaves to the application: the path globs use it."""
    conn.create_function("regexp", 2, _regexp, deterministic=True)


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _regexp(pattern: str, value: str | None) -> bool:
    return value is not None and _compiled(pattern).search(value) is not None


def _marks(values: tuple[object, ...] | list[object]) -> str:
    return ",".join("?" * len(values))


def filter_sql(filters: SearchFilters, params: list[object]) -> list[str]:
    """SQL conditions (to be AND-ed) on ``d`` for the search filters; appends their parameters."""
    clauses: list[str] = []
    if filters.path_prefix:
        escaped = filters.path_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        clauses.append("d.path LIKE ? ESCAPE '\\'")
        params.append(escaped + "%")
    if filters.path_globs:
        clauses.append("(" + " OR ".join("lower(d.path) REGEXP ?" for _ in filters.path_globs) + ")")
        params.extend(glob_regex(g) for g in filters.path_globs)
    if filters.types:
        clauses.append(f"d.parser IN ({_marks(filters.types)})")
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
            bounds.append("x.day >= ?")
            params.append(filters.after)
        if filters.before:
            bounds.append("x.day <= ?")
            params.append(filters.before)
        clauses.append(
            f"EXISTS (SELECT 1 FROM document_dates x WHERE x.document = d.id AND {' AND '.join(bounds)})"
        )
    for condition in filters.where:
        sql = "SELECT 1 FROM document_fields f WHERE f.document = d.id AND f.field = ?"
        params.append(condition.field)
        if condition.values:
            sql += f" AND f.value IN ({_marks(condition.values)})"
            params.extend(condition.values)
        clauses.append(f"{'' if condition.exists else 'NOT '}EXISTS ({sql})")
    return clauses


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
