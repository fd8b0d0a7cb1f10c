"""The semantic leg: the embedding model, the in-memory dense index, and what state they are in.

Semantic search is an addition to keyword search, never a precondition: a model that is still
loading, failed to load, or belongs to another index leaves keyword search working, and every
response says which of these is the case (:class:`SemanticState`).

Loading happens when first needed: :meth:`SemanticLeg.ensure_loaded` is called by ``index()`` and
``search()``, so a library user never has to know that a model exists. A server cannot afford to
load a model before its handshake, so it starts the load on a thread of its own
(:meth:`SemanticLeg.loading_in_background`) and searches answer by keywords until it is up, saying
so, instead of waiting for it.

Thread model: one load at a time (``_lock``); the phase and the dense index are single references
replaced whole, so a reader on another thread sees the old value or the new one, never half of one.
The dense index is assigned before the phase says ``READY``.
"""

from __future__ import annotations

import logging
import threading
from enum import Enum, StrEnum
from functools import partial
from pathlib import Path

from kbseek.config import Settings
from kbseek.embed.base import Embedder, embed_queries
from kbseek.errors import IndexIncompatible, KbError
from kbseek.ingest.indexer import EmbedFn
from kbseek.search.dense import DenseIndex, VectorIndex
from kbseek.search.pipeline import DenseLeg
from kbseek.search.store_vectors import open_dense_index, suits
from kbseek.store.base import Store, model_incompatibility
from kbseek.text.plurals import counted

log = logging.getLogger(__name__)


class SemanticState(StrEnum):
    """What semantic search can do right now; the values are the wire strings of ``legs.semantic``."""

    OFF = "off"
    """Turned off (``semantic = false``, ``--lexical-only``): no model, keyword search only."""
    LOADING = "loading"
    """The model is being loaded; searches are keyword-only until it is up."""
    OK = "ok"
    """Every chunk has a vector the dense index searches."""
    PARTIAL = "partial"
    """The model is up but some chunks have no vector yet; those are found by their words only."""
    UNAVAILABLE = "unavailable"
    """The model cannot be used (not installed, unreachable, or the index holds another model's vectors)."""


class _Phase(Enum):
    """Where the model load is; :class:`SemanticState` is what a response makes of it."""

    IDLE = "idle"  # nobody asked for the model yet
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


