"""The writes of one SQLite transaction: :class:`SqliteWriter`, the ``StoreWriter`` of ``SqliteStore``.

A writer exists only inside ``SqliteStore.transaction()`` and holds that transaction's connection, so
every statement here runs inside it, and nothing outside ``kbseek.store`` ever holds a connection to
write with. The bookkeeping is ``store.writer.IndexWriter``'s; what is SQLite's is its SQL, rows
sent one statement each (in-process, a statement costs microseconds), and chunks reaching the
keyword index as FTS5 rows. The lexical text arrives analyzed (``ChunkInput``): no text processing
happens here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kbseek.store.records import ChunkInput
from kbseek.store.sqlite.reads import parameters
from kbseek.store.writer import IndexWriter, Row, Statements

SQL = Statements(
    insert_document="INSERT INTO documents(path, parser, size, chars, mtime_ns, content_hash, title,"
    " frontmatter, tags, date, warnings, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
    update_document="UPDATE documents SET path=?, parser=?, size=?, chars=?, mtime_ns=?, content_hash=?,"
    " title=?, frontmatter=?, tags=?, date=?, warnings=?, indexed_at=? WHERE id=?",
    put_text="INSERT OR REPLACE INTO document_texts(document, text) VALUES (?, ?)",
    put_date="INSERT OR REPLACE INTO document_dates(document, day, source) VALUES (?, ?, ?)",
    delete_fields="DELETE FROM document_fields WHERE document=?",
    insert_fields="INSERT INTO document_fields(document, field, value) VALUES (?, ?, ?)",
    delete_links="DELETE FROM links WHERE document=?",
    delete_names="DELETE FROM document_names WHERE document=?",
    insert_links="INSERT INTO links(document, position, target) VALUES (?, ?, ?)",
    insert_names="INSERT INTO document_names(name, document, rank) VALUES (?, ?, ?)",
    touch_document="UPDATE documents SET size=?, mtime_ns=? WHERE id=?",
    follow_mtime_date="UPDATE document_dates SET day=? WHERE document=? AND source=?",
    delete_document="DELETE FROM documents WHERE id=?",
    delete_skipped="DELETE FROM skipped",
    insert_skipped="INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)",
    prune_vectors="DELETE FROM {table} WHERE content_hash NOT IN (SELECT content_hash FROM chunks)",
    prune_retired="DELETE FROM retired_chunks WHERE chunk_id IN (SELECT chunk_id FROM retired_chunks"
    " ORDER BY retired_at DESC LIMIT -1 OFFSET ?)",
    put_vector="INSERT OR REPLACE INTO embeddings(content_hash, vector) VALUES (?, ?)",
    put_next_vector="INSERT OR REPLACE INTO next_embeddings(content_hash, vector) VALUES (?, ?)",
    other_dimension="SELECT length(vector) / 4 FROM embeddings"
    " WHERE content_hash NOT IN (SELECT value FROM json_each(?)) LIMIT 1",
    delete_vectors="DELETE FROM embeddings",
    delete_next_vectors="DELETE FROM next_embeddings",
    promote_vectors="INSERT INTO embeddings(content_hash, vector) SELECT content_hash, vector FROM next_embeddings",
    meta_rows="SELECT key, value FROM meta",
    meta_value="SELECT value FROM meta WHERE key=?",
    put_meta="INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
    delete_meta="DELETE FROM meta WHERE key=?",
)


class SqliteWriter(IndexWriter):
    """Writes on the connection of one open transaction (see ``base.StoreWriter`` for the guarantees)."""

    sql = SQL

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__()
        self._conn = conn

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._conn.execute(sql, parameters(params))

    def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._conn.execute(sql, parameters(params)).fetchall()

    def _insert_rows(self, sql: str, rows: Sequence[Row]) -> None:
        self._conn.executemany(sql, rows)

    _put_rows = _insert_rows

    def _insert_returning_id(self, sql: str, params: Sequence[Any]) -> int:
        return int(self._conn.execute(sql, params).lastrowid or 0)

    def _encode_vector(self, vector: npt.NDArray[np.float32]) -> bytes:
        return np.asarray(vector, dtype="<f4").tobytes()

    def _insert_chunks(self, doc_id: int, chunks: Sequence[ChunkInput]) -> None:
        """The chunk rows and their FTS rows. The FTS rows hold the analyzed text exactly as given;
        the lexical index holds display text (docs/decisions/0009), which ingest made."""
        conn = self._conn
        for entry in chunks:
            c = entry.chunk
            cur = conn.execute(
                "INSERT INTO chunks(chunk_id, document_id, ordinal, start, end, line_start, line_end,"
                " heading_path, text, content_hash) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (c.chunk_id, doc_id, c.ordinal, c.start, c.end, c.line_start, c.line_end,
                 json.dumps(list(c.heading_path), ensure_ascii=False), c.text, c.content_hash),
            )  # fmt: skip
            conn.execute(
                "INSERT INTO chunks_fts(rowid, heading, body) VALUES (?, ?, ?)",
                (cur.lastrowid, entry.lexical_heading, entry.lexical_body),
            )
            conn.executemany(
                "INSERT INTO chunk_sections(chunk, position, heading_path) VALUES (?, ?, ?)",
                [(cur.lastrowid, s.offset, json.dumps(list(s.heading_path), ensure_ascii=False))
                 for s in c.sections],
            )  # fmt: skip
            conn.execute("DELETE FROM retired_chunks WHERE chunk_id=?", (c.chunk_id,))

    def _retire_chunks(self, doc_id: int, now: float) -> None:
        conn = self._conn
        conn.execute(
            "INSERT OR REPLACE INTO retired_chunks(chunk_id, path, retired_at) "
            "SELECT c.chunk_id, d.path, ? FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.document_id=?",
            (now, doc_id),
        )
        conn.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE document_id=?)", (doc_id,)
        )
        conn.execute("DELETE FROM chunks WHERE document_id=?", (doc_id,))
