"""From a query to ranked, de-duplicated hits with snippets: the retrieval logic in one place.

Surfaces never rank; they ask :func:`run_search` and shape its result.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from kbseek.documents import SectionStart
from kbseek.embed.base import VectorPart
from kbseek.embed.chunk_vectors import passage_input
from kbseek.filters import NO_FILTERS, SearchFilters
from kbseek.ingest.parsers import has_markup
from kbseek.rerank.stage import RerankStage, reorder
from kbseek.search import fusion
from kbseek.search.bridge import Bridge, bridge_coverage, bridge_query
from kbseek.search.confidence import is_low_confidence
from kbseek.search.dense import VectorIndex
from kbseek.search.diversity import distinct_first
from kbseek.search.features import QueryView
from kbseek.search.fts_query import CompiledQuery, compile_query
from kbseek.search.lexical import COVERAGE_DEPTH, lexical_candidates, lexical_coverage
from kbseek.search.ranker import Ranking
from kbseek.store.base import Store
from kbseek.store.records import ChunkRow
from kbseek.text.language import is_japanese
from kbseek.text.names import names
from kbseek.text.snippets import Snippet, make_snippet

CANDIDATES_PER_LEG = 100
"""How deep each leg looks before fusion; deep enough that de-duplication never starves the result."""

LEG_THREADS = 4
"""Dense searches in flight at once (a search with ``also`` asks one per phrasing, up to four)."""


@dataclass(frozen=True, kw_only=True)
class SearchRequest:
    """One query with its caps already decided.

    The caps carry no defaults here: their one source is the configuration (``[limits]``), and a
    default written again here would drift from it unnoticed. Only the filters and ``also`` are optional.
    """

    query: str
    limit: int
    snippet_chars: int
    max_terms: int
    """``[limits].max_query_terms``."""
    max_hits_per_document: int
    """``[limits].max_hits_per_document``."""
    far_ahead: float
    """``[search].far_ahead``: when a second chunk of a document may keep its rank (``search.diversity``)."""
    also_agreement: float
    """``[search].also_agreement``: how much the other phrasings' scores add to a chunk's best (``fusion.best_of``)."""
    bridge_weight: float
    """``[search].bridge_weight``: the weight of the query's words in the other language
    (``search.bridge``); 0 turns the bridge off."""
    filters: SearchFilters = NO_FILTERS
    """What hits must meet, in both legs (``kbseek.filters``)."""
    also: tuple[str, ...] = ()
    """Alternative phrasings of the query, already capped (``[limits].max_also``) by the caller. Each is
    ranked like the query and every chunk keeps its best score over them (docs/decisions/0011); a blank
    one ranks nothing but keeps its place, so ``Fused.phrasing`` always indexes :attr:`phrasings`."""
    scale: tuple[tuple[float, float], ...] = ()
    """Per phrasing, the best BM25 and the best coverage to normalise the keyword leg by, when several
    indexes answer one search (:func:`lexical_scale`, docs/decisions/0037); empty: this index's own.
    One index holding every collection would normalise by the best over all of them, so a collection
    whose best keyword match is weaker than another's must not score it as if it were the best."""

    @property
    def phrasings(self) -> tuple[str, ...]:
        """The query, then its alternatives: ``Fused.phrasing`` indexes this."""
        return (self.query, *self.also)


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


@dataclass(frozen=True)
class PipelineResult:
    hits: list[RankedHit]
    compiled: CompiledQuery
    """The query's own terms (what ``legs.lexical`` and a dropped-terms note speak of)."""
    semantic_used: bool
    more_available: bool
    """True when more de-duplicated hits existed than ``limit`` allowed."""
    low_confidence: bool
    compiled_also: tuple[CompiledQuery, ...] = ()
    """The terms of each alternative phrasing, in the order of ``SearchRequest.also``."""
    absent_names: tuple[str, ...] = ()
    """Names the query or an alternative mentions that no chunk holds, as written (``text.names``)."""
    rerank_note: str | None = None
    """Why the reranker did not order this search (down, slow, failing): the fused order stands."""


