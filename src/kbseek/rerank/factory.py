"""The built-in rerank providers, registered in :data:`~kbseek.rerank.base.RERANKERS`.

Apart from ``rerank.base`` for the reason ``embed.factory`` is apart from ``embed.base``: the
providers import the contract, so the contract cannot import them. Each factory imports its
provider when called, so importing :mod:`kbseek.rerank` costs nothing a configuration does not use
(the ``local`` provider's fastembed is imported only when its model loads).
"""

from __future__ import annotations

from kbseek.rerank.base import Reranker, RerankSpec, register_reranker


def _http(spec: RerankSpec) -> Reranker:
    from kbseek.rerank.http import HttpReranker

    return HttpReranker(spec)


def _local(spec: RerankSpec) -> Reranker:
    from kbseek.rerank.local import LocalReranker

    return LocalReranker(spec)


# The built-ins, in the order messages list them.
register_reranker("http", _http)
register_reranker("local", _local)
