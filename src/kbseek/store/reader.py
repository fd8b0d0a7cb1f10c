"""The reads both backends answer the same way, written once: :class:`IndexReader`, the base of each store.

Most of what a store reads is a statement and a record built from its rows: a document by path, the
chunks of a search's hits, a chunk's neighbours, the links of a note, the chunks still waiting for a
vector. The statement is the backend's (:class:`ReadStatements`, in its own dialect and placeholder
style); the rest — which statement, which parameters, how a row becomes a record, what a key no row
can hold means — is here, so the two backends cannot drift apart on it.

Conventions every backend keeps for these statements:

- a list parameter (rowids, paths, names) is one parameter: PostgreSQL takes it as an array
  (``= ANY(%s)``), SQLite as JSON (``IN (SELECT value FROM json_each(?))``), so neither splits a
  long list into batches;
- a ``{table}`` in a statement is ``embeddings`` or ``next_embeddings``: the two generations of
  vectors (a model switch, docs/decisions/0040) are read by the same statements.

What differs by more than SQL — the keyword index, filters, counting, vector search in the
database — stays with each backend.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kbseek.dates import DocumentDate
from kbseek.documents import SectionStart
from kbseek.store.conventions import unpack_text
from kbseek.store.links import CANDIDATES, LinkReads
from kbseek.store.meta import index_meta
from kbseek.store.records import (
    ChunkRow,
    DocumentRow,
    IndexMeta,
    Matrix,
    PendingChunk,
    RetiredChunk,
    RowIds,
    SkippedPath,
)

Row = tuple[Any, ...]

VECTORS = "embeddings"
NEXT_VECTORS = "next_embeddings"


@dataclass(frozen=True, slots=True)
class ReadStatements:
    """The SQL of the shared reads; each comment gives the parameters in order."""

    meta_rows: str
    document: str
    """(path): the document columns of :func:`document_row`."""
    documents: str
    """Every document, by path."""
    document_text: str
    """(path): the packed text."""
    skipped: str
    """(path, reason) by path."""
    chunk: str
    """(chunk id): the chunk columns of :func:`chunk_row`."""
    chunks_by_rowid: str
    """(rowids)."""
    neighbours: str
    """(document id, first ordinal, last ordinal), by ordinal."""
    section_starts: str
    """(rowids): (rowid, offset, heading path) by rowid and offset."""
    retired: str
    """(chunk id): (path, retired at)."""
    paths_within_size: str
    """(bytes): paths by path."""
    paths_within_size_among: str
    """(bytes, paths): paths by path."""
    has_field: str
    """(field): a row if any document has it."""
    date_sources: str
    """(source, documents) per source of the documents' dates."""
    link_keys: str
    """(path, limit): the link keys a document holds, in its order."""
    linking: str
    """(path, limit): (source path, key) of the links to a name of the document."""
    named: str
    """(keys, candidates per name): (name, path, rank)."""
    pending: str
    """``{table}``; (after hash, limit or ``no_limit``): one chunk per content hash without a vector,
    by hash."""
    pending_in_documents: str
    """``{table}``; (document ids): the chunks of these documents without a vector, by document and
    ordinal."""
    pending_count: str
    """``{table}``: content hashes without a vector."""
    embedded_count: str
    """``{table}``: chunks with a vector."""
    vector_rowids: str
    """The rowids of chunks with a vector, ascending."""
    vectors: str
    """(rowid, vector) of every chunk with one, by rowid."""
    vectors_after: str
    """(after rowid, limit): the next page of :attr:`vectors`."""
    vectors_among: str
    """(rowids): (rowid, vector) of those with one, by rowid."""
    no_limit: Any
    """What the backend's ``LIMIT`` takes for "no limit"."""


