"""Writes that never lose a save made meanwhile and never leave a partial note.

Every function takes bytes and writes them as they are (encoding and line endings are the
caller's), reaches the note's folder through the write guard (:class:`~kbseek.write.guard.WriteTarget`),
sweeps the leftovers of a killed writer in that folder first, and syncs the file and the folder.

**Create** (:func:`create_exclusive`). The bytes go to a file with no name (``O_TMPFILE``), are
synced, and get the note's name with ``linkat``, which never replaces: the note appears complete or
not at all, and a file that appeared meanwhile is refused (:class:`~kbseek.errors.NoteExists` with
its hash). Without ``O_TMPFILE``: a hidden temporary name, ``link`` (as exclusive), ``unlink``.

**Replace** (:func:`replace_if_unchanged`), a compare-and-swap in which the compare holds until
the swap:

1. The note is opened without following a link and *held* (:mod:`kbseek.write.held`): a read lease
   makes any other process's open of it for writing wait, and shows that it waits. Its bytes are
   compared with the caller's hash; a difference is a :class:`~kbseek.errors.NoteConflict`, and
   nothing was written.
2. The new bytes are written and synced under a hidden temporary name in the same folder, with the
   note's permissions (and owner, where this process may give it).
3. If a program waits to write the note, or the path no longer names the held file (an editor
   saved by rename), the temporary file is dropped and the write starts again from 1.
4. ``renameat2(RENAME_EXCHANGE)`` swaps the two names atomically: the path names the new note,
   the temporary name the old one, which is still there to look at.
5. What was displaced is checked: it must be the held file, with the caller's bytes, and no
   program may be waiting to write it, now and again after a short grace (:data:`GRACE`) that lets
   an open already under way reach the lease. Then it is removed, the lease still held; otherwise
   it goes back (:func:`kbseek.write.swap.put_back`, which also keeps a save that lands between
   the two swaps), and the caller gets a conflict.
6. If a program's open reaches the lease only now, after the removal (it looked the path up before
   the swap), it is let through, its save is awaited, and kept beside the note as a conflict copy
   (:func:`kbseek.write.swap.rescue_after_drop`); the caller gets a conflict that says so.

Why a swap and not a rename after a re-check: a rename destroys what it replaces, so a save that
lands between the last check and the rename is gone with no trace; a swap keeps it, and the check
is made on what was actually displaced. Why the lease: an editor that saves in place (``open``
with truncate, write, close, as VS Code and vim do) writes into whatever file the path named when
it opened it; without the lease that open can happen just before the swap and the write just
after, into the file the swap displaced and the write then removes. The race tests
(``tests/unit/test_write_races.py``) measure both: with the lease no save was lost, without it an
in-place saver lost some.

**The limits**, said plainly. (a) An in-place save whose ``open`` looked the path up before the
swap but reaches the lease only after the lease is released (a process stalled inside that one
system call for the whole grace, check and removal) writes into the removed file: that save is
lost. The kernel gives no way to wait for an ``open`` already past its path lookup; the tests,
without any grace, have not met one. (b) Without a lease (a note this user does not own, a file
system without leases, macOS), only the re-read in step 5 sees an in-place save, so one landing
after it is lost. (c) Without ``renameat2`` (macOS, Linux before 3.15, a file system that refuses
it) step 4 is a plain rename after a last check, and an editor's rename-save landing between the
two is lost. (d) A write that meets a save at the swap itself (an editor's rename in the
microseconds between the last look and the swap) stands at the path until it is swapped back: a
program that opens the note in that instant reads the agent's text, which the caller is then told
was refused. (e) A program that keeps the note open for writing (not a save: an open file) makes
writes wait and then refuse with a conflict. In-place saving is itself not atomic: without kbseek,
two programs saving in place at once can also leave a mix of both.

**Move** (:func:`move_if_unchanged`): ``renameat2(RENAME_NOREPLACE)`` (else ``link`` + ``unlink``),
compared before and checked after like a replace, and moved back if the note changed.

Removing to the trash and restoring from it are in :mod:`kbseek.write.trash`, the sweep of a killed
writer's leftovers in :mod:`kbseek.write.leftovers`; both are re-exported here, with
:func:`note_hash`, so this module is the one place writes are called from.
"""

from __future__ import annotations

import errno
import os
import time

