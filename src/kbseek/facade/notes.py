"""Agents' writes to notes, as a knowledge base makes them (docs/decisions/0058).

Every write goes the same way: the server must be the one that writes (``[write]`` on, not a
reader), the path passes the one write guard (``kbseek.write.guard``), the note's current bytes are
read and their hash compared with the one the caller sent, the edit is made on the text as the file
holds it (its encoding, byte-order mark and line endings kept: ``kbseek.write.edits``), the result
is held to the size cap, and the diff is made. A dry run stops there. Otherwise the file is written
by the replace that compares again at the moment of replacing (``kbseek.write.atomic``), the change
is indexed by this call (so search finds it at once, and the watcher's event for it finds nothing
left to do), and the trail records it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import platformdirs

from kbseek.errors import (
    DocumentNotFound,
    DocumentRefused,
    InvalidArgument,
    KbError,
    NoteConflict,
    NoteExists,
    NoteNotFound,
    WriteNotAllowed,
    WriteRefused,
    WritesReadOnly,
)
from kbseek.facade.live_config import LiveConfig
from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.guard import read_regular_file
from kbseek.responses import NoteChange, StatusResponse
from kbseek.store.base import Store
from kbseek.write import atomic, edits, frontmatter
from kbseek.write.diffs import unified
from kbseek.write.encoding import NoteText, decode_note, encode_note
from kbseek.write.guard import WritePolicy, WriteTarget, check_size, ignored_by, writable_path
from kbseek.write.hashes import note_hash
from kbseek.write.relink import relinked
from kbseek.write.trail import Trail, WriteRecord, utc_now
from kbseek.write.trash import TrashEntry, list_trash

log = logging.getLogger(__name__)


MAX_RELINKS = 1000
"""Notes whose links to a moved note are rewritten at most: a hub page linked from everywhere is
moved with its links fixed in the first thousand, and the answer says so."""


def trash_folder(root: Path) -> Path:
    """Where the notes deleted from the knowledge base at ``root`` wait to be restored: the user's state
    directory (``~/.local/state/kbseek/trash/`` on Linux), never under the notes (where it would be
    indexed, synced and backed up as notes), one folder per knowledge base, named for a person."""
    key = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return Path(platformdirs.user_state_dir("kbseek")) / "trash" / f"{root.name or 'kb'}-{key}"


EDITS: Mapping[str, Callable[..., str]] = {
    "append": lambda text, a: edits.append(text, a["content"]),
    "prepend": lambda text, a: edits.prepend(text, a["content"]),
    "replace_section": lambda text, a: edits.replace_section(text, a["section"], a["content"]),
    "insert_before_section": lambda text, a: edits.insert_before_section(text, a["section"], a["content"]),
    "insert_after_section": lambda text, a: edits.insert_after_section(text, a["section"], a["content"]),
    "find_replace": lambda text, a: edits.find_replace(
        text, a["find"], a["content"], expected_count=a["expected_replacements"]
    ),
    "set_frontmatter": lambda text, a: frontmatter.set_frontmatter(text, a["fields"]),
}
"""Each ``edit_note`` operation, on the note's text, with the call's arguments."""
NEEDS: Mapping[str, tuple[str, ...]] = {
    "append": ("content",), "prepend": ("content",), "replace_section": ("section", "content"),
    "insert_before_section": ("section", "content"), "insert_after_section": ("section", "content"),
    "find_replace": ("find", "content"), "set_frontmatter": ("fields",),
}  # fmt: skip


@dataclass(frozen=True)
class Current:
    """A note as it is now: its bytes and their hash (``None`` for no note), hashed once when read,
    since one write consults the hash several times (the comparison, the answer, the trail)."""

    data: bytes | None
    hash: str | None

    @classmethod
    def of(cls, data: bytes | None) -> Current:
        return cls(data, note_hash(data) if data is not None else None)


class Notes:
    """The writes of one knowledge base (``KnowledgeBase.notes``); ``index(paths)`` runs a pass over
    the paths a write changed, so search finds the change as soon as the write answers."""

    def __init__(
        self, live: LiveConfig, store: Store, index_dir: Path, *, read_only: bool,
        index: Callable[[set[str]], object], client: Callable[[], str | None] = lambda: None,
    ) -> None:  # fmt: skip
        self._live = live
        self._store = store
        self._index_dir = index_dir
        self._read_only = read_only
        self._index = index
        self.client = client
        """Who is writing, for the trail (a server sets it to the caller's client id)."""
        self.trail = Trail(index_dir)
        root = live.settings.root
        self.trash = trash_folder(root) if root is not None else index_dir / "trash"
        self.sweep()  # a write killed midway left its temporary file: finish or remove it

    # -- the guard, and the note as it is -------------------------------------------------------

    def _policy(self, *, by_agent: bool = True) -> WritePolicy:
        """What writes may touch. ``by_agent=False``: a person's restore from the command line, which
        ``[write] enabled`` (about agents) does not gate; the folders and the rest still apply."""
        settings = self._live.settings
        spec = settings.write
        if by_agent and not spec.enabled:
            raise WritesReadOnly(
                "this server does not write notes: writing is off; a person can turn it on with "
                "[write] enabled = true or `kbseek serve --allow-write`",
                "",
            )
        if self._read_only or settings.root is None:
            raise WritesReadOnly(
                "this server reads a shared index and holds no files: writes go to the server beside the "
                "notes (the one that indexes them)",
                "",
            )
        excluded = ignored_by(Exclusion(settings.root, settings.exclude_dirs, self._index_dir))
        return WritePolicy(
            root=settings.root, folders=spec.root_folders, extensions=spec.extensions, max_bytes=spec.max_bytes,
            index_dir=self._index_dir, excluded=excluded,
        )  # fmt: skip

    def _current(self, policy: WritePolicy, target: WriteTarget) -> Current:
        try:
            raw = read_regular_file(
                policy.root, target.rel, max_bytes=policy.max_bytes + 1, max_file_bytes=policy.max_bytes + 1
            )
        except DocumentNotFound:
            return Current.of(None)
        except DocumentRefused as exc:
            raise WriteNotAllowed(f"{exc}", target.rel) from None
        return Current.of(raw.data)

    def _based_on(self, target: WriteTarget, current: Current, expected_hash: str | None) -> bytes:
        if current.data is None:
            raise NoteNotFound(
                f"no note at {target.rel!r}: search or list_topics give the paths there are", target.rel
            )
        if not expected_hash:
            raise InvalidArgument(
                f"expected_hash is empty: pass the hash search, fetch or get_document gave for {target.rel!r}"
            )
        if expected_hash.strip().lower() != current.hash:
            raise NoteConflict(
                f"{target.rel!r} changed since the hash {expected_hash!r} was read: read it again "
                "(get_document), redo the change on what it holds now, and send the new hash",
                target.rel, current_hash=current.hash,
            )  # fmt: skip
        return current.data

    # -- the writes ---------------------------------------------------------------------------------

    def write(
        self, path: str, content: str, *, overwrite: bool = False, expected_hash: str | None = None,
        dry_run: bool = False,
    ) -> NoteChange:  # fmt: skip
        policy = self._policy()
        target = writable_path(policy, path)
        current = self._current(policy, target)
        if current.data is not None and not overwrite:
            raise NoteExists(
                f"a note is already at {target.rel!r}: choose another path, or replace it with overwrite=true "
                "and its expected_hash (or edit it with edit_note)",
                target.rel, current_hash=current.hash,
            )  # fmt: skip
        if current.data is None:
            data = content.encode("utf-8")  # a new note: UTF-8, its lines as the agent wrote them
            before = ""
            operation = "create"
        else:
            old = self._based_on(target, current, expected_hash)
            note = _decoded(old, target.rel)
            data = encode_note(note, content, path=target.rel)
            before = note.text
            operation = "replace"
        return self._finish(policy, target, operation, current, data, before, content, dry_run)

    def edit(
        self, path: str, *, expected_hash: str, operation: str, content: str | None = None,
        section: str | None = None, find: str | None = None, expected_replacements: int = 1,
        fields: dict[str, Any] | None = None, dry_run: bool = False,
    ) -> NoteChange:  # fmt: skip
        edit = EDITS.get(operation)
        if edit is None:
            raise InvalidArgument(f"operation {operation!r} is not one of {', '.join(EDITS)}")
        asked = {"content": content, "section": section, "find": find, "fields": fields,
                 "expected_replacements": expected_replacements}  # fmt: skip
        missing = [name for name in NEEDS[operation] if asked[name] is None]
        if missing:
            raise InvalidArgument(f"{operation} needs {' and '.join(missing)}")
        policy = self._policy()
        target = writable_path(policy, path)
        current = self._current(policy, target)
        old = self._based_on(target, current, expected_hash)
        note = _decoded(old, target.rel)
        text = edit(note.text, asked)
        data = encode_note(note, text, path=target.rel)
        return self._finish(policy, target, operation, current, data, note.text, text, dry_run)

    def _finish(
        self, policy: WritePolicy, target: WriteTarget, operation: str, current: Current, data: bytes,
        before: str, after: str, dry_run: bool,
    ) -> NoteChange:  # fmt: skip
        check_size(policy, data, target.rel)
        diff = unified(before, after, target.rel)
        change = NoteChange(
            path=target.rel, operation=operation, hash=note_hash(data), previous_hash=current.hash,
            diff=diff.text, diff_truncated=diff.truncated, dry_run=dry_run,
        )  # fmt: skip
        if dry_run:
            return change
        if current.data is None:
            new_hash = atomic.create_exclusive(target, data)
        else:
            assert current.hash is not None
            new_hash = atomic.replace_if_unchanged(target, current.hash, data)
        self._record(operation, target.rel, current.hash, new_hash, diff.changed)
        return change.model_copy(update={"hash": new_hash, "searchable": self._indexed({target.rel})})

    def move(self, path: str, new_path: str, *, expected_hash: str, dry_run: bool = False) -> NoteChange:
        policy = self._policy()
        source = writable_path(policy, path)
        destination = writable_path(policy, new_path)
        current = self._current(policy, source)
        self._based_on(source, current, expected_hash)
        if self._current(policy, destination).data is not None:
            raise NoteExists(
                f"a note is already at {destination.rel!r}: move to another path, or delete that note first",
                destination.rel,
            )
        change = NoteChange(
            path=source.rel, operation="move", hash=current.hash, previous_hash=current.hash,
            diff=unified("", "", source.rel, destination.rel).text, dry_run=dry_run, new_path=destination.rel,
        )  # fmt: skip
        linking = [link.source for link in self._store.links_to(source.rel, limit=MAX_RELINKS)]
        if dry_run:
            return change.model_copy(update={"links_rewritten": linking})
        assert current.hash is not None
        atomic.move_if_unchanged(source, current.hash, destination)
        self._record("move", source.rel, current.hash, current.hash, 0, new_path=destination.rel)
        rewritten, said = self._relink(policy, linking, source.rel, destination.rel)
        searchable = self._indexed({source.rel, destination.rel, *rewritten})
        return change.model_copy(
            update={"links_rewritten": rewritten, "notes": said, "searchable": searchable}
        )

    def _relink(
        self, policy: WritePolicy, linking: list[str], old: str, new: str
    ) -> tuple[list[str], list[str]]:
        """Each note in ``linking`` with its links to ``old`` naming ``new``, each a guarded edit of its
        own; what could not be rewritten, and why, as notes for the caller."""
        rewritten: list[str] = []
        said: list[str] = []
        for path in linking:
            try:
                target = writable_path(policy, path)
                current = self._current(policy, target)
                if current.data is None or current.hash is None:
                    continue
                note = _decoded(current.data, target.rel)
                text, count = relinked(note.text, target.rel, old, new)
                if not count:
                    continue
                data = encode_note(note, text, path=target.rel)
                new_hash = atomic.replace_if_unchanged(target, current.hash, data)
            except WriteRefused as exc:
                said.append(f"the links in {path!r} still name {old!r}: {exc}")
                continue
            self._record(
                "relink", target.rel, current.hash, new_hash, unified(note.text, text, target.rel).changed
            )
            rewritten.append(target.rel)
        return rewritten, said

    def delete(self, path: str, *, expected_hash: str, dry_run: bool = False) -> NoteChange:
        policy = self._policy()
        target = writable_path(policy, path)
        current = self._current(policy, target)
        old = self._based_on(target, current, expected_hash)
        before = _decoded(old, target.rel).text
        diff = unified(before, "", target.rel)
        change = NoteChange(
            path=target.rel, operation="delete", hash=None, previous_hash=current.hash, diff=diff.text,
            diff_truncated=diff.truncated, dry_run=dry_run,
        )  # fmt: skip
        if dry_run:
            return change
        assert current.hash is not None
        entry = atomic.remove_to_trash(target, current.hash, self.trash)
        name = entry_name(self.trash, entry)
        self._record("delete", target.rel, current.hash, None, diff.changed, trash=name)
        return change.model_copy(update={"trash": name, "searchable": self._indexed({target.rel})})

    def trashed(self) -> list[TrashEntry]:
        """The notes in the trash, the most recently deleted first."""
        return list_trash(self.trash)

    def restore(self, entry: str, *, path: str | None = None) -> NoteChange:
        """A deleted note back from the trash, at its old path or ``path``; never over a file.
        ``entry`` is the name a delete answered with (``kbseek notes trash`` lists them)."""
        policy = self._policy(by_agent=False)
        found = [e for e in list_trash(self.trash) if entry_name(self.trash, e.path) == entry]
        if not found:
            raise NoteNotFound(f"no trash entry {entry!r}: `kbseek notes trash` lists them", entry)
        target = writable_path(policy, path or found[0].rel)
        new_hash = atomic.restore_from_trash(found[0].path, target)
        self._record("restore", target.rel, None, new_hash, 0, trash=entry)
        return NoteChange(
            path=target.rel, operation="restore", hash=new_hash, previous_hash=None, diff="",
            new_path=target.rel, searchable=self._indexed({target.rel}),
        )  # fmt: skip

    def sweep(self) -> None:
        """Finish or remove what a write killed midway left in the writable folders (at start)."""
        try:
            policy = self._policy()
        except WritesReadOnly:
            return
        for folder in policy.folders:
            where = policy.root / folder
            if where.is_dir() and not where.is_symlink():
                atomic.sweep_leftovers(where, settle=0)

    def recent(self, count: int = 20) -> list[WriteRecord]:
        """The last writes, newest first (the trail beside the index)."""
        return self.trail.last(count)

    def with_last_writes(self, status: StatusResponse, count: int = 5) -> StatusResponse:
        """``status`` with the last writes, on a knowledge base that lets agents write."""
        if not self._live.settings.write.enabled:
            return status
        writes = [{k: v for k, v in asdict(r).items() if v is not None} for r in self.recent(count)]
        return status.model_copy(update={"last_writes": writes})

    def _indexed(self, paths: set[str]) -> bool:
        try:
            self._index(paths)
        except KbError:
            log.warning("a written note could not be indexed now; the next pass will", exc_info=True)
            return False
        return True

    def _record(
        self, operation: str, path: str, before: str | None, after: str | None, changed: int, **more: str
    ) -> None:
        self.trail.add(
            WriteRecord(
                time=utc_now(), operation=operation, path=path, client=self.client(), before=before,
                after=after, diff_lines=changed, **more,
            )
        )  # fmt: skip


def entry_name(trash: Path, entry: Path) -> str:
    """A trash entry's name as a delete answers it and a restore takes it: its folder in the trash."""
    return entry.relative_to(trash).parts[0]


def _decoded(raw: bytes, rel: str) -> NoteText:
    """The note's text as the file holds it, or the refusal ``get_document`` would give."""
    try:
        return decode_note(raw)
    except ValueError as exc:
        raise WriteNotAllowed(f"{rel!r} cannot be edited: {exc}", rel) from None
