"""Incremental indexing: bring the index in line with the files, touching only what changed (T10).

A file is re-read only when its size or mtime moved, and re-parsed only when
its content hash changed; a file that disappeared while another with the same
hash appeared is a rename. Every document is written in its own transaction
together with its chunks, so a crash mid-pass loses at most the document being
written and never mixes old and new chunks. Vectors, keyed by chunk content,
are made while later documents are parsed (``ingest.embed_ahead``) and after
every document is written (the embed phase); chunks left without one by a
crash or a lexical-only pass are embedded by the next pass. When the configured model is not the
one the index's vectors are of, a pass makes the new model's vectors into a next generation while
the old ones keep answering, and promotes it once every chunk has one (:class:`ModelSwitch`,
docs/decisions/0040).

A pass plans before it writes (``Indexer.plan``, ``ingest.plan``): the comparison of the scan with
the store is worked out without a write, so it can be looked at and tested on its own, and
``Indexer.apply`` is left with only the reading, parsing and writing.

Files are read through the document guard's reader (``guard.read_regular_file``), so a file is
indexed only if a read would accept it: no symlink anywhere on its path, no hard link, a regular
file, within ``max_file_bytes`` (or its parser's ``raw_size_limit``) counted on the bytes actually
read, all checked again at read time on the descriptor. A file or folder changed between the scan
and the read (swapped for a link, hard-linked, grown past the cap) is refused there, listed as
skipped with the guard's reason, and an indexed copy of it removed. A file its parser cannot decode
is listed with the sentence of ``parsers.unreadable`` for its reason, the one a read of it says too.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_serializer

from kbseek.dates import DATE_FIELDS
from kbseek.documents import ParsedDocument
from kbseek.embed.chunk_vectors import VECTOR_SCHEME, ChunkText, embed_chunks
from kbseek.errors import DocumentNotFound, DocumentRefused
from kbseek.ingest.analysis import document_input
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.embed_ahead import EmbedAhead
from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.guard import read_regular_file
from kbseek.ingest.parsers import PARSE_VERSION, Registry, raw_size_limit
from kbseek.ingest.parsers.unreadable import reason_for
from kbseek.ingest.plan import IndexPlan, plan_pass
from kbseek.ingest.scan import FileStat, ScanResult, Scope, scan, scan_paths
from kbseek.store.base import Store, StoreWriter, model_incompatibility
from kbseek.store.records import DocumentState, EmbeddingRecord

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int | None, str], None]
"""Called as ``progress(phase, done, total, item)`` as a pass goes through its phases in order:
``scan`` (files found; total None until the walk ends), ``parse`` (changed files read, parsed,
chunked and written) and ``embed`` (chunks given vectors). Only counts: ``kbseek.progress`` turns
them into a rate and an ETA."""

EmbedFn = Callable[[list[str]], np.ndarray]


class IndexReport(BaseModel):
    """What one pass did, for the CLI summary and ``index_status``; read-only once the pass returns.

    Its JSON is what ``kbseek index --json`` prints: each skipped file as ``{path, reason}``, each
    warning as ``{path, message}``, ``seconds`` to the millisecond, and nothing of a pass another
    process made (``elsewhere``, ``listing_moved``).
    """

    model_config = ConfigDict(frozen=True)

    added: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)
    renamed: list[tuple[str, str]] = Field(default_factory=list)
    """``(old path, new path)`` of each rename."""
    deleted: list[str] = Field(default_factory=list)
    unchanged: int = 0
    skipped: list[tuple[str, str]] = Field(default_factory=list)
    """``(path, reason)`` of each file left out."""
    warnings: list[tuple[str, str]] = Field(default_factory=list)
    """``(path, message)`` of each file indexed with a warning."""
    chunks_written: int = 0
    chunks_embedded: int = 0
    seconds: float = 0.0
    elsewhere: bool = Field(default=False, exclude=True)
    """A pass another process committed to a shared index, which a server that only reads it learned
    of: what it changed is not known here, only whether its listing moved (``listing_moved``)."""
    listing_moved: bool = Field(default=False, exclude=True)
    took_over_from: str | None = None
    """The writer and folder this pass replaced as a shared knowledge base's source (``take_over``)."""
    switched: bool = Field(default=False, exclude=True)
    """The pass finished a model switch: the index's vectors are now the configured model's."""

    @field_serializer("skipped", when_used="json")
    def _skipped_json(self, skipped: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"path": path, "reason": reason} for path, reason in skipped]

    @field_serializer("warnings", when_used="json")
    def _warnings_json(self, warnings: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"path": path, "message": message} for path, message in warnings]

    @field_serializer("seconds", when_used="json")
    def _seconds_json(self, seconds: float) -> float:
        return round(seconds, 3)

    @property
    def changed(self) -> bool:
        return self.elsewhere or bool(
            self.added or self.updated or self.renamed or self.deleted or self.chunks_embedded
        )

    @property
    def listing_changed(self) -> bool:
        """Whether the pass added, removed or renamed a document: what a resource listing shows."""
        return self.listing_moved or bool(self.added or self.deleted or self.renamed)


