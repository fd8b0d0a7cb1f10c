"""Test doubles for what is slow or lives outside the process.

:class:`FakeEmbedder` stands in for a real embedding model in every test that is about kbseek's
own behaviour (indexing passes, the semantic state, fusion, notes, resources) rather than about a
model. It implements the :class:`~kbseek.embed.base.Embedder` protocol with vectors computed from
the analyzer's terms, so it needs no weights, loads in no time and gives the same vector for the
same text in every process:

- each term of :func:`kbseek.text.analyzer.terms` is hashed (BLAKE2b, never Python's per-process
  ``hash``) to one of ``dim`` buckets, weighted ``1 + log(count)``;
- the vector is L2-normalised, so a dot product is a cosine.

Texts that share words are therefore similar, and texts that share none score 0 (a little more
when two of their terms land in one bucket; never below 0), so the dense leg, the fusion and the
low-confidence check take their real paths with results a test can predict. It knows no synonyms and no other language: a test of paraphrase or cross-language
retrieval is a test of the model and needs the real one (``@pytest.mark.slow``).

Knobs for the states a real model goes through:

- ``fail``: while set, :meth:`FakeEmbedder.load` and every embedding call raise
  :class:`~kbseek.errors.EmbedderUnavailable` with it (a model that cannot load, or a model
  server that went away); clear it and the next call succeeds, as a retried real one would;
- ``gate``: :meth:`FakeEmbedder.load` waits until the test sets this event (a model that is
  still loading);
- ``pause_at=n``: the n-th call of :meth:`FakeEmbedder.embed_documents` sets ``paused`` and waits
  for the test to set ``resume`` (a pass held in the middle of its embed phase, so a test can look
  at the status exactly there without timing anything);
- ``model_id``: build an index "with another model".

Counters record what was asked of it.

:func:`fake_providers` makes provider names build a FakeEmbedder through the embedder registry, so
code that builds its own embedder from a configuration gets one wherever it calls ``make_embedder``.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from kbseek.embed import PROVIDERS, EmbedderSpec, register_provider
from kbseek.embed.base import check_texts
from kbseek.errors import EmbedderUnavailable
from kbseek.text.analyzer import terms

DEFAULT_DIM = 1024
GATE_TIMEOUT_S = 30.0


class FakeEmbedder:
    """A deterministic bag-of-terms embedder implementing :class:`kbseek.embed.base.Embedder`."""

    def __init__(
        self,
        *,
        dim: int = DEFAULT_DIM,
        model_id: str | None = None,
        fail: str | None = None,
        gate: threading.Event | None = None,
        pause_at: int | None = None,
    ) -> None:
        if dim < 2:
            raise ValueError(f"dim must be at least 2, got {dim}")
        self._dim = dim
        self._model_id = model_id if model_id is not None else f"fake:hashed-terms-v1:{dim}"
        self.fail = fail
        """While set, loading and embedding raise :class:`EmbedderUnavailable` with this message."""
        self.gate = gate
        """When set, :meth:`load` waits for this event before it succeeds."""
        self.pause_at = pause_at
        self.paused = threading.Event()
        """Set when the ``pause_at``-th call of :meth:`embed_documents` is waiting for ``resume``."""
        self.resume = threading.Event()
        self.loaded = False
        self.loads = 0
        """Successful loads; :meth:`load` is idempotent, so this stays at 1."""
        self.load_attempts = 0
        self.document_calls = 0
        self.documents_embedded = 0
        """Texts passed to :meth:`embed_documents`, summed over every call that succeeded."""
        self.queries: list[str] = []
        """Every query text embedded (by :meth:`embed_query` or :meth:`embed_queries`), in order."""
        self.query_calls = 0
        """Calls that embedded queries: a batch of several counts once."""
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def load(self) -> None:
        if self.loaded:
            return
        with self._lock:
            if self.loaded:
                return
            self.load_attempts += 1
            if self.gate is not None and not self.gate.wait(GATE_TIMEOUT_S):
                raise EmbedderUnavailable(f"the fake model's gate was not opened within {GATE_TIMEOUT_S} s")
            if self.fail is not None:
                raise EmbedderUnavailable(self.fail)
            self.loaded = True
            self.loads += 1

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dim)`` float32 array of unit rows (a text without terms is a zero row)."""
        items = check_texts(texts)
        self.load()
        self._check_up()
        with self._lock:
            self.document_calls += 1
            call = self.document_calls
        if call == self.pause_at:
            self.paused.set()
            if not self.resume.wait(GATE_TIMEOUT_S):
                raise AssertionError(f"the test never set resume within {GATE_TIMEOUT_S} s")
        out = np.zeros((len(items), self._dim), dtype=np.float32)
        for i, text in enumerate(items):
            out[i] = self.vector(text)
        with self._lock:
            self.documents_embedded += len(items)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """A ``(dim,)`` float32 unit vector in the same space as the documents."""
        if not isinstance(text, str):
            raise TypeError(f"query is {type(text).__name__}, not str")
        self.load()
        self._check_up()
        with self._lock:
            self.queries.append(text)
            self.query_calls += 1
        return self.vector(text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several queries in one call, as the real providers batch them: ``(len(texts), dim)``."""
        items = check_texts(texts)
        self.load()
        self._check_up()
        with self._lock:
            self.queries.extend(items)
            self.query_calls += 1
        out = np.zeros((len(items), self._dim), dtype=np.float32)
        for i, text in enumerate(items):
            out[i] = self.vector(text)
        return out

    def _check_up(self) -> None:
        if self.fail is not None:
            raise EmbedderUnavailable(self.fail)

    def vector(self, text: str) -> np.ndarray:
        """The vector of one text, without loading or counting (for assertions in tests)."""
        v = np.zeros(self._dim, dtype=np.float64)
        for term, count in Counter(terms(text)).items():
            digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
            v[int.from_bytes(digest, "big") % self._dim] += 1.0 + math.log(count)
        norm = float(np.linalg.norm(v))
        if norm > 0.0:
            v /= norm
        return v.astype(np.float32)


@contextmanager
def fake_providers(*names: str) -> Iterator[list[FakeEmbedder]]:
    """Make each of ``names`` a provider that builds a fresh :class:`FakeEmbedder`, for the block.

    A new name (``"fake"``) is registered and removed afterwards; a registered one (a built-in) has
    its factory swapped and put back, in its place in the list. Yields the embedders made, in order.
    """
    made: list[FakeEmbedder] = []

    def make_fake(spec: EmbedderSpec) -> FakeEmbedder:
        made.append(FakeEmbedder())
        return made[-1]

    previous = {name: PROVIDERS[name] for name in names if name in PROVIDERS}
    for name in names:
        register_provider(name, make_fake, replace=True)
    try:
        yield made
    finally:
        for name in names:
            if name in previous:
                register_provider(name, previous[name], replace=True)
            else:
                PROVIDERS.unregister(name)


class TwoModels:
    """What :func:`two_fake_models` yields: the embedders each provider made, and which are broken."""

    def __init__(self) -> None:
        self.made: dict[str, list[FakeEmbedder]] = {"fake-old": [], "fake-new": []}
        """The embedders each provider made, in order, by provider name."""
        self.broken: set[str] = set()
        """Provider names whose embedders fail to load from now on (a model that cannot come back)."""

    def last(self, name: str) -> FakeEmbedder:
        return self.made[name][-1]


@contextmanager
def two_fake_models(old_dim: int = 16, new_dim: int = 24) -> Iterator[TwoModels]:
    """Providers ``fake-old`` and ``fake-new``: two models with their own ids (``fake-old:16``) and
    dimensions, for a change of model (docs/decisions/0040).

    Built through the registry, so a model named by the spec recorded in an index is built again the
    way kbseek builds it.
    """
    models = TwoModels()

    def provider(name: str, dim: int) -> Callable[[EmbedderSpec], FakeEmbedder]:
        def make(spec: EmbedderSpec) -> FakeEmbedder:
            fail = f"{name} is gone" if name in models.broken else None
            models.made[name].append(FakeEmbedder(dim=dim, model_id=f"{name}:{dim}", fail=fail))
            return models.made[name][-1]

        return make

    register_provider("fake-old", provider("fake-old", old_dim))
    register_provider("fake-new", provider("fake-new", new_dim))
    try:
        yield models
    finally:
        PROVIDERS.unregister("fake-old")
        PROVIDERS.unregister("fake-new")
