"""What is kept out of the index: tool folders, ``exclude_dirs`` and ``.kbseekignore``.

These rules decide what is *indexed*, never what is *readable* (D1): a rule
written inside the tree cannot protect that tree, because whoever can write
the tree can delete the rule.
"""

from __future__ import annotations

from pathlib import Path

import pathspec

from kbseek.ingest.filenames import IGNORE_FILENAME, INDEX_DIRNAME

# Version-control, dependency and tool folders: never notes, often huge.
VENDOR_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
        INDEX_DIRNAME, ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
        ".idea", ".vscode", ".obsidian", ".trash", "site-packages",
    }
)  # fmt: skip


class Exclusion:
    """Decides, for a root-relative POSIX path, whether indexing should skip it."""

    def __init__(self, root: Path, exclude_dirs: tuple[str, ...] = (), index_dir: Path | None = None) -> None:
        self.root = root
        self._names = {d.strip("/") for d in exclude_dirs if "/" not in d.strip("/")}
        self._paths = {d.strip("/") for d in exclude_dirs if "/" in d.strip("/")}
        self._index_rel: str | None = None
        if index_dir is not None:
            try:
                self._index_rel = index_dir.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                self._index_rel = None
        self.ignore_file = root / IGNORE_FILENAME
        self._spec = self._load_spec()

    def _load_spec(self) -> pathspec.GitIgnoreSpec | None:
        try:
            lines = self.ignore_file.read_text(encoding="utf-8").splitlines()
        except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError, PermissionError):
            return None
        return pathspec.GitIgnoreSpec.from_lines(lines)

    def dir_reason(self, rel: str, name: str) -> str | None:
        """Why the folder at ``rel`` is skipped, or ``None`` if it is walked."""
        if name in VENDOR_DIRS:
            return "tool or vendor folder"
        if name.startswith("."):
            return "hidden folder"
        if rel == self._index_rel:
            return "the index folder"
        if name in self._names or rel in self._paths:
            return "exclude_dirs"
        if self._spec is not None and self._spec.match_file(rel + "/"):
            return IGNORE_FILENAME
        return None

    def file_reason(self, rel: str) -> str | None:
        """Why the file at ``rel`` is skipped by name, or ``None``."""
        if rel == IGNORE_FILENAME:
            return "the ignore file itself"
        if self._spec is not None and self._spec.match_file(rel):
            return IGNORE_FILENAME
        return None
