"""The link reads of the PostgreSQL store: the three statements ``store.links.LinkReads`` resolves over.

A mixin of ``PostgresStore``, kept apart so the store's module stays small. Each read is one
statement, so it sees one snapshot, as every read of the store does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kbseek.store.links import CANDIDATES, LinkReads
from kbseek.store.postgres_deadline import Bound

if TYPE_CHECKING:
    from psycopg.rows import TupleRow


class PostgresLinks(LinkReads):
    """``links_from`` and ``links_to`` for ``PostgresStore`` (which provides ``_rows``)."""

    if TYPE_CHECKING:

        def _rows(
            self, query: str, params: Sequence[Any] | dict[str, Any] = (), *, bound: Bound = ...
        ) -> list[TupleRow]: ...

    def _link_keys(self, path: str, limit: int) -> list[str]:
        rows = self._rows(
            "SELECT l.target FROM documents d JOIN links l ON l.document_id = d.id WHERE d.path = %s"
            " ORDER BY l.position LIMIT %s",
            (path, limit),
        )
        return [str(r[0]) for r in rows]

    def _linking(self, path: str, limit: int) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT s.path, l.target FROM documents d JOIN document_names n ON n.document_id = d.id"
            " JOIN links l ON l.target = n.name JOIN documents s ON s.id = l.document_id"
            " WHERE d.path = %s AND s.id <> d.id ORDER BY s.path, l.position LIMIT %s",
            (path, limit),
        )
        return [(str(r[0]), str(r[1])) for r in rows]

    def _named(self, keys: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        rows = self._rows(
            "SELECT name, path, rank FROM (SELECT n.name, d.path, n.rank, row_number() OVER"
            " (PARTITION BY n.name ORDER BY n.rank, length(d.path), d.path) AS r"
            " FROM document_names n JOIN documents d ON d.id = n.document_id"
            " WHERE n.name = ANY(%s::text[])) AS c WHERE r <= %s",
            (list(keys), CANDIDATES),
        )
        out: dict[str, list[tuple[str, int]]] = {}
        for name, found, rank in rows:
            out.setdefault(str(name), []).append((str(found), int(rank)))
        return out
