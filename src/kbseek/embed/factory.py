"""The factory that turns an :class:`~kbseek.embed.base.EmbedderSpec` into an embedder.

It lives apart from ``embed.base`` because the providers import the contract
from there: a factory in the same module would make the contract import its
own implementations, a cycle. Here the dependency runs one way, factory →
providers → base.
"""

from __future__ import annotations

from kbseek.embed.base import E5_MODELS, PAIR, Embedder, EmbedderSpec, provider_list
from kbseek.errors import ConfigError


def make_embedder(spec: EmbedderSpec) -> Embedder:
    """Build the embedder a spec describes, without loading it.

    Provider modules are imported here, not at package import, so that
    importing :mod:`kbseek.embed` never pays for a provider the configuration
    does not use. Nothing heavy happens until :meth:`Embedder.load`.
    """
    if spec.provider == "use":
        from kbseek.embed.use import UseEmbedder

        return UseEmbedder(threads=spec.threads, batch_size=spec.batch_size)
    if spec.provider == "e5":
        from kbseek.embed.e5 import E5Embedder

        return E5Embedder(
            model=spec.model or E5_MODELS[0],
            threads=spec.threads,
            batch_size=spec.batch_size,
            engine=spec.engine,
        )
    if spec.provider == PAIR:
        from kbseek.embed.e5 import E5Embedder
        from kbseek.embed.pair import PairEmbedder
        from kbseek.embed.use import UseEmbedder

        return PairEmbedder(
            UseEmbedder(threads=spec.threads, batch_size=spec.batch_size),
            E5Embedder(
                model=E5_MODELS[0], threads=spec.threads, batch_size=spec.batch_size, engine=spec.engine
            ),
        )
    if spec.provider == "http":
        from kbseek.embed.http import HttpEmbedder

        assert spec.url is not None and spec.model is not None  # guaranteed by EmbedderSpec
        return HttpEmbedder(
            url=spec.url,
            model=spec.model,
            api_key_env=spec.api_key_env,
            batch_size=spec.batch_size,
            timeout_s=spec.timeout_s,
        )
    # EmbedderSpec rejects anything else; this guards specs built around validation.
    raise ConfigError(f"unknown embedding provider {spec.provider!r}; choose one of {provider_list()}")
