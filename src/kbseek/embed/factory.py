"""The built-in embedding providers, and the factory that turns an
:class:`~kbseek.embed.base.EmbedderSpec` into an embedder.

It lives apart from ``embed.base`` because the providers import the contract
from there: factories in the same module would make the contract import its
own implementations, a cycle. Here the dependency runs one way, factory →
providers → base. The names themselves live in the registry in ``embed.base``
(:data:`~kbseek.embed.base.PROVIDERS`), so that validating a spec needs no
provider; :func:`make_embedder` only looks the factory up there. Another
provider joins with :func:`~kbseek.embed.base.register_provider`.

Each factory imports its provider inside the function, not here, so that
importing :mod:`kbseek.embed` never pays for a provider the configuration does
not use. Nothing heavy happens until :meth:`Embedder.load`.
"""

from __future__ import annotations

from kbseek.embed.base import E5_MODELS, PAIR, PROVIDERS, Embedder, EmbedderSpec, register_provider


def make_embedder(spec: EmbedderSpec) -> Embedder:
    """Build the embedder a spec describes, without loading it.

    An unknown provider raises :class:`~kbseek.errors.ConfigError` listing the
    registered ones; ``EmbedderSpec`` already refuses it, so this guards specs
    built around validation.
    """
    return PROVIDERS.lookup(spec.provider)(spec)


def _use(spec: EmbedderSpec) -> Embedder:
    from kbseek.embed.use import UseEmbedder

    return UseEmbedder(threads=spec.threads, batch_size=spec.batch_size)


def _e5(spec: EmbedderSpec) -> Embedder:
    from kbseek.embed.e5 import E5Embedder

    return E5Embedder(
        model=spec.model or E5_MODELS[0],
        threads=spec.threads,
        batch_size=spec.batch_size,
        engine=spec.engine,
    )


def _pair(spec: EmbedderSpec) -> Embedder:
    from kbseek.embed.e5 import E5Embedder
    from kbseek.embed.pair import PairEmbedder
    from kbseek.embed.use import UseEmbedder

    return PairEmbedder(
        UseEmbedder(threads=spec.threads, batch_size=spec.batch_size),
        E5Embedder(model=E5_MODELS[0], threads=spec.threads, batch_size=spec.batch_size, engine=spec.engine),
    )


def _http(spec: EmbedderSpec) -> Embedder:
    from kbseek.embed.http import HttpEmbedder

    assert spec.url is not None and spec.model is not None  # guaranteed by EmbedderSpec
    return HttpEmbedder(
        url=spec.url,
        model=spec.model,
        api_key_env=spec.api_key_env,
        batch_size=spec.batch_size,
        timeout_s=spec.timeout_s,
    )


def _fastembed(spec: EmbedderSpec) -> Embedder:
    from kbseek.embed.fastembed import FastembedEmbedder

    assert spec.model is not None  # guaranteed by EmbedderSpec
    return FastembedEmbedder(
        spec.model, threads=spec.threads, batch_size=spec.batch_size, allow_download=spec.allow_download
    )


# The built-ins, in the order messages list them.
register_provider("use", _use)
register_provider("e5", _e5)
register_provider(PAIR, _pair)
register_provider("http", _http)
register_provider("fastembed", _fastembed)
