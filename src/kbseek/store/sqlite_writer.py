"""The writes of one SQLite transaction: :class:`SqliteWriter`, the ``StoreWriter`` of ``SqliteStore``.

A writer exists only inside ``SqliteStore.transaction()`` and holds that transaction's connection, so
every statement here runs inside it, and nothing outside ``kbseek.store`` ever holds a connection to
write with. The lexical text arrives analyzed (``ChunkInput``): no text processing happens here.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
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


class SqliteWriter:
    """Writes on the connection of one open transaction (see ``base.StoreWriter`` for the guarantees)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    # -- documents and chunks ----------------------------------------------------------------------

    def write_document(self, document: DocumentInput, *, replaces: int | None) -> int:
        conn = self._conn
        now = time.time()
        values = (
            document.path, document.parser, document.size, document.chars, document.mtime_ns,
            document.content_hash, document.title,
            json.dumps(dict(document.frontmatter), ensure_ascii=False, default=str),
            json.dumps(list(document.tags), ensure_ascii=False), document.date,
            json.dumps(list(document.warnings), ensure_ascii=False), now,
        )  # fmt: skip
        if replaces is None:
            cur = conn.execute(
                "INSERT INTO documents(path, parser, size, chars, mtime_ns, content_hash, title, frontmatter,"
                " tags, date, warnings, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                values,
            )
            doc_id = int(cur.lastrowid or 0)
        else:
            doc_id = replaces
            self._retire_chunks(doc_id, now)
            conn.execute(
                "UPDATE documents SET path=?, parser=?, size=?, chars=?, mtime_ns=?, content_hash=?, title=?,"
                " frontmatter=?, tags=?, date=?, warnings=?, indexed_at=? WHERE id=?",
                (*values, doc_id),
            )
        conn.execute(
            "INSERT OR REPLACE INTO document_texts(document, text) VALUES (?, ?)",
            (doc_id, pack_text(document.text)),
        )
        self._insert_chunks(doc_id, document.chunks)
        self._write_links(doc_id, document)
        self._write_facts(doc_id, document)
        return doc_id

    def _write_facts(self, doc_id: int, document: DocumentInput) -> None:
        """The document's date and front-matter fields (``store.facts``), replacing any it had."""
        dated, fields = document_facts(document)
        conn = self._conn
        conn.execute(
            "INSERT OR REPLACE INTO document_dates(document, day, source) VALUES (?, ?, ?)",
            (doc_id, dated.day, dated.source),
        )
        conn.execute("DELETE FROM document_fields WHERE document=?", (doc_id,))
        conn.executemany(
            "INSERT INTO document_fields(document, field, value) VALUES (?, ?, ?)",
            [(doc_id, name, value) for name, value in fields],
        )

    def _write_links(self, doc_id: int, document: DocumentInput) -> None:
        """The document's links as keys and the names links may call it by (``store.links``),
        replacing any it had: a rename changes its names, an edit its links."""
        conn = self._conn
        conn.execute("DELETE FROM links WHERE document=?", (doc_id,))
        conn.execute("DELETE FROM document_names WHERE document=?", (doc_id,))
        conn.executemany(
            "INSERT INTO links(document, position, target) VALUES (?, ?, ?)",
            [(doc_id, i, key) for i, key in enumerate(link_keys(document.links))],
        )
        conn.executemany(
            "INSERT INTO document_names(name, document, rank) VALUES (?, ?, ?)",
            [(name, doc_id, rank) for name, rank in document_names(document.path, document.title).items()],
        )

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

    def touch_document(self, document_id: int, size: int, mtime_ns: int) -> None:
        self._conn.execute(
            "UPDATE documents SET size=?, mtime_ns=? WHERE id=?", (size, mtime_ns, document_id)
        )
        self._conn.execute(  # a date read from the modification time follows it
            "UPDATE document_dates SET day=? WHERE document=? AND source=?",
            (mtime_day(mtime_ns), document_id, MTIME_SOURCE),
        )

    def delete_document(self, document_id: int) -> None:
        self._retire_chunks(document_id, time.time())
        self._conn.execute("DELETE FROM documents WHERE id=?", (document_id,))

    def replace_skipped(self, skipped: Iterable[tuple[str, str]]) -> None:
        self._conn.execute("DELETE FROM skipped")
        self._conn.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)", list(skipped))

    def prune(self) -> None:
        for table in ("embeddings", "next_embeddings"):
            self._conn.execute(
                f"DELETE FROM {table} WHERE content_hash NOT IN (SELECT content_hash FROM chunks)"
            )
        self._conn.execute(
            "DELETE FROM retired_chunks WHERE chunk_id IN (SELECT chunk_id FROM retired_chunks "
            "ORDER BY retired_at DESC LIMIT -1 OFFSET ?)",
            (RETIRED_CHUNKS_KEPT,),
        )

    # -- vectors -----------------------------------------------------------------------------------

    def put_vectors(self, vectors: Mapping[str, npt.NDArray[np.floating[Any]]]) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO embeddings(content_hash, vector) VALUES (?, ?)",
            [(h, np.asarray(v, dtype="<f4").tobytes()) for h, v in vectors.items()],
        )

    def clear_vectors(self) -> None:
        self._conn.execute("DELETE FROM embeddings")
        self._conn.execute("DELETE FROM next_embeddings")
        keys = META_EMBEDDING + META_NEXT_EMBEDDING
        self._conn.execute(f"DELETE FROM meta WHERE key IN ({','.join('?' * len(keys))})", keys)

    # -- the next generation (a model switch, docs/decisions/0040) ---------------------------------

    def _next_record(self) -> EmbeddingRecord | None:
        return index_meta(dict(self._conn.execute("SELECT key, value FROM meta").fetchall())).next_embedding

    def start_next_generation(self, embedding: EmbeddingRecord) -> None:
        if not same_generation(self._next_record(), embedding):
            self._conn.execute("DELETE FROM next_embeddings")
        for key, value in embedding_meta(embedding, prefix=NEXT_PREFIX).items():
            self._set_meta(key, value)

    def put_next_vectors(self, vectors: Mapping[str, npt.NDArray[np.floating[Any]]]) -> None:
        if self._next_record() is None:
            raise KbBug("next-generation vectors were written before the generation was started")
        self._conn.executemany(
            "INSERT OR REPLACE INTO next_embeddings(content_hash, vector) VALUES (?, ?)",
            [(h, np.asarray(v, dtype="<f4").tobytes()) for h, v in vectors.items()],
        )

    def drop_next_generation(self) -> None:
        self._conn.execute("DELETE FROM next_embeddings")
        for key in META_NEXT_EMBEDDING:
            self._set_meta(key, None)

    def promote_next_generation(self) -> None:
        record = self._next_record()
        if record is None:
            raise KbBug("no next generation of vectors to promote")
        self._conn.execute("DELETE FROM embeddings")
        self._conn.execute(
            "INSERT INTO embeddings(content_hash, vector) SELECT content_hash, vector FROM next_embeddings"
        )
        self._conn.execute("DELETE FROM next_embeddings")
        self.record_embedding(record)
        for key in META_NEXT_EMBEDDING:
            self._set_meta(key, None)

    # -- meta --------------------------------------------------------------------------------------

    def record_pass(
        self, *, finished_at: float, parse_version: int, listing_changed: bool = True,
        date_fields: Sequence[str] | None = None, chunking: str | None = None,
    ) -> None:  # fmt: skip
        row = self._conn.execute("SELECT value FROM meta WHERE key=?", (META_PASSES,)).fetchone()
        rows = pass_meta(
            finished_at=finished_at, parse_version=parse_version, passes_before=row[0] if row else None,
            listing_changed=listing_changed, date_fields=date_fields, chunking=chunking,
        )  # fmt: skip
        for key, value in rows.items():
            self._set_meta(key, value)

    def record_embedding(self, embedding: EmbeddingRecord) -> None:
        for key, value in embedding_meta(embedding).items():
            self._set_meta(key, value)

    def _set_meta(self, key: str, value: str | None) -> None:
        """``None`` removes the key, so that reading it back gives ``None`` again."""
        if value is None:
            self._conn.execute("DELETE FROM meta WHERE key=?", (key,))
        else:
            self._conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?)"
                " ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (key, value),
            )
