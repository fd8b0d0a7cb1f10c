"""The atomic writes, one at a time: what each does, what it refuses, and what it keeps.

Races with other processes and kills are in ``test_write_races.py``; here every case is one
process and a real disk.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbseek.errors import NoteConflict, NoteExists, NoteNotFound, WriteNotAllowed
from kbseek.write import held, steps, syscalls
from kbseek.write.atomic import (
    create_exclusive,
    list_trash,
    move_if_unchanged,
    note_hash,
    remove_to_trash,
    replace_if_unchanged,
    restore_from_trash,
    sweep_leftovers,
)
from kbseek.write.guard import WritePolicy, WriteTarget, writable_path
from kbseek.write.temps import parse_temp, temp_name

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 and O_TMPFILE are Linux's")


def target(root: Path, rel: str) -> WriteTarget:
    return writable_path(WritePolicy(root, folders=("",)), rel)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_hash_is_the_index_digest_cut_to_sixteen_characters() -> None:
    data = "ノート\r\n".encode("utf-16")
    assert note_hash(data) == hashlib.sha256(data).hexdigest()[:16]
    assert len(note_hash(b"")) == 16


# -- create -------------------------------------------------------------------------------------


def test_create_writes_the_bytes_as_given_and_makes_missing_folders(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf# Title\r\nline\r\n\xff raw byte\n"
    assert create_exclusive(target(tmp_path, "inbox/2026/a.md"), data) == note_hash(data)
    assert (tmp_path / "inbox/2026/a.md").read_bytes() == data
    assert names(tmp_path / "inbox/2026") == ["a.md"]


def test_create_gives_the_mode_a_new_file_gets(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        create_exclusive(target(tmp_path, "a.md"), b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.md").stat().st_mode) == 0o640


def test_create_never_replaces_a_file_and_says_what_is_there(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"a person's note")
    with pytest.raises(NoteExists) as caught:
        create_exclusive(target(tmp_path, "a.md"), b"agent text")
    assert caught.value.current_hash == note_hash(b"a person's note")
    assert (tmp_path / "a.md").read_bytes() == b"a person's note"
    assert names(tmp_path) == ["a.md"]


def test_create_refuses_a_link_planted_at_the_name_after_the_check(tmp_path: Path) -> None:
    t = target(tmp_path, "a.md")
    (tmp_path / "a.md").symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(NoteExists):
        create_exclusive(t, b"x")
    assert not (tmp_path / "elsewhere.md").exists()


# -- replace ------------------------------------------------------------------------------------


def test_replace_writes_when_the_hash_is_current(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_bytes(b"one")
    assert replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b"one"), b"two\r\n") == note_hash(
        b"two\r\n"
    )
    assert note.read_bytes() == b"two\r\n"
    assert names(tmp_path) == ["a.md"]


def test_replace_refuses_a_stale_hash_and_writes_nothing(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_bytes(b"saved by a person")
    before = note.stat()
    with pytest.raises(NoteConflict) as caught:
        replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b"what the agent read"), b"agent")
    assert caught.value.current_hash == note_hash(b"saved by a person")
    assert note.read_bytes() == b"saved by a person"
    assert note.stat().st_ino == before.st_ino
    assert names(tmp_path) == ["a.md"]


def test_replace_keeps_the_mode(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_bytes(b"one")
    note.chmod(0o604)
    replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b"one"), b"two")
    assert stat.S_IMODE(note.stat().st_mode) == 0o604


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root may give a file away")
def test_replace_keeps_the_owner(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_bytes(b"one")
    os.chown(note, 4321, 4322)
    replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b"one"), b"two")
    assert (note.stat().st_uid, note.stat().st_gid) == (4321, 4322)


def test_replace_of_a_missing_note_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NoteNotFound):
        replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b""), b"x")


def test_replace_refuses_a_note_that_became_a_link_or_a_hard_link(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_bytes(b"one")
    t = target(tmp_path, "a.md")
    os.link(note, tmp_path / "other-name.md")
    with pytest.raises(WriteNotAllowed, match="hard links"):
        replace_if_unchanged(t, note_hash(b"one"), b"two")
    (tmp_path / "other-name.md").unlink()
    note.unlink()
    (tmp_path / "outside.md").write_bytes(b"one")
    note.symlink_to(tmp_path / "outside.md")
    with pytest.raises(WriteNotAllowed, match="symlink"):
        replace_if_unchanged(t, note_hash(b"one"), b"two")
    assert (tmp_path / "outside.md").read_bytes() == b"one"


def test_replace_waits_for_a_program_that_has_the_note_open_for_writing_then_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = tmp_path / "a.md"
    note.write_bytes(b"one")
    monkeypatch.setattr(held, "BUSY_WAIT", 0.2)
    with open(note, "ab"):  # an editor holding it open for writing, mid-save
        if syscalls.take_read_lease(os.open(note, os.O_RDONLY)) is syscalls.Lease.UNAVAILABLE:
            pytest.skip("no leases here")
        started = time.monotonic()
        with pytest.raises(NoteConflict, match="being saved by another program"):
            replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b"one"), b"two")
        assert time.monotonic() - started >= 0.2
    assert note.read_bytes() == b"one"


@linux
def test_replace_without_a_lease_still_compares_at_the_swap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(syscalls, "take_read_lease", lambda fd: syscalls.Lease.UNAVAILABLE)
    note = tmp_path / "a.md"
    note.write_bytes(b"one")
    assert replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b"one"), b"two") == note_hash(b"two")
    with pytest.raises(NoteConflict):
        replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b"one"), b"three")
    assert note.read_bytes() == b"two"


def test_replace_where_no_swap_exists_renames_after_a_last_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(*_: object) -> None:
        raise syscalls.Unsupported(95, "not here")

    monkeypatch.setattr(syscalls, "exchange", unsupported)
    note = tmp_path / "a.md"
    note.write_bytes(b"one")
    note.chmod(0o640)
    assert replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b"one"), b"two") == note_hash(b"two")
    assert note.read_bytes() == b"two" and stat.S_IMODE(note.stat().st_mode) == 0o640
    assert names(tmp_path) == ["a.md"]


@linux
def test_a_save_whose_open_reaches_the_note_only_after_the_swap_is_kept_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The straggler: an editor's in-place save looked the path up before the swap, and its open
    reaches the displaced note only after the writer checked it. The lease, still held, sees the
    open; the save is let through, awaited, and kept as a conflict copy instead of being lost."""
    note = tmp_path / "a.md"
    note.write_bytes(b"one")
    probe = os.open(note, os.O_RDONLY)
    try:
        if syscalls.take_read_lease(probe) is not syscalls.Lease.HELD:
            pytest.skip("no leases here")
    finally:
        os.close(probe)
    late: list[subprocess.Popen[bytes]] = []

    def straggle(step: str) -> None:
        if step != "checked":
            return
        [displaced] = tmp_path.glob(".kbseek-swap-*")  # the old note, under the temporary name
        save = "import sys; f = open(sys.argv[1], 'wb'); f.write(b'a late save'); f.close()"
        late.append(subprocess.Popen([sys.executable, "-c", save, str(displaced)]))
        deadline = time.monotonic() + 20
        while "BREAK" not in Path("/proc/locks").read_text():  # the editor's open waits on the lease
            assert time.monotonic() < deadline and late[0].poll() is None
            time.sleep(0.01)

    monkeypatch.setattr(steps, "hook", straggle)
    with pytest.raises(NoteConflict, match="kept beside it as") as caught:
        replace_if_unchanged(target(tmp_path, "a.md"), note_hash(b"one"), b"two")
    assert late[0].wait(timeout=20) == 0
    assert caught.value.current_hash == note_hash(b"two")
    assert note.read_bytes() == b"two"
    [copy] = [p for p in tmp_path.iterdir() if p.name != "a.md"]
    assert copy.name.startswith("a (conflict ") and copy.read_bytes() == b"a late save"


