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
from kbseek.facade import shaping, status
from kbseek.facade.catalog import Catalog
from kbseek.facade.live_config import LiveConfig
from kbseek.facade.semantic import SemanticLeg, SemanticState
from kbseek.rerank import RerankSpec, RerankStage
from kbseek.responses import IndexSummary, SearchResponse
from kbseek.search import filtering, ranker
from kbseek.search.dense import VectorIndex
from kbseek.search.keywords import KeywordScale, keyword_scale
from kbseek.search.pipeline import DenseLeg, PipelineResult, run_search
from kbseek.search.request import SearchPolicy, SearchRequest
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

    def policy(
        self,
        *,
        fusion: str | None = None,
        dense_weight: float | None = None,
        matched_weight: float | None = None,
    ) -> SearchPolicy:
        """The search policy in force, or with another fusion or weights for a comparison."""
        policy = self._live.active.policy
        if fusion is not None:
            policy = replace(policy, fusion=fusion, ranker=ranker.shipped() if fusion == "learned" else None)
        if dense_weight is not None:
            policy = replace(policy, dense_weight=dense_weight)
        if matched_weight is not None:
            policy = replace(policy, matched_weight=matched_weight)
        return policy

    def dense_leg(self) -> DenseLeg | None:
        """The dense leg of the model answering now; ``None`` until it is loaded (or with it off)."""
        return self._semantic.dense_leg(self._live.settings)

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
        self,
        request: SearchRequest,
        dense_leg: DenseLeg | None,
        rerank: RerankStage | None = None,
        *,
        policy: SearchPolicy | None = None,
        keywords: KeywordScale | None = None,
    ) -> PipelineResult:
        """Answer one request over this index (``pipeline.run_search``) under ``policy`` (the one in
        force by default): the lexical leg, the dense leg when one is given, and the reranker when
        one is (:meth:`rerank_stage`)."""
        policy = policy if policy is not None else self._live.active.policy
        return run_search(self._store, request, policy, dense_leg, rerank, keywords)

    def keyword_scale(self, request: SearchRequest) -> KeywordScale:
        """This index's keyword legs for ``request``, run as its search will run them, and the best
        match they reach (``search.keywords``): several collections searched as one share the best."""
        active = self._live.active
        request = filtering.literal_prefix(self._store, request)
        dense = self._semantic.dense_leg(active.settings) is not None
        return keyword_scale(self._store, request, active.policy, dense=dense)

    def search(
        self,
        request: SearchRequest,
        summary: Callable[[], IndexSummary],
        keywords: KeywordScale | None = None,
    ) -> SearchResponse:
        """One search with the settings and model state of this moment, as an annotated response, not
        yet fitted to the response cap (its sender fits it, measured as sent).

        ``summary`` is read after ranking, so the counts a response reports are never older than its hits.
        """
        active = self._live.active
        settings = active.settings
        semantic, semantic_error = self._semantic.state(), self._semantic.error
        rerank = None if request.listing else self.rerank_stage(settings.rerank)
        dense = self._semantic.dense_leg(settings)
        try:
            result = run_search(self._store, request, active.policy, dense, rerank, keywords)
        except EmbedderUnavailable as exc:
            # The model went away after it loaded (an embedding server that stopped): semantic search
            # is an addition, never a precondition, so this search answers by keywords and says why.
            # The leg stays up: the next search asks the model again.
            result = run_search(self._store, request, active.policy, None, rerank, keywords)
            semantic, semantic_error = SemanticState.UNAVAILABLE, str(exc)
        servable = self._catalog.servable_document_paths(among={h.chunk.path for h in result.hits})
        return shaping.search_response(
            request, result, limits=settings.limits, servable=set(servable), semantic=semantic,
            semantic_error=semantic_error, summary=summary(), extensions=active.registry.extensions,
            holds_japanese=self._store.holds_japanese, unmatched=result.unmatched,
            empty_index=None if settings.root is not None else status.reader_empty_note(
                self._store.location, status.index_command(settings)
            ),
        )  # fmt: skip