class SemanticLeg:
    """The embedder and dense index of one knowledge base, loaded on demand, and their honest state."""

    def __init__(
        self, embedder: Embedder | None, store: Store, settings: Settings, folder: Path | None
    ) -> None:
        """``settings``: those read at start (``[index].approximate_above`` and the model's vector parts
        need a restart); ``folder``: where an approximate index is saved (``None``: in memory only)."""
        self.embedder = embedder
        """``None`` when semantic search is off."""
        self.dense: VectorIndex | None = None
        """The vectors a search uses: exact or approximate (``search.ann.open_vector_index``), brought in
        line with the store after every pass."""
        self._approximate_above = settings.approximate_above
        self._folder = folder
        self._parts = tuple(p.dim for p in settings.embed.parts)
        self.error: str | None = None
        """Why the model is unavailable, in words for a person or an agent."""
        self.mismatch: IndexIncompatible | None = None
        """Set when the index holds another model's vectors: ``index(reembed=True)`` is the way out."""
        self._store = store
        self._phase = _Phase.IDLE
        self._background = False
        self._lock = threading.Lock()
        self._catching_up = threading.Lock()
        self._settled = threading.Event()

    # -- loading -----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The model and the dense index are up: searches use both legs."""
        return self._phase is _Phase.READY and self.dense is not None

    def load(self) -> None:
        """Load the model and the vectors now; on failure keyword search goes on and the state says why.

        Idempotent once loaded; a failed load is tried again, which is how ``index(reembed=True)``
        brings back an index that held another model's vectors.
        """
        if self.embedder is None:
            return
        with self._lock:
            if self.ready:
                return
            self._settled.clear()  # before the phase says LOADING, so a waiter never passes a stale event
            self._phase = _Phase.LOADING
            try:
                self._load(self.embedder)
            finally:
                if self._phase is _Phase.LOADING:  # a bug escaped: never claim "loading" for ever
                    self._phase = _Phase.IDLE
                self._settled.set()

    def _load(self, embedder: Embedder) -> None:
        try:
            embedder.load()
            mismatch = model_incompatibility(self._store, embedder.model_id)
            if mismatch is not None:
                raise mismatch
        except KbError as exc:  # EmbedderUnavailable, IndexIncompatible, a schema refused while reading
            self.error = str(exc)
            self.mismatch = exc if isinstance(exc, IndexIncompatible) else None
            self._phase = _Phase.FAILED
            log.error("semantic search unavailable: %s", exc)
            return
        self.error = self.mismatch = None
        self.dense = self._open_index(embedder)
        self._phase = _Phase.READY

    def _open_index(self, embedder: Embedder) -> VectorIndex:
        parts = self._parts if sum(self._parts) == embedder.dim else ()
        # A process with no index folder is read-only: it never builds the store's vector index.
        return open_dense_index(
            self._store, embedder.dim, approximate_above=self._approximate_above, folder=self._folder,
            parts=parts, builds=self._folder is not None,
        )  # fmt: skip

    @property
    def untouched(self) -> bool:
        """Nobody has asked for the model yet: loading it is still a cost that can be avoided."""
        return self.embedder is not None and self._phase is _Phase.IDLE

    def ensure_loaded(self) -> None:
        """Load the model if nobody has asked for it yet; called by ``index()`` and ``search()``.

        Waits for a load another caller started, but never for the server's background load:
        a server answers by keywords while its model comes up, and says so.
        """
        if self.embedder is None:
            return
        if self._phase is _Phase.IDLE:
            self.load()
        elif self._phase is _Phase.LOADING and not self._background:
            self._settled.wait()

    def loading_in_background(self) -> None:
        """Say the model is loading before the thread that loads it is scheduled (a server's start)."""
        if self.embedder is not None and self._phase is _Phase.IDLE:
            self._background = True
            self._phase = _Phase.LOADING

    # -- what indexing and search use --------------------------------------------------------------

    def embedding(self, wanted: bool) -> tuple[EmbedFn | None, str | None]:
        """(embed function, model id) for a pass, or ``(None, None)`` for a keyword-only pass.

        While the model is loading the pass may still embed: the embedder loads itself on first use
        and is safe to share between threads.
        """
        if not wanted or self.embedder is None or self._phase not in (_Phase.LOADING, _Phase.READY):
            return None, None
        return self.embedder.embed_documents, self.embedder.model_id

    def dense_leg(self, settings: Settings) -> DenseLeg | None:
        """The dense leg as the current settings fuse it, or ``None`` for a keyword-only search."""
        dense, embedder = self.dense, self.embedder
        if not self.ready or dense is None or embedder is None:
            return None
        return DenseLeg(
            dense, partial(embed_queries, embedder), settings.fusion, settings.dense_weight, settings.rrf_k,
            settings.dense_weight_matched, settings.embed.floor, settings.embed.parts,
        )  # fmt: skip

    def vectors_changed(self, *, rebuilt: bool) -> None:
        """Bring the dense snapshot in line with the store after a pass that changed it.

        ``rebuilt``: every vector was made again under the same rowids, which a refresh (that only
        reads new rowids) would miss.
        """
        with self._catching_up:  # two passes' catch-ups never interleave (the runner runs them unlocked)
            self._catch_up(rebuilt=rebuilt)

    def _catch_up(self, *, rebuilt: bool) -> None:
        dense, embedder = self.dense, self.embedder
        if dense is None or embedder is None:
            return
        if isinstance(dense, DenseIndex) and not suits(
            dense, self._approximate_above, self._store.embedded_count()
        ):
            # Crossing the threshold from below (a first index of a large knowledge base): build the
            # graph from the store at once, rather than first load every vector as float32 for an exact
            # snapshot about to be dropped (1.3 GB peak at 140k chunks).
            log.info("chunk vectors past [index].approximate_above: building the approximate index")
            self.dense = self._open_index(embedder)
            return
        if rebuilt:
            dense.reload(self._store)
        else:
            dense.refresh(self._store)
        if not suits(dense, self._approximate_above):
            # The knowledge base crossed [index].approximate_above: the other kind is built while
            # searches use this one, then replaces it whole.
            log.info("%d chunk vectors: switching the dense index's kind", len(dense))
            self.dense = self._open_index(embedder)  # the old one is dropped unsaved: its kind is done

    def close(self) -> None:
        """Let the dense index keep what should outlive the process (an approximate graph's changes)."""
        dense = self.dense
        if dense is not None:
            dense.close()

    # -- state, honestly -----------------------------------------------------------------------------

    def state(self) -> SemanticState:
        """The state of the leg itself; ``PARTIAL`` is decided by a response that knows the counts."""
        if self.embedder is None:
            return SemanticState.OFF
        if self._phase is _Phase.FAILED:
            return SemanticState.UNAVAILABLE
        if self._phase is _Phase.READY:
            return SemanticState.OK
        return SemanticState.LOADING

    def covered(self, chunks: int) -> int | None:
        """Chunks the dense leg searches now: the loaded snapshot, which is what a search uses.

        It trails the store while an embedding pass runs (the snapshot is refreshed after the pass),
        so it never claims vectors a search cannot see yet. ``None`` without a loaded model.
        """
        dense = self.dense
        if not self.ready or dense is None:
            return None
        return min(len(dense), chunks)

    def for_status(self, chunks: int, *, indexing: bool) -> tuple[SemanticState, int | None, str | None]:
        """(state, embedded chunks, note) for ``status``: what semantic search can do, read honestly.

        A process that loaded (or is loading) the model answers from it. One that never will
        (``kbseek status``) reads the index instead: whether its vectors are of the configured model
        and how many chunks have one; loading a model just to report on it would cost seconds.
        """
        if self.embedder is None:
            return SemanticState.OFF, None, None
        if self._phase is _Phase.FAILED:
            return SemanticState.UNAVAILABLE, None, None  # the error is in the notes already
        if self._phase is _Phase.LOADING:
            return SemanticState.LOADING, self._store.embedded_count(), None
        if self._phase is _Phase.READY:
            embedded = self.covered(chunks) or 0
        else:
            mismatch = model_incompatibility(self._store, self.embedder.model_id)
            if mismatch is not None:
                return SemanticState.UNAVAILABLE, None, str(mismatch)
            embedded = self._store.embedded_count()
        if embedded >= chunks:
            return SemanticState.OK, embedded, None
        rest = chunks - embedded
        how = "the running pass embeds them" if indexing else "`kbseek index` or a server embeds them"
        unseen = f"{counted(rest, 'chunk')} of {chunks} have no vector yet: semantic search does not see them"
        return SemanticState.PARTIAL, embedded, f"{unseen}; {how}"
