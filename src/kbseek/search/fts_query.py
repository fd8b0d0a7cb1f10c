"""Compile an agent's free-text query into a safe FTS5 MATCH expression.

Agents paste arbitrary text (error messages, code, Japanese sentences). Passing it
to MATCH directly would let ``-``, ``:``, ``"``, ``*``, ``AND``/``NOT``/``NEAR`` and
friends change the query's meaning or raise a syntax error, so the query is run
through the same analyzer as the index and every term is quoted.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbseek.text.analyzer import terms as analyze

__all__ = ["CompiledQuery", "compile_query"]


@dataclass(frozen=True)
class CompiledQuery:
    """The MATCH expression plus what went into it.

    ``expression`` is None when the query has no searchable terms (only
    punctuation, say), so the caller can skip FTS5 instead of sending it an empty
    expression. ``dropped`` lists terms beyond the cap so the response can say the
    query was shortened rather than losing them silently.
    """

    expression: str | None
    terms: tuple[str, ...]
    dropped: tuple[str, ...]


def _quote(term: str) -> str:
    """An FTS5 string literal: inside quotes every character is literal text."""
    return '"' + term.replace('"', '""') + '"'


def compile_query(query: str, *, max_terms: int = 32) -> CompiledQuery:
    """Analyse ``query`` and OR its distinct terms together, at most ``max_terms``.

    OR rather than AND because agents ask in sentences: requiring every word would
    return nothing for most questions, while bm25 still ranks documents that match
    more (and rarer) terms first. The cap bounds the cost of very long queries.
    """
    if max_terms < 1:
        raise ValueError(f"max_terms must be at least 1, got {max_terms}")
    unique = tuple(dict.fromkeys(analyze(query)))
    used, dropped = unique[:max_terms], unique[max_terms:]
    expression = " OR ".join(_quote(term) for term in used) if used else None
    return CompiledQuery(expression=expression, terms=used, dropped=dropped)
