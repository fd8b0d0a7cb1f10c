"""Embedding models behind one small protocol.

``make_embedder(EmbedderSpec(...))`` returns an :class:`Embedder` without
loading anything; call ``load()`` (for example in a background thread) before
or instead of relying on the first ``embed_*`` call to do it. Providers:
``use`` (default, bundled), ``e5`` (optional extra ``kbseek[e5]``), ``http``
(an OpenAI-compatible server) and ``fastembed`` (a model the user brings, by
name or folder; extra ``kbseek[models]``), each a factory in the
:data:`PROVIDERS` registry; ``register_provider(name, factory)`` adds another.
Lexical-only mode builds no embedder.

The model commands (``kbseek model pull``, ``list``) and doctor use :func:`pull_model`,
:func:`catalogue`, :func:`reranker_catalogue`, :func:`pulled_copy`, :func:`inspect_model` and
:func:`models_cache`: nothing else downloads. The same verified cache holds the cross-encoders of
``[rerank] provider = "local"`` (decision 0039).
"""

from __future__ import annotations

from kbseek.embed.base import PROVIDERS, Embedder, EmbedderSpec, redact_url, register_provider
from kbseek.embed.factory import make_embedder
from kbseek.embed.fastembed import (
    CatalogueModel,
    ModelReport,
    catalogue,
    find_model,
    inspect_model,
    pull_model,
    pulled_copy,
    reranker_catalogue,
)
from kbseek.embed.hub import PulledModel, human_size, models_cache

__all__ = [
    "PROVIDERS",
    "CatalogueModel",
    "Embedder",
    "EmbedderSpec",
    "ModelReport",
    "PulledModel",
    "catalogue",
    "find_model",
    "human_size",
    "inspect_model",
    "make_embedder",
    "models_cache",
    "pull_model",
    "pulled_copy",
    "redact_url",
    "register_provider",
    "reranker_catalogue",
]
