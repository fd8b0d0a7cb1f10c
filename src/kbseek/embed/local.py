"""What the in-process embedders share: a version-stamped model id, a thread-safe lazy load, batching.

A provider subclass says how to build its model (``_build``) and how to embed a
batch of passages (``_encode``); loading, locking and batching live here once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import metadata
from typing import ClassVar, Generic, TypeVar

import numpy as np

from kbseek.embed.base import check_texts, query_vector, unit_rows

ModelT = TypeVar("ModelT")
"""The provider's model object, typed by a Protocol of the few methods kbseek calls."""


class LocalEmbedder(Generic[ModelT]):
    """Base of the embedders that run a model inside this process."""

    distribution: ClassVar[str]
    """The package that ships the model; its version goes into ``model_id``."""
    vector_dim: ClassVar[int]
    id_prefix: ClassVar[str]

    def __init__(
        self, *, threads: int | None, batch_size: int, variant: str | None = None, prefix: str | None = None
    ) -> None:
        """``prefix``: this instance's id prefix where it differs from the class's (another engine
        making other vectors of the same model)."""
        self._threads = threads
        self._batch_size = max(1, int(batch_size))
        self._model: ModelT | None = None
        self._lock = threading.Lock()
        try:
            version = metadata.version(self.distribution)
        except metadata.PackageNotFoundError:
            # model_id must exist before load; load() will raise the real error.
            version = "not-installed"
        self._model_id = f"{prefix or self.id_prefix}:{version}" + (f":{variant}" if variant else "")

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self.vector_dim

    @property
    def loaded(self) -> bool:
        """True once the model is in memory; lets a status page say "warming up"."""
        return self._model is not None

    def load(self) -> None:
        self._loaded_model()

    def _loaded_model(self) -> ModelT:
        """The model, built by the first caller; the others wait for it."""
        model = self._model
        if model is None:
            with self._lock:
                model = self._model
                if model is None:
                    model = self._model = self._build()
        return model

    def _build(self) -> ModelT:
        """Import, construct and probe the model; raise EmbedderUnavailable with the fix on failure."""
        raise NotImplementedError

    def _encode(self, batch: list[str]) -> np.ndarray:
        """Embed one batch of passages with the loaded model."""
        raise NotImplementedError

    def _check(self, vectors: np.ndarray) -> np.ndarray:
        return unit_rows(vectors, expected_dim=self.vector_dim, source=f"package '{self.distribution}'")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        self.load()
        out = np.empty((len(items), self.vector_dim), dtype=np.float32)
        for start in range(0, len(items), self._batch_size):
            batch = list(items[start : start + self._batch_size])
            out[start : start + len(batch)] = self._encode(batch)
        return self._check(out)

    def embed_query(self, text: str) -> np.ndarray:
        return query_vector(self.embed_queries, text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several queries in one model call (a search with alternative phrasings); no query prefix
        by default, a provider whose model has one overrides this."""
        return self.embed_documents(texts)