# -- move ---------------------------------------------------------------------------------------


def test_move_renames_the_same_file_into_new_folders(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"note")
    ino = (tmp_path / "a.md").stat().st_ino
    move_if_unchanged(target(tmp_path, "a.md"), note_hash(b"note"), target(tmp_path, "archive/2026/a.md"))
    assert names(tmp_path) == ["archive"]
    assert (tmp_path / "archive/2026/a.md").stat().st_ino == ino


def test_move_never_replaces_the_destination(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"moving")
    (tmp_path / "b.md").write_bytes(b"a person's note")
    with pytest.raises(NoteExists) as caught:
        move_if_unchanged(target(tmp_path, "a.md"), note_hash(b"moving"), target(tmp_path, "b.md"))
    assert caught.value.current_hash == note_hash(b"a person's note")
    assert (tmp_path / "a.md").read_bytes() == b"moving"
    assert (tmp_path / "b.md").read_bytes() == b"a person's note"


def test_move_refuses_a_stale_hash(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"changed")
    with pytest.raises(NoteConflict):
        move_if_unchanged(target(tmp_path, "a.md"), note_hash(b"read"), target(tmp_path, "b.md"))
    assert names(tmp_path) == ["a.md"]


# -- trash --------------------------------------------------------------------------------------


def test_trash_and_restore_round_trip(tmp_path: Path) -> None:
    root, trash = tmp_path / "kb", tmp_path / "trash"
    (root / "inbox").mkdir(parents=True)
    note = root / "inbox/a.md"
    note.write_bytes(b"keep me\r\n")
    note.chmod(0o600)
    entry = remove_to_trash(target(root, "inbox/a.md"), note_hash(b"keep me\r\n"), trash)
    assert not note.exists() and names(root / "inbox") == []
    assert entry.read_bytes() == b"keep me\r\n"
    [listed] = list_trash(trash)
    assert (listed.path, listed.rel) == (entry, "inbox/a.md")
    assert abs(listed.removed_at.timestamp() - time.time()) < 60
    assert restore_from_trash(entry, target(root, "inbox/a.md")) == note_hash(b"keep me\r\n")
    assert note.read_bytes() == b"keep me\r\n" and stat.S_IMODE(note.stat().st_mode) == 0o600
    assert list_trash(trash) == [] and names(trash) == []


