"""Running indexing passes: one at a time, fresh before answering, and after every change on disk.

A pass is an incremental :class:`~kbseek.ingest.indexer.Indexer` run. This module decides *when* one
runs and keeps what a status report needs to know about it (running or not, progress, the last
report, the last error, who else holds the index):

- ``index()``: a pass the caller asked for and waits for; its errors are the caller's.
- ``refresh()``: the freshness check before answering a call (T10). Without a running watcher: a
  rate-limited stat scan, and a pass only if something changed; it never waits for a running pass.
  With one: nothing that grows with the tree, only a config re-read, and a pass that is owed is
  handed to the reconciliation thread (docs/decisions/0015).
- the watcher: a pass after each debounced batch of filesystem changes, on the watcher's thread.
- the reconciliation: while the watcher runs, a stat scan every ``reconcile_interval_s`` (and a pass
  if it found a change), on a thread of its own, for what the watcher missed.
- ``start_background()``: the server's start: a keyword-only catch-up pass, the model load, then
  a pass that embeds what the catch-up wrote, none of them blocking the MCP handshake.

Passes nobody waits for (watcher, reconciliation, background, freshness) never raise: their error
is kept for ``index_status``, and an index locked by another process is left to that process,
whose writes this one reads through SQLite's WAL.

Thread model
------------
Threads: the caller's threads (a library user's; the worker threads the MCP server and the web
page run each blocking call on, several at once), the watcher thread ``kbseek-watch`` (one pass
per batch), the reconciliation thread ``kbseek-reconcile`` started with it by
:meth:`IndexRunner.start_watching` (a stat scan per interval, woken early for an owed pass), and the
catch-up thread ``kbseek-catch-up`` started by :meth:`IndexRunner.start_background`.

Locks, and what each guards:

- ``_pass_lock`` (in process): one pass at a time. ``index()`` and watcher batches wait for it;
  ``refresh()`` and the reconciliation only try it: the caller answers from the index as it is, and
  the reconciliation skips its turn, when a pass is running (that pass rescans anyway).
- the writer lock (across processes: a file lock beside a SQLite index, a session lock in the
  database for one in PostgreSQL, ``store.opening.writer_lock``): one writer per index. Taken
  inside ``_pass_lock`` for the length of a pass.
- ``LiveConfig``'s lock: one config reload at a time (the watcher and a freshness check may race).
- ``SemanticLeg``'s lock: one model load at a time.

The dense index catches up with a pass after the pass lock is released (``_after_pass``), so a
watcher batch waiting for the lock does not wait for it too; ``SemanticLeg`` serialises those
catch-ups, each of which diffs against the store as it is then, so the last one leaves it current.

The state read by other threads (``indexing``, ``progress``, ``last_report``, ``last_error``,
``other_writer``) is written only by the thread running the pass (and ``indexing`` by
``start_background``, before its thread starts), one reference at a time, and holds immutable
values, so a reader sees a value at most one pass old and never a torn one. The dense snapshot is
refreshed by the pass's thread after the pass (``SemanticLeg.vectors_changed``); listeners run
there too, so they must not block (the MCP notifier hops to the event loop on a thread of its own).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from kbseek.errors import IndexLocked, IndexReadOnly, KbError, StoreUnavailable, WrittenElsewhere
from kbseek.facade import status
from kbseek.facade.following import Follower
from kbseek.facade.live_config import LiveConfig
from kbseek.facade.paths import files_of
from kbseek.facade.semantic import SemanticLeg
from kbseek.facade.warmth import Warmth
from kbseek.facade.writer_seat import WriterSeat
from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.filenames import IGNORE_FILENAME
from kbseek.ingest.indexer import Indexer, IndexReport, Progress
from kbseek.ingest.scan import ScanResult
from kbseek.ingest.watch import Watcher
from kbseek.progress import ProgressListener, ProgressSnapshot, ProgressTracker
from kbseek.responses import IndexSummary, StatusResponse
from kbseek.store.base import Store
from kbseek.text.lexicon import lexicon

log = logging.getLogger(__name__)

SCOPED_BATCH_MAX = 5_000
"""A watcher batch with more paths than this (a large checkout) gets a scan of the whole tree."""

RECONCILIATION = "reconciliation pass"

RECONCILE_THREAD = "kbseek-reconcile"

RETRY_FIRST_SECONDS = 1.0
"""The first wait before an owed pass is tried again; it doubles with each failure."""

RETRY_MAX_SECONDS = 30.0
"""The longest wait between two tries of an owed pass."""

IndexListener = Callable[[IndexReport], None]
"""Called after every pass that changed the index (the MCP server sends ``list_changed``)."""


def _announced(track: Progress, load_model: Callable[[], None]) -> None:
    """Load the model as the ``model`` phase of the pass, so a display says why it waits."""
    track("model", 0, None, "")
    load_model()


class IndexRunner:
    """Runs the passes of one knowledge base's index and remembers how they went."""

    def __init__(
        self, store: Store, index_dir: Path, live: LiveConfig, semantic: SemanticLeg, *, read_only: bool
    ) -> None:
        self._store = store
        self._index_dir = index_dir
        self._live = live
        self._semantic = semantic
        self._read_only = read_only
        self._pass_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._waiters = 0
        """Passes waiting for ``_pass_lock`` (``_waiting_for_pass``)."""
        root = files_of(live.settings) if not read_only and live.settings.root is not None else None
        self._seat = WriterSeat(store, index_dir, root)
        self._follower = Follower(store, self._after_followed_pass)
        self.warmth = Warmth(store)  # a reader's start reads the index into memory before it is ready
        self._listeners: list[IndexListener] = []
        self._threads: list[threading.Thread] = []
        self._watcher: Watcher | None = None
        self._pass_failed = False
        self._retry_in = RETRY_FIRST_SECONDS
        self._last_check = 0.0
        self._reconcile_wake = threading.Event()
        """Set to run the reconciliation now rather than at its interval (an owed pass, a new config)."""
        self._closing = threading.Event()
        self.indexing = False
        """True exactly while a pass runs (and from ``start_background`` until its thread starts one)."""
        self.progress: ProgressSnapshot | None = None
        """The running pass's latest reading; ``None`` between passes."""
        self.last_report: IndexReport | None = None
        """What the last finished pass did."""
        self.last_error: str | None = None
        """Why the last pass nobody waited for failed."""

    # -- passes ------------------------------------------------------------------------------------

    def _indexer(self, *, embed: bool) -> Indexer:
        active = self._live.active  # one read: settings and parsers from the same reload
        settings = active.settings
        root = files_of(settings)
        models = self._semantic.embedding(embed)
        return Indexer(
            root, self._store, active.registry,
            Exclusion(root, settings.exclude_dirs, self._index_dir),
            chunking=settings.chunking, max_file_bytes=settings.max_file_bytes, embed=models.embed,
            model_id=models.model_id, spec=models.spec, switch=models.switch,
            embed_batch=settings.embed.batch_size, yields=self._pass_waited, date_fields=settings.date_fields,
        )  # fmt: skip

    def index(
        self,
        *,
        progress: ProgressListener | None = None,
        prune_disabled: bool = True,
        embed: bool = True,
        reembed: bool = False,
        changed: set[str] | None = None,
        load_model: Callable[[], None] | None = None,
        take_over: bool = False,
    ) -> IndexReport:
        """Run one incremental pass, after a running one finishes. See ``KnowledgeBase.index``.

        ``changed`` (root-relative paths from a watcher batch) limits the pass to those paths and
        the folders among them; ``None`` scans the whole tree. ``load_model`` is called first if
        the pass may embed (see :meth:`_scan_for_model`). ``take_over``: index this folder into a
        shared knowledge base recorded as written from another (``WrittenElsewhere`` otherwise).
        """
        if self._read_only:
            raise IndexReadOnly("this command only reads the index; run `kbseek index` to build or update it")
        with self._waiting_for_pass(), self._seat.holding(take_over=take_over):
            track = self._tracking(progress)
            scanned = None
            if load_model is not None and not self._semantic.untouched:
                load_model()  # loaded, loading or failed: nothing to decide and nothing to announce
            elif load_model is not None:
                scanned = self._scan_for_model(
                    partial(_announced, track, load_model), track, whole_tree=changed is None and not reembed
                )
            if reembed:
                self._indexer(embed=False).reembed()
                # No vectors, no record: the configured model answers now, a switch under way is moot.
                self._semantic.vectors_changed(rebuilt=True)
            try:
                with self._running_pass():
                    indexer = self._indexer(embed=embed)
                    # (during a model switch the old vectors are replaced whole anyway: not remade)
                    remade = (
                        indexer.embed is not None and indexer.switch is None and indexer.vectors_outdated()
                    )
                    if remade:
                        log.warning(
                            "the index's vectors were made by an older kbseek; re-embedding every chunk"
                        )
                        indexer.reembed()
                    scope = None
                    if changed is not None:
                        scanned, scope = indexer.scan_changed(changed)
                    report = indexer.run(
                        progress=track, scanned=scanned, scope=scope,
                        prune_disabled=prune_disabled,
                    )  # fmt: skip
            finally:
                self._last_check = time.monotonic()
        # Outside the pass lock: the next pass (a watcher batch) need not wait while the dense index
        # catches up with this one (a diff of every vector rowid: 0.2-0.5 s at 140k chunks).
        if take_over:
            report = report.model_copy(update={"took_over_from": self._seat.took_over()})
        if remade or report.switched:
            self._semantic.vectors_changed(rebuilt=True)
        self._after_pass(report)
        return report

    def index_written(self, paths: set[str]) -> IndexReport:
        """A pass over the paths a write to notes changed, so search finds them when it answers."""
        return self.index(prune_disabled=False, embed=self._semantic.embeds, changed=paths)

    @contextmanager
    def _waiting_for_pass(self) -> Iterator[None]:
        """The pass lock, counted while waited for: a model switch under way stops at its next batch
        when a pass waits (``_pass_waited``), so an edit is not held up for the whole switch."""
        with self._count_lock:
            self._waiters += 1
        try:
            self._pass_lock.acquire()
        finally:
            with self._count_lock:
                self._waiters -= 1
        try:
            yield
        finally:
            self._pass_lock.release()

    def _pass_waited(self) -> bool:
        return self._waiters > 0

    def _scan_for_model(
        self, load_model: Callable[[], None], track: Progress, *, whole_tree: bool
    ) -> ScanResult | None:
        """Call ``load_model`` unless the pass will not embed; the scan that decided it, for the pass.

        Loading the model costs seconds, most of a ``kbseek index`` that finds nothing to do. A pass
        over the whole tree with a model not yet loaded scans first: with nothing changed, no chunk
        lacking a vector and the index's vectors of this model, the pass never calls the model, so
        it is not loaded (the scan is handed on, so the tree is walked once either way).
        """
        embedder = self._semantic.embedder
        if embedder is None or not whole_tree:
            load_model()
            return None
        indexer = self._indexer(embed=False)
        track("scan", 0, None, "")
        scanned = indexer.quick_scan()
        track("scan", len(scanned.files), len(scanned.files), "")
        if indexer.needs_pass(scanned) or indexer.would_embed(embedder.model_id):
            load_model()
        return scanned

    def refresh(self) -> None:
        """Keep the index fresh before answering a call (T10), without waiting for a running pass.

        While the watcher runs it is the source of freshness (docs/decisions/0015): a stat scan of
        the whole tree here would cost every call time that grows with the number of files (a search
        took ~0.43 s with it, ~0.04 s without, at 50,000), for changes the watcher already turns
        into passes. So this only re-reads a changed
        config file (one stat), and hands to the reconciliation thread, without waiting for it, a
        pass that is owed (the last one failed) or that a new config file calls for (editors that save
        it by renaming escape a watch on the file itself).

        Otherwise (the watcher off, starting or unavailable): a stat scan at most once per
        ``freshness_interval_s``, and a pass if it found a change or one is owed. A pass that failed
        is owed even if no file changed, since a pass that failed in its embed phase left documents
        whose chunks have no vector, which the stat scan cannot see.
        """
        now = time.monotonic()
        if self._read_only or now - self._last_check < self._live.settings.freshness_interval_s:
            return
        if self.watcher_keeps_fresh:
            self._last_check = now
            before = self._live.active
            self._live.reload_if_changed()
            if self._pass_failed or self._live.active is not before:
                self._reconcile_wake.set()
            return
        self._live.reload_if_changed()
        self._scan_and_pass("freshness pass", now)

    def reconcile(self) -> None:
        """One reconciliation while the watcher runs: a stat scan, and a pass if something changed.

        Recovers what no event announced: watchfiles does not report an overflowed inotify queue
        (samuelcolvin/watchfiles#348), so lost events are otherwise found only when a later event's
        pass rescans. Does nothing when the watcher is not running, since the stat scan before each
        call is in charge then. Never waits for a running pass: that pass rescans the tree itself.
        """
        if self._read_only or not self.watcher_keeps_fresh:
            return
        self._live.reload_if_changed()
        self._scan_and_pass(RECONCILIATION, time.monotonic())

    def _scan_and_pass(self, what: str, now: float) -> None:
        """A stat scan and, if it found a change or a pass is owed, a pass; skipped while one runs.

        The reconciliation also carries on a model switch that stopped for another pass (its own
        thread can take the time); a call's freshness check never does, it would make the call wait.
        """
        if not self._pass_lock.acquire(blocking=False):
            return
        report = None
        try:
            self._last_check = now
            with self._unattended(what):
                indexer = self._indexer(embed=self._semantic.embeds)
                scanned = indexer.quick_scan()
                switching = indexer.switch is not None and what == RECONCILIATION
                if not indexer.needs_pass(scanned) and not self._pass_failed and not switching:
                    return
                with self._seat.holding(), self._running_pass():
                    report = indexer.run(scanned=scanned, progress=self._tracking(None), prune_disabled=False)
        finally:
            self._pass_lock.release()
        if report is not None:
            with self._unattended(what):
                self._after_pass(report)  # outside the pass lock, as in index()

    @contextmanager
    def _unattended(self, what: str) -> Iterator[None]:
        """Around a pass nobody waits for: its failure is kept for the status instead of raised.

        A locked index is not a failure: another kbseek process is indexing the same files, the
        status names it, and its writes are read from the shared index.
        """
        try:
            yield
        except WrittenElsewhere as exc:  # not another pass of the same files: nothing of it is served
            self.last_error = str(exc)
            log.error("%s refused: %s", what, exc)
        except IndexLocked:
            pass
        except KbError as exc:
            self.last_error = str(exc)
            self._pass_failed = True  # owed, even if it failed before it began (the lock, the store)
            if threading.current_thread().name != RECONCILE_THREAD:
                self._reconcile_wake.set()  # its loop retries an owed pass with a backoff
            log.error("%s failed: %s", what, exc)

    @contextmanager
    def _running_pass(self) -> Iterator[None]:
        """``indexing`` and ``progress`` are true exactly while a pass runs; a failed pass is owed."""
        self.indexing = True
        try:
            yield
        except BaseException:
            self._pass_failed = True
            raise
        else:
            self._pass_failed = False
            self.last_error = None  # the failure it reported is over: the index is current again
            self._retry_in = RETRY_FIRST_SECONDS
        finally:
            self.indexing = False
            self.progress = None

    def _tracking(self, listener: ProgressListener | None) -> Progress:
        """One tracker per pass turns the indexer's counts into rate and ETA; its snapshot is kept for
        ``status`` (index_status, the web page's band) and handed to the caller's display, so both
        show the same numbers."""
        tracker = ProgressTracker()

        def track(phase: str, done: int, total: int | None, item: str) -> None:
            snap = tracker.update(phase, done, total, item)
            self.progress = snap
            if listener is not None:
                listener(snap)

        return track

    def claim_writer(self, *, take_over: bool = False) -> str | None:
        """A serving writer's start (``WriterSeat.claim``); nothing for a reader."""
        return None if self._read_only else self._seat.claim(take_over=take_over)

    @property
    def other_writer(self) -> str | None:
        return self._seat.other_writer

    def _after_pass(self, report: IndexReport) -> None:
        self.last_report = report
        if self._semantic.switching_from is not None and self.watcher_keeps_fresh:
            self._reconcile_wake.set()  # a switch that stopped for another pass goes on without an edit
        if report.changed:
            self._after_change(report, rebuilt=False)

    def _after_followed_pass(self, report: IndexReport, rebuilt: bool) -> None:
        """A pass another process committed to the index this server only reads (``following``)."""
        self._after_change(report, rebuilt=rebuilt)

    def _after_change(self, report: IndexReport, *, rebuilt: bool) -> None:
        self._semantic.vectors_changed(rebuilt=rebuilt)
        for listener in self._listeners:
            try:
                listener(report)
            except Exception:
                log.exception("index-change listener failed")

    def on_index_change(self, listener: IndexListener) -> None:
        self._listeners.append(listener)

    # -- what status reports -------------------------------------------------------------------------

    def summary(self) -> IndexSummary:
        """The ``index`` block of every response: counts, whether a pass runs, what the dense leg covers."""
        docs, chunks = self._store.counts()
        return IndexSummary(
            documents=docs, chunks=chunks, indexing=self.indexing, embedded=self._semantic.covered(chunks)
        )

    def status(self, *, max_skipped: int) -> StatusResponse:
        """``index_status``: the store's counts and skips, this runner's passes, the model's coverage."""
        store, semantic, active = self._store, self._semantic, self._live.active
        docs, chunks = store.counts()
        indexing = self.indexing
        state, embedded, note = semantic.for_status(chunks, indexing=indexing)
        last = self.last_report
        facts = status.StatusFacts(
            root=active.settings.root, index_path=store.location, documents=docs, chunks=chunks,
            skipped=store.skipped(), warnings=[(d.path, w) for d in store.documents() for w in d.warnings],
            last_pass_at=store.meta().last_pass_at, indexing=indexing,
            progress=building.progress if (building := semantic.building) is not None else self.progress,
            last_pass_seconds=last.seconds if last else None, semantic=state, embedded=embedded,
            semantic_note=note, semantic_error=semantic.error,
            model=semantic.embedder.model_id if semantic.embedder else None, watcher=self.watcher_state,
            freshness=self.freshness,
            parsers=active.registry.enabled, config_note=self._live.note, other_writer=self.other_writer,
            last_error=self.last_error, index_command=status.index_command(active.settings),
            nothing_found=self.nothing_found_note(), date_sources=store.date_sources(), warm_note=self.warmth.note(),
            fields=store.field_facets(fields=status.FACET_FIELDS, values=status.FACET_VALUES),
        )  # fmt: skip
        return status.status_response(facts, max_skipped=max_skipped)

    def readiness(self) -> str | None:
        """``None`` when this knowledge base can be served now, else why not, in words: the store
        cannot be reached, or (a reader) the database holds no knowledge base of this name yet."""
        try:
            if not self._store.holds_index():
                command = status.index_command(self._live.settings)
                return (
                    f"the database holds no knowledge base {self._store.location} yet: on the machine that "
                    f"has the notes run `{command}`, or check the name"
                )
            self._store.meta()  # one round trip to the store, within its bounds
        except StoreUnavailable as exc:
            return str(exc)
        return self.warmth.readiness()

    def nothing_found_note(self) -> str:
        """Why an indexed knowledge base is empty, and what to do about it."""
        active = self._live.active
        root = active.settings.root
        if root is None:
            return status.reader_empty_note(self._store.location, status.index_command(active.settings))
        return status.nothing_found_note(root, active.registry.extensions, self._store.skipped())

    # -- a server's threads ------------------------------------------------------------------------

    def start_watching(self) -> None:
        """Index changes as they happen, on the watcher's thread, with a periodic reconciliation on one
        of its own; the watcher's state and the freshness mode show in ``index_status``."""
        root = self._live.settings.root
        if self._read_only or root is None:  # another process writes: learn of its passes from the store
            self._follower.start()
            return
        self._watcher = Watcher(root, self._index_dir, self._on_files_changed, also=self._live.config_path)
        self._watcher.start()
        if self._read_only or self._watcher.state.startswith("unavailable"):
            return  # nothing to reconcile: the stat scan before each call stays in charge
        thread = threading.Thread(target=self._reconcile_loop, name=RECONCILE_THREAD, daemon=True)
        self._threads.append(thread)
        thread.start()

    @property
    def watcher_state(self) -> str:
        if self._watcher is None and self._read_only and self._follower.running:
            return "none here: the writer watches the files"
        return self._watcher.state if self._watcher is not None else "off"

    @property
    def watcher_keeps_fresh(self) -> bool:
        """True while the watcher runs: no stat scan before a call then, only the reconciliation."""
        return self._watcher is not None and self._watcher.state == "running"

    @property
    def freshness(self) -> str:
        """How edits reach the index now, in words for ``index_status``."""
        settings = self._live.settings
        if self._read_only and self._follower.running:
            return self._follower.describe()
        if self._read_only:
            return "none: this command only reads the index"
        if self.watcher_keeps_fresh:
            return f"watcher, and a full stat scan every {settings.reconcile_interval_s:g} s"
        return f"stat scan before each call, at most every {settings.freshness_interval_s:g} s"

    def _reconcile_loop(self) -> None:
        """The ``kbseek-reconcile`` thread: one reconciliation per interval, or at once when woken.

        The interval is read again each turn, so a reloaded config file applies after the current
        wait. While a pass is owed (the last one failed: the index database was away, say), the
        wait is :data:`RETRY_FIRST_SECONDS`, doubling to :data:`RETRY_MAX_SECONDS`, so an edit made
        during an outage is indexed within seconds of the database's return, not at the next full
        rescan. Ends when ``close()`` sets ``_closing`` (and wakes it).
        """
        while not self._closing.is_set():
            interval = min(self._live.settings.reconcile_interval_s, threading.TIMEOUT_MAX)
            if self._pass_failed:  # owed: try again soon, backing off, not at the full interval
                interval = min(interval, self._retry_in)
                self._retry_in = min(self._retry_in * 2, RETRY_MAX_SECONDS)
            self._reconcile_wake.wait(interval)
            self._reconcile_wake.clear()
            if self._closing.is_set():
                return
            self.reconcile()

    def _on_files_changed(self, changed: set[Path]) -> None:
        """One pass per watcher batch: over the batch's paths alone when that is enough.

        A save then costs the same in a tree of 100 files or 100,000. The whole tree is scanned for
        the batch that says the watches are in place (empty: what changed before them has no
        event), for a changed ignore or config file (what is indexed may change anywhere), and for
        a batch too large to be worth listing path by path.
        """
        log.debug("%d paths changed; running a pass", len(changed))
        before = self._live.active
        self._live.reload_if_changed()
        rels = None if self._live.active is not before else self._scoped(changed)
        with self._unattended("indexing after a change"):
            self.index(prune_disabled=False, embed=self._semantic.embeds, changed=rels)

    def _scoped(self, changed: set[Path]) -> set[str] | None:
        """The batch as root-relative paths, or ``None`` when it calls for a scan of the whole tree."""
        if not changed or len(changed) > SCOPED_BATCH_MAX:
            return None
        root = files_of(self._live.settings).resolve()
        rels: set[str] = set()
        for path in changed:
            try:
                rel = (path.parent.resolve() / path.name).relative_to(root)  # the leaf may be a link, or gone
            except ValueError:
                return None  # the config file outside the root, or a path we cannot place
            if rel == Path(".") or rel.name == IGNORE_FILENAME:
                return None
            rels.add(rel.as_posix())
        return rels

    def start_background(self) -> None:
        """The server's start: a keyword-only catch-up pass, the model and lexicon loads, then a pass
        that embeds."""

        def work() -> None:
            if not self._read_only:
                with self._unattended("catch-up indexing"):
                    self.index(prune_disabled=False, embed=False)
            self._semantic.load()
            # The bilingual bridge's lexicon (about 0.6 s and 38 MB) is read here, not in the first
            # search; not at all while the bridge is off, nor by a server already stopping.
            if self._live.settings.bridge_weight > 0 and not self._closing.is_set():
                lexicon()
            if self._semantic.embeds and not self._read_only:
                with self._unattended("embedding pass"):
                    self.index(prune_disabled=False)  # embeds what the catch-up pass wrote, and switches

        self.indexing = not self._read_only  # visible at once, before the thread is scheduled
        if self._read_only:  # beside the model's load: ready once both are done (facade/warmth.py)
            self.warmth.start()
        self._semantic.loading_in_background()
        thread = threading.Thread(target=work, name="kbseek-catch-up", daemon=True)
        self._threads.append(thread)
        thread.start()

    def close(self) -> None:
        """Stop the watcher and the reconciliation, and wait for the background threads (a pass in
        flight finishes first)."""
        self._closing.set()
        self._reconcile_wake.set()
        self._follower.stop()
        if self._watcher is not None:
            self._watcher.stop()
        for t in self._threads:
            t.join(timeout=30)
        self._seat.release()
