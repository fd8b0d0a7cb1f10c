"""Deleting a note as a move into a trash outside the indexed tree, and bringing it back.

A delete is the one write that cannot be undone by writing again, so kbseek never deletes: the note
moves to a trash folder kbseek gives (in the user's state directory, outside the knowledge base, so
the trash is never indexed and never written by an agent), under a name that keeps where it was and when::

    <trash>/<UTC time>-<random>/<the note's root-relative path>

The time and the random part make every removal its own entry (the same note removed twice is two
entries); the path inside is the note's own, so an entry says where it goes back without any other
record, and no name grows past what one folder name may hold.

Within one file system the note is renamed into the trash (``RENAME_NOREPLACE``): one step, the
same file, its permissions kept. Across file systems it is first copied into the trash (complete
and synced under a hidden name, then named), then moved aside in its folder under a ``trash``-stage
temporary name, checked, and removed; a crash in between leaves that temporary name for the sweep,
which removes it (the copy is in the trash) or, if the bytes changed meanwhile, puts them back.

Like a replace, the note must still hash to what the caller read, at the moment it moves: if it
changed, it is moved back and the caller gets a conflict.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kbseek.errors import KbBug, NoteConflict, NoteExists, NoteNotFound
from kbseek.write import steps, syscalls
from kbseek.write.guard import WriteTarget
from kbseek.write.hashes import note_hash
from kbseek.write.held import Held, current_hash, hold, read_fd, refuse_read_only
from kbseek.write.leftovers import sweep_folder
from kbseek.write.swap import rescue_after_drop
from kbseek.write.temps import drop, keep_as_copy, place, temp_name

GRACE = 0.002
_ENTRY = re.compile(r"^(?P<stamp>\d{8}T\d{6}\.\d{6}Z)-[0-9a-f]{8}$")
_DIR_FLAGS = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


@dataclass(frozen=True)
class TrashEntry:
    """A note in the trash: the file, where it came from, and when it was removed."""

    path: Path
    rel: str
    removed_at: datetime


def remove_to_trash(target: WriteTarget, expected_hash: str, trash_dir: Path) -> Path:
    """Move the note into ``trash_dir`` if its bytes still hash to ``expected_hash``; return where it
    is now. :class:`~kbseek.errors.NoteConflict` (nothing moved) if it changed."""
    _check_outside(trash_dir, target)
    folder = target.open_parent(create=False)
    try:
        sweep_folder(folder)
        held = hold(folder, target.name, target.rel)
        try:
            refuse_read_only(held, target.rel)
            current = held.digest()
            if current != expected_hash:
                raise _conflict(target, current)
            steps.reached("compared")
            entry_dir = _entry_folder(trash_dir, target.rel)
            try:
                return _into_trash(folder, target, held, expected_hash, entry_dir)
            finally:
                os.close(entry_dir[0])
        finally:
            held.close()
    finally:
        os.close(folder)


def restore_from_trash(entry: Path, target: WriteTarget) -> str:
    """Put the trashed note ``entry`` back at ``target`` (its old path, or another), never over a
    file there (:class:`~kbseek.errors.NoteExists`); return its hash. The emptied entry folder is
    removed. ``entry`` is a path :func:`list_trash` or :func:`remove_to_trash` gave, never one taken
    from a caller: this function reads any file it is pointed at."""
    try:
        entry_fd = os.open(entry.parent, _DIR_FLAGS)
    except OSError:
        raise NoteNotFound(
            f"there is no trash entry {str(entry)!r}; list the trash to find it", str(entry)
        ) from None
    try:
        held = hold(entry_fd, entry.name, str(entry))
        try:
            data = read_fd(held.fd)
            folder = target.open_parent(create=True)
            try:
                sweep_folder(folder)
                try:
                    syscalls.rename_noreplace(entry_fd, entry.name, folder, target.name)
                except FileExistsError:
                    raise _exists(target, folder) from None
                except OSError as exc:
                    if exc.errno != errno.EXDEV:
                        raise
                    try:
                        place(
                            folder, data, target.name, like=held.st, note=target.name, expected=None
                        ).held.close()
                    except FileExistsError:
                        raise _exists(target, folder) from None
                    drop(entry_fd, entry.name, held.identity)
                syscalls.fsync_folder(folder)
            finally:
                os.close(folder)
        finally:
            held.close()
        syscalls.fsync_folder(entry_fd)
    finally:
        os.close(entry_fd)
    _prune(entry.parent)
    return note_hash(data)


def list_trash(trash_dir: Path) -> list[TrashEntry]:
    """Every note in the trash, the most recently removed first."""
    found: list[TrashEntry] = []
    if not trash_dir.is_dir():
        return found
    for entry in trash_dir.iterdir():
        m = _ENTRY.match(entry.name)
        if m is None or entry.is_symlink() or not entry.is_dir():
            continue
        when = datetime.strptime(m["stamp"], "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)
        for folder, _, files in os.walk(entry):
            for name in files:
                if not name.startswith("."):
                    path = Path(folder) / name
                    found.append(TrashEntry(path, path.relative_to(entry).as_posix(), when))
    return sorted(found, key=lambda e: (e.removed_at, e.rel), reverse=True)


def _into_trash(
    folder: int, target: WriteTarget, held: Held, expected: str, entry_dir: tuple[int, Path]
) -> Path:
    dir_fd, where = entry_dir
    try:
        syscalls.rename_noreplace(folder, target.name, dir_fd, target.name)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        return _copy_into_trash(folder, target, held, expected, entry_dir)
    steps.reached("moved")
    if held.is_at(dir_fd, target.name) and held.digest() == expected and not held.busy():
        time.sleep(GRACE)
        if not held.busy():
            syscalls.fsync_folder(dir_fd)
            syscalls.fsync_folder(folder)
            steps.reached("done")
            return where / target.name
    try:  # it changed as it moved: back where it was
        syscalls.rename_noreplace(dir_fd, target.name, folder, target.name)
    except FileExistsError:
        raise NoteConflict(
            f"{target.rel!r} changed as it was removed, and a new note took its place meanwhile; the removed one is "
            f"in the trash at {str(where / target.name)!r}: read both and decide",
            target.rel,
            current_hash=current_hash(folder, target.name),
        ) from None
    syscalls.fsync_folder(folder)
    raise _conflict(target, current_hash(folder, target.name))


def _copy_into_trash(
    folder: int, target: WriteTarget, held: Held, expected: str, entry_dir: tuple[int, Path]
) -> Path:
    """Across file systems: a complete copy in the trash first, then the note moved aside, checked, removed."""
    dir_fd, where = entry_dir
    place(dir_fd, read_fd(held.fd), target.name, like=held.st, note=target.name, expected=None).held.close()
    syscalls.fsync_folder(dir_fd)
    aside = temp_name("trash", target.name, expected, None)
    syscalls.rename_noreplace(folder, target.name, folder, aside)
    steps.reached("moved")
    if held.is_at(folder, aside) and held.digest() == expected and not held.busy():
        time.sleep(GRACE)
        if not held.busy():
            drop(folder, aside, held.identity)
            copy = rescue_after_drop(folder, held, target.name, expected)
            syscalls.fsync_folder(folder)
            steps.reached("done")
            if copy is not None:
                raise NoteConflict(
                    f"{target.rel!r} was saved by another program at the moment it was removed; the note is in "
                    f"the trash and that save is kept as {copy!r}: read it and decide",
                    target.rel,
                    current_hash=current_hash(folder, copy),
                )
            return where / target.name
    with contextlib.suppress(OSError):
        os.unlink(target.name, dir_fd=dir_fd)  # the copy of a note that is not removed after all
    try:
        syscalls.rename_noreplace(folder, aside, folder, target.name)
    except FileExistsError:
        copy = keep_as_copy(folder, aside, target.name)
        raise NoteConflict(
            f"{target.rel!r} changed as it was removed, and a new note took its place meanwhile; the one being "
            f"removed is kept beside it as {copy!r}: read both and decide",
            target.rel,
            current_hash=current_hash(folder, target.name),
        ) from None
    syscalls.fsync_folder(folder)
    raise _conflict(target, current_hash(folder, target.name))


def _entry_folder(trash_dir: Path, rel: str) -> tuple[int, Path]:
    """A new entry for ``rel`` in the trash, its folders made; a descriptor on the note's folder in it."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    where = trash_dir / f"{stamp}-{secrets.token_hex(4)}"
    folder = where.joinpath(*rel.split("/")[:-1])
    old = os.umask(0o077)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    finally:
        os.umask(old)
    return os.open(folder, _DIR_FLAGS), folder


def _prune(folder: Path) -> None:
    """Remove the emptied folders of a restored entry, up to and including the entry's own."""
    while True:
        try:
            folder.rmdir()
        except OSError:
            return
        if _ENTRY.match(folder.name):
            return
        folder = folder.parent


def _check_outside(trash_dir: Path, target: WriteTarget) -> None:
    real = Path(os.path.realpath(trash_dir))
    if real == target.root or target.root in real.parents:
        raise KbBug(
            f"the trash folder {str(trash_dir)!r} is inside the knowledge base; it must be outside it"
        )


def _conflict(target: WriteTarget, current: str | None) -> NoteConflict:
    return NoteConflict(
        f"{target.rel!r} changed since it was read (its hash is now {current}); read it again before removing it",
        target.rel,
        current_hash=current,
    )


def _exists(target: WriteTarget, folder: int) -> NoteExists:
    current = current_hash(folder, target.name)
    return NoteExists(
        f"a note already exists at {target.rel!r} (hash {current}); restore to another path, or remove that note first",
        target.rel,
        current_hash=current,
    )
