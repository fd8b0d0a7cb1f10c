"""This process's seat as the writer of its index: the cross-process lock, and who else holds it.

The lock itself is the store's (``store.opening.writer_lock``: a file beside a SQLite index, a
session lock in PostgreSQL). What the runner needs on top is kept here: the holder's name for the
status when another writer has it, a serving writer's claim for its whole life (so a second writer is
refused at once, not only while one of this one's passes runs), and what a ``take_over`` replaced.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kbseek.errors import IndexLocked, StoreUnavailable, WrittenElsewhere
from kbseek.store.base import Store
from kbseek.store.opening import writer_lock

log = logging.getLogger(__name__)


class WriterSeat:
    """One index's writer lock as the runner holds it; ``other_writer`` names the last holder met."""

    def __init__(self, store: Store, index_dir: Path, root: Path | None) -> None:
        self._lock = writer_lock(store, index_dir)
        if root is not None:
            self._lock.writes_from(root)
        self.other_writer: str | None = None
        """Who held the index when this process last found it locked (``None`` once it got the lock)."""

    @contextmanager
    def holding(self, *, take_over: bool = False) -> Iterator[None]:
        """The lock around one pass; raises ``IndexLocked`` (``WrittenElsewhere``) as the lock does."""
        try:
            with self._lock.hold(take_over=take_over):
                self.other_writer = None
                yield
        except WrittenElsewhere:
            raise  # not another pass of the same files: reported as an error, not as a holder
        except IndexLocked:
            self.other_writer = self._lock.holder() or "another process"
            raise

    def claim(self, *, take_over: bool = False) -> str | None:
        """A serving writer's start: hold the lock for as long as it serves, where the store's lock can
        be held so (a shared PostgreSQL index), so a second writer is refused at once.

        Raises ``IndexLocked`` (another writer serves) or ``WrittenElsewhere`` (the knowledge base
        is written from another folder) for the caller to stop on. A database that cannot be reached
        now is no reason to refuse to start: the lock is then taken by the first pass that reaches
        it, which is refused if another writer got there first. Returns what ``take_over`` replaced.
        """
        try:
            self._lock.keep(take_over=take_over)
        except StoreUnavailable as exc:
            log.warning("the writer lock is taken at the first pass: %s", exc)
        return self.took_over()

    def took_over(self) -> str | None:
        """The writer and folder a ``take_over`` replaced as the index's source, in words, if any."""
        return self._lock.took_over_from()

    def release(self) -> None:
        self._lock.release()
