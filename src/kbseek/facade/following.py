"""Following an index that another process writes: how a server without the files stays current.

A server that reads a shared index (``kbseek serve --read-only`` over PostgreSQL, on a machine without
the notes) runs no pass of its own, so nothing local tells it that the index changed. The writer
counts every pass it commits (``IndexMeta.passes``); a :class:`Follower` waits for that number to
move (``Store.wait_for_pass``: a notification where the database sends one, a poll where it cannot)
and then runs what a local pass runs afterwards: the dense snapshot catches up, and the listeners
(the MCP server's ``list_changed``) hear of it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kbseek.ingest.indexer import IndexReport
from kbseek.store.base import Lifecycle

log = logging.getLogger(__name__)

WAIT_SECONDS = 1.0
"""One wait for a pass; between two, the follower checks whether it is being closed."""

PassFollowed = Callable[[IndexReport, bool], None]
"""Called with a report of a pass made elsewhere and whether its vectors were all made again."""


class Follower:
    """A daemon thread that turns another process's committed passes into local pass aftermaths."""

    def __init__(self, store: Lifecycle, on_pass: PassFollowed) -> None:
        self._store = store
        self._on_pass = on_pass
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.passes_seen = 0
        """How many of the writer's passes this server has caught up with (for tests and status)."""

    def start(self) -> None:
        if self._thread is not None:
            return
        meta = self._store.meta()
        self.passes_seen = meta.passes
        self._thread = threading.Thread(
            target=self._run, args=(meta.listing_pass, meta.embedding), name="kbseek-follow", daemon=True
        )
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stop.is_set()

    def describe(self) -> str:
        """How this server stays current, for ``index_status``'s freshness: it follows the writer."""
        by = self._store.follow_mode()
        last = self._store.meta().last_pass_at
        when = f"{max(0.0, time.time() - last):.0f} s ago" if last is not None else "none yet"
        return f"follows the writer's passes ({by}); its last pass: {when}"

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self, listing_pass: int, embedding: object) -> None:
        while not self._stop.is_set():
            try:
                passes = self._store.wait_for_pass(self.passes_seen, WAIT_SECONDS)
                if passes == self.passes_seen:
                    continue
                meta = self._store.meta()
                report = IndexReport(elsewhere=True, listing_moved=meta.listing_pass != listing_pass)
                rebuilt = meta.embedding != embedding
                self.passes_seen, listing_pass, embedding = meta.passes, meta.listing_pass, meta.embedding
                self._on_pass(report, rebuilt)
            except Exception:  # the store away for a moment: the next wait tries again
                log.warning("following the index's passes failed; trying again", exc_info=True)
                self._stop.wait(WAIT_SECONDS)
