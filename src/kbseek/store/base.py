"""What search and ingest may ask of the index: the :class:`Store` protocol and the records it speaks.

The retrieval and ingest code never see SQL, a connection or a file: they hold a ``Store`` and call
the methods below, so a backend slots in by implementing this protocol, with search and ingest
untouched: SQLite (``kbseek.store.sqlite.SqliteStore``, the default) and PostgreSQL with pgvector
(``kbseek.store.postgres.PostgresStore``, one index for a team; docs/decisions/0030).

Every text the store keeps arrives finished. In particular the lexical text of a chunk is analyzed by
ingest (``kbseek.ingest.analysis``) before it reaches the store, because the query is analyzed by
search with the same analyzer (T7): a backend that tokenized on its own would
silently disagree with the query side. A backend only splits the given text on whitespace.

Writes happen only on the :class:`StoreWriter` that :meth:`Store.transaction` yields, so no write can
escape a transaction, and a crash never leaves half a document behind.

The guarantees written in the docstrings below are what ``tests/unit/test_store_contract.py`` pins
for every implementation; a new backend passes that suite before it is used.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from kbseek.documents import SectionStart
from kbseek.errors import IndexIncompatible
from kbseek.filters import NO_FILTERS, SearchFilters
from kbseek.store.lock import PassLock
from kbseek.store.nearest import NearestVectors
from kbseek.store.records import (
    ChunkRow,
    Counts,
    DocumentInput,
    DocumentRow,
    DocumentState,
    EmbeddingRecord,
    IndexMeta,
    LinkRow,
    Matrix,
    PendingChunk,
    RetiredChunk,
    RowIds,
    SkippedPath,
)
from kbseek.store.warming import Warming

# -- the protocol ----------------------------------------------------------------------------------


class StoreWriter(Protocol):
    """The writes of one transaction. Obtained only from :meth:`Store.transaction`, valid inside it."""

    def write_document(self, document: DocumentInput, *, replaces: int | None) -> int:
        """Insert a document with its chunks, or replace document ``replaces`` in place; returns its id.

        Replacing (an edit, or a rename when ``document.path`` differs) keeps the document id, retires
        every old chunk id (:meth:`Store.retired` names its last path) and gives the new chunks fresh
        rowids, never one used before. A chunk id written again stops being retired.
        """
        ...

    def touch_document(self, document_id: int, size: int, mtime_ns: int) -> None:
        """Record a new size and mtime for a file whose content hash did not change; nothing else moves."""
        ...

    def delete_document(self, document_id: int) -> None:
        """Remove a document and its chunks; their chunk ids become retired. An unknown id is a no-op."""
        ...

    def replace_skipped(self, skipped: Iterable[tuple[str, str]]) -> None:
        """Replace the whole list of skipped ``(path, reason)`` pairs ; a repeated path keeps the last."""
        ...

    def prune(self) -> None:
        """Drop vectors (of either generation) no chunk's content hash uses, and the oldest retired ids
        beyond the kept number."""
        ...

    def put_vectors(self, vectors: Mapping[str, npt.NDArray[np.floating[Any]]]) -> None:
        """Store one vector per content hash (replacing any there); every chunk with that hash shares it.

        Kept as float32: a vector read back equals ``np.asarray(v, dtype=np.float32)``.
        """
        ...

    def clear_vectors(self) -> None:
        """Forget every vector and the :class:`EmbeddingRecord`, so the next pass embeds everything afresh;
        a next generation (its vectors and record) is forgotten too."""
        ...

    def start_next_generation(self, embedding: EmbeddingRecord) -> None:
        """Record ``embedding`` as the model of the next generation of vectors (docs/decisions/0040).

        The next generation's vectors already written are kept when the record it had names the same
        model and scheme (a switch resumed after a crash or restart), and dropped otherwise; the
        current vectors and their record are never touched.
        """
        ...

    def put_next_vectors(self, vectors: Mapping[str, npt.NDArray[np.floating[Any]]]) -> None:
        """Like :meth:`put_vectors`, into the next generation. Raises :class:`~kbseek.errors.KbBug`
        when no next generation was started."""
        ...

    def drop_next_generation(self) -> None:
        """Forget the next generation, its vectors and record (a switch given up: the configured model
        is the index's again); the current vectors are untouched. Without one, a no-op."""
        ...

    def promote_next_generation(self) -> None:
        """Make the next generation the vectors: its vectors replace every current one and its record
        becomes :attr:`IndexMeta.embedding`; afterwards there is no next generation. Readers see the old
        vectors or the new ones, never a mix (it is one transaction). Raises
        :class:`~kbseek.errors.KbBug` when no next generation was started."""
        ...

    def record_pass(
        self, *, finished_at: float, parse_version: int, listing_changed: bool = True,
        date_fields: Sequence[str] | None = None, chunking: str | None = None,
    ) -> None:  # fmt: skip
        """Record that a pass finished and with which parsers (``last_pass_at``, ``parse_version``, and
        the ``date_fields`` and ``chunking`` the documents were read with, when given), and count it
        (``passes``);
        ``listing_changed``: it added, removed or renamed a document (``listing_pass``). Readers of
        the index hear of it when the transaction commits."""
        ...

    def record_embedding(self, embedding: EmbeddingRecord) -> None:
        """Record what made the vectors; a ``None`` field is recorded as unknown (read back as ``None``)."""
        ...


class Lifecycle(Protocol):
    """The index as one thing: where it is, whether it exists, its facts and counts, how writes begin
    and how another process's passes are followed. What a runner, a status page and a follower hold."""

    pass_lock: PassLock | None
    """The store's own lock for a whole pass, when writers on several machines share the index
    (PostgreSQL's); ``None``: the lock file beside the index (``store.lock.WriterLock``) serves."""

    @property
    def warming(self) -> Warming | None:
        """The store reading what a search reads into memory before a reader reports ready (PostgreSQL:
        its buffers, with ``pg_prewarm`` where the server has it; ``store.warming``); ``None`` where
        a search's first reads cost no more than its later ones (SQLite: a file the operating system
        caches, and vectors the dense leg loads itself)."""
        ...

    @property
    def location(self) -> str:
        """Where the index lives, as a person would name it in a message (a file path, a database name)."""
        ...

    def close(self) -> None:
        """Release connections. The store is not used afterwards."""
        ...

    def transaction(self) -> AbstractContextManager[StoreWriter]:
        """One write transaction: committed when the block ends, rolled back on any exception
        (``BaseException`` included, so an interrupted pass leaves nothing half-written).

        Raises :class:`~kbseek.errors.IndexLocked` when another process is writing the same index.
        """
        ...

    def holds_index(self) -> bool:
        """Whether the index exists: a store opened to read only may name one nobody built yet (it
        then reads as empty). Raises :class:`~kbseek.errors.StoreUnavailable` if it cannot be told."""
        ...

    def meta(self) -> IndexMeta:
        """The facts about the whole index; an empty :class:`IndexMeta` for a new index."""
        ...

    def wait_for_pass(self, seen: int, timeout: float) -> int:
        """:attr:`IndexMeta.passes` as soon as it differs from ``seen``, or as it is after ``timeout``
        seconds: how a server that does not write the index learns that another process did.

        Never raises for a store that went away meanwhile: it waits out the timeout and returns
        ``seen``, and the caller asks again.
        """
        ...

    def follow_mode(self) -> str:
        """How :meth:`wait_for_pass` learns of another process's passes, in words for a reader's status."""
        ...

    def counts(self) -> Counts:
        """How many documents and chunks are indexed."""
        ...


class DocumentReads(Protocol):
    """Documents by path, their text, what was skipped, and the links between them."""

    def document_states(
        self, paths: Collection[str] | None = None, folders: Collection[str] = ()
    ) -> dict[str, DocumentState]:
        """What the index remembers of documents, keyed by path: the indexer's freshness check.

        Every document by default; with ``paths``, only those paths and the documents under
        ``folders`` (root-relative, no trailing slash), so that a pass over a watcher batch reads
        what it touches rather than the whole index.
        """
        ...

    def document(self, path: str) -> DocumentRow | None:
        """The document at ``path`` (exact, case-sensitive), or ``None`` when it is not indexed."""
        ...

    def documents(self) -> list[DocumentRow]:
        """Every indexed document, sorted by path."""
        ...

    def document_text(self, path: str) -> str | None:
        """The served text the document at ``path`` was indexed with, exactly as written; ``None`` when
        the path is not indexed. What a server without the files serves (docs/decisions/0031)."""
        ...

    def paths_within_size(self, max_bytes: int, among: Collection[str] | None = None) -> list[str]:
        """Indexed paths whose recorded size is at most ``max_bytes``, sorted (D8: no filesystem probe).

        With ``among``, only those of its paths that qualify; paths in it that are not indexed are left out.
        """
        ...

    def skipped(self) -> list[SkippedPath]:
        """The files the last pass did not index, and why, sorted by path."""
        ...

    def links_from(self, path: str, *, limit: int) -> list[LinkRow]:
        """The links written in the document at ``path`` that resolve to another indexed document: at
        most one per target, sorted by target, read from at most ``limit`` of its links (in the order
        written). A link to a note not indexed (yet), or to itself, is left out; an unknown path has none."""
        ...

    def links_to(self, path: str, *, limit: int) -> list[LinkRow]:
        """The links in other documents that resolve to the document at ``path`` (its backlinks): at
        most one per source, sorted by source, from at most ``limit`` links naming it."""
        ...


class ChunkReads(Protocol):
    """Chunks by id, by rowid and by neighbourhood, and the chunk ids a document's edits retired."""

    def chunk(self, chunk_id: str) -> ChunkRow | None:
        """The chunk with this id, or ``None`` when no current chunk has it (see :meth:`retired`)."""
        ...

    def chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, ChunkRow]:
        """The chunks with these rowids, keyed by rowid; a rowid that no longer exists is absent."""
        ...

    def neighbours(self, document_id: int, first: int, last: int) -> list[ChunkRow]:
        """The document's chunks with ordinals ``first`` to ``last`` inclusive, in ordinal order."""
        ...

    def section_starts(self, rowids: Sequence[int]) -> dict[int, tuple[SectionStart, ...]]:
        """The sections that begin inside these chunks after their start, in order, keyed by rowid;
        a chunk of one section is absent."""
        ...

    def retired(self, chunk_id: str) -> RetiredChunk | None:
        """Where a chunk id that no longer exists used to be; ``None`` for a current or never-seen id."""
        ...