@dataclass(frozen=True)
class DenseLeg:
    """The semantic leg and how it is fused with the lexical one.

    Every field is required: the fusion settings come from the configuration (``[search]``) and the
    floor from the embedder's spec, so no second, stale default can decide a ranking.
    """

    index: VectorIndex
    """Exact or approximate (docs/decisions/0017): the pipeline reads both the same way."""
    embed_queries: Callable[[Sequence[str]], np.ndarray]
    """``(len(texts), dim)`` query vectors: one call embeds every phrasing of a search
    (``embed.base.embed_queries``)."""
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
    parts: tuple[VectorPart, ...]
    """The models whose vectors are concatenated in each row (``embed.pair``), each read on its own
    and gated by language (``fusion.gated_dense``); empty for one model, which ``similarity_floor``
    then describes."""
    ranker: Ranking | None = None
    """The learned ranking that reorders the fused one (``fusion = "learned"``, ``search.ranker``)."""


@dataclass(frozen=True)
class _Ranked:
    """One phrasing's own fused ranking, with what its low-confidence check needs."""

    ranked: list[fusion.Fused]
    compiled: CompiledQuery
    coverage: dict[int, float]
    best_similarity: float | None
    """The dense leg's best similarity for this phrasing; ``None`` when the dense leg did not answer."""
    absent: tuple[str, ...] = ()
    """The names this phrasing mentions that no chunk of the index holds."""


def lexical_scale(store: Store, request: SearchRequest) -> tuple[tuple[float, float], ...]:
    """Per phrasing, this index's best BM25 and best query coverage: what its keyword leg is
    normalised by. Several indexes searched as one share the largest of each (``SearchRequest.scale``)."""
    out: list[tuple[float, float]] = []
    for phrasing in request.phrasings:
        compiled = compile_query(phrasing, max_terms=request.max_terms)
        lexical = lexical_candidates(store, compiled, limit=CANDIDATES_PER_LEG, filters=request.filters)
        cov = lexical_coverage(store, compiled, [r for r, _ in lexical[:COVERAGE_DEPTH]]) if lexical else {}
        out.append((max((s for _, s in lexical), default=0.0), max(cov.values(), default=0.0)))
    return tuple(out)


def run_search(
    store: Store, request: SearchRequest, dense: DenseLeg | None = None, rerank: RerankStage | None = None
) -> PipelineResult:
    """Rank ``request`` over ``store``: both legs fused, the best candidates reranked when a stage is
    given (docs/decisions/0038), then the hits chosen, each with its snippet."""
    phrasings = request.phrasings
    compiled = [compile_query(p, max_terms=request.max_terms) for p in phrasings]
    said = [i for i, p in enumerate(phrasings) if p.strip()]
    vectors: dict[int, np.ndarray] = {}
    allowed: frozenset[int] | None = None
    if dense is not None and said:
        allowed = store.filtered_rowids(request.filters)
        embedded = dense.embed_queries([phrasings[i] for i in said])  # one model call for all of them
        vectors = {i: embedded[n] for n, i in enumerate(said)}
    bridge = bridge_query(store, request.query) if request.bridge_weight > 0 else Bridge(())
    # With alternatives and no dense leg, raw BM25 of different phrasings is on no common scale:
    # each is normalised (and weighed by coverage) as the blend's lexical part is.
    normalise = len(said) > 1
    rows: dict[int, ChunkRow] = {}
    japanese: dict[int, bool] = {}
    # Each phrasing's nearest vectors are asked for at once, on other threads, while this one runs the
    # keyword legs: the two wait on different things (a graph or the database, an FTS query), and a
    # search costs the slower leg rather than the sum (decision 0045).
    nearest = {
        i: _legs().submit(_nearest, dense, v, allowed) for i, v in vectors.items() if dense is not None
    }
    bridged = _bridge_candidates(store, request, bridge, gated=dense is not None)
    per = [
        replace(
            _rank_one(
                store, request, compiled[i], dense, nearest.get(i), normalise=normalise,
                phrasing=phrasings[i], rows=rows, japanese=japanese,
            ),
            absent=_absent_names(store, phrasings[i]),
        )
        for i in range(len(phrasings))
    ]  # fmt: skip
    first = _bridged(
        request, bridged, per[0].ranked, gated=dense is not None, raw=dense is None and not normalise
    )
    ranked = (
        first
        if len(per) == 1
        else fusion.best_of([first, *(p.ranked for p in per[1:])], agreement=request.also_agreement)
    )

    rows.update(store.chunks_by_rowid([f.rowid for f in ranked if f.rowid not in rows]))
    if dense is not None and dense.ranker is not None and said:
        ranked = dense.ranker.order(ranked, rows, _view(request, compiled, per, rows), japanese)
    reranked: dict[int, tuple[float, float]] = {}
    rerank_note = None
    if rerank is not None:
        ranked, reranked, rerank_note = _reranked(rerank, request.query, ranked, rows)
    chosen, more = distinct_first(
        ranked, rows, limit=request.limit, per_document=request.max_hits_per_document,
        far_ahead=request.far_ahead,
    )  # fmt: skip
    shown = tuple(p for p in phrasings if p.strip())
    sections = store.section_starts([f.rowid for f in chosen])
    hits = []
    for f in chosen:
        snippet = _snippet(rows[f.rowid], shown, request.snippet_chars)
        heading = heading_at(rows[f.rowid].heading_path, sections.get(f.rowid, ()), snippet)
        rerank_score, fused_score = reranked.get(f.rowid, (None, None))
        hits.append(RankedHit(rows[f.rowid], snippet, f, heading, rerank_score, fused_score))
    low = not hits or _low_overall(store, per, rows)
    absent = tuple(dict.fromkeys(name for p in per for name in p.absent))
    return PipelineResult(
        hits, compiled[0], dense is not None, more, low, tuple(compiled[1:]), absent, rerank_note
    )


