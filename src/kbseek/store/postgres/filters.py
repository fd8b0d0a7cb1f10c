"""The search filters (``kbseek.filters``) as PostgreSQL conditions, twin of ``store/sqlite/filters.py``.

The two must keep the same documents for the same filters. Where the engines differ the conditions
here are written to SQLite's meaning: ASCII-only case folding (``translate``, not ``lower``, which
folds every script), a glob as the regular expression ``globs.glob_regex`` made for both, and
front-matter values compared as stored, already folded by ``filters.field_rows``.
"""

from __future__ import annotations

from typing import Any

from kbseek.filters import SearchFilters
from kbseek.folding import ascii_lower
from kbseek.globs import glob_regex, path_forms

ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
ASCII_LOWER = "abcdefghijklmnopqrstuvwxyz"
_FOLDED_PATH = f"translate(d.path, '{ASCII_UPPER}', '{ASCII_LOWER}')"


def fold_tag(tag: str) -> str:
    """A tag as the filter compares it: ASCII letters in either case match, as in the SQLite store
    (its ``lower()`` folds ASCII only). NUL, which text cannot hold, becomes U+FFFD on both sides."""
    return ascii_lower(tag).replace("\x00", "\ufffd")


def filter_sql(filters: SearchFilters, params: dict[str, Any]) -> list[str]:
    """SQL conditions (to be AND-ed) on ``d`` for the search filters; adds their parameters.

    The prefix is compared literally, ASCII letters folded on both sides, exactly the matches of
    SQLite's ``LIKE`` (no pattern characters at all here, so none to escape). Tags compare folded.
    """
    clauses: list[str] = []
    path_prefix = filters.path_prefix
    if path_prefix:
        if "\x00" in path_prefix:  # no path holds one
            clauses.append("false")
        else:
            either = []
            for i, form in enumerate(path_forms(path_prefix)):
                params[f"prefix_length{i}"] = len(form)
                params[f"prefix{i}"] = fold_tag(form)
                either.append(
                    f"translate(left(d.path, %(prefix_length{i})s), '{ASCII_UPPER}', '{ASCII_LOWER}') = %(prefix{i})s"
                )
            clauses.append("(" + " OR ".join(either) + ")")
    if filters.path_globs:
        params["globs"] = ["(?s)" + glob_regex(form) for g in filters.path_globs for form in path_forms(g)]
        clauses.append(f"{_FOLDED_PATH} ~ ANY(%(globs)s::text[])")
    if filters.types:
        params["types"] = list(filters.types)
        clauses.append("d.parser = ANY(%(types)s::text[])")
    for i, tag in enumerate(filters.tags):
        params[f"tag{i}"] = fold_tag(tag)
        clauses.append(
            f"EXISTS (SELECT 1 FROM document_tags t WHERE t.document_id = d.id AND t.tag = %(tag{i})s)"
        )
    if filters.tags_any:
        params["tags_any"] = [fold_tag(t) for t in filters.tags_any]
        clauses.append(
            "EXISTS (SELECT 1 FROM document_tags t WHERE t.document_id = d.id AND t.tag = ANY(%(tags_any)s::text[]))"
        )
    if filters.after or filters.before:
        bounds = []
        if filters.after:
            params["after"] = filters.after
            bounds.append("x.day >= %(after)s")
        if filters.before:
            params["before"] = filters.before
            bounds.append("x.day <= %(before)s")
        clauses.append(
            f"EXISTS (SELECT 1 FROM document_dates x WHERE x.document_id = d.id AND {' AND '.join(bounds)})"
        )
    for i, condition in enumerate(filters.where):
        params[f"field{i}"] = condition.field
        sql = f"SELECT 1 FROM document_fields f WHERE f.document_id = d.id AND f.field = %(field{i})s"
        if condition.values:
            params[f"values{i}"] = list(condition.values)
            sql += f" AND f.value = ANY(%(values{i})s::text[])"
        clauses.append(f"{'' if condition.exists else 'NOT '}EXISTS ({sql})")
    return clauses


NEWEST = (
    "SELECT (SELECT c.id FROM chunks c WHERE c.document_id = d.id ORDER BY c.ordinal LIMIT 1)"
    " FROM document_dates x JOIN documents d ON d.id = x.document_id"
    " WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id) {where}"
    " ORDER BY x.day DESC, d.mtime_ns DESC, d.path LIMIT %(limit)s"
)
"""``Store.newest_chunks``: as the SQLite store's (``sqlite_filters.newest_chunks``)."""

FACET_FIELDS = (
    "SELECT field, count(DISTINCT document_id) AS n FROM document_fields GROUP BY field"
    ' ORDER BY n DESC, field COLLATE "C" LIMIT %s'
)
FACET_VALUES = (
    "SELECT value, count(*) AS n FROM document_fields WHERE field = %s GROUP BY value"
    ' ORDER BY n DESC, value COLLATE "C" LIMIT %s'
)
