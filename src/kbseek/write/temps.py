"""The files a write makes beside a note before it is one: their names, how they are made, and the
conflict copies that keep a person's bytes when they cannot stay at the note's path.

A temporary file lives in the note's own folder (a rename never crosses a file system) under a
hidden name, so the indexer never reads it::

    .kbseek-<stage>-<random>-<expected>-<new>-<key>-<note's name>.tmp

``stage`` is ``write`` (bytes being written: never anything but the writer's own), ``swap`` (the
complete new note, or, after the swap, the note it displaced) or ``trash`` (a note on its way to a
trash on another file system, already copied there). ``expected`` and ``new`` are the hashes the
write was based on and would write (``none`` when there is none); ``key`` is a hash of the note's
file name, which follows, cut to fit 255 bytes when it is long (the key still finds the note then).
With those, :mod:`kbseek.write.leftovers` decides alone, after a crash, whether a leftover is
disposable or a person's bytes to put back, and where.

The name is hidden, but that is not what keeps the indexer off it (the scan skips hidden folders,
not hidden files): the ``.tmp`` extension is, which no parser opens.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import PurePosixPath

from kbseek.write import steps, syscalls
from kbseek.write.guard import MAX_NAME_BYTES
from kbseek.write.hashes import HASH_CHARS
from kbseek.write.held import Held, digest_fd, identity

PREFIX = ".kbseek-"
SUFFIX = ".tmp"
NONE = "none"
_NAME = re.compile(
    r"^\.kbseek-(?P<stage>write|swap|trash)-(?P<token>[0-9a-f]{8})-(?P<expected>[0-9a-f]{16}|none)"
    r"-(?P<new>[0-9a-f]{16}|none)-(?P<key>[0-9a-f]{16})-(?P<note>.*)\.tmp$",
    re.DOTALL,
)
_NEW_FILE_MODE = 0o666
"""A created note gets what ``open`` would give it (the umask narrows it), like a file the person made."""


@dataclass(frozen=True)
class TempName:
    stage: str
    expected: str | None
    new: str | None
    key: str
    note: str
    """The note's name, or its start when the name was too long to carry whole (then ``key`` finds it)."""

    @property
    def whole(self) -> bool:
        return name_key(self.note) == self.key


def name_key(name: str) -> str:
    return hashlib.sha256(os.fsencode(name)).hexdigest()[:HASH_CHARS]


def temp_name(stage: str, note: str, expected: str | None, new: str | None) -> str:
    head = f"{PREFIX}{stage}-{secrets.token_hex(4)}-{expected or NONE}-{new or NONE}-{name_key(note)}-"
    room = MAX_NAME_BYTES - len(head) - len(SUFFIX)
    return head + os.fsencode(note)[:room].decode("utf-8", "ignore") + SUFFIX


def parse_temp(name: str) -> TempName | None:
    """The parts of a name :func:`temp_name` made, or ``None`` for any other name."""
    m = _NAME.match(name)
    if m is None:
        return None
    expected, new = m["expected"], m["new"]
    return TempName(
        m["stage"], None if expected == NONE else expected, None if new == NONE else new, m["key"], m["note"]
    )


def is_temp(name: str) -> bool:
    return name.startswith(PREFIX) and name.endswith(SUFFIX)


@dataclass
class Placed:
    """A new file the writer made, complete and synced, under ``name``; ``held`` keeps it open
    read-only and locked (and leased, once the writer asks), so it can be told apart and watched."""

    name: str
    held: Held