def test_removing_the_same_path_twice_keeps_two_entries(tmp_path: Path) -> None:
    root, trash = tmp_path / "kb", tmp_path / "trash"
    root.mkdir()
    for text in (b"first", b"second"):
        (root / "a.md").write_bytes(text)
        remove_to_trash(target(root, "a.md"), note_hash(text), trash)
    assert sorted(e.path.read_bytes() for e in list_trash(trash)) == [b"first", b"second"]


def test_trash_refuses_a_stale_hash(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb/a.md").write_bytes(b"changed")
    with pytest.raises(NoteConflict):
        remove_to_trash(target(tmp_path / "kb", "a.md"), note_hash(b"read"), tmp_path / "trash")
    assert (tmp_path / "kb/a.md").read_bytes() == b"changed"
    assert list_trash(tmp_path / "trash") == []


def test_restore_never_replaces_a_note_and_keeps_the_entry(tmp_path: Path) -> None:
    root, trash = tmp_path / "kb", tmp_path / "trash"
    root.mkdir()
    (root / "a.md").write_bytes(b"old")
    entry = remove_to_trash(target(root, "a.md"), note_hash(b"old"), trash)
    (root / "a.md").write_bytes(b"new note at the same path")
    with pytest.raises(NoteExists):
        restore_from_trash(entry, target(root, "a.md"))
    assert entry.read_bytes() == b"old"
    assert (root / "a.md").read_bytes() == b"new note at the same path"
    restore_from_trash(entry, target(root, "a-restored.md"))
    assert (root / "a-restored.md").read_bytes() == b"old"


@pytest.mark.skipif(
    not Path("/dev/shm").is_dir() or Path("/dev/shm").stat().st_dev == Path(__file__).stat().st_dev,
    reason="needs a second file system for the trash",
)
def test_a_trash_on_another_file_system_gets_a_copy_and_the_note_goes(tmp_path: Path) -> None:
    import tempfile

    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_bytes(b"across")
    (root / "a.md").chmod(0o640)
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        if Path(shm).stat().st_dev == root.stat().st_dev:
            pytest.skip("the temporary folder is on the same file system")
        entry = remove_to_trash(target(root, "a.md"), note_hash(b"across"), Path(shm) / "trash")
        assert names(root) == [] and entry.read_bytes() == b"across"
        assert stat.S_IMODE(entry.stat().st_mode) == 0o640
        restore_from_trash(entry, target(root, "a.md"))
        assert (root / "a.md").read_bytes() == b"across"


# -- leftovers ----------------------------------------------------------------------------------


def _leftover(
    folder: Path, stage: str, note: str, content: bytes, *, expected: bytes | None, new: bytes | None
) -> Path:
    name = temp_name(
        stage,
        note,
        None if expected is None else note_hash(expected),
        None if new is None else note_hash(new),
    )
    assert parse_temp(name) is not None
    path = folder / name
    path.write_bytes(content)
    return path


def test_the_sweep_removes_what_is_disposable(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"new")
    # bytes being written; the new note, never swapped in; the old note, legitimately swapped out
    _leftover(tmp_path, "write", "a.md", b"half writ", expected=b"old", new=None)
    _leftover(tmp_path, "swap", "a.md", b"new", expected=b"old", new=b"new")
    _leftover(tmp_path, "swap", "a.md", b"old", expected=b"old", new=b"new")
    # a note moved aside on its way to a trash elsewhere, its copy already there
    _leftover(tmp_path, "trash", "c.md", b"c", expected=b"c", new=None)
    settled = sweep_leftovers(tmp_path, settle=0)
    assert [s.outcome for s in settled] == ["removed"] * 4
    assert names(tmp_path) == ["a.md"] and (tmp_path / "a.md").read_bytes() == b"new"


def test_the_sweep_puts_a_displaced_save_back_or_keeps_it_beside_the_note(tmp_path: Path) -> None:
    # the swap displaced a person's save, and the writer died before putting it back
    (tmp_path / "a.md").write_bytes(b"agent text")
    _leftover(tmp_path, "swap", "a.md", b"a person's save", expected=b"read", new=b"agent text")
    # the same, but the note was saved again since: both are the person's
    (tmp_path / "b.md").write_bytes(b"saved again since")
    _leftover(tmp_path, "swap", "b.md", b"a person's earlier save", expected=b"read", new=b"agent text")
    # the same, but the note was removed since
    _leftover(tmp_path, "swap", "gone.md", b"a save of a note removed since", expected=b"x", new=b"y")
    # a note on its way to a trash elsewhere, saved as it was moved aside
    _leftover(tmp_path, "trash", "c.md", b"saved as it was being removed", expected=b"c", new=None)
    outcomes = sorted(s.outcome.split(" ")[0] for s in sweep_leftovers(tmp_path, settle=0))
    assert outcomes == ["kept", "restored", "restored", "restored"]
    assert (tmp_path / "c.md").read_bytes() == b"saved as it was being removed"
    assert (tmp_path / "a.md").read_bytes() == b"a person's save"
    assert (tmp_path / "b.md").read_bytes() == b"saved again since"
    assert (tmp_path / "gone.md").read_bytes() == b"a save of a note removed since"
    [copy] = [p for p in tmp_path.iterdir() if "(conflict" in p.name]
    assert copy.name.startswith("b (conflict ") and copy.suffix == ".md"
    assert copy.read_bytes() == b"a person's earlier save"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".kbseek-")]


