"""Walk the root and list what indexing should consider, with a reason for each skip.

The scan is a cheap stat pass (no file is opened), so it can run before every
agent call to keep the index fresh (T10).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.parsers import Registry, raw_size_limit
from kbseek.ingest.parsers.unreadable import too_large


@dataclass(frozen=True)
class FileStat:
    """A candidate file: root-relative POSIX path and what the stat pass saw."""

    path: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass(frozen=True)
class ScanResult:
    files: dict[str, FileStat]
    skipped: tuple[Skipped, ...]


@dataclass(frozen=True)
class Scope:
    """The part of the tree a partial scan looked at: ``paths``, and everything under ``folders``.

    A pass over a scope compares only the documents it covers, so a file outside it that the
    partial scan never listed is not taken for deleted.
    """

    paths: frozenset[str]
    folders: frozenset[str]
    """Root-relative folders without a trailing slash."""

    def covers(self, rel: str) -> bool:
        if rel in self.paths:
            return True
        parts = rel.split("/")
        return any("/".join(parts[:i]) in self.folders for i in range(1, len(parts)))


def scan(root: Path, registry: Registry, exclusion: Exclusion, max_file_bytes: int) -> ScanResult:
    """Every indexable file under ``root``; links, oversize files and excluded paths are reported as skipped.

    A file is oversize past its parser's raw size limit (``parsers.raw_size_limit``: ``max_file_bytes``
    unless the parser counts a file its own way), and the reason says which limit it passed.

    A document no active parser opens (``.rst``, or ``.pdf`` with the pdf parser off) is
    reported as skipped with what would enable it, so a folder of such pages does not look
    indexed; other files (images, attachments, code) are expected beside notes and ignored
    without a report, and so is any file the ignore file names.
    """
    walk = _Walk(registry, exclusion, max_file_bytes)
    walk.folder(str(root), "")
    return walk.result()


def scan_paths(
    root: Path, changed: set[str], registry: Registry, exclusion: Exclusion, max_file_bytes: int
) -> tuple[ScanResult, Scope]:
    """What :func:`scan` would say about the ``changed`` root-relative paths only, and their scope.

    A watcher batch names the paths that changed; scanning just those (and the subtree of a folder
    among them) keeps the cost of a save independent of the size of the tree. A path that no longer
    exists, or sits in a folder the full scan would not enter (excluded, hidden, a symlink), is in
    the scope with nothing found, so what the index held there is removed.
    """
    walk = _Walk(registry, exclusion, max_file_bytes)
    for rel in sorted(changed):
        if not _walked(root, rel, exclusion):
            continue
        path = root / rel
        try:
            st = path.lstat()
        except OSError:
            continue  # gone: the scope below removes what the index held there
        if walk.entry(str(path), rel, rel.rsplit("/", 1)[-1], st, partial(os.path.isdir, path)):
            walk.folder(str(path), rel)
    return walk.result(), Scope(frozenset(changed), frozenset(changed))


def _walked(root: Path, rel: str, exclusion: Exclusion) -> bool:
    """Whether the full scan would enter every folder above ``rel`` (real folders, none excluded)."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        folder = "/".join(parts[:i])
        try:
            if not stat.S_ISDIR((root / folder).lstat().st_mode):
                return False
        except OSError:
            return False
        if exclusion.dir_reason(folder, parts[i - 1]) is not None:
            return False
    return True


class _Walk:
    """One scan's findings; :meth:`entry` is the one place that decides what a path is to indexing."""

    def __init__(self, registry: Registry, exclusion: Exclusion, max_file_bytes: int) -> None:
        self.registry, self.exclusion, self.max_file_bytes = registry, exclusion, max_file_bytes
        self.files: dict[str, FileStat] = {}
        self.skipped: list[Skipped] = []

    def result(self) -> ScanResult:
        return ScanResult(self.files, tuple(sorted(self.skipped, key=lambda s: s.path)))

    def folder(self, directory: str, rel_dir: str) -> None:
        stack: list[tuple[str, str]] = [(directory, rel_dir)]
        while stack:
            directory, rel_dir = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError as exc:
                self.skipped.append(Skipped(rel_dir or ".", f"cannot list folder: {exc.strerror}"))
                continue
            for e in sorted(entries, key=lambda e: e.name):
                rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError as exc:
                    self.skipped.append(Skipped(rel, f"cannot stat: {exc.strerror}"))
                    continue
                if self.entry(e.path, rel, e.name, st, partial(_points_to_dir, e)):
                    stack.append((e.path, rel))

    def entry(
        self, path: str, rel: str, name: str, st: os.stat_result, points_to_dir: Callable[[], bool]
    ) -> bool:
        """Record what ``rel`` is; True for a folder the scan should walk into."""
        if stat.S_ISLNK(st.st_mode):
            if self.registry.for_path(rel) is not None or points_to_dir():
                self.skipped.append(Skipped(rel, "symlink (links are never followed)"))
            return False
        if stat.S_ISDIR(st.st_mode):
            reason = self.exclusion.dir_reason(rel, name)
            if reason is None:
                return True
            if reason not in ("tool or vendor folder", "hidden folder", "the index folder"):
                self.skipped.append(Skipped(rel + "/", reason))
            return False
        if not stat.S_ISREG(st.st_mode):
            if self.registry.for_path(rel) is not None:  # named like a note: say why it is not one
                self.skipped.append(Skipped(rel, f"not a regular file ({_kind(st.st_mode)})"))
            return False
        parser = self.registry.for_path(rel)
        if parser is None:
            unopened = self.registry.unopened_reason(rel)
            if unopened is not None and self.exclusion.file_reason(rel) is None:
                self.skipped.append(Skipped(rel, unopened))
            return False
        reason = self.exclusion.file_reason(rel)
        limit = raw_size_limit(parser, self.max_file_bytes)
        if reason is not None:
            self.skipped.append(Skipped(rel, reason))
        elif st.st_nlink > 1:
            self.skipped.append(Skipped(rel, "hard link (file has more than one link)"))
        elif st.st_size > limit:
            too_big = too_large(st.st_size, limit, self.max_file_bytes, parser.name)
            self.skipped.append(Skipped(rel, str(too_big)))
        else:
            self.files[rel] = FileStat(rel, st.st_size, st.st_mtime_ns)
        return False


def _kind(mode: int) -> str:
    """A non-regular file's kind in words; opening a FIFO would block the pass, a device read forever."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _points_to_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=True)
    except OSError:
        return False
