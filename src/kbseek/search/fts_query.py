"""Compile an agent's free-text query into the terms the lexical leg searches for.

Agents paste arbitrary text (error messages, code, Japanese sentences). Passing it
to the lexical engine directly would let ``-``, ``:``, ``"``, ``*``, ``AND``/``NOT``/``NEAR``
and friends change the query's meaning or raise a syntax error, so the query is run
through the same analyzer as the index, and the store matches each term literally
(``Store.lexical_candidates``; SQLite quotes every term in ``store.sqlite.fts_match.match_expression``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kbseek.text.analyzer import terms as analyze

__all__ = ["CompiledQuery", "compile_query"]


@dataclass(frozen=True)
class CompiledQuery:
    """The analyzed terms of a query, and those the cap left out.

    ``terms`` is empty when the query has no searchable terms (only punctuation,
    say). ``dropped`` lists terms beyond the cap so the response can say the
    query was shortened rather than losing them silently. How the terms become
    a query of the lexical engine is the store's business (``lexical_candidates``).
    """

    terms: tuple[str, ...]
    dropped: tuple[str, ...]


def compile_query(query: str, *, max_terms: int) -> CompiledQuery:
    """Analyse ``query`` into its distinct terms, at most ``max_terms``, which the lexical leg ORs.

    OR rather than AND because agents ask in sentences: requiring every word would
    return nothing for most questions, while bm25 still ranks documents that match
    more (and rarer) terms first. The cap (``[limits].max_query_terms``) bounds the cost of very
    long queries.
    """
    if max_terms < 1:
        raise ValueError(f"max_terms must be at least 1, got {max_terms}")
    unique = tuple(dict.fromkeys(analyze(query)))
    used, dropped = unique[:max_terms], unique[max_terms:]
    return CompiledQuery(terms=used, dropped=dropped)