@dataclass
class _Tally:
    """What a pass has done so far, counted as it goes; :meth:`frozen` is the report it returns."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    chunks_embedded: int = 0
    switched: bool = False

    @property
    def listing_changed(self) -> bool:
        return bool(self.added or self.deleted or self.renamed)

    def frozen(self, seconds: float = 0.0) -> IndexReport:
        """The report, field for field: every count here is one of the report's (a test checks it),
        so a new count is declared in both and copied by this without another line."""
        return IndexReport(**{f.name: getattr(self, f.name) for f in fields(self)}, seconds=seconds)


@dataclass(frozen=True)
class ModelSwitch:
    """The configured model while the index's vectors are another's (docs/decisions/0040).

    A pass gives every chunk a vector of it in the next generation, committed a batch at a time so a
    crash or a restart loses at most one batch, and promotes that generation, in one transaction,
    once no chunk lacks one. Meanwhile the pass's ``embed`` (the old model, when it could be built
    again) keeps the current generation whole, so searches go on with the old model.
    """

    embed: EmbedFn
    model_id: str
    spec: str | None
    """The model's ``EmbedderSpec`` as JSON, recorded with its vectors."""


@dataclass(frozen=True)
class _Prepared:
    kind: str  # "added" | "updated" | "renamed"
    file: FileStat
    content_hash: str
    parser: str
    parsed: ParsedDocument
    replaces: int | None
    old_path: str | None = None


