"""What a search found: its hits, each with the chunk, its snippet and how it was ranked, and the
facts about the search as a whole that a response words (dropped terms, absent names, why a stage
or the filters left it short)."""

from __future__ import annotations

from dataclasses import dataclass

from kbseek.filters import SearchFilters
from kbseek.search import fusion
from kbseek.search.fts_query import CompiledQuery
from kbseek.store.records import ChunkRow
from kbseek.text.snippets import Snippet


@dataclass(frozen=True)
class RankedHit:
    chunk: ChunkRow
    snippet: Snippet
    fused: fusion.Fused
    heading_path: tuple[str, ...]
    """The heading path where the snippet is: the chunk's own, or that of a section merged into it."""
    rerank_score: float | None = None
    """The reranker's score for the chunk, when a reranker ordered it (``fused.score`` is then the
    fused score of the place it took, and :attr:`fused_score` its own)."""
    fused_score: float | None = None
    """The fused score the chunk had before the reranker moved it; ``None`` when it was not reranked."""

    @classmethod
    def listed(cls, chunk: ChunkRow, snippet: Snippet) -> RankedHit:
        """A hit of a listing (a search without a query): listed by date, ranked by no leg, so its
        score is 0 and every rank is empty."""
        return cls(chunk, snippet, fusion.Fused(chunk.rowid, 0.0), chunk.heading_path)


@dataclass(frozen=True)
class PipelineResult:
    hits: list[RankedHit]
    compiled: CompiledQuery
    """The query's own terms (what ``legs.lexical`` and a dropped-terms note speak of)."""
    semantic_used: bool
    more_available: bool
    """True when more de-duplicated hits existed than ``limit`` allowed."""
    low_confidence: bool
    doubt: str | None = None
    """Why ``low_confidence`` was raised over hits the caller can see, in words (``None``: it was not,
    or a name no note mentions says it, ``absent_names``)."""
    compiled_also: tuple[CompiledQuery, ...] = ()
    """The terms of each alternative phrasing, in the order of ``SearchRequest.also``."""
    absent_names: tuple[str, ...] = ()
    """Names the query or an alternative mentions that no chunk holds, as written (``text.names``)."""
    rerank_note: str | None = None
    """Why the reranker did not order this search (down, slow, failing): the fused order stands."""
    filters: SearchFilters | None = None
    """The filters as the index read them (a prefix taken literally, ``search.filtering``), which a
    response names; ``None`` for a result built by hand, whose request's filters stand."""
    unmatched: str | None = None
    """Without hits: that the filters themselves pass no document, naming them
    (``search.filtering.unmatched_note``); ``None`` when the query, not the filters, found nothing."""
