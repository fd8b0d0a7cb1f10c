"""The reads of the next generation of vectors in the PostgreSQL store (a model switch,
docs/decisions/0040).

A mixin of ``PostgresStore``, kept apart so the store's module stays small. The writes are in
``postgres_writer``; the table is ``next_embeddings``, laid out as ``embeddings`` is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kbseek.store.postgres_deadline import BULK, Bound
from kbseek.store.postgres_writer import from_bytes
from kbseek.store.records import PendingChunk

if TYPE_CHECKING:
    from psycopg.rows import TupleRow

_MISSING = "NOT EXISTS (SELECT 1 FROM next_embeddings n WHERE n.content_hash = c.content_hash)"


class PostgresNextGeneration:
    """What a model switch reads of the next generation, for ``PostgresStore`` (which provides ``_rows``)."""

    if TYPE_CHECKING:

        def _rows(
            self, query: str, params: Sequence[Any] | dict[str, Any] = (), *, bound: Bound = ...
        ) -> list[TupleRow]: ...

    def chunks_without_next_vectors(self, *, after: str = "", limit: int | None = None) -> list[PendingChunk]:
        if "\x00" in after:  # no hash holds NUL, so the hashes after "ab\x00…" are those after "ab"
            after = after[: after.index("\x00")]
        rows = self._rows(
            "SELECT DISTINCT ON (c.content_hash) c.content_hash, c.heading_path, c.text FROM chunks c"
            f" WHERE {_MISSING} AND c.content_hash > %s ORDER BY c.content_hash, c.id LIMIT %s",
            (after, None if limit is None else max(int(limit), 0)),
            bound=BULK,
        )
        return [PendingChunk(str(r[0]), tuple(json.loads(r[1])), from_bytes(r[2])) for r in rows]

    def next_embedded_count(self) -> int:
        rows = self._rows(
            "SELECT count(*) FROM chunks c JOIN next_embeddings n ON n.content_hash = c.content_hash",
            bound=BULK,
        )
        return int(rows[0][0]) if rows else 0

    def missing_next_vector_count(self) -> int:
        rows = self._rows(f"SELECT count(DISTINCT c.content_hash) FROM chunks c WHERE {_MISSING}", bound=BULK)
        return int(rows[0][0]) if rows else 0
