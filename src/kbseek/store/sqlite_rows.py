"""The SQLite store's SELECT column lists and the records built from their rows.

A chunk or document is read in several places (by id, by rowid, by neighbourhood, as a listing); one
column list and one constructor each keep those reads the same shape.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from kbseek.dates import DocumentDate
from kbseek.store.records import ChunkRow, DocumentRow

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
    " x.source FROM documents LEFT JOIN document_dates x ON x.document = documents.id"
)


def document_row(r: sqlite3.Row | tuple[Any, ...]) -> DocumentRow:
    return DocumentRow(
        id=r[0], path=r[1], parser=r[2], size=r[3], chars=r[4], title=r[5], tags=tuple(json.loads(r[6])),
        date=r[7], frontmatter=json.loads(r[8]), warnings=tuple(json.loads(r[9])), indexed_at=r[10],
        dated=DocumentDate(r[11], r[12]) if r[11] else None,
    )  # fmt: skip


def chunk_row(r: sqlite3.Row | tuple[Any, ...]) -> ChunkRow:
    return ChunkRow(
        rowid=r[0], chunk_id=r[1], document_id=r[2], path=r[3], title=r[4], ordinal=r[5],
        start=r[6], end=r[7], line_start=r[8], line_end=r[9],
        heading_path=tuple(json.loads(r[10])), text=r[11], content_hash=r[12], tags=tuple(json.loads(r[13])),
        parser=r[14], date=r[15],
    )  # fmt: skip
