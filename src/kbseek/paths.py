"""Where a knowledge base's index lives, and what is in that folder.

The index is derived data, so it lives beside the notes (``<root>/.kbseek``) where a person
expects to find and delete it, with a ``.gitignore`` that keeps a knowledge base under git clean.
A knowledge base the user cannot write (a mounted share, a checkout owned by someone else) is still
searchable: its index falls back to the user cache directory, under a name derived from the root so
two such knowledge bases never share one. ``--index-dir`` overrides both.

Nothing here creates anything until :func:`prepare_index_dir` is called, because ``kbseek status``
and ``kbseek get`` must be able to look at a knowledge base without leaving a trace in it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import platformdirs

from kbseek.config import Settings
from kbseek.filenames import INDEX_DIRNAME

INDEX_FILENAME = "index.sqlite"
"""The SQLite file inside the index folder."""


def resolve_index_dir(settings: Settings) -> Path:
    """``--index-dir`` if given, else ``<root>/.kbseek``, else (read-only KB) the user cache dir."""
    if settings.index_dir is not None:
        return settings.index_dir
    inside = settings.root / INDEX_DIRNAME
    if inside.is_dir() and os.access(inside, os.W_OK):
        return inside
    if not inside.exists() and os.access(settings.root, os.W_OK):
        return inside
    digest = hashlib.sha256(str(settings.root).encode()).hexdigest()[:16]
    return Path(platformdirs.user_cache_dir("kbseek")) / f"{settings.root.name}-{digest}"


def index_file(index_dir: Path) -> Path:
    """The index database inside ``index_dir``."""
    return index_dir / INDEX_FILENAME


def prepare_index_dir(path: Path) -> None:
    """Create the index folder, with a ``.gitignore`` of ``*`` so the derived index is never committed."""
    path.mkdir(parents=True, exist_ok=True)
    gitignore = path / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text("*\n", encoding="utf-8")
