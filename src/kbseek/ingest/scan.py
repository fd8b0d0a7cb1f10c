"""Walk the root and list what indexing should consider, with a reason for each skip.

The scan is a cheap stat pass (no file is opened), so it can run before every
agent call to keep the index fresh (T10).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.parsers import Registry


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


def scan(root: Path, registry: Registry, exclusion: Exclusion, max_file_bytes: int) -> ScanResult:
    """Every indexable file under ``root``; links, oversize files and excluded paths are reported as skipped.

    A document no active parser opens (``.rst``, or ``.pdf`` with the pdf parser off) is
    reported as skipped with what would enable it, so a folder of such pages does not look
    indexed; other files (images, attachments, code) are expected beside notes and ignored
    without a report, and so is any file the ignore file names.
    """
    files: dict[str, FileStat] = {}
    skipped: list[Skipped] = []
    stack: list[tuple[str, str]] = [(str(root), "")]
    while stack:
        directory, rel_dir = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            skipped.append(Skipped(rel_dir or ".", f"cannot list folder: {exc.strerror}"))
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append(Skipped(rel, f"cannot stat: {exc.strerror}"))
                continue
            if stat.S_ISLNK(st.st_mode):
                if registry.for_path(rel) is not None or _points_to_dir(entry):
                    skipped.append(Skipped(rel, "symlink (links are never followed)"))
                continue
            if stat.S_ISDIR(st.st_mode):
                reason = exclusion.dir_reason(rel, entry.name)
                if reason is None:
                    stack.append((entry.path, rel))
                elif reason not in ("tool or vendor folder", "hidden folder", "the index folder"):
                    skipped.append(Skipped(rel + "/", reason))
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if registry.for_path(rel) is None:
                unopened = registry.unopened_reason(rel)
                if unopened is not None and exclusion.file_reason(rel) is None:
                    skipped.append(Skipped(rel, unopened))
                continue
            reason = exclusion.file_reason(rel)
            if reason is not None:
                skipped.append(Skipped(rel, reason))
            elif st.st_nlink > 1:
                skipped.append(Skipped(rel, "hard link (file has more than one link)"))
            elif st.st_size > max_file_bytes:
                skipped.append(Skipped(rel, f"larger than max_file_bytes ({st.st_size} > {max_file_bytes})"))
            else:
                files[rel] = FileStat(rel, st.st_size, st.st_mtime_ns)
    return ScanResult(files, tuple(sorted(skipped, key=lambda s: s.path)))


def _points_to_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=True)
    except OSError:
        return False
