"""What a store may offer besides ``Store``: reading what a search reads into memory before the first one.

A declared capability, as ``nearest`` is (``store.base.Lifecycle.warming``): ``None`` where a store has
nothing worth warming. A database restarted, or a copy just made, holds none of the index's pages in
its buffers, and a reader's first searches each read their own pages from disk (on a stock server
at 100,000 files: the first hundred searches took three to four times as long as the same searches
warm). A store that warms reads those pages before its reader reports ready, so the reader is warm
from its first search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

PREWARM = "pg_prewarm"
"""The method when the database's own extension loaded the pages."""

READ = "reading the relations"
"""The method when the store read the pages with ordinary queries (no ``pg_prewarm`` on the server, or
a role that may not create it): slower, and large tables reach only the operating system's cache."""


@dataclass(frozen=True)
class Warmed:
    """What one warming read: how, how much, and in what time."""

    method: str
    """:data:`PREWARM` or :data:`READ`."""
    relations: tuple[str, ...]
    """The tables and indexes read, in the order read (the most used first)."""
    pages: int
    """Pages read into the database's own buffers (``pg_prewarm``'s count; the relations' size when read)."""
    megabytes: float
    """The relations' size on disk, together."""
    seconds: float
    fallback: str | None = None
    """Why :data:`READ` was used rather than :data:`PREWARM`, with what would enable it; ``None`` for
    :data:`PREWARM`."""

    def describe(self) -> str:
        """One line for a log or a status note."""
        what = f"{len(self.relations)} tables and indexes ({self.megabytes:,.0f} MB) in {self.seconds:.1f} s"
        if self.fallback is None:
            return f"warmed {what} with {self.method}"
        return f"warmed {what} by {self.method}: {self.fallback}"


class Warming(Protocol):
    """A store that can read what its searches read into memory (PostgreSQL's buffers)."""

    def warm(self) -> Warmed:
        """Read the relations a search reads, the most used first, within what the server's buffers
        hold; returns what was read. Never writes the index. Raises
        :class:`~kbseek.errors.StoreUnavailable` when the database cannot be reached."""
        ...
