"""From a request to ranked, de-duplicated hits with snippets: the retrieval logic in one place.

Surfaces never rank; the facade asks :func:`run_search` and shapes its result. Everything a search
asks of the index happens here, in this order: the filters as the index reads them (a prefix taken
literally, a ``where`` field checked), then a listing or both legs fused, then, without hits,
whether the filters themselves passed nothing (``search.filtering``).
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
from kbseek.filters import SearchFilters
from kbseek.ingest.parsers import has_markup
from kbseek.rerank.stage import RerankStage, reorder
from kbseek.search import filtering, fusion
from kbseek.search.bridge import Bridge, bridge_coverage, bridge_query
from kbseek.search.confidence import is_low_confidence
from kbseek.search.dense import VectorIndex
from kbseek.search.diversity import distinct_first
from kbseek.search.features import QueryView
from kbseek.search.fts_query import CompiledQuery, compile_query
from kbseek.search.hits import PipelineResult, RankedHit
from kbseek.search.keywords import CANDIDATES_PER_LEG, KeywordLeg, KeywordScale, Scale, ask
from kbseek.search.lexical import COVERAGE_DEPTH, lexical_candidates, lexical_coverage
from kbseek.search.request import SearchPolicy, SearchRequest
from kbseek.store.base import Store
from kbseek.store.records import ChunkRow
from kbseek.text.language import is_japanese
from kbseek.text.names import names
from kbseek.text.snippets import Snippet, make_snippet

__all__ = ["CANDIDATES_PER_LEG", "DenseLeg", "PipelineResult", "RankedHit", "heading_at", "run_search"]

LEG_THREADS = 4
"""Dense searches in flight at once (a search with ``also`` asks one per phrasing, up to four)."""


@dataclass(frozen=True, kw_only=True)
class DenseLeg:
    """The semantic leg: the model answering now and its vectors.

    How its scores are fused with the keyword leg's is the :class:`SearchPolicy`'s (the settings);
    what is here changes with the model: a change of model (decision 0040) answers with the old
    model's index, floor and parts until the new one's vectors are made.
    """

    index: VectorIndex
    """Exact or approximate (docs/decisions/0017): the pipeline reads both the same way."""
    embed_queries: Callable[[Sequence[str]], np.ndarray]
    """``(len(texts), dim)`` query vectors: one call embeds every phrasing of a search
    (``embed.base.embed_queries``)."""
    similarity_floor: float
    """The model's cosine for unrelated text; similarities are rescaled from it (``EmbedderSpec.floor``)."""
    parts: tuple[VectorPart, ...]
    """The models whose vectors are concatenated in each row (``embed.pair``), each read on its own
    and gated by language (``fusion.gated_dense``); empty for one model, which ``similarity_floor``
    then describes."""


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


def run_search(
    store: Store,
    request: SearchRequest,
    policy: SearchPolicy,
    dense: DenseLeg | None = None,
    rerank: RerankStage | None = None,
    keywords: KeywordScale | None = None,
) -> PipelineResult:
    """Answer ``request`` over ``store`` as ``policy`` ranks: a listing when it has no query, else both
    legs fused (the dense one when given), the best candidates reranked when a stage is given
    (docs/decisions/0038), then the hits chosen, each with its snippet; newest first when asked.

    ``keywords``: the keyword legs this index already ran for the request, and the scale shared with
    the other indexes answering it (``search.keywords``). Raises ``UnknownField`` for a ``where``
    on a field no document has.
    """
    request = filtering.literal_prefix(store, request)
    filtering.check_fields(store, request.filters)
    if request.listing:
        result = filtering.listing(
            store, request.filters, limit=request.limit, snippet_chars=request.snippet_chars
        )
    elif request.sort == "newest":
        pooled = replace(request, limit=filtering.pool_limit(request.limit, policy.max_limit))
        ranked = _ranked(store, pooled, policy, dense, rerank, keywords)
        result = filtering.newest_first(ranked, request.limit)
    else:
        result = _ranked(store, request, policy, dense, rerank, keywords)
    unmatched = None if result.hits else filtering.unmatched_note(store, request.filters)
    return replace(result, filters=request.filters, unmatched=unmatched)


