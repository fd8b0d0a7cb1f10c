"""The lexical leg: analyzed query terms against the FTS5 table, ranked by BM25."""

from __future__ import annotations

from collections.abc import Sequence

from kb_mcp.search.fts_query import CompiledQuery
from kb_mcp.store.sqlite import Store


def lexical_candidates(
    store: Store,
    compiled: CompiledQuery,
    *,
    limit: int,
    path_prefix: str | None,
    tags: Sequence[str],
) -> list[tuple[int, float]]:
    """(chunk rowid, BM25 score) best first; empty when the query has no searchable terms."""
    if compiled.expression is None:
        return []
    return store.lexical(compiled.expression, limit=limit, path_prefix=path_prefix, tags=tags)