class Indexer:
    """Runs passes over one root into one store. Not reentrant: the caller serialises passes."""

    def __init__(
        self,
        root: Path,
        store: Store,
        registry: Registry,
        exclusion: Exclusion,
        *,
        chunking: ChunkOptions,
        max_file_bytes: int,
        embed: EmbedFn | None = None,
        model_id: str | None = None,
        spec: str | None = None,
        switch: ModelSwitch | None = None,
        embed_batch: int,
        yields: Callable[[], bool] | None = None,
        date_fields: Sequence[str] = DATE_FIELDS,
    ) -> None:
        """``embed``/``model_id``/``spec``: the model of the index's vectors, ``None`` for a pass that
        adds none to them; ``switch``: the model the index is switching to, if it is; ``yields``:
        whether another pass is waiting, when a switch stops after its batch and leaves the rest to
        the passes after it (nothing done is lost)."""
        self.root = root
        self.store = store
        self.registry = registry
        self.exclusion = exclusion
        self.chunking = chunking
        self.date_fields = tuple(date_fields)
        self.max_file_bytes = max_file_bytes
        self.embed = embed
        self.model_id = model_id
        self.spec = spec
        self.switch = switch
        self.yields = yields
        self.embed_batch = max(1, embed_batch)

    # -- the pass ----------------------------------------------------------------------------------

    def quick_scan(self) -> ScanResult:
        return scan(self.root, self.registry, self.exclusion, self.max_file_bytes)

    def scan_changed(self, changed: set[str]) -> tuple[ScanResult, Scope]:
        """The scan of a watcher batch's paths, for ``run(scanned=..., scope=...)``."""
        return scan_paths(self.root, changed, self.registry, self.exclusion, self.max_file_bytes)

    def needs_pass(self, result: ScanResult) -> bool:
        """True when the stat scan differs from what the index recorded (a cheap freshness check)."""
        if self._parsed_by_older_version():
            return True
        files, matched = result.files, 0
        for path, state in self.store.document_states().items():
            seen = files.get(path)
            if seen is None:
                if self.registry.for_path(path) is not None:
                    return True  # indexed, now gone (rows of a disabled format are left alone)
            elif (state.size, state.mtime_ns) != (seen.size, seen.mtime_ns):
                return True
            else:
                matched += 1
        return matched != len(files)  # a file the index does not hold yet

    def run(
        self,
        *,
        progress: Progress | None = None,
        scanned: ScanResult | None = None,
        scope: Scope | None = None,
        prune_disabled: bool = True,
    ) -> IndexReport:
        """One incremental pass: scan, :meth:`plan` what changed, :meth:`apply` it.

        ``prune_disabled=False`` (the server's freshness passes) keeps rows whose extension the
        active registry no longer opens: narrowing ``[parsers].enabled`` leaves them findable until
        an explicit ``kbseek index`` prunes them (D4).

        ``scope`` (with the ``scanned`` result of :func:`scan_paths`) limits the pass to part of the
        tree: only documents it covers are compared, removed or listed as skipped, so a watcher
        batch costs what it touches, not what the tree holds.
        """
        if scope is not None and scanned is None:
            raise ValueError("a scoped pass needs the scan of its scope")
        if scope is not None and self._parsed_by_older_version():
            scope = scanned = None  # every file must be read again: the whole tree it is
        started = time.perf_counter()
        self._check_model()
        if progress and scanned is None:
            progress("scan", 0, None, "")
        result = scanned or self.quick_scan()
        if progress:
            progress("scan", len(result.files), len(result.files), "")
        report = self.apply(self.plan(result, scope=scope, prune_disabled=prune_disabled), progress=progress)
        return report.model_copy(update={"seconds": time.perf_counter() - started})

    def plan(
        self, result: ScanResult, *, scope: Scope | None = None, prune_disabled: bool = True
    ) -> IndexPlan:
        """What a pass over ``result`` would change, without writing anything (``ingest.plan``).

        An index parsed by an older ``PARSE_VERSION`` has every file of the scan read again.
        """
        return plan_pass(
            self.store, self.registry, result, reparse=self._parsed_by_older_version(), scope=scope,
            prune_disabled=prune_disabled,
        )  # fmt: skip

    def apply(self, plan: IndexPlan, *, progress: Progress | None = None) -> IndexReport:
        """Write ``plan``: read, parse and write each file to read, delete what is gone, embed.

        Each document is its own transaction, so cancelling or crashing part way leaves every
        document either as it was or as it is now; the next pass plans what is still left.
        """
        report = _Tally(unchanged=len(plan.unchanged), skipped=list(plan.skipped))
        states, reparse, scope = plan.states, plan.reparse, plan.scope
        vanished = dict(plan.removed)  # a rename found while reading takes its old path out
        by_hash = plan.rename_sources

        # Each document is written at once without vectors; the embed phase below gives vectors to
        # every chunk lacking one. Parsing first makes new text searchable by keyword within
        # seconds, and lets the slow phase (embedding) know its total, so its ETA means something.
        # While it parses, a worker embeds what is already written (``ingest.embed_ahead``).
        total = len(plan.to_read)
        ahead = self._embedding_ahead(report) if total > 1 else None
        try:
            for done, fs in enumerate(plan.to_read, 1):
                if progress:
                    progress("parse", done - 1, total, fs.path)
                prepared = self._prepare(fs, states.get(fs.path), by_hash, report, reparse=reparse)
                if prepared is not None:
                    if prepared.old_path is not None:
                        vanished.pop(prepared.old_path, None)
                        by_hash.pop(prepared.content_hash, None)
                    document_id = self._write(prepared, report)
                    if ahead is not None:
                        ahead.written(document_id)
        except BaseException:
            if ahead is not None:
                ahead.stop()
            raise
        if ahead is not None:
            ahead.close()
        if progress and total:
            progress("parse", total, total, "")

        # A file that failed to read this time but was indexed before must not keep serving stale text.
        # A document no enabled parser opens is listed as skipped too, but that is not a failed read:
        # whether its old rows go is prune_disabled's decision in the plan (D4).
        unreadable = {
            p for p, _ in report.skipped
            if p in states and p not in vanished and self.registry.for_path(p) is not None
        }  # fmt: skip
        for path in sorted(set(vanished) | unreadable):
            with self.store.transaction() as tx:
                tx.delete_document(states[path].id)
            report.deleted.append(path)

        self._backfill_vectors(report, progress)
        self._switch_model(report, progress)
        skipped = report.skipped
        if scope is not None:  # the list outside the scope is still the last full scan's
            kept = [(s.path, s.reason) for s in self.store.skipped() if not scope.covers(s.path.rstrip("/"))]
            skipped = kept + list(dict.fromkeys(report.skipped))
        with self.store.transaction() as tx:
            tx.replace_skipped(skipped)
            tx.prune()
            tx.record_pass(
                finished_at=time.time(), parse_version=PARSE_VERSION,
                listing_changed=report.listing_changed, date_fields=self.date_fields,
                chunking=self.chunking.key,
            )  # fmt: skip
        return report.frozen()

    # -- steps -------------------------------------------------------------------------------------

    def _parsed_by_older_version(self) -> bool:
        """Whether the index was written by parsers that made something else of the same files.

        Titles, heading paths and indexed text come from parsing, and an unchanged file is never
        parsed again, so a new ``PARSE_VERSION`` has every file re-read once; so do another
        ``[index].date_fields``, which dates documents differently, and other ``[chunking]`` sizes,
        which cut them differently. What was not recorded (an older index) counts as the same.
        """
        meta = self.store.meta()
        return (
            meta.parse_version != PARSE_VERSION
            or (meta.date_fields is not None and meta.date_fields != self.date_fields)
            or (meta.chunking is not None and meta.chunking != self.chunking.key)
        )

    def _check_model(self) -> None:
        if self.model_id is None:
            return
        mismatch = model_incompatibility(self.store, self.model_id)
        if mismatch is not None:
            raise mismatch

    def would_embed(self, model_id: str) -> bool:
        """Whether a pass that changes no document would still call the model ``model_id``: chunks
        without a vector, or vectors made by another model or combined another way."""
        meta = self.store.meta()
        embedding = meta.embedding
        if embedding is not None and (embedding.model != model_id or embedding.scheme != VECTOR_SCHEME):
            return True
        return self.store.pending_vector_count() > 0 or meta.next_embedding is not None

    def vectors_outdated(self) -> bool:
        """Vectors of the configured model, combined from a chunk's parts another way (an older kbseek)."""
        embedding = self.store.meta().embedding
        if self.model_id is None or embedding is None:
            return False
        return embedding.scheme != VECTOR_SCHEME

    def reembed(self) -> None:
        """Forget every vector (and what made them) so the next pass embeds all chunks with the configured
        model."""
        with self.store.transaction() as tx:
            tx.clear_vectors()

    def _prepare(
        self,
        fs: FileStat,
        old: DocumentState | None,
        by_hash: dict[str, DocumentState],
        report: _Tally,
        *,
        reparse: bool = False,
    ) -> _Prepared | None:
        parser = self.registry.for_path(fs.path)
        if parser is None:  # the registry changed between scan and read
            return None
        try:
            read = read_regular_file(
                self.root, fs.path, max_bytes=raw_size_limit(parser, self.max_file_bytes),
                max_file_bytes=self.max_file_bytes, parser=parser.name,
            )  # fmt: skip
        except DocumentNotFound:  # gone since the scan; the next pass sees it vanish
            return None
        except DocumentRefused as exc:  # became a link, grew over the cap … since the scan
            report.skipped.append((fs.path, str(exc)))
            return None
        except OSError as exc:
            report.skipped.append((fs.path, f"cannot read: {exc.strerror or exc}"))
            return None
        raw, fs = read.data, FileStat(fs.path, read.size, read.mtime_ns)
        digest = hashlib.sha256(raw).hexdigest()
        if old is not None and old.content_hash == digest and old.parser == parser.name and not reparse:
            with self.store.transaction() as tx:
                tx.touch_document(old.id, fs.size, fs.mtime_ns)
            report.unchanged += 1
            return None
        try:
            text = parser.decode(raw)
        except (UnicodeDecodeError, ValueError) as exc:  # the sentence a refused read says too
            report.skipped.append((fs.path, reason_for(exc)))
            return None
        try:
            parsed = parser.parse(fs.path, text, self.chunking)
        except Exception as exc:  # one broken file must never stop the pass
            log.exception("parser %s failed on %s", parser.name, fs.path)
            report.skipped.append((fs.path, f"parser failed: {exc}"))
            return None
        for warning in parsed.warnings:
            report.warnings.append((fs.path, warning))
        if old is not None:
            return _Prepared("updated", fs, digest, parser.name, parsed, old.id)
        twin = by_hash.get(digest)
        if twin is not None:
            return _Prepared("renamed", fs, digest, parser.name, parsed, twin.id, twin.path)
        return _Prepared("added", fs, digest, parser.name, parsed, None)

    def _write(self, p: _Prepared, report: _Tally) -> int:
        """Write one document with its chunks in one transaction; their vectors come in the embed phase.

        The chunks are analyzed for the lexical index before the transaction opens (``ingest.analysis``).
        """
        document = document_input(
            path=p.file.path, parser=p.parser, size=p.file.size, mtime_ns=p.file.mtime_ns,
            content_hash=p.content_hash, parsed=p.parsed, date_fields=self.date_fields,
        )  # fmt: skip
        with self.store.transaction() as tx:
            document_id = tx.write_document(document, replaces=p.replaces)
        report.chunks_written += len(p.parsed.chunks)
        if p.kind == "renamed":
            report.renamed.append((p.old_path or "", p.file.path))
        else:
            getattr(report, p.kind).append(p.file.path)
        return document_id

    def _embedding_ahead(self, report: _Tally) -> EmbedAhead | None:
        embed = self.embed
        if embed is None:
            return None

        def save(vectors: dict[str, np.ndarray]) -> None:
            with self.store.transaction() as tx:
                tx.put_vectors(vectors)
                self._record_model(tx, vectors)
            report.chunks_embedded += len(vectors)

        return EmbedAhead(
            partial(embed_chunks, embed), pending=self.store.document_chunks_without_vectors, save=save,
            batch=self.embed_batch,
        )  # fmt: skip

    def _embed_hashes(
        self,
        hashes: list[str],
        inputs: dict[str, ChunkText],
        report: _Tally,
        after_batch: Callable[[], None] | None = None,
    ) -> dict[str, np.ndarray]:
        assert self.embed is not None
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(hashes), self.embed_batch):
            batch = hashes[i : i + self.embed_batch]
            matrix = embed_chunks(self.embed, [inputs[h] for h in batch])
            out.update(zip(batch, matrix, strict=True))
            report.chunks_embedded += len(batch)
            if after_batch is not None:
                after_batch()
        return out

    def _record_model(self, tx: StoreWriter, vectors: dict[str, np.ndarray]) -> None:
        if vectors and self.model_id is not None:
            dim = len(next(iter(vectors.values())))
            tx.record_embedding(
                EmbeddingRecord(model=self.model_id, dim=dim, scheme=VECTOR_SCHEME, spec=self.spec)
            )

    def _switch_model(self, report: _Tally, progress: Progress | None) -> None:
        """A model switch's share of the pass (:class:`ModelSwitch`): the next generation's missing
        vectors, a batch per transaction, then its promotion once none is missing.

        Its progress is the ``embed`` phase's, with the new model named as the item.
        """
        switch = self.switch
        if switch is None:
            if self.embed is not None and self.store.meta().next_embedding is not None:
                with self.store.transaction() as tx:  # [embed] named the index's model again: given up
                    tx.drop_next_generation()
            return
        total, done, item = self.store.missing_next_vector_count(), 0, f"switching to {switch.model_id}"
        dim: int | None = None
        if progress and total:
            progress("embed", 0, total, item)
        after = ""
        while page := self.store.chunks_without_next_vectors(after=after, limit=self.embed_batch):
            after = page[-1].content_hash
            matrix = embed_chunks(switch.embed, [(p.heading_path, p.text) for p in page])
            dim = matrix.shape[1]
            with self.store.transaction() as tx:
                tx.start_next_generation(EmbeddingRecord(switch.model_id, dim, VECTOR_SCHEME, switch.spec))
                tx.put_next_vectors(dict(zip((p.content_hash for p in page), matrix, strict=True)))
            done += len(page)
            report.chunks_embedded += len(page)
            if progress:
                progress("embed", done, total, item)
            if self.yields is not None and self.yields():
                log.info(
                    "model switch: %d of %d chunk contents embedded; another pass goes first", done, total
                )
                return
        if self.store.missing_next_vector_count():
            return  # none can be (this pass is the index's one writer), but never promote a gap
        recorded = self.store.meta().next_embedding
        if dim is None and recorded is not None and recorded.model == switch.model_id:
            dim = recorded.dim
        with self.store.transaction() as tx:
            tx.start_next_generation(EmbeddingRecord(switch.model_id, dim, VECTOR_SCHEME, switch.spec))
            tx.promote_next_generation()
        report.switched = True
        log.info("the index's vectors are now those of model %s", switch.model_id)

    def _backfill_vectors(self, report: _Tally, progress: Progress | None) -> None:
        """The embed phase: vectors for every chunk without one (this pass's new chunks, chunks of
        lexical-only passes, all of them after ``--reembed``), committed every few batches.

        Progress is reported after every model batch rather than every commit: with a slow model
        a commit's worth of chunks can take a minute, and the ETA should move before that.
        """
        if self.embed is None:
            return
        total, base = self.store.pending_vector_count(), report.chunks_embedded

        def tick() -> None:
            if progress:
                progress("embed", report.chunks_embedded - base, total, "")

        if total:
            tick()
        # One page of texts in memory at a time, read in content-hash order after the last one
        # committed: memory stays bounded by the page, not by the corpus (a re-embed of 100k chunks
        # would otherwise hold every text at once).
        step = self.embed_batch * 4
        after = ""
        while page := self.store.chunks_without_vectors(after=after, limit=step):
            after = page[-1].content_hash
            inputs: dict[str, ChunkText] = {h: (path, text) for h, path, text in page}
            hashes = [p.content_hash for p in page]
            vectors = self._embed_hashes(hashes, inputs, report, after_batch=tick)
            with self.store.transaction() as tx:
                tx.put_vectors(vectors)
                self._record_model(tx, vectors)