def test_the_sweep_finds_the_note_of_a_name_too_long_to_carry(tmp_path: Path) -> None:
    long = "n" * 240 + ".md"
    (tmp_path / long).write_bytes(b"agent text")
    leftover = _leftover(tmp_path, "swap", long, b"a person's save", expected=b"read", new=b"agent text")
    assert len(leftover.name.encode()) <= 255
    assert [s.outcome for s in sweep_leftovers(tmp_path, settle=0)] == ["restored"]
    assert (tmp_path / long).read_bytes() == b"a person's save"


def test_the_sweep_leaves_a_live_writer_s_file_and_a_fresh_one_alone(tmp_path: Path) -> None:
    live = _leftover(tmp_path, "write", "a.md", b"being written", expected=None, new=None)
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # as a writer holds it
        assert sweep_leftovers(tmp_path, settle=0) == []
    finally:
        os.close(fd)
    assert sweep_leftovers(tmp_path) == []  # younger than the settle time
    assert [s.outcome for s in sweep_leftovers(tmp_path, settle=0)] == ["removed"]


def test_the_sweep_does_not_follow_links_or_enter_hidden_folders(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    stray = _leftover(outside, "write", "a.md", b"x", expected=None, new=None)
    root = tmp_path / "kb"
    (root / ".git").mkdir(parents=True)
    (root / "link").symlink_to(outside)
    hidden = _leftover(root / ".git", "write", "a.md", b"x", expected=None, new=None)
    assert sweep_leftovers(root, settle=0) == []
    assert stray.exists() and hidden.exists()


def test_the_sweep_never_touches_a_person_s_file_that_only_looks_like_a_leftover(tmp_path: Path) -> None:
    (tmp_path / ".kbseek-my-own-notes.tmp").write_bytes(b"mine")
    assert sweep_leftovers(tmp_path, settle=0) == []
    assert (tmp_path / ".kbseek-my-own-notes.tmp").read_bytes() == b"mine"


def test_a_read_only_note_is_neither_replaced_nor_removed(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    note = tmp_path / "kb/a.md"
    note.write_bytes(b"frozen")
    note.chmod(0o444)
    with pytest.raises(WriteNotAllowed, match="read-only"):
        replace_if_unchanged(target(tmp_path / "kb", "a.md"), note_hash(b"frozen"), b"thawed")
    with pytest.raises(WriteNotAllowed, match="read-only"):
        remove_to_trash(target(tmp_path / "kb", "a.md"), note_hash(b"frozen"), tmp_path / "trash")
    assert note.read_bytes() == b"frozen"