from kbseek.errors import NoteConflict, NoteExists, WriteNotAllowed
from kbseek.write import steps, syscalls
from kbseek.write.guard import WriteTarget
from kbseek.write.hashes import note_hash
from kbseek.write.held import Held, current_hash, hold, identity, read_fd, refuse_read_only
from kbseek.write.leftovers import Leftover, sweep_folder, sweep_leftovers
from kbseek.write.swap import put_back, rescue_after_drop
from kbseek.write.temps import Placed, drop, keep_as_copy, place, temp_name
from kbseek.write.trash import TrashEntry, list_trash, remove_to_trash, restore_from_trash

__all__ = [
    "GRACE",
    "Leftover",
    "TrashEntry",
    "create_exclusive",
    "list_trash",
    "move_if_unchanged",
    "note_hash",
    "remove_to_trash",
    "replace_if_unchanged",
    "restore_from_trash",
    "sweep_leftovers",
]

GRACE = 0.002
"""Seconds the displaced note is still watched after the swap, for an in-place save whose ``open``
began before the swap to reach the lease and be seen (limit (a) above)."""
ATTEMPTS = 5
"""Times a replace starts again because the note was being saved as it was about to be swapped."""


def create_exclusive(target: WriteTarget, data: bytes) -> str:
    """Create the note with ``data`` and return its hash; :class:`~kbseek.errors.NoteExists` (with
    the hash of what is there) if any file is at the path. Missing folders inside a writable folder
    are created."""
    folder = target.open_parent(create=True)
    try:
        sweep_folder(folder)
        try:
            placed = place(folder, data, target.name, note=target.name, expected=None)
        except FileExistsError:
            raise _exists(target, folder) from None
        placed.held.close()
        syscalls.fsync_folder(folder)
        steps.reached("done")
        return note_hash(data)
    finally:
        os.close(folder)


def replace_if_unchanged(target: WriteTarget, expected_hash: str, data: bytes) -> str:
    """Replace the note with ``data`` if its bytes still hash to ``expected_hash`` at the moment of
    replacing, and return the new hash; else :class:`~kbseek.errors.NoteConflict` with the hash it
    has now, nothing written (a person's save is never overwritten, see the module's docstring)."""
    new_hash = note_hash(data)
    folder = target.open_parent(create=False)
    try:
        sweep_folder(folder)
        for _ in range(ATTEMPTS):
            held = hold(folder, target.name, target.rel)
            try:
                if (done := _replace_held(folder, target, held, expected_hash, data, new_hash)) is not None:
                    return done
            finally:
                held.close()
        raise NoteConflict(
            f"{target.rel!r} kept being saved by another program while it was written; read it again and retry",
            target.rel,
            current_hash=current_hash(folder, target.name),
        )
    finally:
        os.close(folder)


def _replace_held(
    folder: int, target: WriteTarget, held: Held, expected: str, data: bytes, new_hash: str
) -> str | None:
    """One compare-and-swap on the held note: the new hash, or ``None`` to start again."""
    refuse_read_only(held, target.rel)
    current = held.digest()
    if current != expected:
        raise _conflict(target, current)
    steps.reached("compared")
    placed = place(
        folder,
        data,
        temp_name("swap", target.name, expected, new_hash),
        like=held.st,
        note=target.name,
        expected=expected,
    )
    try:
        placed.held.leased = syscalls.take_read_lease(placed.held.fd) is syscalls.Lease.HELD
        if held.busy() or not held.is_at(folder, target.name):
            drop(folder, placed.name, placed.held.identity)  # a save is under way: let it finish, look again
            return None
        steps.reached("ready")
        try:
            syscalls.exchange(folder, placed.name, target.name)
        except syscalls.Unsupported:
            return _replace_by_rename(folder, target, held, placed, expected, new_hash)
        steps.reached("exchanged")
        displaced = identity(os.stat(placed.name, dir_fd=folder, follow_symlinks=False))
        if displaced == held.identity and held.digest() == expected and not held.busy():
            time.sleep(GRACE)
            if not held.busy():
                steps.reached("checked")
                drop(folder, placed.name, held.identity)
                copy = rescue_after_drop(folder, held, target.name, expected)
                syscalls.fsync_folder(folder)
                steps.reached("done")
                if copy is not None:
                    raise _saved_meanwhile(target, copy, new_hash)
                return new_hash
        put_back(folder, target.name, placed.name, displaced, placed, held, new_hash, expected)
        raise _conflict(target, current_hash(folder, target.name))
    finally:
        placed.held.close()


def _still_the_compared_note(folder: int, temp: str, held: Held, expected: str) -> bool:
    """Whether ``temp`` names the very file that was compared, with the bytes compared, and no
    program waits to write it."""
    return held.is_at(folder, temp) and held.digest() == expected and not held.busy()


