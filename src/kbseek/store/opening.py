"""Which store holds a knowledge base's index: a SQLite file beside the notes, or PostgreSQL.

The choice is the one place that knows both backends; everything above it holds a ``Store``. The
PostgreSQL backend is an extra (``pip install 'kbseek[postgres]'``), imported only when a URL asks
for it, so the default install neither needs nor loads its driver.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from kbseek.errors import ConfigError
from kbseek.store.base import Store
from kbseek.store.lock import PassLock, WriterLock
from kbseek.store.sqlite.store import SqliteStore

__all__ = ["is_database_url", "kb_name_of", "open_store", "writer_lock"]

MAX_NAME = 48
"""Schema names stay well below PostgreSQL's 63 bytes, leaving room for a prefix."""


def is_database_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database rather than a file: the one test, for the
    configuration and for ``kbseek store copy --to``."""
    return text.startswith(("postgresql://", "postgres://"))


def kb_name_of(root: Path) -> str:
    """A schema-safe name from the folder's name: ``~/Notes/Team Docs`` → ``team_docs``.

    A name with nothing ASCII in it (``ノート``) becomes ``kb_`` and a short hash of it, so two such
    folders still get two names; ``--kb-name`` or ``[store].name`` gives a readable one instead.
    """
    base = re.sub(r"[^a-z0-9]+", "_", root.name.lower()).strip("_")[:MAX_NAME]
    if not base:
        return "kb_" + hashlib.sha256(root.name.encode("utf-8")).hexdigest()[:12]
    return base if base[0].isalpha() else f"kb_{base}"[:MAX_NAME]


def writer_lock(store: Store, index_dir: Path) -> PassLock:
    """What keeps a second writer of this index out for a whole pass: the database's own lock for an
    index in PostgreSQL (writers on two machines share nothing else), the lock file beside a SQLite one."""
    return store.pass_lock if store.pass_lock is not None else WriterLock(index_dir)


def open_store(url: str | None, *, sqlite_file: Path, kb_name: str, read_only: bool) -> Store:
    """PostgreSQL when ``url`` is given (the knowledge base's schema ``kb_name`` in it), else the
    SQLite file ``sqlite_file``."""
    if url is None:
        return SqliteStore(sqlite_file, create=not read_only)
    try:
        from kbseek.store.postgres.store import PostgresStore
    except ImportError as exc:
        raise ConfigError(
            f"[store].url names PostgreSQL, but its driver is not installed ({exc.name or exc}): "
            "pip install 'kbseek[postgres]'"
        ) from exc
    return PostgresStore(url, kb_name, create=not read_only)
