"""Search as the knowledge base runs it: both legs over the index, fused, shaped into a response.

The ranking itself lives in ``kbseek.search`` (the pipeline knows nothing of settings or models);
this module binds it to one knowledge base: the store, the settings in force now, and the semantic
leg in whatever state it is. It is also what a benchmark holds (``KnowledgeBase.retrieval()``) to
score each leg alone, or the same pipeline under another fusion, against the very index a search
uses, without reaching into private state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from kbseek.embed.base import Embedder
from kbseek.errors import EmbedderUnavailable
from kbseek.facade import filtering, shaping, status
from kbseek.facade.catalog import Catalog
from kbseek.facade.live_config import LiveConfig
from kbseek.facade.semantic import SemanticLeg, SemanticState
from kbseek.filters import SearchFilters
from kbseek.rerank import RerankSpec, RerankStage
from kbseek.responses import IndexSummary, SearchResponse
from kbseek.search import ranker
from kbseek.search.dense import VectorIndex
from kbseek.search.pipeline import DenseLeg, PipelineResult, SearchRequest, lexical_scale, run_search
from kbseek.store.base import Store


class Retrieval:
    """The legs of one knowledge base's search, and the search that fuses and shapes them."""

    def __init__(self, store: Store, live: LiveConfig, semantic: SemanticLeg, catalog: Catalog) -> None:
        self._store = store
        self._live = live
        self._semantic = semantic
        self._catalog = catalog
        self._rerank: tuple[RerankSpec, RerankStage] | None = None
        self._rerank_lock = threading.Lock()

    @property
    def store(self) -> Store:
        """The index both legs read (the lexical leg directly, the dense leg through its snapshot)."""
        return self._store

    @property
    def embedder(self) -> Embedder | None:
        """The model behind the dense leg; ``None`` when semantic search is off."""
        return self._semantic.embedder

    @property
    def dense(self) -> VectorIndex | None:
        """The dense index a search uses now (exact or approximate); ``None`` until the model is loaded."""
        return self._semantic.dense if self._semantic.ready else None

    def dense_leg(
        self,
        *,
        fusion: str | None = None,
        dense_weight: float | None = None,
        matched_weight: float | None = None,
    ) -> DenseLeg | None:
        """The dense leg as configured, or with another fusion for a comparison; ``None`` if not loaded."""
        leg = self._semantic.dense_leg(self._live.settings)
        if leg is None:
            return None
        if fusion is not None:
            leg = replace(leg, fusion=fusion, ranker=ranker.shipped() if fusion == "learned" else None)
        if dense_weight is not None:
            leg = replace(leg, dense_weight=dense_weight)
        if matched_weight is not None:
            leg = replace(leg, matched_weight=matched_weight)
        return leg

    def rerank_stage(self, spec: RerankSpec | None = None) -> RerankStage | None:
        """The reranker ``spec`` (by default ``[rerank]`` as configured now) describes, built when first
        asked; ``None`` when it is off.

        Built again when the configuration changes (``[rerank]`` applies without a restart): the
        spec is frozen, so an equal spec is the same reranker and keeps its loaded model.
        """
        spec = spec if spec is not None else self._live.settings.rerank
        with self._rerank_lock:
            current = self._rerank
            if current is not None and current[0] == spec:
                return current[1]
            self._rerank = (spec, RerankStage.from_spec(spec)) if spec.enabled else None
            return self._rerank[1] if self._rerank is not None else None

    def run(
        self, request: SearchRequest, dense_leg: DenseLeg | None, rerank: RerankStage | None = None
    ) -> PipelineResult:
        """Rank one request over this index: the lexical leg, the dense leg when one is given, and
        the reranker when one is (:meth:`rerank_stage`)."""
        return run_search(self._store, request, dense_leg, rerank)

    def _literal_prefix(self, args: shaping.SearchArgs) -> shaping.SearchArgs:
        """``args`` with the prefix read literally when a document's path starts with it that way."""
        literal = args.literal_prefix
        if literal is None or not self._store.filtered_rowids(SearchFilters(path_prefix=literal)):
            return args
        return replace(args, filters=replace(args.filters, path_prefix=literal))

    def lexical_scale(self, args: shaping.SearchArgs) -> tuple[tuple[float, float], ...]:
        """What this index's keyword leg would be normalised by for ``args`` (``pipeline.lexical_scale``)."""
        settings = self._live.settings
        args = self._literal_prefix(args)
        request = args.request(
            settings.limits, far_ahead=settings.far_ahead, also_agreement=settings.also_agreement,
            bridge_weight=settings.bridge_weight,
        )  # fmt: skip
        return lexical_scale(self._store, request)

    def search(self, args: shaping.SearchArgs, summary: Callable[[], IndexSummary]) -> SearchResponse:
        """One search with the settings and model state of this moment, as a capped, annotated response.

        ``summary`` is read after ranking, so the counts a response reports are never older than its hits.
        """
        active = self._live.active
        limits = active.settings.limits
        args = self._literal_prefix(args)  # a folder named with a blank or a "\\"
        filtering.check_fields(self._store, args.filters)
        settings = active.settings
        semantic, semantic_error = self._semantic.state(), self._semantic.error
        if args.listing:
            result = filtering.listing(
                self._store, args.filters, limit=args.limit, snippet_chars=args.snippet_chars
            )
        else:
            newest = args.sort == "newest"
            ranked = (
                replace(args, limit=filtering.pool_limit(args.limit, limits.max_limit)) if newest else args
            )
            request = ranked.request(
                limits, far_ahead=settings.far_ahead, also_agreement=settings.also_agreement,
                bridge_weight=settings.bridge_weight,
            )  # fmt: skip
            rerank = self.rerank_stage(settings.rerank)
            try:
                result = self.run(request, self._semantic.dense_leg(active.settings), rerank)
            except EmbedderUnavailable as exc:
                # The model went away after it loaded (an embedding server that stopped): semantic search
                # is an addition, never a precondition, so this search answers by keywords and says why.
                # The leg stays up: the next search asks the model again.
                result = self.run(request, None, rerank)
                semantic, semantic_error = SemanticState.UNAVAILABLE, str(exc)
            if newest:
                result = filtering.newest_first(result, args.limit)
        unmatched = filtering.unmatched_note(self._store, args.filters) if not result.hits else None
        servable = self._catalog.servable_document_paths(among={h.chunk.path for h in result.hits})
        return shaping.search_response(
            args, result, limits=limits, servable=set(servable), semantic=semantic,
            semantic_error=semantic_error, summary=summary(), extensions=active.registry.extensions,
            holds_japanese=self._store.holds_japanese, unmatched=unmatched,
            empty_index=None if active.settings.root is not None else status.reader_empty_note(
                self._store.location, status.index_command(active.settings)
            ),
        )  # fmt: skip
