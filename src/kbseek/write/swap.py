"""Putting a person's note back at its path when a swap displaced a note that had changed.

``replace_if_unchanged`` swaps its new file with the note (``RENAME_EXCHANGE``) and then looks at
what it displaced. When that is not the note the caller read (someone saved meanwhile), the
displaced file goes back with a second swap. But a save can land between the two swaps too: an
editor's rename puts a newer file at the path, or an editor that saves in place writes into the
writer's file while it stands there. :func:`put_back` therefore looks at what each swap takes out
and swaps again until the path holds the newest of the person's files, then keeps or drops what
is left under the temporary name: dropped only when it is the writer's own untouched file, or the
very note the caller read; any other bytes are a person's, kept as a conflict copy beside the note.

A dropped file may still be written: a program whose ``open`` looked the path up while that file
stood there can reach the lease only after the drop. The lease is held until after the drop, so
such an open is seen (:func:`rescue_after_drop`): the program is let through, its save is awaited
and kept as a conflict copy, instead of going into a file nobody can reach.
"""

from __future__ import annotations

import os
import time

from kbseek.write import held, steps, syscalls
from kbseek.write.hashes import note_hash
from kbseek.write.held import Held, identity, read_fd
from kbseek.write.temps import Placed, digest_at, drop, keep_as_copy, place, temp_name

ROUNDS = 8
"""Swaps before giving up on a path that keeps being saved over: what is left is kept as a copy."""


def put_back(
    dir_fd: int,
    note: str,
    temp: str,
    at_temp: tuple[int, int],
    placed: Placed,
    displaced: Held,
    new_hash: str,
    expected: str,
) -> None:
    """After ``exchange(temp, note)``: ``temp`` holds the file ``at_temp``, which must go back to
    ``note``, and ``note`` holds ``placed`` (the writer's new file) or a save that replaced it since.
    ``displaced`` is the note the write compared (held), whether or not it is ``at_temp``."""
    take_out = placed.held.identity
    locks: list[int] = []
    try:
        for _ in range(ROUNDS):
            syscalls.exchange(dir_fd, temp, note)
            steps.reached("swapped-back")
            came = identity(os.stat(temp, dir_fd=dir_fd, follow_symlinks=False))
            if came == take_out and not _written_in_place(came, placed, new_hash):
                _dispose(dir_fd, temp, came, placed, displaced, new_hash, expected, note)
                return
            if came not in (placed.held.identity, displaced.identity):
                locks.extend(_lock(dir_fd, temp, came))  # a person's newer file, parked here for a moment
            # What came out is newer than what went in: a save over the path, or one into the
            # writer's own file while it stood there. It belongs at the path: swap again.
            take_out, at_temp = at_temp, came
        keep_as_copy(dir_fd, temp, note)
    finally:
        for fd in locks:
            os.close(fd)


def _written_in_place(came: tuple[int, int], placed: Placed, new_hash: str) -> bool:
    """Whether the writer's own file, just taken out of the path, holds (or is about to hold) a
    person's save: its bytes changed, or a program waits to write it."""
    return came == placed.held.identity and (placed.held.busy() or placed.held.digest() != new_hash)


def _dispose(
    dir_fd: int,
    temp: str,
    came: tuple[int, int],
    placed: Placed,
    displaced: Held,
    new_hash: str,
    expected: str,
    note: str,
) -> None:
    """Drop what the last swap took out if it is the writer's own file, untouched, or the very note
    the write was based on, untouched; keep anything else as a conflict copy."""
    if came == placed.held.identity:
        watched: Held | None = placed.held
        droppable = not placed.held.busy() and placed.held.digest() == new_hash
    elif came == displaced.identity:
        watched = displaced
        droppable = not displaced.busy() and displaced.digest() == expected
    else:
        watched = None
        droppable = digest_at(dir_fd, temp) in (new_hash, expected)
    if droppable:
        drop(dir_fd, temp, came)
        if watched is not None:
            rescue_after_drop(dir_fd, watched, note, new_hash if watched is placed.held else expected)
    else:
        keep_as_copy(dir_fd, temp, note)
    syscalls.fsync_folder(dir_fd)


def rescue_after_drop(dir_fd: int, dropped: Held, note: str, known: str) -> str | None:
    """After dropping a held file: if a program is waiting to write it (its ``open`` began while the
    file still stood at the note's path), let it write, wait until it closes the file, and keep
    what it wrote beside the note as a conflict copy. Returns the copy's name, or ``None`` when no
    program was waiting or it wrote the bytes already ``known`` (hash)."""
    if not dropped.busy():
        return None
    syscalls.release_lease(dropped.fd)
    dropped.leased = False
    deadline = time.monotonic() + held.BUSY_WAIT
    while syscalls.take_read_lease(dropped.fd) is syscalls.Lease.BUSY and time.monotonic() < deadline:
        time.sleep(0.002)
    syscalls.release_lease(dropped.fd)
    data = read_fd(dropped.fd)
    if note_hash(data) == known:
        return None
    saved = place(
        dir_fd, data, temp_name("swap", note, None, None), like=dropped.st, note=note, expected=None
    )
    saved.held.close()
    return keep_as_copy(dir_fd, saved.name, note)


def _lock(dir_fd: int, name: str, expect: tuple[int, int]) -> list[int]:
    """A shared lock on the file at ``name`` if it is still ``expect``, so no sweep takes it meanwhile."""
    try:
        fd = os.open(
            name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd
        )
    except OSError:
        return []
    syscalls.hold_shared(fd)
    if identity(os.fstat(fd)) != expect:
        os.close(fd)
        return []
    return [fd]
