"""The lexical leg: analyzed query terms against the FTS5 table, ranked by BM25."""

from __future__ import annotations

import math
from collections.abc import Sequence

from kbseek.filters import SearchFilters
from kbseek.search.fts_query import CompiledQuery
from kbseek.store.base import KeywordIndex, Store


def lexical_candidates(
    store: KeywordIndex,
    compiled: CompiledQuery,
    *,
    limit: int,
    filters: SearchFilters,
    complete: bool = True,
) -> list[tuple[int, float]]:
    """(chunk rowid, BM25 score) best first; empty when the query has no searchable terms.
    ``complete=False``: the dense leg ranks the filtered chunks too (``Store.lexical_candidates``)."""
    return store.lexical_candidates(compiled.terms, limit=limit, filters=filters, complete=complete)


def term_weight(chunks: int, holding: int) -> float:
    """A term's rarity (BM25's IDF, kept positive): how much holding it says about a chunk, among
    ``chunks`` chunks of which ``holding`` hold it. The one weight every coverage score uses."""
    return math.log(1 + (chunks - holding + 0.5) / (holding + 0.5))


COVERAGE_DEPTH = 40
"""How many of the best lexical candidates get a coverage score; deeper ones are weak matches anyway."""


def lexical_coverage(store: Store, compiled: CompiledQuery, rowids: Sequence[int]) -> dict[int, float]:
    """For each chunk, the share of the query's IDF weight whose terms it contains (0 to 1).

    BM25 divided by the best BM25 of the query says how a chunk ranks, not whether
    it matched the words that matter: a paraphrase or a question in the other
    language still has a "best" lexical hit, often one that shares only common
    words. Coverage tells those apart from a chunk that holds the rare terms.
    """
    if not rowids or not compiled.terms:
        return {}
    _, total = store.counts()
    df = store.document_frequencies(compiled.terms)
    idf = {t: term_weight(total, df.get(t, 0)) for t in compiled.terms}
    weight = sum(idf.values())
    if weight <= 0:
        return {}
    matched = store.rows_matching_each_term(compiled.terms, rowids)
    return {r: sum(idf[t] for t in terms) / weight for r, terms in matched.items()}
