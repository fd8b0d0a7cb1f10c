"""Embedding models behind one small protocol.

``make_embedder(EmbedderSpec(...))`` returns an :class:`Embedder` without
loading anything; call ``load()`` (for example in a background thread) before
or instead of relying on the first ``embed_*`` call to do it. Providers:
``use`` (default, bundled), ``e5`` (optional extra ``kbseek[e5]``) and
``http`` (an OpenAI-compatible server), each a factory in the :data:`PROVIDERS`
registry; ``register_provider(name, factory)`` adds another. Lexical-only mode
builds no embedder.
"""

from __future__ import annotations

from kbseek.embed.base import PROVIDERS, Embedder, EmbedderSpec, redact_url, register_provider
from kbseek.embed.factory import make_embedder

__all__ = ["PROVIDERS", "Embedder", "EmbedderSpec", "make_embedder", "redact_url", "register_provider"]