def _view(
    request: SearchRequest,
    compiled: Sequence[CompiledQuery],
    per: Sequence[_Ranked],
    rows: dict[int, ChunkRow],
) -> QueryView:
    """What the learned ranking reads about the search as a whole (``search.features``)."""
    best = [max((f.lexical_score or 0.0 for f in p.ranked), default=0.0) for p in per]
    top_coverage = max(per[0].coverage.values(), default=0.0)
    if request.scale:  # several indexes answer: the scale they share, as the fusion used
        best = [max(b, s[0]) for b, s in zip(best, request.scale, strict=False)]
        top_coverage = max(top_coverage, request.scale[0][1])
    first = per[0].ranked
    lexical_top = next((f.rowid for f in first if f.lexical_rank == 1), None)
    dense_top = next((f.rowid for f in first if f.dense_rank == 1), None)
    agree = (
        lexical_top in rows
        and dense_top in rows
        and rows[lexical_top].document_id == rows[dense_top].document_id
    )
    return QueryView(
        japanese=is_japanese(request.query), terms=tuple(c.terms for c in compiled), best_lexical=tuple(best),
        coverage=tuple(p.coverage for p in per), top_coverage=top_coverage,
        best_similarity=per[0].best_similarity, legs_agree=agree,
    )  # fmt: skip


def _reranked(
    stage: RerankStage, query: str, ranked: list[fusion.Fused], rows: dict[int, ChunkRow]
) -> tuple[list[fusion.Fused], dict[int, tuple[float, float]], str | None]:
    """The ranking with its best ``stage.candidates`` in the reranker's order (``rerank.stage.reorder``).

    Also returns, per reranked chunk, its rerank score and its own fused score, and the note that
    says why the fused order was kept. The reranker reads each chunk as the embedder does, its
    heading path above its text (``passage_input``): the headings often say what a passage is about.
    The low-confidence verdict stays the fusion's: it was measured on the fused scores.
    """
    live = [f for f in ranked if f.rowid in rows]  # a chunk deleted since the legs ran is skipped
    head = live[: stage.candidates]
    if not head or not query.strip():
        return ranked, {}, None
    outcome = stage.score(
        query, [passage_input(rows[f.rowid].heading_path, rows[f.rowid].text) for f in head]
    )
    if outcome.scores is None:
        return ranked, {}, outcome.note
    placed = reorder(outcome.scores, [f.score for f in head])
    scores = {head[i].rowid: (outcome.scores[i], head[i].score) for i, _ in placed}
    return [replace(head[i], score=score) for i, score in placed] + live[len(head) :], scores, None


def _bridge_candidates(
    store: Store, request: SearchRequest, bridge: Bridge, *, gated: bool
) -> tuple[list[tuple[int, float]], dict[int, float]] | None:
    """The bridge's keyword candidates and their coverage of the bridged words; ``None`` without a
    bridge. Asked before the query's own legs are fused, while the dense leg runs on its thread."""
    if not bridge.groups:
        return None
    compiled = CompiledQuery(bridge.terms, ())
    found = lexical_candidates(
        store, compiled, limit=CANDIDATES_PER_LEG, filters=request.filters, complete=not gated
    )
    return found, bridge_coverage(store, bridge, [r for r, _ in found[:COVERAGE_DEPTH]])


