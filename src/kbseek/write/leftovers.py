"""The leftovers of a writer that was killed (``kill -9``, a power cut), found and settled.

A write leaves nothing behind when it ends, even by an exception; only a process that dies inside
one can leave a temporary file (:mod:`kbseek.write.temps`). Its name says what it can be, and the
sweep settles each by what it holds:

- ``write``: bytes being written, never anyone's but the writer's: removed.
- ``swap``: the writer's complete new note (its hash is the name's ``new``), or the note a swap
  displaced. Removed when it holds the writer's bytes or the bytes the write was based on (the swap
  was legitimate; the note already holds the new text). Any other bytes are a person's save that
  the swap displaced and the writer died before putting back: it goes back to the note's path if
  that holds the writer's text (swapped again), or to the path if it is free; otherwise it is kept
  as a conflict copy beside the note.
- ``trash``: a note on its way to a trash on another file system, copied there completely before it
  was moved aside: removed when its bytes are those compared, else put back like a person's save.

A file still in use by a live writer is never touched: every writer holds a shared ``flock`` on
each file it may leave under a temporary name, and the sweep settles only a file it can lock
exclusively. A file younger than ``settle`` seconds is left for the next sweep as well, which keeps
a sweep off a file a live writer has just swapped in and not yet locked.

kbseek sweeps the folders writes may touch when a knowledge base that lets agents write opens, and
each write sweeps its own folder first.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from kbseek.write import syscalls
from kbseek.write.held import digest_fd, identity
from kbseek.write.temps import TempName, digest_at, drop, is_temp, keep_as_copy, name_key, parse_temp

SETTLE = 2.0
"""Seconds a leftover must have been left alone before a sweep settles it."""

_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)


@dataclass(frozen=True)
class Leftover:
    """One leftover settled: where it was, and what became of it."""

    path: Path
    outcome: str
    """``removed``, ``restored`` (a person's bytes put back at the note's path) or ``kept as <name>``
    (a conflict copy beside the note)."""


def sweep_leftovers(folder_or_root: Path, *, settle: float = SETTLE) -> list[Leftover]:
    """Settle every leftover under ``folder_or_root``; links are not followed and hidden folders
    (where no write goes) are not entered."""
    settled: list[Leftover] = []
    for folder, folders, files, dir_fd in os.fwalk(folder_or_root, follow_symlinks=False):
        folders[:] = [name for name in folders if not name.startswith(".")]
        if any(is_temp(name) for name in files):
            settled.extend(sweep_folder(dir_fd, settle=settle, where=Path(folder)))
    return settled


def sweep_folder(dir_fd: int, *, settle: float = SETTLE, where: Path | None = None) -> list[Leftover]:
    """Settle the leftovers in one folder (the one a write is about to write in)."""
    names = os.listdir(dir_fd)
    settled: list[Leftover] = []
    for name in names:
        if is_temp(name) and (outcome := _settle(dir_fd, name, names, settle)) is not None:
            settled.append(Leftover((where or Path()) / name, outcome))
    return settled


def _settle(dir_fd: int, name: str, names: list[str], settle: float) -> str | None:
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None  # gone meanwhile, or not a file kbseek made (a link): not ours to touch
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or time.time() - st.st_ctime < settle:
            return None
        if not syscalls.try_exclusive(fd):
            return None  # a live writer holds it
        with contextlib.suppress(OSError):
            if identity(os.stat(name, dir_fd=dir_fd, follow_symlinks=False)) != identity(st):
                return None
        parsed = parse_temp(name)
        if parsed is None:
            return None  # named like ours, but not a name a writer makes: a person's file
        if parsed.stage == "write":
            drop(dir_fd, name, identity(st))
            return "removed"
        held = digest_fd(fd)
        if held in (parsed.expected, parsed.new):
            drop(dir_fd, name, identity(st))
            return "removed"
        return _return_to_note(dir_fd, name, parsed, names)
    finally:
        os.close(fd)


def _return_to_note(dir_fd: int, name: str, parsed: TempName, names: list[str]) -> str:
    """A person's bytes left under a temporary name: back to the note's path, or kept beside it."""
    note = parsed.note
    if not parsed.whole:
        note = next((n for n in names if not is_temp(n) and name_key(n) == parsed.key), parsed.note or "note")
    at_note = digest_at(dir_fd, note)
    if at_note is None:
        try:
            syscalls.rename_noreplace(dir_fd, name, dir_fd, note)
        except FileExistsError:
            pass  # something that is not a plain file took the name: keep a copy below
        else:
            syscalls.fsync_folder(dir_fd)
            return "restored"
    elif parsed.new is not None and at_note == parsed.new:
        # The note holds the writer's text, which should never have displaced this: swap them back.
        try:
            syscalls.exchange(dir_fd, name, note)
        except syscalls.Unsupported:
            pass
        else:
            if digest_at(dir_fd, name) == parsed.new:
                drop(dir_fd, name)
                syscalls.fsync_folder(dir_fd)
                return "restored"
            # a save landed between the look and the swap: both are a person's, keep this one too
    return f"kept as {keep_as_copy(dir_fd, name, note)}"
