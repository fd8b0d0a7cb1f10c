"""KbCore: the one facade every surface talks to.

It owns the store, runs indexing passes (one at a time), keeps the index
fresh before answering, enforces every cap and says so in the response. It
knows nothing about MCP, HTTP or terminals.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import platformdirs

from kbseek.config import INDEX_DIRNAME, RELOADABLE, Settings, SettingsSource
from kbseek.embed.base import Embedder, make_embedder
from kbseek.errors import EmbedderUnavailable, IndexIncompatible, IndexLocked, KbError, NotServable
from kbseek.guard import LoadedDocument, load_document, relative_path
from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.indexer import Indexer, IndexReport, Progress
from kbseek.ingest.parsers import Registry
from kbseek.ingest.watch import Watcher
from kbseek.progress import ProgressListener, ProgressSnapshot, ProgressTracker
from kbseek.responses import (
    DocumentResponse,
    Explanation,
    FetchResponse,
    IndexProgress,
    IndexSummary,
    Legs,
    MissingChunk,
    Passage,
    RecentDocument,
    RecentDocuments,
    SearchHit,
    SearchResponse,
    SkippedFile,
    StatusResponse,
    Topic,
    TopicsResponse,
)
from kbseek.search.dense import DenseIndex
from kbseek.search.passages import join_by_offsets
from kbseek.search.pipeline import DenseLeg, SearchRequest, run_search
from kbseek.store.lock import WriterLock
from kbseek.store.sqlite import DocumentRow, Store
from kbseek.topics import topic_prefix
from kbseek.uris import document_uri
from kbseek.words import counted

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResourceText:
    path: str
    text: str
    media_type: str


INDEX_FILENAME = "index.sqlite"


def resolve_index_dir(settings: Settings) -> Path:
    """``--index-dir`` if given, else ``<root>/.kbseek``, else (read-only KB) the user cache dir."""
    if settings.index_dir is not None:
        return settings.index_dir
    inside = settings.root / INDEX_DIRNAME
    if inside.is_dir() and os.access(inside, os.W_OK):
        return inside
    if not inside.exists() and os.access(settings.root, os.W_OK):
        return inside
    digest = hashlib.sha256(str(settings.root).encode()).hexdigest()[:16]
    return Path(platformdirs.user_cache_dir("kbseek")) / f"{settings.root.name}-{digest}"


def _prepare_index_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    gitignore = path / ".gitignore"
    if not gitignore.exists():
        # Keep a knowledge base under git clean: the index is derived data.
        gitignore.write_text("*\n", encoding="utf-8")


class KbCore:
    """Index, search and read one knowledge base."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        source: SettingsSource | None = None,
        read_only: bool = False,
    ) -> None:
        """``read_only``: this core only reads (``kbseek status``, ``get``). It never creates the index
        folder, answers from an empty index when there is none yet, and runs no indexing pass, so
        looking at a knowledge base leaves no trace in it."""
        self.settings = settings
        self.source = source
        self._config_note: str | None = None
        self._config_seen = self._config_signature()
        self.limits = settings.limits
        self.root = settings.root
        self.index_dir = resolve_index_dir(settings)
        self.read_only = read_only
        if not read_only:
            _prepare_index_dir(self.index_dir)
        self.store = Store(self.index_dir / INDEX_FILENAME, create=not read_only)
        self.registry = Registry(settings.parsers)
        self._pass_lock = threading.Lock()
        self._writer = WriterLock(self.index_dir)
        self._other_writer: str | None = None
        self._progress: ProgressSnapshot | None = None
        self._indexing = False
        self._pass_failed = False
        self._last_check = 0.0
        self._last_report: IndexReport | None = None
        self._last_error: str | None = None
        self._listeners: list[Callable[[IndexReport], None]] = []
        self._threads: list[threading.Thread] = []
        self._watcher: Watcher | None = None

        self.embedder: Embedder | None = None
        self._dense: DenseIndex | None = None
        self._semantic_error: str | None = None
        self._model_mismatch: IndexIncompatible | None = None
        self._load_started = False  # "loading" is only true once someone starts loading the model
        if settings.semantic:
            self.embedder = embedder if embedder is not None else make_embedder(settings.embed)
            self._semantic = "loading"
        else:
            self._semantic = "off"

    # -- lifecycle ---------------------------------------------------------------------------------

    def start_watching(self) -> None:
        """Index changes as they happen (serve); the state shows in ``index_status``."""
        config = self.source.config_path if self.source else None
        self._watcher = Watcher(self.root, self.index_dir, self._on_files_changed, also=config)
        self._watcher.start()

    def _on_files_changed(self, changed: set[Path]) -> None:
        log.debug("%d paths changed; running a pass", len(changed))
        self._reload_if_config_changed()
        try:
            self.index(prune_disabled=False, embed=self._semantic == "ok")
        except IndexLocked:
            pass  # the other process indexes the same files; the status says who it is
        except KbError as exc:
            self._last_error = str(exc)
            log.error("indexing after a change failed: %s", exc)

    def _config_signature(self) -> tuple[int, int] | None:
        path = self.source.config_path if self.source else None
        try:
            st = path.stat() if path else None
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size) if st else None

    def _reload_if_config_changed(self) -> None:
        """Checked on every watcher batch and every freshness scan: editors that save by renaming
        defeat a watch on the file itself, a stat does not."""
        if self.source is None or self.source.config_path is None:
            return
        seen = self._config_signature()
        if seen != self._config_seen:
            self._config_seen = seen
            self.reload_settings()

    def reload_settings(self) -> None:
        """Read the config file again and apply what a running server can (``config.RELOADABLE``).

        The next pass applies new exclusions and parsers (rows now excluded are removed, newly
        included files indexed). A broken file keeps the old settings and says why in the status;
        changes that need a restart (the root, the index folder, the model) are named there too.
        """
        assert self.source is not None
        try:
            new = self.source.load()
        except KbError as exc:
            self._config_note = f"the changed config file was not applied: {exc}"
            log.error("%s", self._config_note)
            return
        applied = {name: getattr(new, name) for name in RELOADABLE}
        pending = [
            name for name in ("root", "index_dir", "embed", "semantic", "chunking")
            if getattr(new, name) != getattr(self.settings, name)
        ]  # fmt: skip
        self.settings = replace(self.settings, **applied)
        self.limits = self.settings.limits
        self.registry = Registry(self.settings.parsers)
        self._config_note = (
            f"config changes to {', '.join(pending)} apply when kbseek is restarted" if pending else None
        )
        log.info("config file re-read%s", f"; {self._config_note}" if pending else "")

    @property
    def watcher_state(self) -> str:
        return self._watcher.state if self._watcher is not None else "off"

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        for t in self._threads:
            t.join(timeout=30)
        self.store.close()

    def on_index_change(self, listener: Callable[[IndexReport], None]) -> None:
        """Call ``listener(report)`` after every pass that changed the index."""
        self._listeners.append(listener)

    def load_semantic(self) -> None:
        """Load the embedding model and the vectors; on failure the server stays lexical and says why."""
        if self.embedder is None:
            return
        self._load_started = True
        try:
            self.embedder.load()
            self._indexer(embed=True)._check_model()
        except IndexIncompatible as exc:
            self._semantic, self._semantic_error, self._model_mismatch = "unavailable", str(exc), exc
            log.error("semantic search unavailable: %s", exc)
            return
        except (EmbedderUnavailable, KbError) as exc:
            self._semantic, self._semantic_error = "unavailable", str(exc)
            log.error("semantic search unavailable: %s", exc)
            return
        self._semantic_error = self._model_mismatch = None
        self._dense = DenseIndex(self.embedder.dim)
        self._dense.reload(self.store)
        self._semantic = "ok"

    def start_background(self) -> None:
        """The server's start: a lexical catch-up pass and the model load, neither blocking the handshake."""

        def work() -> None:
            try:
                self.index(prune_disabled=False, embed=False)
            except IndexLocked:
                pass
            except KbError as exc:
                self._last_error = str(exc)
                log.error("catch-up indexing failed: %s", exc)
            self.load_semantic()
            if self._semantic == "ok":
                try:
                    self.index(prune_disabled=False)  # embeds what the catch-up pass wrote
                except IndexLocked:
                    pass
                except KbError as exc:
                    self._last_error = str(exc)
                    log.error("embedding pass failed: %s", exc)

        self._indexing = True  # visible at once, before the thread is scheduled
        self._load_started = True
        thread = threading.Thread(target=work, name="kbseek-catch-up", daemon=True)
        self._threads.append(thread)
        thread.start()

    # -- indexing ----------------------------------------------------------------------------------

    def _indexer(self, *, embed: bool) -> Indexer:
        use = embed and self.embedder is not None and self._semantic in ("ok", "loading")
        return Indexer(
            self.root,
            self.store,
            self.registry,
            Exclusion(self.root, self.settings.exclude_dirs, self.index_dir),
            chunking=self.settings.chunking,
            max_file_bytes=self.settings.max_file_bytes,
            embed=self.embedder.embed_documents if use and self.embedder else None,
            model_id=self.embedder.model_id if use and self.embedder else None,
            embed_batch=self.settings.embed.batch_size,
        )

    def index(
        self,
        *,
        progress: ProgressListener | None = None,
        prune_disabled: bool = True,
        embed: bool = True,
        reembed: bool = False,
    ) -> IndexReport:
        """Run one incremental pass (waits for a running one to finish first).

        ``progress`` receives the same snapshots (phase, counts, rate, ETA) that ``status`` shows.

        With ``reembed``, every vector is dropped first and the model is loaded
        again, which is how an index built with another model is brought over.
        An index whose vectors came from another model is refused otherwise.
        """
        if self.read_only:
            raise KbError("this command only reads the index; run `kbseek index` to build or update it")
        with self._pass_lock, self._holding_writer():
            if reembed:
                self._indexer(embed=False).reembed()
                if self._semantic == "unavailable" and self._model_mismatch is not None:
                    self.load_semantic()
            elif embed and self._model_mismatch is not None:
                raise self._model_mismatch
            try:
                with self._running_pass():
                    indexer = self._indexer(embed=embed and self._semantic != "unavailable")
                    remade = indexer.embed is not None and indexer.vectors_outdated()
                    if remade:
                        log.warning(
                            "the index's vectors were made by an older kbseek; re-embedding every chunk"
                        )
                        indexer.reembed()
                    report = indexer.run(progress=self._tracking(progress), prune_disabled=prune_disabled)
            finally:
                self._last_check = time.monotonic()
            if remade and self._dense is not None:
                self._dense.reload(self.store)  # same rowids, new vectors: a refresh would keep the old
            self._after_pass(report)
            return report

    @contextmanager
    def _running_pass(self) -> Iterator[None]:
        """``indexing`` and ``progress`` in the status are true exactly while a pass runs.

        A pass that failed is owed: the next freshness check runs one even if no file changed,
        since a pass that failed in its embed phase left written documents whose chunks have no
        vector, which the stat scan cannot see.
        """
        self._indexing = True
        try:
            yield
        except BaseException:
            self._pass_failed = True
            raise
        else:
            self._pass_failed = False
        finally:
            self._indexing = False
            self._progress = None

    def _tracking(self, listener: ProgressListener | None) -> Progress:
        """One tracker per pass turns the indexer's counts into rate and ETA; its snapshot is kept for
        ``status`` (index_status, the web page's band) and handed to the caller's display, so both
        show the same numbers."""
        tracker = ProgressTracker()

        def track(phase: str, done: int, total: int | None, item: str) -> None:
            snap = tracker.update(phase, done, total, item)
            self._progress = snap
            if listener is not None:
                listener(snap)

        return track

    @contextmanager
    def _holding_writer(self) -> Iterator[None]:
        """The cross-process writer lock around one pass; who else holds it is kept for the status."""
        try:
            with self._writer.hold():
                self._other_writer = None
                yield
        except IndexLocked:
            self._other_writer = self._writer.holder() or "another process"
            raise

    def _after_pass(self, report: IndexReport) -> None:
        self._last_report = report
        if report.changed:
            if self._dense is not None:
                self._dense.refresh(self.store)
            for listener in self._listeners:
                try:
                    listener(report)
                except Exception:
                    log.exception("index-change listener failed")

    def refresh(self) -> None:
        """Pick up files changed since the last pass: a rate-limited stat scan, then a pass if needed (T10).

        Never waits: if a pass is already running, the caller answers from the index as it is.
        """
        now = time.monotonic()
        if self.read_only or now - self._last_check < self.settings.freshness_interval_s:
            return
        self._reload_if_config_changed()
        if not self._pass_lock.acquire(blocking=False):
            return
        try:
            self._last_check = now
            indexer = self._indexer(embed=self._semantic == "ok")
            scanned = indexer.quick_scan()
            if not indexer.needs_pass(scanned) and not self._pass_failed:
                return
            with self._holding_writer(), self._running_pass():
                report = indexer.run(scanned=scanned, progress=self._tracking(None), prune_disabled=False)
        except IndexLocked:
            return  # another process is indexing these files; its writes show up here through WAL
        except KbError as exc:
            self._last_error = str(exc)
            log.error("freshness pass failed: %s", exc)
            return
        finally:
            self._pass_lock.release()
        self._after_pass(report)

    @property
    def model_mismatch(self) -> bool:
        """True when the index holds vectors of another model (``index(reembed=True)`` fixes it)."""
        return self._model_mismatch is not None

    @property
    def indexing(self) -> bool:
        return self._indexing

    def summary(self) -> IndexSummary:
        docs, chunks = self.store.counts()
        return IndexSummary(
            documents=docs, chunks=chunks, indexing=self._indexing, embedded=self._covered(chunks)
        )

    def _covered(self, chunks: int) -> int | None:
        """Chunks the dense leg searches now: the loaded snapshot, which is what a search uses.

        It trails the store while an embedding pass runs (the snapshot is refreshed after the pass),
        so it never claims vectors a search cannot see yet. ``None`` without a loaded model.
        """
        if self._semantic != "ok" or self._dense is None:
            return None
        return min(len(self._dense), chunks)

    def _semantic_state(self, chunks: int) -> tuple[str, int | None, str | None]:
        """(state, embedded chunks, note) for ``status``: what semantic search can do, read honestly.

        A process that loaded (or is loading) the model answers from it. One that never will
        (``kbseek status``) reads the index instead: whether its vectors are of the configured model
        and how many chunks have one; loading a model just to report on it would cost seconds.
        """
        if self.embedder is None:
            return "off", None, None
        if self._semantic == "unavailable":
            return "unavailable", None, None  # the error is in the notes already
        if self._semantic == "loading" and self._load_started:
            return "loading", self.store.embedded_count(), None
        if self._semantic == "ok":
            embedded = self._covered(chunks) or 0
        else:
            try:
                self._indexer(embed=True)._check_model()
            except IndexIncompatible as exc:
                return "unavailable", None, str(exc)
            embedded = self.store.embedded_count()
        if embedded >= chunks:
            return "ok", embedded, None
        rest = chunks - embedded
        how = "the running pass embeds them" if self._indexing else "`kbseek index` or a server embeds them"
        unseen = f"{counted(rest, 'chunk')} of {chunks} have no vector yet: semantic search does not see them"
        return "partial", embedded, f"{unseen}; {how}"

    # -- the servable set (D3, D4) -----------------------------------------------------------------

    def servable_document_paths(self, among: Collection[str] | None = None) -> list[str]:
        """Indexed paths that a resource read serves: active parser, recorded size within the read cap.

        The one servable predicate (D4): the resource listing, topic bodies and the ``uri`` on hits
        all come from here. ``among`` restricts the answer to some paths (a page of hits) without
        changing the rule.
        """
        return [
            p
            for p in self.store.paths_within_size(self.limits.max_resource_bytes, among)
            if self.registry.for_path(p)
        ]

    def read_resource_document(self, path: str) -> ResourceText:
        """A document as a resource: only if the server offers it (D3), through the one guard (D5).

        ``get_document`` reads any registered file under the root (D1); a resource is
        something this server listed, so it must also be in the servable set.
        """
        rel = relative_path(path)
        if not self.servable_document_paths(among=[rel]):
            raise NotServable(
                f"kb://doc/{rel} is not offered as a resource: it is not in the search index (excluded, "
                "skipped, not indexed yet, or its format is no longer enabled) or it is over the resource "
                "size cap; get_document(path) reads files by path",
                path,
            )
        doc = self.load_document(rel)
        text, cap = doc.text, self.limits.max_resource_chars
        if len(text) > cap:
            text = text[:cap] + (
                "\n\n---\n[kbseek: this resource was truncated at character "
                f"{cap} of {len(doc.text)}. Call get_document(path={rel!r}, offset={cap}) for the rest.]\n"
            )
        return ResourceText(rel, text, doc.media_type)

    def topic_groups(self) -> list[tuple[str, int]]:
        """(prefix, servable document count) for every topic that has a servable document."""
        counts: dict[str, int] = {}
        for path in self.servable_document_paths():
            prefix = topic_prefix(path)
            counts[prefix] = counts.get(prefix, 0) + 1
        return sorted(counts.items())

    def topic_body(self, prefix: str) -> str | None:
        """A Markdown list of a topic's servable documents with their uris; ``None`` for no such topic."""
        servable = set(self.servable_document_paths())
        docs = [d for d in self.store.documents() if d.path in servable and topic_prefix(d.path) == prefix]
        if not docs:
            return None
        lines = [f"# Topic {prefix or '(root)'}", "", f"{counted(len(docs), 'document')}.", ""]
        lines.extend(f"- [{d.title}]({document_uri(d.path)}) — `{d.path}`" for d in docs)
        return "\n".join(lines) + "\n"

    # -- search ------------------------------------------------------------------------------------

    def _clamp(
        self, name: str, value: int | None, default: int, low: int, high: int, notes: list[str]
    ) -> int:
        if value is None:
            return default
        if value < low:
            notes.append(f"{name}={value} was raised to the minimum {low}")
            return low
        if value > high:
            notes.append(f"{name}={value} was clamped to the maximum {high}")
            return high
        return value

    def _dense_leg(self) -> DenseLeg | None:
        if self._semantic != "ok" or self._dense is None or self.embedder is None:
            return None
        return DenseLeg(
            self._dense, self.embedder.embed_query, self.settings.fusion, self.settings.dense_weight,
            self.settings.rrf_k, self.settings.dense_weight_matched, self.settings.embed.floor,
        )  # fmt: skip

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        path_prefix: str | None = None,
        tags: Sequence[str] | None = None,
        snippet_chars: int | None = None,
        explain: bool = False,
    ) -> SearchResponse:
        self.refresh()
        lim = self.limits
        notes: list[str] = []
        n = self._clamp("limit", limit, lim.default_limit, 1, lim.max_limit, notes)
        sc = self._clamp(
            "snippet_chars", snippet_chars, lim.default_snippet_chars, 40, lim.max_snippet_chars, notes
        )
        prefix = _clean_prefix(path_prefix)
        tag_list = tuple(t.strip() for t in (tags or ()) if t.strip())
        request = SearchRequest(
            query=query, limit=n, snippet_chars=sc, path_prefix=prefix, tags=tag_list,
            max_terms=lim.max_query_terms, max_hits_per_document=lim.max_hits_per_document,
        )  # fmt: skip
        result = run_search(self.store, request, self._dense_leg())
        codes = ["clamped"] * len(notes)  # note_codes: one per note, so a surface can word it its own way
        truncated = result.more_available
        if result.compiled.dropped:
            truncated = True
            notes.append(
                f"the query had more than {lim.max_query_terms} searchable terms; these were not used: "
                + " ".join(result.compiled.dropped[:20])
                + " — shorten the query"
            )
            codes.append("terms_dropped")
        if result.more_available:
            notes.append(f"more hits exist beyond limit={n}; raise limit or narrow with path_prefix/tags")
            codes.append("more_hits")
        servable = set(self.servable_document_paths(among={h.chunk.path for h in result.hits}))
        hits: list[SearchHit] = []
        for h in result.hits:
            c, f = h.chunk, h.fused
            hits.append(
                SearchHit(
                    chunk_id=c.chunk_id,
                    path=c.path,
                    title=c.title,
                    heading_path=list(c.heading_path),
                    score=round(f.score, 6),
                    snippet=h.snippet.text,
                    highlights=[list(span) for span in h.snippet.highlights],
                    start=c.start,
                    end=c.end,
                    line_start=c.line_start,
                    line_end=c.line_end,
                    tags=list(c.tags),
                    uri=document_uri(c.path) if c.path in servable else None,
                    explain=Explanation(
                        lexical_rank=f.lexical_rank,
                        lexical_score=f.lexical_score,
                        dense_rank=f.dense_rank,
                        dense_similarity=f.dense_similarity,
                        fused_score=f.score,
                    )
                    if explain
                    else None,
                )
            )
        summary = self.summary()
        semantic = self._semantic
        if semantic == "loading":
            notes.append("the embedding model is still loading: these results are lexical only")
            codes.append("semantic_loading")
        elif semantic == "unavailable":
            notes.append(f"semantic search is unavailable, results are lexical only: {self._semantic_error}")
            codes.append("semantic_unavailable")
        elif summary.embedded is not None and summary.embedded < summary.chunks:
            # While the background pass embeds, "ok" would claim a coverage the dense leg lacks.
            semantic = "partial"
            notes.append(
                f"semantic search covers {summary.embedded} of {counted(summary.chunks, 'chunk')} so far"
                + (" (embedding is still running)" if summary.indexing else "")
                + ": hits from the rest were found by their words only"
            )
            codes.append("semantic_partial")
        legs = Legs(lexical="ok" if result.compiled.expression else "no_terms", semantic=semantic)
        if not hits:
            notes.append(
                self._empty_explanation(summary, result.compiled.expression is None, prefix, tag_list)
            )
            codes.append("empty")
        response = SearchResponse(
            query=query, hits=hits, legs=legs, truncated=truncated, notes=notes, note_codes=codes,
            index=summary, low_confidence=result.low_confidence,
        )  # fmt: skip
        return _fit_search(response, lim.max_response_chars)

    def _empty_explanation(
        self, summary: IndexSummary, no_terms: bool, prefix: str | None, tags: tuple[str, ...]
    ) -> str:
        if summary.documents == 0:
            if summary.indexing:
                return (
                    "nothing is indexed yet: the first indexing pass is still running — try again in a moment"
                )
            exts = ", ".join(sorted(self.registry.extensions))
            return (
                f"the index is empty: no indexable files ({exts}) were found under the knowledge-base root; "
                "see index_status for skipped files"
            )
        scope = ""
        if prefix or tags:
            scope = " within " + " and ".join(
                ([f"path_prefix={prefix!r}"] if prefix else []) + ([f"tags={list(tags)}"] if tags else [])
            )
        base = (
            f"no chunk matched{scope}; the index holds {counted(summary.documents, 'document')} and "
            f"{counted(summary.chunks, 'chunk')}"
            + (" (indexing is still running, results may be incomplete)" if summary.indexing else "")
        )
        if no_terms:
            return base + ". The query has no searchable words (only punctuation or operators) — use words"
        return base + ". Try other words, a synonym, the other language, or drop filters"

    # -- fetch -------------------------------------------------------------------------------------

    def fetch(self, chunk_ids: Sequence[str], *, context: int | None = None) -> FetchResponse:
        self.refresh()
        lim = self.limits
        notes: list[str] = []
        ctx = self._clamp("context", context, lim.default_context, 0, lim.max_context, notes)
        ids = list(dict.fromkeys(i.strip() for i in chunk_ids if i.strip()))
        truncated = False
        if len(ids) > lim.max_chunk_ids:
            notes.append(
                f"{counted(len(ids), 'chunk id')} were given; only the first {lim.max_chunk_ids} were fetched"
            )
            ids, truncated = ids[: lim.max_chunk_ids], True

        missing: list[MissingChunk] = []
        windows: dict[int, list[tuple[int, int, str]]] = {}
        doc_paths: set[str] = set()
        for cid in ids:
            row = self.store.chunk(cid)
            if row is None:
                missing.append(self._missing(cid))
                continue
            windows.setdefault(row.document_id, []).append((row.ordinal - ctx, row.ordinal + ctx, cid))
            doc_paths.add(row.path)

        servable = set(self.servable_document_paths(among=doc_paths))
        passages: list[Passage] = []
        budget = lim.max_fetch_chars
        for doc_id, wins in windows.items():
            first, last = min(w[0] for w in wins), max(w[1] for w in wins)
            chunks = self.store.neighbours(doc_id, first, last)
            wanted = {w[2] for w in wins}
            for run in join_by_offsets(chunks):
                in_run = {c.chunk_id for c in run.chunks}
                requested = [cid for cid in ids if cid in wanted and cid in in_run]
                if not requested:
                    continue  # a neighbour-only run between two separate windows
                text, cut = run.text, False
                if len(text) > budget:
                    text, cut = text[: max(budget, 0)], True
                budget -= len(text)
                head = run.chunks[0]
                passages.append(
                    Passage(
                        path=head.path,
                        title=head.title,
                        heading_path=list(head.heading_path),
                        requested=requested,
                        chunk_ids=[c.chunk_id for c in run.chunks],
                        start=run.start,
                        end=run.start + len(text) if cut else run.end,
                        line_start=head.line_start,
                        line_end=max(c.line_end for c in run.chunks),
                        text=text,
                        truncated=cut,
                        uri=document_uri(head.path) if head.path in servable else None,
                    )
                )
                if cut:
                    truncated = True
                    notes.append(
                        f"the passage from {head.path} was cut at {lim.max_fetch_chars} characters per fetch; "
                        f"read on with get_document(path={head.path!r}, offset={run.start + len(text)})"
                    )
        if missing:
            notes.append("some chunk ids are no longer valid; run search again to get current ids")
        return FetchResponse(passages=passages, missing=missing, truncated=truncated, notes=notes)

    def _missing(self, chunk_id: str) -> MissingChunk:
        retired = self.store.retired(chunk_id)
        if retired is not None:
            path, when = retired
            exists = self.store.document(path) is not None
            what = "was edited" if exists else "was removed or renamed"
            return MissingChunk(
                chunk_id=chunk_id, status="stale", path=path,
                message=f"stale id: {path} {what} at {_iso(when)} and its chunks were replaced; "
                "search again for current ids",
            )  # fmt: skip
        return MissingChunk(
            chunk_id=chunk_id, status="unknown",
            message="unknown id: no chunk with this id exists in the index (ids come from search results); "
            "search again",
        )  # fmt: skip

    # -- documents ---------------------------------------------------------------------------------

    def load_document(self, path: str) -> LoadedDocument:
        """The one guarded document load (D5), shared by get_document and resource reads."""
        return load_document(self.root, path, self.registry, max_bytes=self.settings.max_file_bytes)

    def get_document(self, path: str, *, offset: int = 0, max_chars: int | None = None) -> DocumentResponse:
        lim = self.limits
        notes: list[str] = []
        doc = self.load_document(path)
        n = self._clamp("max_chars", max_chars, lim.default_document_chars, 1, lim.max_document_chars, notes)
        total = len(doc.text)
        if offset < 0:
            notes.append(f"offset={offset} was raised to 0")
            offset = 0
        if offset > total:
            notes.append(f"offset={offset} is past the end of the document ({counted(total, 'character')})")
            offset = total
        text = doc.text[offset : offset + n]
        end = offset + len(text)
        truncated = end < total
        if truncated:
            notes.append(
                f"returned characters {offset}–{end} of {total}; call get_document again with offset={end} "
                "for the rest"
            )
        indexed = self.store.document(doc.path) is not None
        if not indexed:
            notes.append("this file is not in the search index (excluded, skipped or not yet indexed)")
        return DocumentResponse(
            path=doc.path, media_type=doc.media_type, text=text, offset=offset, returned_chars=len(text),
            total_chars=total, truncated=truncated, next_offset=end if truncated else None, indexed=indexed,
            notes=notes,
        )  # fmt: skip

    # -- topics and status ---------------------------------------------------------------------------

    def list_topics(self) -> TopicsResponse:
        self.refresh()
        lim = self.limits
        groups: dict[str, list[str]] = {}
        for d in self.store.documents():
            groups.setdefault(topic_prefix(d.path), []).append(d.title)
        notes: list[str] = []
        topics = [
            Topic(
                prefix=prefix,
                documents=len(titles),
                titles=sorted(titles)[: lim.max_titles_per_topic],
                more_titles=max(0, len(titles) - lim.max_titles_per_topic),
            )
            for prefix, titles in sorted(groups.items())
        ]
        truncated = len(topics) > lim.max_topics
        if truncated:
            notes.append(f"{counted(len(topics), 'topic')} exist; only the first {lim.max_topics} are listed")
            topics = topics[: lim.max_topics]
        if any(t.more_titles for t in topics):
            notes.append(
                f"at most {lim.max_titles_per_topic} titles are listed per topic; "
                "search with path_prefix to see the rest"
            )
        if not topics:
            notes.append("nothing is indexed yet" + (" (indexing is running)" if self._indexing else ""))
        return TopicsResponse(topics=topics, truncated=truncated, notes=notes, index=self.summary())

    def recent_documents(self, since_ts: float, since_date: str, *, limit: int = 50) -> RecentDocuments:
        """Servable documents new since a moment, by frontmatter date and by index time, kept apart.

        The two answer different questions: a frontmatter date is the author's claim about the
        content, the index time is when kbseek last saw the content change (a rebuilt index resets
        it). ``since_date`` is YYYY-MM-DD; a frontmatter date is compared on its leading
        YYYY-MM-DD, so a date with a time of day still counts for its day.
        """
        self.refresh()
        docs = self.store.documents()
        servable = set(self.servable_document_paths(among=[d.path for d in docs]))
        docs = [d for d in docs if d.path in servable]
        dated: list[tuple[str, DocumentRow]] = []
        unparsed = 0
        for d in docs:
            if d.date is None:
                continue
            day = _leading_day(d.date)
            if day is None:
                unparsed += 1
            elif day >= since_date:
                dated.append((day, d))
        dated.sort(key=lambda item: item[0], reverse=True)  # stable: paths stay in order within a day
        indexed = sorted((d for d in docs if d.indexed_at >= since_ts), key=lambda d: (-d.indexed_at, d.path))

        def entry(d: DocumentRow) -> RecentDocument:
            return RecentDocument(
                path=d.path, title=d.title, date=d.date, indexed_at=_iso(d.indexed_at), tags=list(d.tags),
                uri=document_uri(d.path),
            )  # fmt: skip

        return RecentDocuments(
            since_date=since_date, since=_iso(since_ts),
            by_date=[entry(d) for _, d in dated[:limit]], by_date_total=len(dated),
            by_index_time=[entry(d) for d in indexed[:limit]], by_index_time_total=len(indexed),
            unparsed_dates=unparsed, truncated=len(dated) > limit or len(indexed) > limit,
            index=self.summary(),
        )  # fmt: skip

    def index_command(self) -> str:
        """The command that indexes this knowledge base, for notes that tell a person what to run."""
        index_dir = f" --index-dir {self.settings.index_dir}" if self.settings.index_dir is not None else ""
        return f"kbseek index --kb {self.root}{index_dir}"

    def nothing_found_note(self) -> str:
        """Why an indexed knowledge base is empty, and the two ways out: add notes, or loosen exclusions."""
        exts = ", ".join(sorted(self.registry.extensions))
        return (
            f"no Markdown or other indexable files were found under {self.root}: kbseek indexes {exts} "
            "files — add notes there, or check the exclusions (exclude_dirs in the config, .kbseekignore)"
        )

    def status(self, *, max_skipped: int = 50) -> StatusResponse:
        docs, chunks = self.store.counts()
        skipped = self.store.skipped()
        warnings = [SkippedFile(path=d.path, reason=w) for d in self.store.documents() for w in d.warnings][
            :max_skipped
        ]
        last = self.store.get_meta("last_pass_at")
        notes: list[str] = []
        if self._semantic_error:
            notes.append(f"semantic search unavailable: {self._semantic_error}")
        if self._config_note:
            notes.append(self._config_note)
        if self._other_writer:
            notes.append(
                f"another kbseek process ({self._other_writer}) was updating this index at the last pass; "
                "its changes are read from the shared index"
            )
        if len(skipped) > max_skipped:
            notes.append(f"{counted(len(skipped), 'path')} were skipped; the first {max_skipped} are listed")
        if last is None and not self._indexing:
            notes.append(f"not indexed yet: run `{self.index_command()}` to build the index")
        elif last is not None and docs == 0 and not self._indexing:
            notes.append(self.nothing_found_note())
        semantic, embedded, semantic_note = self._semantic_state(chunks)
        if semantic_note:
            notes.append(semantic_note)
        return StatusResponse(
            root=str(self.root), index_path=str(self.store.path), documents=docs, chunks=chunks,
            indexing=self._indexing, progress=_progress_model(self._progress), last_index_at=_iso(float(last)) if last else None,
            last_pass_seconds=round(self._last_report.seconds, 3) if self._last_report else None,
            semantic=semantic, embedded=embedded,
            watcher=self.watcher_state, model=self.embedder.model_id if self.embedder else None,
            parsers=list(self.registry.enabled),
            skipped=[SkippedFile(path=p, reason=r) for p, r in skipped[:max_skipped]],
            skipped_total=len(skipped), warnings=warnings, last_error=self._last_error, notes=notes,
        )  # fmt: skip


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def _progress_model(snap: ProgressSnapshot | None) -> IndexProgress | None:
    """The running pass as ``index_status`` reports it (rounded: an agent plans in seconds, not µs)."""
    if snap is None:
        return None
    return IndexProgress(
        phase=snap.phase, done=snap.done, total=snap.total, unit=snap.unit,
        rate=round(snap.rate, 2) if snap.rate is not None else None,
        eta=round(snap.eta, 1) if snap.eta is not None else None,
    )  # fmt: skip


def _leading_day(value: str) -> str | None:
    """The YYYY-MM-DD a frontmatter date starts with, if it is a real calendar day."""
    try:
        return datetime.strptime(value.strip()[:10], "%Y-%m-%d").date().isoformat()
    except ValueError:
        return None


def _clean_prefix(prefix: str | None) -> str | None:
    if prefix is None or not prefix.strip().strip("/."):
        return None
    trailing = prefix.strip().endswith("/")
    rel = relative_path(prefix)
    return rel + "/" if trailing else rel


def _fit_search(response: SearchResponse, max_chars: int) -> SearchResponse:
    """Drop hits from the end until the serialised response fits ``max_chars`` (T3)."""
    size = len(response.model_dump_json())
    if size <= max_chars:
        return response
    hits = list(response.hits)
    while hits and len(response.model_copy(update={"hits": hits}).model_dump_json()) > max_chars:
        hits.pop()
    notes = [
        *response.notes,
        f"the response was cut to {counted(len(hits), 'hit')} to stay under {max_chars} characters; "
        "lower snippet_chars",
    ]
    codes = [*response.note_codes, "cut_to_fit"]
    return response.model_copy(update={"hits": hits, "truncated": True, "notes": notes, "note_codes": codes})