def _ranked(
    store: Store,
    request: SearchRequest,
    policy: SearchPolicy,
    dense: DenseLeg | None,
    rerank: RerankStage | None,
    keywords: KeywordScale | None,
) -> PipelineResult:
    """Both legs fused, reranked when a stage is given, then the hits chosen with their snippets."""
    phrasings = request.phrasings
    compiled = [compile_query(p, max_terms=policy.max_terms) for p in phrasings]
    said = [i for i, p in enumerate(phrasings) if p.strip()]
    vectors: dict[int, np.ndarray] = {}
    allowed: frozenset[int] | None = None
    if dense is not None and said:
        allowed = store.filtered_rowids(request.filters)
        embedded = dense.embed_queries([phrasings[i] for i in said])  # one model call for all of them
        vectors = {i: embedded[n] for n, i in enumerate(said)}
    bridge = bridge_query(store, request.query) if policy.bridge_weight > 0 else Bridge(())
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
    kept = keywords.legs_for(request) if keywords is not None else None
    shared = keywords.shared if keywords is not None else ()
    per = [
        replace(
            _rank_one(
                store, policy, compiled[i], dense, nearest.get(i), normalise=normalise,
                phrasing=phrasings[i], rows=rows, japanese=japanese, filters=request.filters,
                kept=kept[i] if kept else None,
                scale=shared[i] if shared else None,
            ),
            absent=_absent_names(store, phrasings[i]),
        )
        for i in range(len(phrasings))
    ]  # fmt: skip
    first = _bridged(
        policy, bridged, per[0].ranked, gated=dense is not None, raw=dense is None and not normalise
    )
    ranked = (
        first
        if len(per) == 1
        else fusion.best_of([first, *(p.ranked for p in per[1:])], agreement=policy.also_agreement)
    )

    rows.update(store.chunks_by_rowid([f.rowid for f in ranked if f.rowid not in rows]))
    if dense is not None and policy.ranker is not None and said:
        ranked = policy.ranker.order(ranked, rows, _view(request, shared, compiled, per, rows), japanese)
    reranked: dict[int, tuple[float, float]] = {}
    rerank_note = None
    if rerank is not None:
        ranked, reranked, rerank_note = _reranked(rerank, request.query, ranked, rows)
    chosen, more = distinct_first(
        ranked, rows, limit=request.limit, per_document=policy.max_hits_per_document,
        far_ahead=policy.far_ahead,
    )  # fmt: skip
    shown = tuple(p for p in phrasings if p.strip())
    sections = store.section_starts([f.rowid for f in chosen])
    hits = []
    for f in chosen:
        snippet = _snippet(rows[f.rowid], shown, request.snippet_chars)
        heading = heading_at(rows[f.rowid].heading_path, sections.get(f.rowid, ()), snippet)
        rerank_score, fused_score = reranked.get(f.rowid, (None, None))
        hits.append(RankedHit(rows[f.rowid], snippet, f, heading, rerank_score, fused_score))
    doubt = _doubt(store, per, rows) if hits else None
    absent = tuple(dict.fromkeys(name for p in per for name in p.absent))
    return PipelineResult(
        hits, compiled[0], dense is not None, more, not hits or doubt is not None,
        None if absent else doubt, tuple(compiled[1:]), absent, rerank_note,
    )  # fmt: skip


def _view(
    request: SearchRequest,
    shared: Scale,
    compiled: Sequence[CompiledQuery],
    per: Sequence[_Ranked],
    rows: dict[int, ChunkRow],
) -> QueryView:
    """What the learned ranking reads about the search as a whole (``search.features``)."""
    best = [max((f.lexical_score or 0.0 for f in p.ranked), default=0.0) for p in per]
    top_coverage = max(per[0].coverage.values(), default=0.0)
    if shared:  # several indexes answer: the scale they share, as the fusion used
        best = [max(b, s[0]) for b, s in zip(best, shared, strict=False)]
        top_coverage = max(top_coverage, shared[0][1])
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
    policy: SearchPolicy,
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
    weight = policy.bridge_weight * (ranked[0].score if raw and ranked else 1.0)
    return fusion.add_bridge(ranked, found, coverage=cov, weight=weight, gated=gated)