def _bridged(
    request: SearchRequest,
    bridged: tuple[list[tuple[int, float]], dict[int, float]] | None,
    ranked: list[fusion.Fused],
    *,
    gated: bool,
    raw: bool,
) -> list[fusion.Fused]:
    """The query's own ranking with the bridge's keyword scores added (``fusion.add_bridge``).

    The query's own low-confidence verdict is taken before this: translated words are a guess, and
    a match on them alone must not make a weak search look answered. ``raw``: the query's scores
    are BM25 as the store gave them (no dense leg, no alternatives), so the bridge's part is put in
    the same units, a share of the query's own best score (1 when it found nothing); normalising
    the query's ranking instead reorders it (measured: same-language R@1 0.777 → 0.759).
    """
    if bridged is None:
        return ranked
    found, cov = bridged
    weight = request.bridge_weight * (ranked[0].score if raw and ranked else 1.0)
    return fusion.add_bridge(ranked, found, coverage=cov, weight=weight, gated=gated)


def _rank_one(
    store: Store,
    request: SearchRequest,
    compiled: CompiledQuery,
    dense: DenseLeg | None,
    nearest: Future[Nearest] | None,
    *,
    normalise: bool,
    phrasing: str,
    rows: dict[int, ChunkRow],
    japanese: dict[int, bool],
) -> _Ranked:
    """Both legs for one phrasing, fused as configured (lexical only without a vector, i.e. without
    ``nearest``: the dense leg's search for this phrasing, under way on another thread).

    ``rows`` caches the chunks read for this search (the language gate reads their text), so the
    hits reuse them; ``japanese`` caches the gate's verdict on each, so the phrasings of one search,
    whose candidates mostly overlap, judge a chunk once.
    """
    lexical = lexical_candidates(
        store, compiled, limit=CANDIDATES_PER_LEG, filters=request.filters, complete=nearest is None
    )
    cov: dict[int, float] = {}
    if dense is None or nearest is None:
        if not normalise:
            return _Ranked(fusion.lexical_only(lexical), compiled, cov, None)
        cov = lexical_coverage(store, compiled, [r for r, _ in lexical[:COVERAGE_DEPTH]])
        ranked = fusion.blend(
            lexical, [], dense_weight=0.0, matched_weight=None, coverage=cov, scale=_scale(request, phrasing)
        )
        return _Ranked(ranked, compiled, cov, None)
    found = nearest.result()
    if dense.parts:
        dense_hits = _gated(store, dense, found.parts, phrasing, rows, japanese)
    else:
        dense_hits = _on_one_scale(found.whole, dense.similarity_floor)
    if dense.fusion == "rrf":
        ranked = fusion.rrf(lexical, dense_hits, k=dense.rrf_k)
    else:
        cov = lexical_coverage(store, compiled, [r for r, _ in lexical[:COVERAGE_DEPTH]])
        ranked = fusion.blend(
            lexical, dense_hits, dense_weight=dense.dense_weight, matched_weight=dense.matched_weight,
            coverage=cov, scale=_scale(request, phrasing),
        )  # fmt: skip
    return _Ranked(ranked, compiled, cov, dense_hits[0][1] if dense_hits else None)


def _scale(request: SearchRequest, phrasing: str) -> tuple[float, float] | None:
    """The shared scale of this phrasing, if several indexes answer the search."""
    if not request.scale:
        return None
    return request.scale[request.phrasings.index(phrasing)]


def _low_overall(store: Store, per: Sequence[_Ranked], rows: dict[int, ChunkRow]) -> bool:
    """Whether a search's best hits are too weak to answer from.

    One phrasing: its own verdict. Several (``also``): confident only when two phrasings are each
    confident *and* their best hits are in the same document. A search with four phrasings used to
    be confident when any one was, and one keyword form's strong match on the collection's ordinary
    words made most unanswerable questions look answered; phrasings that agree are what an answer
    looks like (docs/decisions/0029).
    """
    if len(per) == 1:
        return _low_confidence(store, per[0], rows)
    confident: dict[int, int] = {}
    for phrasing in per:
        top = _top(phrasing, rows)
        if top is not None and not _low_confidence(store, phrasing, rows):
            document = rows[top].document_id
            confident[document] = confident.get(document, 0) + 1
    return max(confident.values(), default=0) < 2


def _top(phrasing: _Ranked, rows: dict[int, ChunkRow]) -> int | None:
    return next((f.rowid for f in phrasing.ranked if f.rowid in rows), None)


