"""Watching the knowledge base so edits are indexed as they happen, not only on the next call.

Each debounced batch of filesystem events (a save, a rename, a ``git checkout``
touching a thousand files) becomes one incremental pass over the batch's paths
(and the folders among them), so a save costs the same in any size of tree;
created, changed, deleted and renamed files *and folders* are all handled the
same way. A changed ``.kbseekignore`` or config file, and a very large batch,
get a pass over the whole tree instead (``IndexRunner._on_files_changed``). If
the watcher cannot run, the state says why and the stat scan made before each
call keeps the index fresh.

The state turns ``"running"`` only once the watches are in place, and that
moment is itself a batch (an empty one): a change made after the last pass's
scan but before the watches existed produced no event, and that batch's pass
rescans and finds it. From ``"running"`` on, the runner stops scanning before
each call (docs/decisions/0015), so the state must not claim more than is true.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from kbseek.ingest.exclusion import VENDOR_DIRS

log = logging.getLogger(__name__)

DEBOUNCE_MS = 300
READY_MS = 500
"""How long watchfiles waits for events before reporting a quiet spell. Its first return, events or
a quiet spell, is the first sign that the watches are in place; later quiet spells are ignored
(watchfiles wakes every 50 ms anyway to check the stop event, so this adds no real work)."""


class Watcher:
    """Runs ``on_batch(changed_paths)`` on a thread of its own after each debounced batch of changes.

    It watches ``root``, and ``also`` (the config file) when that lives outside it. The first call
    comes as soon as the watches are in place, with an empty set if nothing changed yet: the pass it
    runs finds what changed before they were.
    """

    def __init__(
        self, root: Path, index_dir: Path, on_batch: Callable[[set[Path]], None], *, also: Path | None = None
    ) -> None:
        self.root = root
        self.index_dir = index_dir.resolve()
        self.on_batch = on_batch
        self.also = also.resolve() if also is not None else None
        self.state = "off"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            import watchfiles  # noqa: F401
        except ImportError as exc:
            self.state = f"unavailable: {exc}; changes are picked up by the stat scan before each call"
            return
        self._thread = threading.Thread(target=self._run, name="kbseek-watch", daemon=True)
        self.state = "starting"
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if not self.state.startswith("unavailable"):
            self.state = "off"

    def _relevant(self, _change: object, path: str) -> bool:
        p = Path(path)
        if p == self.also:
            return True
        if p == self.index_dir or self.index_dir in p.parents:
            return False  # our own writes must not trigger passes
        return not any(part in VENDOR_DIRS for part in p.parts)

    def _run(self) -> None:
        import watchfiles

        try:
            extra = [self.also] if self.also is not None and self.root not in self.also.parents else []
            for changes in watchfiles.watch(
                self.root,
                *extra,
                watch_filter=self._relevant,
                debounce=DEBOUNCE_MS,
                stop_event=self._stop,
                raise_interrupt=False,
                rust_timeout=READY_MS,
                yield_on_timeout=True,
            ):
                if self.state != "running":
                    self.state = "running"  # the watches are in place; this batch may be empty
                elif not changes:
                    continue  # a quiet spell
                try:
                    self.on_batch({Path(path) for _, path in changes})
                except Exception:
                    log.exception("indexing after a filesystem change failed")
        except Exception as exc:  # inotify limit, unsupported filesystem, …
            self.state = f"unavailable: {exc}{_hint(str(exc))}; changes are picked up by the stat scan before each call"
            log.warning("file watcher stopped: %s", exc)
            return
        if not self._stop.is_set():
            self.state = (
                "unavailable: the watcher ended; changes are picked up by the stat scan before each call"
            )


def _hint(error: str) -> str:
    """What to raise when Linux's inotify limits stop the watcher (the error alone names neither)."""
    if "os error 24" in error or "Too many open files" in error:
        return " (the inotify instance limit: raise the sysctl fs.inotify.max_user_instances)"
    if "os error 28" in error or "No space left on device" in error:
        return " (the inotify watch limit, one per folder: raise the sysctl fs.inotify.max_user_watches)"
    return ""
