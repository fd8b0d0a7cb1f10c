"""The records the index speaks in: what ingest hands a store (:class:`DocumentInput`,
:class:`ChunkInput`) and what a store hands back (rows, counts, states, the meta as facts).

They are values with no behaviour of their own, shared by both stores and by every caller of
``store.base.Store``; the protocol that moves them is ``store/base.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from kbseek.dates import DocumentDate
from kbseek.documents import Chunk, Link

RowIds = npt.NDArray[np.int64]
"""Chunk rowids, one per row of a matching :data:`Matrix`."""
Matrix = npt.NDArray[np.float32]
"""Chunk vectors, one unit-length float32 row per chunk."""

# -- records read back -----------------------------------------------------------------------------


class DocumentState(NamedTuple):
    """What the index remembers about a file, enough to decide whether to re-read it.

    A named tuple, not a frozen dataclass: a pass over 100,000 files reads one per file, and a
    frozen dataclass costs several times more to build (0.5 s of a no-change pass at that size).
    """

    id: int
    path: str
    size: int
    mtime_ns: int
    content_hash: str
    parser: str


@dataclass(frozen=True)
class DocumentRow:
    """A document as read back for answering (listings, topics, ``get_document`` metadata)."""

    id: int
    path: str
    parser: str
    size: int
    """Bytes on disk when it was indexed (D8: the servable set needs no filesystem probe)."""
    chars: int
    """Length of the served text."""
    title: str
    tags: tuple[str, ...]
    date: str | None
    """The front matter's ``date`` as written; what the filters use is :attr:`dated`."""
    frontmatter: dict[str, object]
    warnings: tuple[str, ...]
    indexed_at: float
    dated: DocumentDate | None = None
    """Its day and that day's source (``kbseek.dates``); ``None`` before a pass has recorded it."""
    content_hash: str = ""
    """The SHA-256 (hex) of the file's bytes when it was indexed: a note's hash as reads give it to
    an agent that may edit it (``kbseek.write.hashes``)."""


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as read back for answering: its own fields plus its document's."""

    rowid: int
    """The store's number for this chunk row: unique, and never reused for another row (the dense
    snapshot keeps rowids across passes and relies on a rowid always meaning the same text)."""
    chunk_id: str
    document_id: int
    path: str
    title: str
    ordinal: int
    start: int
    end: int
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    text: str
    content_hash: str
    tags: tuple[str, ...] = ()
    parser: str = ""
    """The document's parser: whether ``text`` is markup, for display text (``has_markup``)."""
    date: str | None = None
    """The document's day (``DocumentRow.dated``), which every hit carries."""


class Counts(NamedTuple):
    """How much is indexed (a tuple, so ``docs, chunks = store.counts()`` reads naturally)."""

    documents: int
    chunks: int


class SkippedPath(NamedTuple):
    """A file the last pass did not index, and why."""

    path: str
    reason: str


class RetiredChunk(NamedTuple):
    """Where a chunk id that no longer exists used to live, and since when (T5)."""

    path: str
    retired_at: float


class LinkRow(NamedTuple):
    """A link between two indexed documents, resolved (``kbseek.store.links`` says how)."""

    source: str
    """The path of the document the link is written in."""
    target: str
    """The path of the indexed document it resolves to; never ``source`` itself."""
    kind: str
    """``"path"`` (a Markdown link) or ``"wiki"`` (a ``[[wiki link]]``)."""


class PendingChunk(NamedTuple):
    """A chunk content that has no vector yet: what the embed phase embeds."""

    content_hash: str
    heading_path: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class EmbeddingRecord:
    """What made the index's vectors. Vectors of two models are never mixed in one index."""

    model: str
    """The embedder's model id (``Embedder.model_id``)."""
    dim: int | None
    """The vectors' dimension; ``None`` when the index does not say."""
    scheme: str | None
    """How a chunk's parts were combined into one vector (``embed.chunk_vectors.VECTOR_SCHEME``);
    ``None`` for vectors written before schemes were recorded."""
    spec: str | None = None
    """The embedder's whole configuration as JSON (an ``EmbedderSpec``), so that the model can be built
    again to embed queries while another model's vectors are made (docs/decisions/0040); ``None`` for
    vectors written before it was recorded."""


@dataclass(frozen=True)
class IndexMeta:
    """Facts about the index as a whole. A fact never recorded, or recorded in a form this version
    cannot read, is ``None``: each one is derived data that the next pass writes again."""

    last_pass_at: float | None = None
    """When the last indexing pass finished (seconds since the epoch); ``None``: never indexed."""
    parse_version: int | None = None
    """``ingest.parsers.PARSE_VERSION`` of the parsers that wrote the documents."""
    embedding: EmbeddingRecord | None = None
    """What made the vectors; ``None`` when no vector was recorded (or they were cleared)."""
    passes: int = 0
    """How many passes the index has recorded: what a server reading an index that another process
    writes watches to learn that it changed (:meth:`Store.wait_for_pass`)."""
    listing_pass: int = 0
    """The number (as in :attr:`passes`) of the last pass that added, removed or renamed a document:
    when the resource listing a reader offers changed."""
    date_fields: tuple[str, ...] | None = None
    """``[index].date_fields`` of the pass that dated the documents: another list re-reads them."""
    chunking: str | None = None
    """The ``[chunking]`` sizes that cut the documents (``ChunkOptions.key``): other sizes re-read them."""
    next_embedding: EmbeddingRecord | None = None
    """The model of the next generation of vectors, made while :attr:`embedding`'s keep answering and
    promoted when every chunk has one (docs/decisions/0040); ``None`` when no model switch is under way."""


# -- records handed in -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkInput:
    """One chunk as ingest hands it to the store: the chunker's output and its analyzed lexical text.

    ``lexical_heading`` and ``lexical_body`` are the analyzer's terms separated by single spaces; the
    store indexes them as given and never re-analyzes ``chunk.text``.
    """

    chunk: Chunk
    lexical_heading: str
    lexical_body: str


@dataclass(frozen=True)
class DocumentInput:
    """One document as ingest hands it to the store: what the file was and what its parser made of it."""

    path: str
    parser: str
    size: int
    mtime_ns: int
    content_hash: str
    chars: int
    text: str
    """The served text (``ParsedDocument.text``): kept so that a server without the files can serve
    the document (docs/decisions/0031); ``chars`` is its length."""
    title: str
    frontmatter: Mapping[str, Any]
    """Stored as JSON; a value JSON cannot hold is stored as its ``str()``."""
    tags: tuple[str, ...]
    date: str | None
    warnings: tuple[str, ...]
    chunks: tuple[ChunkInput, ...]
    """In document order; ``chunk.chunk_id`` values are unique across the whole index."""
    links: tuple[Link, ...] = ()
    """The document's links to other notes as its parser read them; the store resolves them when
    read (:meth:`Store.links_from`), so a link to a note indexed later is found then."""
    dated: DocumentDate | None = None
    """Its date as ingest read it with the configured fields; ``None``: the default fields
    (``store.facts``, which also makes the front-matter rows every store keeps)."""
