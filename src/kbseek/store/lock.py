"""The writer lock: one indexing pass at a time per index, across processes.

SQLite alone keeps the file consistent, but two processes running passes over
the same knowledge base would race on which of them inserts a document, and
the loser would fail half-way with a bare "database is locked". So a pass holds
an advisory lock on ``writer.lock`` beside the index; a second process either
skips its pass (a server: the other one is indexing the same files) or stops
with a message naming the holder (``kbseek index``). Readers never take it.

The lock is an OS file lock (``flock`` / ``msvcrt.locking``), so it is released
when its holder exits or crashes: no stale lock files to clean up by hand. Like
every file in the index folder, the lock file is created readable by its owner
only (``0600``): it names the holder's command.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Protocol

from kbseek.errors import IndexLocked

LOCK_FILENAME = "writer.lock"
LOCK_FILE_MODE = 0o600
"""The mode the lock file is created with, whatever the umask (the index folder's files are private)."""

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(f: IO[str]) -> bool:
        try:
            msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(f: IO[str]) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(f: IO[str]) -> bool:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(f: IO[str]) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)


class PassLock(Protocol):
    """What a pass holds to be the only writer of an index: this file lock, or a store's own
    (``store.postgres.lock`` for an index that servers on several machines write)."""

    def hold(self, *, take_over: bool = False) -> AbstractContextManager[None]:
        """Held for the pass; raises :class:`IndexLocked` naming the other writer when it has it.

        ``take_over``: index here even if the index records another source folder (a shared store's
        :class:`~kbseek.errors.WrittenElsewhere`).
        """
        ...

    def holder(self) -> str:
        """Who holds it, in words for a status line; "" when unknown."""
        ...

    def writes_from(self, root: Path) -> None:
        """The folder this writer indexes, for a lock that checks where the index is written from."""
        ...

    def keep(self, *, take_over: bool = False) -> None:
        """Hold the lock for a serving writer's life, until :meth:`release`, where the lock can."""
        ...

    def release(self) -> None:
        """Give up what :meth:`keep` held."""
        ...

    def took_over_from(self) -> str | None:
        """The writer and folder a ``take_over`` replaced as the index's source, in words, if any."""
        ...


class WriterLock:
    """``with lock.hold():`` around a pass; raises :class:`IndexLocked` if another process has it."""

    def __init__(self, index_dir: Path) -> None:
        self.path = index_dir / LOCK_FILENAME

    def holder(self) -> str:
        """Who holds the lock, as its holder wrote it ("pid 123, kbseek serve"), or "" if unknown."""
        try:
            return self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return ""

    def writes_from(self, root: Path) -> None:
        """Nothing to check: a SQLite index lives with the folder it was built from."""

    def keep(self, *, take_over: bool = False) -> None:
        """Nothing kept: two processes serving one folder index the same files, so a pass at a time
        is enough here; the lock is taken per pass."""

    def release(self) -> None:
        """Nothing was kept."""

    def took_over_from(self) -> str | None:
        """Nothing to take over: a SQLite index has no other source than its folder."""
        return None

    @contextmanager
    def hold(self, *, take_over: bool = False) -> Iterator[None]:
        f = open(self.path, "a+", encoding="utf-8", opener=_private)  # noqa: SIM115 - held for the pass
        try:
            if not _try_lock(f):
                who = self.holder() or "another process"
                raise IndexLocked(
                    f"the index in {self.path.parent} is being updated by another kbseek process ({who}); "
                    "it indexes the same files, so wait for it to finish, or stop it and run this again"
                )
            try:
                f.seek(0)
                f.truncate()
                f.write(f"pid {os.getpid()}, {_command()}\n")
                f.flush()
                yield
            finally:
                f.seek(0)
                f.truncate()
                f.flush()
                _unlock(f)
        finally:
            f.close()


def _private(path: str, flags: int) -> int:
    """``open``'s opener: a file it creates gets :data:`LOCK_FILE_MODE` (the umask can only narrow it)."""
    return os.open(path, flags, LOCK_FILE_MODE)


def _command() -> str:
    args = [Path(sys.argv[0]).name, *sys.argv[1:2]] if sys.argv and sys.argv[0] else ["python"]
    return " ".join(args)