def _rank_one(
    store: Store,
    policy: SearchPolicy,
    compiled: CompiledQuery,
    dense: DenseLeg | None,
    nearest: Future[Nearest] | None,
    *,
    normalise: bool,
    phrasing: str,
    rows: dict[int, ChunkRow],
    japanese: dict[int, bool],
    filters: SearchFilters,
    kept: KeywordLeg | None = None,
    scale: tuple[float, float] | None = None,
) -> _Ranked:
    """Both legs for one phrasing, fused as configured (lexical only without a vector, i.e. without
    ``nearest``: the dense leg's search for this phrasing, under way on another thread).

    ``rows`` caches the chunks read for this search (the language gate reads their text), so the
    hits reuse them; ``japanese`` caches the gate's verdict on each, so the phrasings of one search,
    whose candidates mostly overlap, judge a chunk once. ``kept``: this phrasing's keyword leg as
    already run, used when it was asked as this search asks it. ``scale``: the best keyword match
    over every index answering the search, when several do.
    """
    complete = nearest is None
    leg = kept if kept is not None and kept.complete == complete else None
    if leg is None:
        leg = ask(store, compiled, filters, complete=complete)
    lexical = leg.candidates
    cov: dict[int, float] = {}
    if dense is None or nearest is None:
        if not normalise:
            return _Ranked(fusion.lexical_only(lexical), compiled, cov, None)
        cov = leg.covered(store, compiled)
        ranked = fusion.blend(lexical, [], dense_weight=0.0, matched_weight=None, coverage=cov, scale=scale)
        return _Ranked(ranked, compiled, cov, None)
    found = nearest.result()
    if dense.parts:
        dense_hits = _gated(store, dense, found.parts, phrasing, rows, japanese)
    else:
        dense_hits = _on_one_scale(found.whole, dense.similarity_floor)
    if policy.fusion == "rrf":
        ranked = fusion.rrf(lexical, dense_hits, k=policy.rrf_k)
    else:
        cov = leg.covered(store, compiled)
        ranked = fusion.blend(
            lexical, dense_hits, dense_weight=policy.dense_weight, matched_weight=policy.matched_weight,
            coverage=cov, scale=scale,
        )  # fmt: skip
    return _Ranked(ranked, compiled, cov, dense_hits[0][1] if dense_hits else None)


def _doubt(store: Store, per: Sequence[_Ranked], rows: dict[int, ChunkRow]) -> str | None:
    """Why a search's best hits are too weak to answer from, in words; ``None`` when they are not.

    One phrasing: its own verdict. Several (``also``): confident only when two phrasings are each
    confident *and* their best hits are in the same document. A search with four phrasings used to
    be confident when any one was, and one keyword form's strong match on the collection's ordinary
    words made most unanswerable questions look answered; phrasings that agree are what an answer
    looks like (docs/decisions/0029). The reason is given because a caller sees the ranking: a
    strong first hit flagged without one read as a contradiction.
    """
    if len(per) == 1:
        return _weak(store, per[0], rows)
    confident: dict[int, int] = {}
    for phrasing in per:
        top = _top(phrasing, rows)
        if top is not None and _weak(store, phrasing, rows) is None:
            document = rows[top].document_id
            confident[document] = confident.get(document, 0) + 1
    if max(confident.values(), default=0) >= 2:
        return None
    strong = sum(confident.values())
    found = "no phrasing" if not strong else "one phrasing" if strong == 1 else f"{strong} phrasings"
    return f"{found} of {len(per)} found a strong best hit, no two in one document"


def _top(phrasing: _Ranked, rows: dict[int, ChunkRow]) -> int | None:
    return next((f.rowid for f in phrasing.ranked if f.rowid in rows), None)


def _weak(store: Store, phrasing: _Ranked, rows: dict[int, ChunkRow]) -> str | None:
    """Why one phrasing's own best hit is weak, in words; ``None`` when it is not.

    Reuses the fusion's coverage scores; only a top hit the lexical leg did not rank needs a lookup.
    """
    top = _top(phrasing, rows)
    if top is None:
        return "nothing matched"
    known = phrasing.coverage
    cov = known[top] if top in known else lexical_coverage(store, phrasing.compiled, [top]).get(top, 0.0)
    similarity = phrasing.best_similarity
    if not is_low_confidence(
        has_hits=True, top_similarity=similarity, top_coverage=cov, names_absent=bool(phrasing.absent)
    ):
        return None
    if phrasing.absent:
        return "it names something no note mentions"
    words = f"best hit has {cov:.0%} of query words"
    if similarity is None:
        return words
    return f"{words}, similarity {similarity:.2f}"


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
