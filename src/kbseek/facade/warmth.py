"""A reader's start: the store's pages read into memory before the reader reports ready.

A reader of a database index is started after the database restarted, or on a copy just made, and
its first searches would each read their own pages from disk (``store.warming``). The runner starts
:class:`Warmth` with the server, on a thread of its own beside the model's load; until it is done
``readiness`` answers why not (a load balancer sends no searches yet), and ``index_status`` says so.
A store without the capability (SQLite) is ready at once.
"""

from __future__ import annotations

import logging
import threading

from kbseek.store.base import Lifecycle
from kbseek.store.warming import Warmed

log = logging.getLogger(__name__)

WARM_THREAD = "kbseek-warm"


class Warmth:
    """Whether the store's pages are read in yet: not started, warming, done (with what was read)."""

    def __init__(self, store: Lifecycle) -> None:
        self._store = store
        self._done = threading.Event()
        self._done.set()  # nothing to wait for until started
        self.warmed: Warmed | None = None
        """What the last warming read; ``None`` before one finished, or when it failed."""
        self.error: str | None = None
        """Why the last warming failed (the database away at the start, say); searches go on cold."""

    def start(self) -> threading.Thread | None:
        """Warm on a thread of its own; ``None`` (and ready at once) when the store has nothing to warm."""
        warming = self._store.warming
        if warming is None:
            return None
        self._done.clear()

        def work() -> None:
            try:
                self.warmed = warming.warm()
            except Exception as exc:  # the database away, the store closed meanwhile: served cold, said why
                self.error = str(exc)
                log.warning("the index was not warmed, so the first searches read from disk: %s", exc)
            else:
                described = self.warmed.describe()
                if self.warmed.fallback is not None:
                    log.warning("%s", described)
                else:
                    log.info("%s", described)
            finally:
                self._done.set()

        thread = threading.Thread(target=work, name=WARM_THREAD, daemon=True)
        thread.start()
        return thread

    @property
    def warming(self) -> bool:
        return not self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Until the warming ended (or ``timeout``); whether it has."""
        return self._done.wait(timeout)

    def readiness(self) -> str | None:
        """Why a reader is not ready yet, or ``None``: searches sent while it warms read from disk."""
        if self.warming:
            return "warming: reading the index into the database's memory, so the first searches are fast"
        return None

    def note(self) -> str | None:
        """``index_status``'s note: while it warms, and when it fell back to a slower method."""
        if self.warming:
            return "warming: reading the index into the database's memory; searches answer meanwhile, slower"
        if self.warmed is not None and self.warmed.fallback is not None:
            return self.warmed.describe()
        return None