def place(
    dir_fd: int,
    data: bytes,
    name: str,
    *,
    like: os.stat_result | None = None,
    note: str,
    expected: str | None,
) -> Placed:
    """Write ``data`` to a new file in ``dir_fd`` that appears under ``name`` only complete and
    synced; ``FileExistsError`` if ``name`` is taken (so with the note's own name this is the
    exclusive create). ``like`` is the note being replaced: its permissions, and its owner where
    this process may give it, are copied; without it the file is made as ``open`` would make it.

    With ``O_TMPFILE`` the bytes are written to a file with no name, which a crash simply drops;
    without it, under a ``write``-stage temporary name the sweep always removes.
    """
    fd = syscalls.open_tmpfile(dir_fd, 0o600 if like is not None else _NEW_FILE_MODE)
    if fd is not None:
        try:
            _fill(fd, data, like)
            ro = syscalls.reopen_readonly(fd)
            try:
                syscalls.hold_shared(ro)
                syscalls.link_tmpfile(fd, dir_fd, name)
            except BaseException:
                os.close(ro)
                raise
        finally:
            os.close(fd)
        steps.reached("linked")
        return Placed(name, Held(ro, os.fstat(ro), False))
    return _place_named(dir_fd, data, name, like, note, expected)


def _place_named(
    dir_fd: int, data: bytes, name: str, like: os.stat_result | None, note: str, expected: str | None
) -> Placed:
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(5):
        staging = temp_name("write", note, expected, None)
        fd = os.open(staging, flags, 0o600 if like is not None else _NEW_FILE_MODE, dir_fd=dir_fd)
        try:
            syscalls.hold_shared(fd)
            if os.fstat(fd).st_nlink == 1:  # not swept away between the create and the lock
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    else:
        raise OSError(errno.EAGAIN, "a temporary file kept vanishing", staging)
    try:
        _fill(fd, data, like)
        ro = os.open(
            staging, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd
        )
        syscalls.hold_shared(ro)
        try:
            if name.startswith(PREFIX):
                os.rename(staging, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            else:  # the note's own name: exclusive, never over a file that is there
                os.link(staging, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                os.unlink(staging, dir_fd=dir_fd)
        except BaseException:
            os.close(ro)
            raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging, dir_fd=dir_fd)
        raise
    finally:
        os.close(fd)
    steps.reached("linked")
    return Placed(name, Held(ro, os.fstat(ro), False))


def _fill(fd: int, data: bytes, like: os.stat_result | None) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    steps.reached("written")
    if like is not None:
        os.fchmod(fd, like.st_mode & 0o7777)
        if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):  # only root may give a file away; a group we are in is fine
                os.fchown(fd, like.st_uid, like.st_gid)
    os.fsync(fd)
    steps.reached("synced")


def drop(dir_fd: int, name: str, expect: tuple[int, int] | None = None) -> None:
    """Remove ``name`` (if it still names ``expect``, when given); gone already is fine."""
    with contextlib.suppress(FileNotFoundError):
        if expect is not None and identity(os.stat(name, dir_fd=dir_fd, follow_symlinks=False)) != expect:
            return
        os.unlink(name, dir_fd=dir_fd)


def keep_as_copy(dir_fd: int, name: str, note: str) -> str:
    """Give the file at ``name`` a visible name beside the note, ``<stem> (conflict <time>)<ext>``, so a
    person's bytes that cannot stay at the note's path are kept where they will see them (and the
    index will find them). Returns the new name."""
    pure = PurePosixPath(note)
    stamp = time.strftime("%Y-%m-%d %H-%M-%S")
    stem = pure.stem
    for n in range(100):
        tail = f" (conflict {stamp}{'' if n == 0 else f' {n}'}){pure.suffix}"
        room = MAX_NAME_BYTES - len(tail.encode())
        cut = stem.encode()[:room].decode("utf-8", "ignore").rstrip(" .")
        copy = cut + tail
        try:
            syscalls.rename_noreplace(dir_fd, name, dir_fd, copy)
        except FileExistsError:
            continue
        syscalls.fsync_folder(dir_fd)
        return copy
    raise FileExistsError(errno.EEXIST, "no free name for a conflict copy", note)


def digest_at(dir_fd: int, name: str) -> str | None:
    """The hash of the file at ``name`` (not following a link), or ``None`` if it cannot be read."""
    try:
        fd = os.open(
            name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd
        )
    except OSError:
        return None
    try:
        return digest_fd(fd)
    finally:
        os.close(fd)