class IndexReader(LinkReads, ABC):
    """The shared reads of a store, over a backend's :class:`ReadStatements` and three hooks."""

    reads: ReadStatements

    @abstractmethod
    def _read(self, sql: str, params: Sequence[Any] = (), *, bulk: bool = False) -> list[Row]:
        """The rows of one statement, in one snapshot. ``bulk`` marks a read of a whole table, which a
        backend that bounds each call gives a longer bound."""

    @abstractmethod
    def _read_vectors(self, sql: str, params: Sequence[Any] = (), *, bulk: bool = False) -> list[Row]:
        """As :meth:`_read`, for rows of (rowid, vector) in whatever form :meth:`_vector` decodes."""

    @abstractmethod
    def _vector(self, value: Any) -> np.ndarray:
        """A stored vector as float32."""

    def _text(self, value: Any) -> str:
        """Free text (a title, a chunk) as the backend returns it; a column that cannot hold NUL says so."""
        return str(value)

    # -- meta --------------------------------------------------------------------------------------

    def meta(self) -> IndexMeta:
        return index_meta({str(k): str(v) for k, v in self._read(self.reads.meta_rows)})

    # -- documents ---------------------------------------------------------------------------------

    def document(self, path: str) -> DocumentRow | None:
        if not storable(path):
            return None
        rows = self._read(self.reads.document, (path,))
        return self.document_row(rows[0]) if rows else None

    def documents(self) -> list[DocumentRow]:
        return [self.document_row(r) for r in self._read(self.reads.documents, bulk=True)]

    def document_text(self, path: str) -> str | None:
        rows = self._read(self.reads.document_text, (path,)) if storable(path) else []
        return unpack_text(bytes(rows[0][0])) if rows else None

    def paths_within_size(self, max_bytes: int, among: Collection[str] | None = None) -> list[str]:
        if among is None:
            rows = self._read(self.reads.paths_within_size, (max_bytes,))
        else:
            wanted = [p for p in among if storable(p)]
            rows = self._read(self.reads.paths_within_size_among, (max_bytes, wanted)) if wanted else []
        return [str(r[0]) for r in rows]

    def skipped(self) -> list[SkippedPath]:
        return [SkippedPath(str(r[0]), str(r[1])) for r in self._read(self.reads.skipped)]

    def has_field(self, field: str) -> bool:
        return storable(field) and bool(self._read(self.reads.has_field, (field,)))

    def date_sources(self) -> dict[str, int]:
        return {str(r[0]): int(r[1]) for r in self._read(self.reads.date_sources, bulk=True)}

    # -- chunks ------------------------------------------------------------------------------------

    def chunk(self, chunk_id: str) -> ChunkRow | None:
        if not storable(chunk_id):
            return None
        rows = self._read(self.reads.chunk, (chunk_id,))
        return self.chunk_row(rows[0]) if rows else None

    def chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, ChunkRow]:
        if not len(rowids):
            return {}
        rows = self._read(self.reads.chunks_by_rowid, (_ints(rowids),))
        return {int(r[0]): self.chunk_row(r) for r in rows}

    def section_starts(self, rowids: Sequence[int]) -> dict[int, tuple[SectionStart, ...]]:
        if not len(rowids):
            return {}
        out: dict[int, list[SectionStart]] = {}
        for rowid, offset, path in self._read(self.reads.section_starts, (_ints(rowids),)):
            out.setdefault(int(rowid), []).append(SectionStart(int(offset), tuple(json.loads(path))))
        return {rowid: tuple(starts) for rowid, starts in out.items()}

    def neighbours(self, document_id: int, first: int, last: int) -> list[ChunkRow]:
        rows = self._read(self.reads.neighbours, (document_id, first, last))
        return [self.chunk_row(r) for r in rows]

    def retired(self, chunk_id: str) -> RetiredChunk | None:
        if not storable(chunk_id):
            return None
        rows = self._read(self.reads.retired, (chunk_id,))
        return RetiredChunk(str(rows[0][0]), float(rows[0][1])) if rows else None

    # -- links (store.links resolves over these three) ---------------------------------------------

    def _link_keys(self, path: str, limit: int) -> list[str]:
        if not storable(path):
            return []
        return [str(r[0]) for r in self._read(self.reads.link_keys, (path, limit))]

    def _linking(self, path: str, limit: int) -> list[tuple[str, str]]:
        if not storable(path):
            return []
        return [(str(r[0]), str(r[1])) for r in self._read(self.reads.linking, (path, limit))]

    def _named(self, keys: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        wanted = [k for k in keys if storable(k)]
        out: dict[str, list[tuple[str, int]]] = {}
        if not wanted:
            return out
        for name, found, rank in self._read(self.reads.named, (wanted, CANDIDATES)):
            out.setdefault(str(name), []).append((str(found), int(rank)))
        return out

    # -- chunks waiting for a vector, in either generation -----------------------------------------

    def _pending(self, table: str, after: str, limit: int | None) -> list[PendingChunk]:
        if "\x00" in after:  # no hash holds NUL, so the hashes after "ab\x00…" are those after "ab"
            after = after[: after.index("\x00")]
        bound = self.reads.no_limit if limit is None else max(int(limit), 0)
        rows = self._read(self.reads.pending.format(table=table), (after, bound), bulk=True)
        return [PendingChunk(str(r[0]), tuple(json.loads(r[1])), self._text(r[2])) for r in rows]

    def _count(self, statement: str) -> int:
        rows = self._read(statement, bulk=True)
        return int(rows[0][0]) if rows else 0

    def chunks_without_vectors(self, *, after: str = "", limit: int | None = None) -> list[PendingChunk]:
        return self._pending(VECTORS, after, limit)

    def chunks_without_next_vectors(self, *, after: str = "", limit: int | None = None) -> list[PendingChunk]:
        return self._pending(NEXT_VECTORS, after, limit)

    def document_chunks_without_vectors(self, document_ids: Sequence[int]) -> list[PendingChunk]:
        if not len(document_ids):
            return []
        statement = self.reads.pending_in_documents.format(table=VECTORS)
        out: dict[str, PendingChunk] = {}
        for h, heading_path, text in self._read(statement, (_ints(document_ids),)):
            if h not in out:
                out[str(h)] = PendingChunk(str(h), tuple(json.loads(heading_path)), self._text(text))
        return list(out.values())

    def pending_vector_count(self) -> int:
        return self._count(self.reads.pending_count.format(table=VECTORS))

    def missing_next_vector_count(self) -> int:
        return self._count(self.reads.pending_count.format(table=NEXT_VECTORS))

    def embedded_count(self) -> int:
        return self._count(self.reads.embedded_count.format(table=VECTORS))

    def next_embedded_count(self) -> int:
        return self._count(self.reads.embedded_count.format(table=NEXT_VECTORS))

    # -- vectors -----------------------------------------------------------------------------------

    def _matrix(self, rows: Sequence[Row], dim: int) -> tuple[RowIds, Matrix]:
        """Rowids and vectors as the dense leg takes them; a vector of another dimension raises."""
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.empty((len(rows), dim), dtype=np.float32)
        for i, r in enumerate(rows):
            matrix[i] = self._vector(r[1])
        return ids, matrix

    def chunk_vectors(self, dim: int) -> tuple[RowIds, Matrix]:
        return self._matrix(self._read_vectors(self.reads.vectors, bulk=True), dim)

    def vector_pages(self, dim: int, *, page: int = 20_000) -> Iterator[tuple[RowIds, Matrix]]:
        if page <= 0:
            raise ValueError(f"page must be positive, not {page}")
        after = -1
        while True:
            rows = self._read_vectors(self.reads.vectors_after, (after, page), bulk=True)
            if not rows:
                return
            ids, matrix = self._matrix(rows, dim)
            yield ids, matrix
            after = int(ids[-1])

    def vector_rowids(self) -> RowIds:
        rows = self._read(self.reads.vector_rowids, bulk=True)
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def vectors_for_rowids(self, rowids: Sequence[int], dim: int) -> tuple[RowIds, Matrix]:
        wanted = sorted(set(_ints(rowids)))
        rows = self._read_vectors(self.reads.vectors_among, (wanted,)) if wanted else []
        return self._matrix(rows, dim)

    # -- rows to records ---------------------------------------------------------------------------

    def document_row(self, r: Row) -> DocumentRow:
        return DocumentRow(
            id=int(r[0]), path=r[1], parser=r[2], size=int(r[3]), chars=int(r[4]), title=self._text(r[5]),
            tags=tuple(json.loads(r[6])), date=r[7], frontmatter=json.loads(r[8]),
            warnings=tuple(json.loads(r[9])), indexed_at=float(r[10]),
            dated=DocumentDate(r[11], r[12]) if r[11] else None, content_hash=r[13],
        )  # fmt: skip

    def chunk_row(self, r: Row) -> ChunkRow:
        return ChunkRow(
            rowid=int(r[0]), chunk_id=r[1], document_id=int(r[2]), path=r[3], title=self._text(r[4]),
            ordinal=int(r[5]), start=int(r[6]), end=int(r[7]), line_start=int(r[8]), line_end=int(r[9]),
            heading_path=tuple(json.loads(r[10])), text=self._text(r[11]), content_hash=r[12],
            tags=tuple(json.loads(r[13])), parser=r[14], date=r[15],
        )  # fmt: skip


def storable(key: str) -> bool:
    """Whether a stored key (a path, a chunk id, a field or a name) could equal ``key``: none holds
    NUL, which PostgreSQL's text cannot hold at all, so such a key is answered "none" in both stores
    rather than refused by one of them."""
    return "\x00" not in key


def _ints(values: Sequence[int]) -> list[int]:
    return [int(v) for v in values]