def _replace_by_rename(
    folder: int, target: WriteTarget, held: Held, placed: Placed, expected: str, new_hash: str
) -> str:
    """Where no swap exists: a last check, then a rename over the note. What the rename displaced
    is checked after (it is still held open); if it changed, its bytes are kept as a conflict copy
    beside the note: the caller's write stands, and the other save is not lost but set beside it."""
    if held.digest() != expected or not held.is_at(folder, target.name):
        drop(folder, placed.name, placed.held.identity)
        raise _conflict(target, current_hash(folder, target.name))
    os.rename(placed.name, target.name, src_dir_fd=folder, dst_dir_fd=folder)
    steps.reached("exchanged")
    time.sleep(GRACE)
    if held.digest() != expected or held.busy():
        rescue = place(
            folder,
            read_fd(held.fd),
            temp_name("swap", target.name, None, None),
            like=held.st,
            note=target.name,
            expected=None,
        )
        rescue.held.close()
        raise _saved_meanwhile(target, keep_as_copy(folder, rescue.name, target.name), new_hash)
    syscalls.fsync_folder(folder)
    steps.reached("done")
    return new_hash


def move_if_unchanged(source: WriteTarget, expected_hash: str, destination: WriteTarget) -> str:
    """Move the note to ``destination`` if its bytes still hash to ``expected_hash``, never over a
    file there (:class:`~kbseek.errors.NoteExists`), and return its hash. If the note changed as it
    moved, it is moved back and the caller gets a conflict; if its old path was taken meanwhile, it
    stays at the destination and the conflict says so. The file keeps its identity (it is renamed)."""
    if source.rel == destination.rel:
        raise WriteNotAllowed(
            f"the note is already at {source.rel!r}; give another path to move it to", destination.rel
        )
    src = source.open_parent(create=False)
    try:
        dst = destination.open_parent(create=True)
        try:
            sweep_folder(src)
            sweep_folder(dst)
            held = hold(src, source.name, source.rel)
            try:
                return _move_held(src, source, dst, destination, held, expected_hash)
            finally:
                held.close()
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _move_held(
    src: int, source: WriteTarget, dst: int, destination: WriteTarget, held: Held, expected: str
) -> str:
    current = held.digest()
    if current != expected:
        raise _conflict(source, current)
    steps.reached("compared")
    try:
        syscalls.rename_noreplace(src, source.name, dst, destination.name)
    except FileExistsError:
        raise _exists(destination, dst) from None
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            raise WriteNotAllowed(
                f"{destination.rel!r} is on another file system than {source.rel!r}; move the note within one",
                destination.rel,
            ) from None
        raise
    steps.reached("moved")
    if _still_the_compared_note(dst, destination.name, held, expected):
        time.sleep(GRACE)
        if not held.busy():
            syscalls.fsync_folder(dst)
            syscalls.fsync_folder(src)
            steps.reached("done")
            return expected
    try:
        syscalls.rename_noreplace(dst, destination.name, src, source.name)
    except FileExistsError:
        raise NoteConflict(
            f"{source.rel!r} changed while it was moved, and a new note took its place meanwhile; the moved note "
            f"stays at {destination.rel!r}: read both and decide",
            source.rel,
            current_hash=current_hash(dst, destination.name),
        ) from None
    syscalls.fsync_folder(dst)
    syscalls.fsync_folder(src)
    raise _conflict(source, current_hash(src, source.name))


def _saved_meanwhile(target: WriteTarget, copy: str, new_hash: str) -> NoteConflict:
    """A save that landed in the very instant of the replace, too late to stop it: both are kept."""
    return NoteConflict(
        f"{target.rel!r} was saved by another program at the moment this write replaced it; this write is in "
        f"the note and the other save is kept beside it as {copy!r}: merge the two and write again",
        target.rel,
        current_hash=new_hash,
    )


def _conflict(target: WriteTarget, current: str | None) -> NoteConflict:
    if current is None:
        return NoteConflict(
            f"{target.rel!r} was removed since it was read; read the folder again and decide", target.rel
        )
    return NoteConflict(
        f"{target.rel!r} changed since it was read (its hash is now {current}); read it again and apply the change to "
        "what it holds now",
        target.rel,
        current_hash=current,
    )


def _exists(target: WriteTarget, folder: int) -> NoteExists:
    current = current_hash(folder, target.name)
    if current is None:
        return NoteExists(
            f"{target.rel!r} is taken by something that is not a note (a link or a folder); choose another path",
            target.rel,
        )
    return NoteExists(
        f"a note already exists at {target.rel!r} (hash {current}); read it and replace it with its hash, or "
        "choose another path",
        target.rel,
        current_hash=current,
    )
