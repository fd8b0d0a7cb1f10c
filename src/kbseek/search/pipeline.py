"""From a query to ranked, de-duplicated hits with snippets: the retrieval logic in one place.

Surfaces never rank; they ask :func:`run_search` and shape its result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kbseek.ingest.parsers import has_markup
from kbseek.search import fusion
from kbseek.search.confidence import is_low_confidence
from kbseek.search.dense import DenseIndex
from kbseek.search.fts_query import CompiledQuery, compile_query
from kbseek.search.lexical import COVERAGE_DEPTH, lexical_candidates, lexical_coverage
from kbseek.store.base import ChunkRow, Store
from kbseek.text.snippets import Snippet, make_snippet

CANDIDATES_PER_LEG = 100
"""How deep each leg looks before fusion; deep enough that de-duplication never starves the result."""


@dataclass(frozen=True, kw_only=True)
class SearchRequest:
    """One query with its caps already decided.

    The caps carry no defaults here: their one source is the configuration (``[limits]``), and a
    default written again here would drift from it unnoticed. Only the filters are optional.
    """

    query: str
    limit: int
    snippet_chars: int
    max_terms: int
    """``[limits].max_query_terms``."""
    max_hits_per_document: int
    """``[limits].max_hits_per_document``."""
    path_prefix: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class RankedHit:
    chunk: ChunkRow
    snippet: Snippet
    fused: fusion.Fused


@dataclass(frozen=True)
class PipelineResult:
    hits: list[RankedHit]
    compiled: CompiledQuery
    semantic_used: bool
    more_available: bool
    """True when more de-duplicated hits existed than ``limit`` allowed."""
    low_confidence: bool


@dataclass(frozen=True)
class DenseLeg:
    """The semantic leg and how it is fused with the lexical one.

    Every field is required: the fusion settings come from the configuration (``[search]``) and the
    floor from the embedder's spec, so no second, stale default can decide a ranking.
    """

    index: DenseIndex
    embed_query: Callable[[str], np.ndarray]
    fusion: str
    """``"blend"`` or ``"rrf"`` (``[search].fusion``)."""
    dense_weight: float
    """The dense share of a blended score when no lexical candidate covers the query."""
    rrf_k: int
    matched_weight: float | None
    """The dense weight when a lexical candidate covers the whole query (``fusion.adaptive_weight``);
    ``None`` keeps ``dense_weight`` for every query."""
    similarity_floor: float
    """The model's cosine for unrelated text; similarities are rescaled from it (``EmbedderSpec.floor``)."""


def run_search(store: Store, request: SearchRequest, dense: DenseLeg | None = None) -> PipelineResult:
    compiled = compile_query(request.query, max_terms=request.max_terms)
    lexical = lexical_candidates(
        store, compiled, limit=CANDIDATES_PER_LEG, path_prefix=request.path_prefix, tags=request.tags
    )
    dense_hits: list[tuple[int, float]] = []
    cov: dict[int, float] = {}
    if dense is not None and request.query.strip():
        allowed = store.filtered_rowids(request.path_prefix, request.tags)
        qvec = dense.embed_query(request.query)
        dense_hits = _on_one_scale(
            dense.index.search(qvec, CANDIDATES_PER_LEG, allowed), dense.similarity_floor
        )
        if dense.fusion == "rrf":
            ranked = fusion.rrf(lexical, dense_hits, k=dense.rrf_k)
        else:
            cov = lexical_coverage(store, compiled, [r for r, _ in lexical[:COVERAGE_DEPTH]])
            ranked = fusion.blend(
                lexical, dense_hits, dense_weight=dense.dense_weight, matched_weight=dense.matched_weight,
                coverage=cov,
            )  # fmt: skip
    else:
        ranked = fusion.lexical_only(lexical)

    rows = store.chunks_by_rowid([f.rowid for f in ranked])
    chosen, more = _deduplicate(ranked, rows, request.limit, request.max_hits_per_document)
    hits = [
        RankedHit(rows[f.rowid], _snippet(rows[f.rowid], request.query, request.snippet_chars), f)
        for f in chosen
    ]
    return PipelineResult(
        hits,
        compiled,
        dense is not None,
        more,
        _low_confidence(store, compiled, hits, dense_hits, dense is not None, cov),
    )


def _low_confidence(
    store: Store,
    compiled: CompiledQuery,
    hits: list[RankedHit],
    dense_hits: list[tuple[int, float]],
    semantic: bool,
    known: dict[int, float],
) -> bool:
    """Reuses the fusion's coverage scores; only a top hit the lexical leg did not rank needs a lookup."""
    if not hits:
        return True
    top = hits[0].chunk.rowid
    cov = known[top] if top in known else lexical_coverage(store, compiled, [top]).get(top, 0.0)
    best_similarity = dense_hits[0][1] if semantic and dense_hits else None
    return is_low_confidence(has_hits=True, top_similarity=best_similarity, top_coverage=cov)


def _on_one_scale(hits: list[tuple[int, float]], floor: float) -> list[tuple[int, float]]:
    """Cosines rescaled so that the model's typical unrelated similarity is 0 (order unchanged)."""
    if floor == 0.0:
        return hits
    return [(rowid, (sim - floor) / (1.0 - floor)) for rowid, sim in hits]


def _snippet(row: ChunkRow, query: str, chars: int) -> Snippet:
    """``chars == 0`` skips snippet building, for callers that only need the ranking (eval, benchmarks).

    The snippet is given the query as written, not its compiled terms: only the analyzer's view
    of the whole query tells a word from a bigram of an unknown Japanese word (``text.snippets``).
    """
    if chars <= 0:
        return Snippet("", 0, 0, (), 0)
    return make_snippet(row.text, (query,), chars, markup=has_markup(row.parser))


def _deduplicate(
    ranked: Sequence[fusion.Fused], rows: dict[int, ChunkRow], limit: int, per_document: int
) -> tuple[list[fusion.Fused], bool]:
    """Keep the best chunks, at most ``per_document`` per document and none overlapping a kept one."""
    kept: list[fusion.Fused] = []
    spans: dict[int, list[tuple[int, int]]] = {}
    for f in ranked:
        row = rows.get(f.rowid)
        if row is None:  # deleted between the two queries
            continue
        taken = spans.setdefault(row.document_id, [])
        if len(taken) >= per_document or any(row.start < e and s < row.end for s, e in taken):
            continue
        if len(kept) == limit:
            return kept, True
        taken.append((row.start, row.end))
        kept.append(f)
    return kept, False
