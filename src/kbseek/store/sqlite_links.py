"""The link reads of the SQLite store: the three statements ``store.links.LinkReads`` resolves over.

A mixin of ``SqliteStore``, kept apart so the store's module stays within its size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbseek.store.links import CANDIDATES, LinkReads

_BATCH = 500
"""Keys per ``IN (…)`` list: well under SQLite's limit on bound parameters."""


class SqliteLinks(LinkReads):
    """``links_from`` and ``links_to`` for ``SqliteStore`` (which provides ``conn``)."""

    if TYPE_CHECKING:

        @property
        def conn(self) -> sqlite3.Connection: ...

    def _link_keys(self, path: str, limit: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT l.target FROM documents d JOIN links l ON l.document = d.id WHERE d.path = ?"
            " ORDER BY l.position LIMIT ?",
            (path, limit),
        )
        return [r[0] for r in rows]

    def _linking(self, path: str, limit: int) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT s.path, l.target FROM documents d JOIN document_names n ON n.document = d.id"
            " JOIN links l ON l.target = n.name JOIN documents s ON s.id = l.document"
            " WHERE d.path = ? AND s.id <> d.id ORDER BY s.path, l.position LIMIT ?",
            (path, limit),
        )
        return [(r[0], r[1]) for r in rows]

    def _named(self, keys: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        out: dict[str, list[tuple[str, int]]] = {}
        for start in range(0, len(keys), _BATCH):
            part = list(keys[start : start + _BATCH])
            rows = self.conn.execute(
                "SELECT name, path, rank FROM (SELECT n.name, d.path, n.rank, row_number() OVER"
                " (PARTITION BY n.name ORDER BY n.rank, length(d.path), d.path) AS r"
                " FROM document_names n JOIN documents d ON d.id = n.document"
                f" WHERE n.name IN ({','.join('?' * len(part))})) WHERE r <= ?",
                (*part, CANDIDATES),
            )
            for name, found, rank in rows:
                out.setdefault(name, []).append((found, int(rank)))
        return out
