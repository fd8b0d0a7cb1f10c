"""The reads of the next generation of vectors in the SQLite store (a model switch, docs/decisions/0040).

A mixin of ``SqliteStore``, kept apart so the store's module stays within its size. The writes are in
``sqlite_writer``; the table is ``next_embeddings``, laid out as ``embeddings`` is.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from kbseek.store.records import PendingChunk

_MISSING = "FROM chunks c LEFT JOIN next_embeddings n ON n.content_hash = c.content_hash WHERE n.content_hash IS NULL"


class SqliteNextGeneration:
    """What a model switch reads of the next generation, for ``SqliteStore`` (which provides ``conn``)."""

    if TYPE_CHECKING:

        @property
        def conn(self) -> sqlite3.Connection: ...

    def chunks_without_next_vectors(self, *, after: str = "", limit: int | None = None) -> list[PendingChunk]:
        rows = self.conn.execute(
            f"SELECT c.content_hash, c.heading_path, c.text {_MISSING} AND c.content_hash > ?"
            " GROUP BY c.content_hash ORDER BY c.content_hash LIMIT ?",
            (after, -1 if limit is None else max(int(limit), 0)),
        )
        return [PendingChunk(r[0], tuple(json.loads(r[1])), r[2]) for r in rows]

    def next_embedded_count(self) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM chunks c JOIN next_embeddings n ON n.content_hash = c.content_hash"
        ).fetchone()
        return int(row[0])

    def missing_next_vector_count(self) -> int:
        return int(self.conn.execute(f"SELECT COUNT(DISTINCT c.content_hash) {_MISSING}").fetchone()[0])
