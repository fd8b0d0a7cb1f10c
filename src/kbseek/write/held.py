"""A note held open while a write decides about it: its hash, who it is, and whether anyone writes it.

A write compares the note's bytes with the hash the caller sent, and the comparison must still be
true when the note is replaced. So the note is opened once, without following a link, and held:
under a read lease where the system gives one (:mod:`kbseek.write.syscalls`), which makes any
other process's open of it for writing wait and shows that it waits; and under a shared ``flock``,
which tells the sweep of leftovers that a live writer still needs this file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from dataclasses import dataclass

from kbseek.errors import NoteConflict, NoteNotFound, WriteNotAllowed
from kbseek.write import syscalls
from kbseek.write.guard import check_note_entry
from kbseek.write.hashes import HASH_CHARS

_READ_STEP = 1 << 20
_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)
BUSY_WAIT = 2.0
"""Seconds a write waits for another program that has the note open for writing to close it."""


def digest_fd(fd: int) -> str:
    """:func:`note_hash` of everything ``fd``'s file holds now, read from its start."""
    h = hashlib.sha256()
    offset = 0
    while piece := os.pread(fd, _READ_STEP, offset):
        h.update(piece)
        offset += len(piece)
    return h.hexdigest()[:HASH_CHARS]


def read_fd(fd: int) -> bytes:
    pieces: list[bytes] = []
    offset = 0
    while piece := os.pread(fd, _READ_STEP, offset):
        pieces.append(piece)
        offset += len(piece)
    return b"".join(pieces)


def identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


@dataclass
class Held:
    """A file opened read-only without following a link, locked shared, leased when possible."""

    fd: int
    st: os.stat_result
    leased: bool

    @property
    def identity(self) -> tuple[int, int]:
        return identity(self.st)

    def digest(self) -> str:
        return digest_fd(self.fd)

    def busy(self) -> bool:
        """Whether another process waits to write this file, or has it open for writing. Always
        ``False`` without a lease: then only :meth:`digest` can tell a change, after the fact."""
        return self.leased and syscalls.lease_broken(self.fd)

    def is_at(self, dir_fd: int, name: str) -> bool:
        """Whether ``name`` in ``dir_fd`` still names this very file (not a file saved over it)."""
        try:
            return identity(os.stat(name, dir_fd=dir_fd, follow_symlinks=False)) == self.identity
        except OSError:
            return False

    def close(self) -> None:
        if self.leased:
            syscalls.release_lease(self.fd)
        os.close(self.fd)


def hold(dir_fd: int, name: str, rel: str, *, wait: float | None = None) -> Held:
    """Open the note ``name`` in ``dir_fd`` and hold it (lease, lock); it must be a regular file
    with one link. If another program has it open for writing, wait up to ``wait`` seconds
    (:data:`BUSY_WAIT` unless given) for it
    to finish, then refuse with a conflict: its save is not over, so no hash can be compared yet.
    """
    deadline = time.monotonic() + (BUSY_WAIT if wait is None else wait)
    pause = 0.001
    while True:
        fd = open_note(dir_fd, name, rel)
        try:
            lease = syscalls.take_read_lease(fd)
            if lease is not syscalls.Lease.BUSY:
                syscalls.hold_shared(fd)
                return Held(fd, os.fstat(fd), lease is syscalls.Lease.HELD)
            if time.monotonic() >= deadline:
                raise NoteConflict(
                    f"{rel!r} is being saved by another program right now; read it again in a moment and retry",
                    rel,
                    current_hash=digest_fd(fd),
                )
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def refuse_read_only(held: Held, rel: str) -> None:
    """Refuse to change or remove a note its owner made read-only: the permission says "keep as is",
    even though replacing a file needs only the folder's permission, and root may write anything."""
    if not held.st.st_mode & stat.S_IWUSR:
        raise WriteNotAllowed(
            f"{rel!r} is read-only (its permissions say so), so kbseek leaves it as it is; write a new note, or "
            "ask its owner to make it writable",
            rel,
        )


def open_note(dir_fd: int, name: str, rel: str) -> int:
    """A read-only descriptor on the note, opened without following a link and checked on the
    descriptor: a regular file with one link."""
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise NoteNotFound(
            f"there is no note at {rel!r}; check the path (search returns valid paths)", rel
        ) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise WriteNotAllowed(
                f"{rel!r} is a symlink, and writes never follow links; write to the file it points to by its own path",
                rel,
            ) from None
        raise
    try:
        st = os.fstat(fd)
        check_note_entry(st, rel, rel)
    except BaseException:
        os.close(fd)
        raise
    return fd


def current_hash(dir_fd: int, name: str) -> str | None:
    """The hash of the regular file at ``name`` now, or ``None`` if there is none (or not a plain file)."""
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return digest_fd(fd)
    finally:
        os.close(fd)