class KeywordIndex(Protocol):
    """The keyword leg's reads: BM25 candidates and the term statistics the ranking weighs them by."""

    def lexical_candidates(
        self,
        terms: Sequence[str],
        *,
        limit: int,
        filters: SearchFilters = NO_FILTERS,
        complete: bool = True,
    ) -> list[tuple[int, float]]:
        """Chunks whose lexical text holds any of ``terms``: at most ``limit`` ``(rowid, score)``, best first.

        The score is BM25 (higher is better) with a heading match weighing more than a body match. Terms
        are analyzed tokens and are matched literally: no character or word in them (quotes, ``*``,
        ``-``, ``:``, ``AND``, ``NEAR`` …) is ever query syntax, and no term can make this raise (T7).
        No terms: an empty list. The filters are those of :meth:`filtered_rowids`. ``complete=False``
        (a search whose dense leg also ranks the filtered chunks) lets a store return fewer than
        ``limit`` when the filters pass few chunks and the rest would only hold common terms.
        """
        ...

    def holds_japanese(self) -> bool:
        """Whether any chunk's indexed terms are Japanese (kana or kanji): a knowledge base in two
        languages, where a search in one may miss a page written in the other."""
        ...

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks hold each term (heading or body); a term no chunk holds is absent.

        Used to weigh terms by rarity, so a store may answer a count from a cache up to a minute old
        (the SQLite store does: an exact count reads a common term's whole posting list). Whether a
        term is held at all must be current: a search says which names of its query no chunk holds
        (``text.names``), and a name just written into a note must not be reported missing."""
        ...

    def rows_matching_each_term(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, set[str]]:
        """Which of ``terms`` each of ``rowids`` holds in its stored lexical text (heading or body).

        Every given rowid is a key; one that does not exist maps to an empty set.
        """
        ...


class Facts(Protocol):
    """What the filters, listings and facets read: each document's folder, tags, type, dates and
    front-matter fields."""

    def filtered_rowids(self, filters: SearchFilters) -> frozenset[int] | None:
        """Rowids of the chunks passing ``filters``, or ``None`` when they narrow nothing.

        ``filters.path_prefix`` keeps documents whose path starts with it, taken literally (``%`` and
        ``_`` are ordinary characters) except that ASCII letters match either case; ``filters.tags``
        keeps documents carrying every one of them, ``tags_any`` one of them, compared without case;
        ``path_globs`` a path matching one (``kbseek.globs``, ASCII case folded); ``types`` a
        parser among them; ``after``/``before`` a day within them, both included; ``where`` front-
        matter fields holding one of the values (folded as ``filters.field_value``), or present or
        absent. Each store translates the one value to its own SQL, with the same results (the
        contract suite runs both).
        """
        ...

    def newest_chunks(self, filters: SearchFilters, *, limit: int) -> list[int]:
        """Each passing document's first chunk, newest day first (then latest mtime, then path)."""
        ...

    def has_field(self, field: str) -> bool:
        """Whether any document's front matter has the (folded) field."""
        ...

    def field_facets(self, *, fields: int, values: int) -> list[tuple[str, int, list[tuple[str, int]]]]:
        """The ``fields`` fields most documents have, each with its document count and its ``values``
        commonest values with theirs, commonest first, ties by name."""
        ...

    def date_sources(self) -> dict[str, int]:
        """How many documents took their date from each source (``frontmatter:date``, ``mtime`` …)."""
        ...


class VectorReads(Protocol):
    """The chunk vectors of the current generation: what is still to embed, and the vectors a dense
    leg loads or pages through."""

    @property
    def nearest(self) -> NearestVectors | None:
        """The store itself finding a query's nearest vectors (PostgreSQL with pgvector), so the dense
        leg holds no vectors; ``None`` where the dense leg searches vectors it loaded (SQLite)."""
        ...

    def embedded_count(self) -> int:
        """How many chunks have a vector: what semantic search would cover with the model loaded."""
        ...

    def chunks_without_vectors(self, *, after: str = "", limit: int | None = None) -> list[PendingChunk]:
        """One entry per distinct content hash among chunks without a vector, sorted by content hash.

        ``after`` and ``limit`` read it a page at a time (the hashes greater than ``after``), so the
        embed phase holds one page of texts, never the whole corpus's.
        """
        ...

    def document_chunks_without_vectors(self, document_ids: Sequence[int]) -> list[PendingChunk]:
        """Like :meth:`chunks_without_vectors`, for the chunks of these documents only, in document and
        chunk order: what the pass can embed of the documents it has just written while it parses the
        next ones."""
        ...

    def pending_vector_count(self) -> int:
        """How many distinct chunk contents have no vector: the embed phase's total."""
        ...

    def chunk_vectors(self, dim: int) -> tuple[RowIds, Matrix]:
        """(rowids ascending, their float32 vectors in the same order) for every chunk that has one.

        With no vectors the matrix has shape ``(0, dim)``.
        """
        ...

    def vector_pages(self, dim: int, *, page: int = 20_000) -> Iterator[tuple[RowIds, Matrix]]:
        """The rows of :meth:`chunk_vectors` a page at a time: at most ``page`` rows per yield, in rowid
        order, never an empty page, so a caller building its own index holds one page of float32
        vectors, never the whole corpus's (``search.ann`` at a million chunks).

        Each page is read on its own; rows written between two pages may or may not be seen, so a
        caller that needs the exact set compares it with :meth:`vector_rowids` afterwards.
        """
        ...

    def vector_rowids(self) -> RowIds:
        """Rowids of every chunk that has a vector, ascending."""
        ...

    def vectors_for_rowids(self, rowids: Sequence[int], dim: int) -> tuple[RowIds, Matrix]:
        """Like :meth:`chunk_vectors`, for those of ``rowids`` that exist and have a vector (ascending)."""
        ...


class NextGenerationReads(Protocol):
    """How far a model switch is: the next generation of vectors, filled beside the current one
    (docs/decisions/0040)."""

    def chunks_without_next_vectors(self, *, after: str = "", limit: int | None = None) -> list[PendingChunk]:
        """Like :meth:`chunks_without_vectors`, for the next generation: what a model switch still has
        to embed (every chunk when no next generation was started)."""
        ...

    def next_embedded_count(self) -> int:
        """How many chunks have a vector of the next generation: how far a model switch is."""
        ...

    def missing_next_vector_count(self) -> int:
        """How many distinct chunk contents have no vector of the next generation: the switch's total
        still to embed; 0 means it may be promoted."""
        ...


class Store(
    Lifecycle, DocumentReads, ChunkReads, KeywordIndex, Facts, VectorReads, NextGenerationReads, Protocol
):
    """The index as search and ingest see it: every slice above. A function that needs one slice takes
    that slice, so what it may ask of the index is in its signature.

    Thread safety: any thread may call any method at any time. A read never sees half a transaction
    (another thread's uncommitted writes are invisible) and does not wait for a writer. Transactions
    are serialised: one at a time per process, and :class:`~kbseek.errors.IndexLocked` when another
    process is writing the same index.

    Rowids, document ids and chunk ids are the store's own; the only promise about their values is the one
    written on :attr:`ChunkRow.rowid`.
    """


def model_incompatibility(store: Lifecycle, model_id: str) -> IndexIncompatible | None:
    """The refusal to mix vectors of two models in one index, or ``None`` when they are the same model.

    A pass checks it before it adds vectors of ``model_id`` to the current generation: a model switch
    makes the new model's vectors in the next generation instead (docs/decisions/0040), so meeting it
    means a caller skipped that.
    """
    embedding = store.meta().embedding
    recorded = embedding.model if embedding is not None else None
    if recorded is None or recorded == model_id:
        return None
    return IndexIncompatible(
        f"the index {store.location} holds vectors from model {recorded!r}, but the configured model "
        f"is {model_id!r}; run `kbseek index --reembed` to re-embed every chunk with the new "
        "model, or set [embed] back to the old one"
    )