def _low_confidence(store: Store, phrasing: _Ranked, rows: dict[int, ChunkRow]) -> bool:
    """Whether one phrasing's own best hit is weak.

    Reuses the fusion's coverage scores; only a top hit the lexical leg did not rank needs a lookup.
    """
    top = _top(phrasing, rows)
    if top is None:
        return True
    known = phrasing.coverage
    cov = known[top] if top in known else lexical_coverage(store, phrasing.compiled, [top]).get(top, 0.0)
    return is_low_confidence(
        has_hits=True,
        top_similarity=phrasing.best_similarity,
        top_coverage=cov,
        names_absent=bool(phrasing.absent),
    )


def _absent_names(store: Store, phrasing: str) -> tuple[str, ...]:
    """The names ``phrasing`` mentions that no chunk holds, as written; the whole index is asked, not the
    filtered part, so the answer is about the knowledge base, not about where the search looked."""
    mentioned = names(phrasing)
    if not mentioned:
        return ()
    held = store.document_frequencies([n.term for n in mentioned])
    return tuple(n.surface for n in mentioned if n.term not in held)


@dataclass(frozen=True)
class Nearest:
    """One phrasing's nearest chunk vectors: each model's cosines (``parts``) for a concatenated
    vector, else one cosine each (``whole``)."""

    whole: list[tuple[int, float]]
    parts: list[tuple[int, tuple[float, ...]]]


def _nearest(dense: DenseLeg, vector: np.ndarray, allowed: frozenset[int] | None) -> Nearest:
    """The dense index's search for one phrasing, as run on a leg thread (:func:`_legs`)."""
    if dense.parts:
        return Nearest(
            [], dense.index.search_parts(vector, CANDIDATES_PER_LEG, [p.dim for p in dense.parts], allowed)
        )
    return Nearest(dense.index.search(vector, CANDIDATES_PER_LEG, allowed), [])


@functools.cache
def _legs() -> ThreadPoolExecutor:
    """The threads dense searches run on, shared by every search of the process: a store hands each
    thread its own connection (SQLite) or lends one per call (PostgreSQL), and both indexes are
    safe to search from several threads."""
    return ThreadPoolExecutor(max_workers=LEG_THREADS, thread_name_prefix="kbseek-dense")


def _gated(
    store: Store,
    dense: DenseLeg,
    candidates: list[tuple[int, tuple[float, ...]]],
    phrasing: str,
    rows: dict[int, ChunkRow],
    japanese: dict[int, bool],
) -> list[tuple[int, float]]:
    """The dense hits of a concatenated vector: each model's cosine, gated by the chunk's language."""
    rows.update(store.chunks_by_rowid([r for r, _ in candidates if r not in rows]))
    for rowid, _ in candidates:
        if rowid not in japanese and rowid in rows:
            japanese[rowid] = is_japanese(rows[rowid].text)
    gated = fusion.gated_dense(
        candidates, dense.parts, query_japanese=is_japanese(phrasing),
        japanese={r for r, _ in candidates if japanese.get(r, False)},
    )  # fmt: skip
    return gated[:CANDIDATES_PER_LEG]


def _on_one_scale(hits: list[tuple[int, float]], floor: float) -> list[tuple[int, float]]:
    """Cosines rescaled so that the model's typical unrelated similarity is 0 (order unchanged)."""
    if floor == 0.0:
        return hits
    return [(rowid, (sim - floor) / (1.0 - floor)) for rowid, sim in hits]


def heading_at(
    heading_path: tuple[str, ...], sections: Sequence[SectionStart], snippet: Snippet
) -> tuple[str, ...]:
    """The heading path of the section the snippet shows.

    Small sections are merged into one chunk (``ingest.chunker``), whose heading path is the first
    one's; an agent cites the heading a hit gives, so a match in a later section must name that
    section. The snippet's best group of matches says where the hit is; without a match, the
    snippet's first character.
    """
    if not sections:
        return heading_path
    where = snippet.focus if snippet.focus is not None else snippet.start
    for section in reversed(sections):
        if section.offset <= where:
            return section.heading_path
    return heading_path


def _snippet(row: ChunkRow, phrasings: Sequence[str], chars: int) -> Snippet:
    """``chars == 0`` skips snippet building, for callers that only need the ranking (eval, benchmarks).

    The snippet is given the query and its alternatives as written, not their compiled terms: only
    the analyzer's view of a whole phrasing tells a word from a bigram of an unknown Japanese word
    (``text.snippets``). A hit an alternative found shows that alternative's words highlighted.
    """
    if chars <= 0:
        return Snippet("", 0, 0, (), 0)
    return make_snippet(row.text, tuple(phrasings), chars, markup=has_markup(row.parser))
