"""The writes both backends make, written once: :class:`IndexWriter`, the base of each backend's writer.

A knowledge base's bookkeeping is the same on SQLite and on PostgreSQL: a document replaced in place
retires its chunk ids, a touched file's modification-time date follows it, a pass counts itself in
the meta rows, a model switch fills a next generation of vectors and promotes it in one step. What a
backend adds is its SQL (:class:`Statements`, one text per statement, in its own dialect and
placeholder style) and the few writes whose shape really differs: how chunks reach the keyword index
(FTS5 rows, or postings and collection statistics), how a vector is encoded, how a batch of rows
travels (one statement per row in-process, one array statement across a network).

The rule this module keeps: a new fact the index stores is one method here and one statement per
backend, never a method per backend.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kbseek.dates import MTIME_SOURCE, mtime_day
from kbseek.errors import KbBug
from kbseek.store.conventions import RETIRED_CHUNKS_KEPT, pack_text
from kbseek.store.facts import document_facts
from kbseek.store.links import document_names, link_keys
from kbseek.store.meta import (
    META_EMBEDDING,
    META_NEXT_EMBEDDING,
    META_PASSES,
    NEXT_PREFIX,
    embedding_meta,
    index_meta,
    pass_meta,
    same_generation,
)
from kbseek.store.records import ChunkInput, DocumentInput, EmbeddingRecord

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Statements:
    """The SQL a backend runs for the shared writes, each in its own dialect and placeholder style.

    Statements named ``insert_*`` take a batch of rows (:meth:`IndexWriter._insert_rows`); the
    parameters of every other statement are given in the order the name's comment says.
    """

    insert_document: str
    """The documents row (path … indexed_at); gives the new id (see ``_insert_returning_id``)."""
    update_document: str
    """The same columns, then the id."""
    put_text: str
    """(document id, packed text), replacing any."""
    put_date: str
    """(document id, day, source), replacing any."""
    delete_fields: str
    insert_fields: str
    """Rows of (document id, field, value)."""
    delete_links: str
    delete_names: str
    insert_links: str
    """Rows of (document id, position, link key)."""
    insert_names: str
    """Rows of (name, document id, rank)."""
    touch_document: str
    """(size, mtime_ns, id)."""
    follow_mtime_date: str
    """(day, document id, source): a date read from the modification time follows it."""
    delete_document: str
    delete_skipped: str
    insert_skipped: str
    """Rows of (path, reason), one per path."""
    prune_vectors: str
    """A template with ``{table}``: that table's vectors no chunk's content hash uses."""
    prune_retired: str
    """(how many to keep): the oldest retired ids beyond it."""
    put_vector: str
    """(content hash, encoded vector) into ``embeddings``, replacing any."""
    put_next_vector: str
    """The same into ``next_embeddings``."""
    other_dimension: str
    """(hashes being written): the width of one stored vector not among them, if any."""
    delete_vectors: str
    delete_next_vectors: str
    promote_vectors: str
    """Copy ``next_embeddings`` into the (emptied) ``embeddings``."""
    meta_rows: str
    meta_value: str
    """(key)."""
    put_meta: str
    """(key, value), replacing any."""
    delete_meta: str
    """(key)."""


class IndexWriter(ABC):
    """Writes on the connection of one open transaction (see ``base.StoreWriter`` for the guarantees).

    Subclasses give the statements, run them (:meth:`_execute`, :meth:`_insert_rows`, …) and write
    the chunks; everything else is here.
    """

    sql: Statements

    def __init__(self) -> None:
        self.documents_changed = 0
        """Documents written or deleted in this transaction (what makes a backend's statistics stale)."""
        self.pass_recorded = False
        """This transaction records a finished pass."""

    # -- what each backend runs ---------------------------------------------------------------------

    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    @abstractmethod
    def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    @abstractmethod
    def _insert_rows(self, sql: str, rows: Sequence[Row]) -> None:
        """One ``insert_*`` statement for every row (never called with none)."""

    @abstractmethod
    def _put_rows(self, sql: str, rows: Sequence[Row]) -> None:
        """A ``put_*`` statement once per row: vectors, which travel as binary values one by one."""

    @abstractmethod
    def _insert_returning_id(self, sql: str, params: Sequence[Any]) -> int: ...

    @abstractmethod
    def _insert_chunks(self, doc_id: int, chunks: Sequence[ChunkInput]) -> None:
        """The chunk rows, their sections and their keyword index; chunk ids written stop being retired."""

    @abstractmethod
    def _retire_chunks(self, doc_id: int, now: float) -> None:
        """Retire the document's chunk ids (with its path, at ``now``) and delete its chunks."""

    @abstractmethod
    def _encode_vector(self, vector: npt.NDArray[np.float32]) -> Any:
        """A float32 vector as the backend's column takes it."""

    def _text_value(self, text: str) -> Any:
        """Free text (a title) as the backend's column takes it; a column that cannot hold NUL says so."""
        return text

    def _write_tags(self, doc_id: int, document: DocumentInput, *, replaced: bool) -> None:  # noqa: B027 (optional)
        """The document's tags where a backend keeps them apart from the row (its ``tags`` column has them)."""

    def _announce_pass(self, passes: str) -> None:  # noqa: B027 (optional)
        """Tell readers a pass was recorded, where the backend can (they poll the pass counter otherwise)."""

    # -- documents and chunks ----------------------------------------------------------------------

    def write_document(self, document: DocumentInput, *, replaces: int | None) -> int:
        now = time.time()
        self.documents_changed += 1
        values = (
            document.path, document.parser, document.size, document.chars, document.mtime_ns,
            document.content_hash, self._text_value(document.title),
            json.dumps(dict(document.frontmatter), ensure_ascii=False, default=str),
            json.dumps(list(document.tags), ensure_ascii=False), document.date,
            json.dumps(list(document.warnings), ensure_ascii=False), now,
        )  # fmt: skip
        if replaces is None:
            doc_id = self._insert_returning_id(self.sql.insert_document, values)
        else:
            doc_id = replaces
            self._retire_chunks(doc_id, now)
            self._execute(self.sql.update_document, (*values, doc_id))
        self._write_tags(doc_id, document, replaced=replaces is not None)
        self._execute(self.sql.put_text, (doc_id, pack_text(document.text)))
        if document.chunks:
            self._insert_chunks(doc_id, document.chunks)
        self._write_links(doc_id, document)
        self._write_facts(doc_id, document)
        return doc_id

    def _write_facts(self, doc_id: int, document: DocumentInput) -> None:
        """The document's date and front-matter fields (``store.facts``), replacing any it had."""
        dated, fields = document_facts(document)
        self._execute(self.sql.put_date, (doc_id, dated.day, dated.source))
        self._execute(self.sql.delete_fields, (doc_id,))
        if fields:
            self._insert_rows(self.sql.insert_fields, [(doc_id, name, value) for name, value in fields])

    def _write_links(self, doc_id: int, document: DocumentInput) -> None:
        """The document's links as keys and the names links may call it by (``store.links``),
        replacing any it had: a rename changes its names, an edit its links."""
        self._execute(self.sql.delete_links, (doc_id,))
        self._execute(self.sql.delete_names, (doc_id,))
        keys = link_keys(document.links)
        if keys:
            self._insert_rows(self.sql.insert_links, [(doc_id, i, key) for i, key in enumerate(keys)])
        names = document_names(document.path, document.title)
        if names:
            self._insert_rows(self.sql.insert_names, [(name, doc_id, rank) for name, rank in names.items()])

    def touch_document(self, document_id: int, size: int, mtime_ns: int) -> None:
        self._execute(self.sql.touch_document, (size, mtime_ns, document_id))
        self._execute(self.sql.follow_mtime_date, (mtime_day(mtime_ns), document_id, MTIME_SOURCE))

    def delete_document(self, document_id: int) -> None:
        self.documents_changed += 1
        self._retire_chunks(document_id, time.time())
        self._execute(self.sql.delete_document, (document_id,))

    def replace_skipped(self, skipped: Iterable[tuple[str, str]]) -> None:
        last = dict(skipped)  # a repeated path keeps its last reason
        self._execute(self.sql.delete_skipped)
        if last:
            self._insert_rows(self.sql.insert_skipped, list(last.items()))

    def prune(self) -> None:
        for table in ("embeddings", "next_embeddings"):
            self._execute(self.sql.prune_vectors.format(table=table))
        self._execute(self.sql.prune_retired, (RETIRED_CHUNKS_KEPT,))

    # -- vectors -----------------------------------------------------------------------------------

    def put_vectors(self, vectors: Mapping[str, npt.NDArray[np.floating[Any]]]) -> None:
        """Kept as float32, which both backends hold exactly.

        One index holds one dimension: vectors of two models are never mixed (``records.EmbeddingRecord``),
        and a matrix of the index's vectors could not be built otherwise, so a vector of another
        dimension is refused here rather than found by the next search.
        """
        if not vectors:
            return
        arrays = {h: np.asarray(v, dtype=np.float32) for h, v in vectors.items()}
        dims = {a.shape[-1] for a in arrays.values()}
        dims.update(int(r[0]) for r in self._fetchall(self.sql.other_dimension, (list(arrays),)))
        if len(dims) > 1:
            raise KbBug(
                f"vectors of dimensions {sorted(dims)} were written into one index; "
                "vectors of two models are never mixed (clear_vectors first)"
            )
        self._put_rows(self.sql.put_vector, [(h, self._encode_vector(a)) for h, a in arrays.items()])

    def clear_vectors(self) -> None:
        # DELETE, not TRUNCATE or a new file: readers keep reading while this transaction runs.
        self._execute(self.sql.delete_vectors)
        self._execute(self.sql.delete_next_vectors)
        for key in META_EMBEDDING + META_NEXT_EMBEDDING:
            self._set_meta(key, None)

    # -- the next generation (a model switch, docs/decisions/0040) ---------------------------------

    def _meta(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self._fetchall(self.sql.meta_rows)}

    def _next_record(self) -> EmbeddingRecord | None:
        return index_meta(self._meta()).next_embedding

    def start_next_generation(self, embedding: EmbeddingRecord) -> None:
        if not same_generation(self._next_record(), embedding):
            self._execute(self.sql.delete_next_vectors)
        for key, value in embedding_meta(embedding, prefix=NEXT_PREFIX).items():
            self._set_meta(key, value)

    def put_next_vectors(self, vectors: Mapping[str, npt.NDArray[np.floating[Any]]]) -> None:
        """As :meth:`put_vectors`, without its check of one dimension: the switch writes every vector
        of the generation with one model, and :meth:`start_next_generation` empties it for another."""
        if self._next_record() is None:
            raise KbBug("next-generation vectors were written before the generation was started")
        if vectors:
            rows = [(h, self._encode_vector(np.asarray(v, dtype=np.float32))) for h, v in vectors.items()]
            self._put_rows(self.sql.put_next_vector, rows)

    def drop_next_generation(self) -> None:
        self._execute(self.sql.delete_next_vectors)
        for key in META_NEXT_EMBEDDING:
            self._set_meta(key, None)

    def promote_next_generation(self) -> None:
        """DELETE and INSERT in this transaction, not a table rename: a rename's lock would make every
        reader wait (PostgreSQL then rebuilds its approximate index for the new dimension in
        ``build_vector_index``, outside any transaction)."""
        record = self._next_record()
        if record is None:
            raise KbBug("no next generation of vectors to promote")
        self._execute(self.sql.delete_vectors)
        self._execute(self.sql.promote_vectors)
        self._execute(self.sql.delete_next_vectors)
        self.record_embedding(record)
        for key in META_NEXT_EMBEDDING:
            self._set_meta(key, None)

    # -- meta --------------------------------------------------------------------------------------

    def record_pass(
        self, *, finished_at: float, parse_version: int, listing_changed: bool = True,
        date_fields: Sequence[str] | None = None, chunking: str | None = None,
    ) -> None:  # fmt: skip
        before = self._fetchall(self.sql.meta_value, (META_PASSES,))
        rows = pass_meta(
            finished_at=finished_at, parse_version=parse_version,
            passes_before=before[0][0] if before else None,
            listing_changed=listing_changed, date_fields=date_fields, chunking=chunking,
        )  # fmt: skip
        for key, value in rows.items():
            self._set_meta(key, value)
        self._announce_pass(str(rows[META_PASSES]))
        self.pass_recorded = True

    def record_embedding(self, embedding: EmbeddingRecord) -> None:
        for key, value in embedding_meta(embedding).items():
            self._set_meta(key, value)

    def _set_meta(self, key: str, value: str | None) -> None:
        """``None`` removes the key, so that reading it back gives ``None`` again."""
        if value is None:
            self._execute(self.sql.delete_meta, (key,))
        else:
            self._execute(self.sql.put_meta, (key, value))
