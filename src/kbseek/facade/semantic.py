"""The semantic leg: the embedding model, the in-memory dense index, and what state they are in.

Semantic search is an addition to keyword search, never a precondition: a model that is still
loading or failed to load leaves keyword search working, and every response says which of these is
the case (:class:`SemanticState`).

Loading happens when first needed: :meth:`SemanticLeg.ensure_loaded` is called by ``index()`` and
``search()``, so a library user never has to know that a model exists. A server cannot afford to
load a model before its handshake, so it starts the load on a thread of its own
(:meth:`SemanticLeg.loading_in_background`) and searches answer by keywords until it is up, saying
so, instead of waiting for it.

A model switch (docs/decisions/0040): when the index's vectors are of another model than the
configured one, passes make the configured model's vectors into a next generation while searches go
on with the index's vectors, their queries embedded by the model that made them, built again from
the ``EmbedderSpec`` recorded with the vectors (:func:`spec_from_json`). When that model cannot be
built again, searches are keyword-only until the switch completes, and say how far it is. Once the
pass promotes the next generation, the leg answers with the configured model.

Thread model: one load at a time (``_lock``); the phase, the answering model and the dense index are
single references replaced whole, so a reader on another thread sees the old value or the new one,
never half of one. The dense index is assigned before the phase says ``READY``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from dataclasses import dataclass
from enum import Enum, StrEnum
from functools import partial
from pathlib import Path

from kbseek.config import Settings
from kbseek.embed.base import Embedder, EmbedderSpec, embed_queries
from kbseek.embed.factory import make_embedder
from kbseek.errors import KbError
from kbseek.ingest.indexer import EmbedFn, ModelSwitch
from kbseek.progress import ProgressSnapshot, ProgressTracker
from kbseek.search.dense import DenseIndex, VectorIndex
from kbseek.search.pipeline import DenseLeg
from kbseek.search.store_vectors import open_dense_index, suits
from kbseek.store.base import Store
from kbseek.store.records import EmbeddingRecord
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
    """The model cannot be used (not installed, unreachable, or a switch from a model that cannot be
    built again is under way)."""


def spec_json(spec: EmbedderSpec) -> str:
    """The spec as recorded with the vectors it made: every field, so the model can be built again."""
    return json.dumps(dataclasses.asdict(spec), sort_keys=True, default=str)


def spec_from_json(text: str | None) -> EmbedderSpec | None:
    """The spec :func:`spec_json` recorded, or ``None`` when none was or it no longer validates.

    A field this kbseek does not know (recorded by a newer one) is left out, and one it knows but
    the record lacks (recorded by an older one) takes its default: the spec gains fields over time.
    """
    if text is None:
        return None
    try:
        data = json.loads(text)
        known = {f.name for f in dataclasses.fields(EmbedderSpec)}
        return EmbedderSpec(**{k: v for k, v in data.items() if k in known})
    except (ValueError, TypeError, AttributeError):  # ConfigError is a ValueError
        return None


@dataclass(frozen=True)
class PassModels:
    """The models a pass uses: ``embed`` (with ``model_id`` and ``spec``) keeps the index's vectors
    whole, ``switch`` makes the configured model's into the next generation (``Indexer``'s arguments)."""

    embed: EmbedFn | None = None
    model_id: str | None = None
    spec: str | None = None
    switch: ModelSwitch | None = None


@dataclass(frozen=True)
class _Answering:
    """The model whose vectors the dense index holds, which embeds every query."""

    embedder: Embedder
    spec: EmbedderSpec | None = None
    """Set for the old model of a switch (its floor and parts); ``None``: the configured model, whose
    floor and parts are those of the settings in force."""
    spec_json: str | None = None
    """As recorded with its vectors, recorded again with those a pass adds."""


class _Phase(Enum):
    """Where the model load is; :class:`SemanticState` is what a response makes of it."""

    IDLE = "idle"  # nobody asked for the model yet
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


RESET_HINT = "`kbseek index --reembed` drops the old vectors and embeds every chunk at once instead"

_NOT_RESOLVED = object()
"""What ``_resolved_for`` holds before the leg first decided which model answers."""


@dataclass(frozen=True)
class GraphBuild:
    """An approximate graph being built from the store's vectors, and what searches use meanwhile.

    A first index of a large knowledge base builds its graph after the pass has embedded every
    chunk (``_catch_up``), and a start after a crash midway builds it again (nothing is saved until
    it is whole, ``ApproximateIndex.open``): 40 minutes at a million vectors on two cores. Searches
    keep the dense index they had, and ``index_status`` says so with the build's progress.
    """

    progress: ProgressSnapshot
    had: int
    """Vectors in the dense index searches use until the graph is ready (0: keywords only)."""

    def note(self) -> str:
        meanwhile = (
            f"until it is ready semantic search sees the {counted(self.had, 'vector')} it had"
            if self.had else "until it is ready searches match by keywords only"
        )  # fmt: skip
        return f"building the approximate vector index: {self.progress.describe()}; {meanwhile}"


SEARCH_PATIENCE = 8.0
"""Seconds a search waits for a model the server is loading in the background. The bundled model
loads in 2.2–2.8 s on 2 busy cores (``KnowledgeBase._semantic.load()`` on the example notes), so a
one-shot client's first search (a script, an inspector, a host's first call) is answered by both
legs; a model still not up after about three times that is slow or stuck, and the search answers by
keywords, saying so."""


class SemanticLeg:
    """The embedder and dense index of one knowledge base, loaded on demand, and their honest state."""

    def __init__(
        self, embedder: Embedder | None, store: Store, settings: Settings, folder: Path | None
    ) -> None:
        """``embedder``: a model of the caller's own (tests), else the one ``settings.embed`` describes
        (none with ``semantic`` off); ``settings``: those read at start (``[index].approximate_above``
        and the model's vector parts need a restart); ``folder``: where an approximate index is saved
        (``None``: in memory only)."""
        described = embedder is None
        if not settings.semantic:
            embedder = None
        elif embedder is None:
            embedder = make_embedder(settings.embed)
        self.embedder = embedder
        """The configured model; ``None`` when semantic search is off."""
        self._spec = spec_json(settings.embed) if described else None
        """Recorded with the configured model's vectors; ``None`` for an embedder handed in, which no
        spec describes (a switch away from it is keyword-only)."""
        self.dense: VectorIndex | None = None
        """The vectors a search uses: exact or approximate (``search.ann.open_vector_index``), brought in
        line with the store after every pass."""
        self._approximate_above = settings.approximate_above
        self._folder = folder
        self._parts = tuple(p.dim for p in settings.embed.parts)
        self._failure: str | None = None
        self._answering: _Answering | None = None
        self.switching_from: str | None = None
        """The model of the index's vectors while the index switches to the configured one."""
        self._old_missing: str | None = None
        """Why the old model of a switch cannot answer, when it cannot."""
        self._resolved_for: object = _NOT_RESOLVED
        self._store = store
        self._phase = _Phase.IDLE
        self._background = False
        self._lock = threading.Lock()
        self._catching_up = threading.Lock()
        self._settled = threading.Event()
        self.building: GraphBuild | None = None
        """How far the approximate graph being built is; ``None`` when none is being built."""

    # -- loading -----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The model and the dense index are up: searches use both legs."""
        return self._phase is _Phase.READY and self.dense is not None

    @property
    def embeds(self) -> bool:
        """The configured model is up: a pass may embed (a switch included, whether or not searches
        have a dense leg meanwhile)."""
        return self._phase is _Phase.READY

    @property
    def error(self) -> str | None:
        """Why semantic search is unavailable, in words for a person or an agent; ``None`` when it is not."""
        if self._failure is not None:
            return self._failure
        if self._phase is _Phase.READY and self.dense is None and self._old_missing is not None:
            return self._switch_words(self._old_missing)
        return None

    def load(self) -> None:
        """Load the model and the vectors now; on failure keyword search goes on and the state says why.

        Idempotent once loaded; a failed load is tried again.
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
            self._resolve(embedder)
        except KbError as exc:  # EmbedderUnavailable, a schema refused while reading
            self._failure = str(exc)
            self._phase = _Phase.FAILED
            log.error("semantic search unavailable: %s", exc)
            return
        self._failure = None
        self._phase = _Phase.READY

    def _resolve(self, embedder: Embedder) -> None:
        """Decide which model answers searches (the configured one, or the old one of a switch) and
        open the dense index of its vectors."""
        recorded = self._store.meta().embedding
        self._resolved_for = recorded.model if recorded is not None else None
        if recorded is None or recorded.model == embedder.model_id:
            answering: _Answering | None = _Answering(embedder)
            self.switching_from = self._old_missing = None
        else:
            self.switching_from = recorded.model
            answering = self._old_model(recorded)
            log.warning(
                "the index's vectors are of model %s, the configured model is %s: switching in the "
                "background%s", recorded.model, embedder.model_id,
                "" if answering else f"; searches use keywords meanwhile ({self._old_missing})",
            )  # fmt: skip
        self.dense = None  # never the old index with the new model, nor the other way round
        self._answering = answering
        if answering is not None:
            self.dense = self._open_index(answering)

    def _old_model(self, recorded: EmbeddingRecord) -> _Answering | None:
        """The model of the index's vectors, built again from its recorded spec and loaded; ``None``
        (with ``_old_missing`` saying why) when it cannot be."""
        spec = spec_from_json(recorded.spec)
        if spec is None:
            self._old_missing = (
                f"model {recorded.model} cannot be built again: no usable record of its settings"
            )
            return None
        try:
            old = make_embedder(spec)
            old.load()
            dim = old.dim
        except Exception as exc:  # a model that cannot come back only costs the dense leg meanwhile
            self._old_missing = f"model {recorded.model} cannot be loaded ({exc})"
            return None
        if old.model_id != recorded.model or (recorded.dim is not None and dim != recorded.dim):
            self._old_missing = f"its recorded settings now build model {old.model_id}, not {recorded.model}"
            return None
        self._old_missing = None
        return _Answering(old, spec, recorded.spec)

    def _open_index(self, answering: _Answering) -> VectorIndex:
        """The dense index of ``answering``'s vectors, built if need be, which :attr:`building`
        reports as it goes; searches meanwhile use :attr:`dense` as it is (``None``: keywords)."""
        embedder = answering.embedder
        parts = self._parts if answering.spec is None else tuple(p.dim for p in answering.spec.parts)
        parts = parts if sum(parts) == embedder.dim else ()
        tracker, had = ProgressTracker(), len(self.dense) if self.dense is not None else 0

        def heard(done: int, total: int) -> None:
            self.building = GraphBuild(tracker.update("graph", done, total), had)

        try:  # a process with no index folder is read-only: it never builds the store's vector index
            return open_dense_index(
                self._store, embedder.dim, approximate_above=self._approximate_above, folder=self._folder,
                parts=parts, builds=self._folder is not None, progress=heard,
            )  # fmt: skip
        finally:
            self.building = None

    @property
    def untouched(self) -> bool:
        """Nobody has asked for the model yet: loading it is still a cost that can be avoided."""
        return self.embedder is not None and self._phase is _Phase.IDLE

    def ensure_loaded(self, patience: float = 0.0) -> None:
        """Load the model if nobody has asked for it yet; called by ``index()`` and ``search()``.

        Waits for a load another caller started. The server's background load is waited for only
        ``patience`` seconds: a search that arrives while the model comes up (a one-shot client's
        first call) gets both legs if the model is up by then, and keywords with a note saying so if
        it is not.
        """
        if self.embedder is None:
            return
        if self._phase is _Phase.IDLE:
            self.load()
        elif self._phase is _Phase.LOADING:
            if not self._background:
                self._settled.wait()
            elif patience > 0:
                self._settled.wait(patience)

    def loading_in_background(self) -> None:
        """Say the model is loading before the thread that loads it is scheduled (a server's start)."""
        if self.embedder is not None and self._phase is _Phase.IDLE:
            self._background = True
            self._phase = _Phase.LOADING

    # -- what indexing and search use --------------------------------------------------------------

    def embedding(self, wanted: bool) -> PassModels:
        """The models of a pass; empty for a keyword-only pass.

        While the model is loading the pass may still embed: the embedder loads itself on first use
        and is safe to share between threads. The index's record is read now, not at load time, so a
        pass after ``--reembed`` (no record) or after a switch completed embeds with the configured
        model alone; while a switch is under way the pass keeps the old model's vectors whole (when
        that model answers) and makes the configured model's into the next generation.
        """
        embedder = self.embedder
        if not wanted or embedder is None or self._phase not in (_Phase.LOADING, _Phase.READY):
            return PassModels()
        recorded = self._store.meta().embedding
        if recorded is None or recorded.model == embedder.model_id:
            return PassModels(embedder.embed_documents, embedder.model_id, self._spec)
        if self._phase is _Phase.LOADING:
            return PassModels()  # the load decides how the switch goes; this pass writes keywords only
        switch = ModelSwitch(embedder.embed_documents, embedder.model_id, self._spec)
        answering = self._answering
        if answering is None or answering.embedder.model_id != recorded.model:
            return PassModels(switch=switch)
        old = answering.embedder
        return PassModels(old.embed_documents, old.model_id, answering.spec_json, switch)

    def dense_leg(self, settings: Settings) -> DenseLeg | None:
        """The dense leg of the model answering now, or ``None`` for a keyword-only search."""
        dense, answering = self.dense, self._answering
        if not self.ready or dense is None or answering is None:
            return None
        spec = answering.spec or settings.embed  # the old model's floor and parts during a switch
        return DenseLeg(
            index=dense, embed_queries=partial(embed_queries, answering.embedder),
            similarity_floor=spec.floor, parts=spec.parts,
        )  # fmt: skip

    def vectors_changed(self, *, rebuilt: bool) -> None:
        """Bring the dense snapshot in line with the store after a pass that changed it.

        ``rebuilt``: every vector was made again under the same rowids, which a refresh (that only
        reads new rowids) would miss. When the index's vectors are now another model's (a switch
        completed, ``--reembed``, or the writer of a shared index did either), the leg decides again
        which model answers and opens that model's index.
        """
        with self._catching_up:  # two passes' catch-ups never interleave (the runner runs them unlocked)
            embedder = self.embedder
            if embedder is not None and self._phase is _Phase.READY and self._record_moved():
                with self._lock:
                    self._resolve(embedder)
                return
            self._catch_up(rebuilt=rebuilt)

    def _record_moved(self) -> bool:
        recorded = self._store.meta().embedding
        return (recorded.model if recorded is not None else None) != self._resolved_for

    def _catch_up(self, *, rebuilt: bool) -> None:
        dense, answering = self.dense, self._answering
        if dense is None or answering is None:
            return
        if isinstance(dense, DenseIndex) and not suits(
            dense, self._approximate_above, self._store.embedded_count()
        ):
            # Crossing the threshold from below (a first index of a large knowledge base): build the
            # graph from the store at once, rather than first load every vector as float32 for an exact
            # snapshot about to be dropped (1.3 GB peak at 140k chunks).
            log.info("chunk vectors past [index].approximate_above: building the approximate index")
            self.dense = self._open_index(answering)
            return
        if rebuilt:
            dense.reload(self._store)
        else:
            dense.refresh(self._store)
        if not suits(dense, self._approximate_above):
            # The knowledge base crossed [index].approximate_above: the other kind is built while
            # searches use this one, then replaces it whole.
            log.info("%d chunk vectors: switching the dense index's kind", len(dense))
            self.dense = self._open_index(answering)  # the old one is dropped unsaved: its kind is done

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
        if self._phase is _Phase.READY and self.dense is None and self.building is not None:
            return SemanticState.PARTIAL  # a first graph being built: keywords until it is ready
        if self._phase is _Phase.FAILED or (self._phase is _Phase.READY and self.dense is None):
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

    def switch_note(self) -> str | None:
        """Which model the index is switching to and how far it is; ``None`` when it is not switching."""
        embedder, recorded = self.embedder, self._store.meta().embedding
        if embedder is None or recorded is None or recorded.model == embedder.model_id:
            return None
        if self._folder is None:  # read-only: this process never writes the index, so never switches it
            return (
                f"the index's vectors are of model {recorded.model}, not the configured {embedder.model_id}: "
                f"queries are embedded with {recorded.model}; only the index's writer switches it"
            )
        chunks = self._store.counts().chunks
        done = min(self._store.next_embedded_count(), chunks)
        if self.ready:
            answer = f"searches use model {recorded.model}'s vectors until then"
        elif self._phase is _Phase.READY:
            answer = "searches use keywords until then"
        else:
            answer = "the next pass goes on with it"
        return (
            f"switching the embedding model from {recorded.model} to {embedder.model_id}: {done} of "
            f"{counted(chunks, 'chunk')} have its vectors, and the index switches when every one has; {answer}"
        )

    def _switch_words(self, why: str) -> str:
        note = self.switch_note() or "the index is switching to the configured embedding model"
        return f"{note} ({why}; {RESET_HINT})"

    def for_status(self, chunks: int, *, indexing: bool) -> tuple[SemanticState, int | None, str | None]:
        """(state, embedded chunks, note) for ``status``: what semantic search can do, read honestly.

        A process that loaded (or is loading) the model answers from it. One that never will
        (``kbseek status``) reads the index instead: how many chunks have a vector, and whether a
        switch to the configured model is due or under way; loading a model just to report on it
        would cost seconds.
        """
        if self.embedder is None:
            return SemanticState.OFF, None, None
        if self._phase is _Phase.FAILED:
            return SemanticState.UNAVAILABLE, None, None  # the error is in the notes already
        building = self.building
        if self._phase is _Phase.LOADING:
            return SemanticState.LOADING, self._store.embedded_count(), building.note() if building else None
        if building is not None and self._phase is _Phase.READY:
            return SemanticState.PARTIAL, self.covered(chunks) or 0, building.note()
        if self._phase is _Phase.READY and self.dense is None:
            return SemanticState.UNAVAILABLE, None, None  # the error says the switch and how far it is
        switching = self.switch_note()
        if self._phase is _Phase.IDLE and switching is not None:
            # Whether the old model can still embed queries is known only by loading it: not said here.
            return SemanticState.UNAVAILABLE, None, f"{switching} ({RESET_HINT})"
        ready = self._phase is _Phase.READY
        embedded = (self.covered(chunks) or 0) if ready else self._store.embedded_count()
        if embedded >= chunks:
            return SemanticState.OK, embedded, switching
        rest = chunks - embedded
        how = "the running pass embeds them" if indexing else "`kbseek index` or a server embeds them"
        unseen = f"{counted(rest, 'chunk')} of {chunks} have no vector yet: semantic search does not see them"
        note = f"{unseen}; {how}"
        return SemanticState.PARTIAL, embedded, note if switching is None else f"{switching}. {note}"
