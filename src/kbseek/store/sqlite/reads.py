"""The SQLite store's SQL for the reads both backends share (``store.reader``).

A chunk or document is read in several places (by id, by rowid, by neighbourhood, as a listing); one
column list each keeps those reads the same shape, and ``store.reader`` builds the records from them.
A list parameter arrives as JSON and is read with ``json_each``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kbseek.store.reader import ReadStatements

CHUNK_COLUMNS = (
    "c.id, c.chunk_id, c.document_id, d.path, d.title, c.ordinal, c.start, c.end, "
    "c.line_start, c.line_end, c.heading_path, c.text, c.content_hash, d.tags, d.parser, x.day"
)
CHUNKS = (
    f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id"
    " LEFT JOIN document_dates x ON x.document = d.id"
)
DOCUMENTS = (
    "SELECT id, path, parser, size, chars, title, tags, date, frontmatter, warnings, indexed_at, x.day,"
    " x.source, content_hash FROM documents LEFT JOIN document_dates x ON x.document = documents.id"
)
EACH = "(SELECT value FROM json_each(?))"
"""A list parameter, sent as JSON: one parameter however long the list."""
WITH_VECTOR = "FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"
WITHOUT_VECTOR = (
    "FROM chunks c LEFT JOIN {table} e ON e.content_hash = c.content_hash WHERE e.content_hash IS NULL"
)

READS = ReadStatements(
    meta_rows="SELECT key, value FROM meta",
    document=f"{DOCUMENTS} WHERE path=?",
    documents=f"{DOCUMENTS} ORDER BY path",
    document_text="SELECT t.text FROM documents d JOIN document_texts t ON t.document = d.id WHERE d.path=?",
    skipped="SELECT path, reason FROM skipped ORDER BY path",
    chunk=f"{CHUNKS} WHERE c.chunk_id=?",
    chunks_by_rowid=f"{CHUNKS} WHERE c.id IN {EACH}",
    neighbours=f"{CHUNKS} WHERE c.document_id=? AND c.ordinal BETWEEN ? AND ? ORDER BY c.ordinal",
    section_starts="SELECT chunk, position, heading_path FROM chunk_sections"
    f" WHERE chunk IN {EACH} ORDER BY chunk, position",
    retired="SELECT path, retired_at FROM retired_chunks WHERE chunk_id=?",
    paths_within_size="SELECT path FROM documents WHERE size <= ? ORDER BY path",
    paths_within_size_among=f"SELECT path FROM documents WHERE size <= ? AND path IN {EACH} ORDER BY path",
    has_field="SELECT 1 FROM document_fields WHERE field = ? LIMIT 1",
    date_sources="SELECT source, count(*) FROM document_dates GROUP BY source",
    link_keys="SELECT l.target FROM documents d JOIN links l ON l.document = d.id WHERE d.path = ?"
    " ORDER BY l.position LIMIT ?",
    linking="SELECT s.path, l.target FROM documents d JOIN document_names n ON n.document = d.id"
    " JOIN links l ON l.target = n.name JOIN documents s ON s.id = l.document"
    " WHERE d.path = ? AND s.id <> d.id ORDER BY s.path, l.position LIMIT ?",
    named="SELECT name, path, rank FROM (SELECT n.name, d.path, n.rank, row_number() OVER"
    " (PARTITION BY n.name ORDER BY n.rank, length(d.path), d.path) AS r"
    f" FROM document_names n JOIN documents d ON d.id = n.document WHERE n.name IN {EACH}) WHERE r <= ?",
    pending=f"SELECT c.content_hash, c.heading_path, c.text {WITHOUT_VECTOR} AND c.content_hash > ?"
    " GROUP BY c.content_hash ORDER BY c.content_hash LIMIT ?",
    pending_in_documents=f"SELECT c.content_hash, c.heading_path, c.text {WITHOUT_VECTOR}"
    f" AND c.document_id IN {EACH} ORDER BY c.document_id, c.ordinal",
    pending_count=f"SELECT COUNT(DISTINCT c.content_hash) {WITHOUT_VECTOR}",
    embedded_count="SELECT count(*) FROM chunks c JOIN {table} e ON e.content_hash = c.content_hash",
    vector_rowids=f"SELECT c.id {WITH_VECTOR} ORDER BY c.id",
    vectors=f"SELECT c.id, e.vector {WITH_VECTOR} ORDER BY c.id",
    vectors_after=f"SELECT c.id, e.vector {WITH_VECTOR} WHERE c.id > ? ORDER BY c.id LIMIT ?",
    vectors_among=f"SELECT c.id, e.vector {WITH_VECTOR} WHERE c.id IN {EACH} ORDER BY c.id",
    no_limit=-1,
)


def marks(values: Sequence[object]) -> str:
    """The ``?`` placeholders of an ``IN (…)`` list of ``values`` (a short list; a long one is
    :data:`EACH`'s)."""
    return ",".join("?" * len(values))


def parameters(params: Sequence[Any]) -> tuple[Any, ...]:
    """Parameters as SQLite binds them: a list travels as JSON, which the statement reads with
    ``json_each`` (:data:`EACH`)."""
    return tuple(json.dumps(p) if isinstance(p, list) else p for p in params)
