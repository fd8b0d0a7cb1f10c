"""A second retrieval stage: a cross-encoder re-orders the best fused candidates (``[rerank]``).

Off unless ``[rerank] provider`` is set. ``RerankSpec`` is the configuration, ``Reranker`` the
protocol a provider implements (``http``: a rerank server; ``local``: an ONNX cross-encoder through
fastembed, ``kbseek[models]``), ``register_reranker(name, factory)`` adds a provider, and
``RerankStage`` runs one within its time budget, falling back to the fused order with a note
(docs/decisions/0038).
"""

from __future__ import annotations

from kbseek.rerank import factory as _factory  # noqa: F401  (registers the built-in providers)
from kbseek.rerank.base import RERANKERS, Reranker, RerankFailed, RerankSpec, make_reranker, register_reranker
from kbseek.rerank.stage import Reranked, RerankStage, reorder

__all__ = [
    "RERANKERS",
    "RerankFailed",
    "RerankSpec",
    "RerankStage",
    "Reranked",
    "Reranker",
    "make_reranker",
    "register_reranker",
    "reorder",
]
