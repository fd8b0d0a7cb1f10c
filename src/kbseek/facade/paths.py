"""Where a knowledge base's index lives, and what is in that folder.

The index is derived data, so it lives beside the notes (``<root>/.kbseek``) where a person
expects to find and delete it, with a ``.gitignore`` that keeps a knowledge base under git clean.
A knowledge base the user cannot write (a mounted share, a checkout owned by someone else) is still
searchable: its index falls back to the user cache directory, under a name derived from the root so
two such knowledge bases never share one. ``--index-dir`` overrides both.

Nothing here creates anything until :func:`prepare_index_dir` is called, because ``kbseek status``
and ``kbseek get`` must be able to look at a knowledge base without leaving a trace in it.

The index is private, whatever the umask and whatever the knowledge base's own modes: it holds the
text of every note, and a copy outside the notes (``--index-dir``, the cache fallback) must not be
readable by anyone the notes themselves were closed to. So the index folder, and each folder made
on the way to it, is created ``0700``, and every file kbseek writes in it ``0600``
(:data:`PRIVATE_DIR_MODE`, :data:`PRIVATE_FILE_MODE`; the store and the writer lock create theirs
so, and SQLite gives ``-wal`` and ``-shm`` the database file's mode). An index folder made wider
before (by an older kbseek, or by hand) is tightened when kbseek opens it to write, if the user owns
it, and the log says so; ``kbseek doctor`` warns about whatever is still open to others. Group and
other bits are the only thing looked at, and only on POSIX systems: on Windows a mode only says
read-only, and the folder's access lists decide who reads it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from dataclasses import replace
from pathlib import Path

import platformdirs

from kbseek.config import Settings
from kbseek.errors import ConfigError, IndexReadOnly
from kbseek.ingest.copying import CopyReport, copy_index
from kbseek.ingest.filenames import INDEX_DIRNAME
from kbseek.search.ann import wants_approximate
from kbseek.search.store_vectors import offers_nearest
from kbseek.store.base import Store
from kbseek.store.lock import LOCK_FILENAME
from kbseek.store.opening import is_database_url, kb_name_of, open_store

log = logging.getLogger(__name__)

INDEX_FILENAME = "index.sqlite"
"""The SQLite file inside the index folder."""

PRIVATE_DIR_MODE = 0o700
"""The mode of an index folder kbseek creates: its owner only."""
PRIVATE_FILE_MODE = 0o600
"""The mode of every file kbseek creates in the index folder: its owner only."""
OPEN_TO_OTHERS = 0o077
"""Group and other permission bits: an index folder or file with any of them is wider than private."""
POSIX_MODES = os.name != "nt"
"""Whether file modes mean anything here (on Windows ``chmod`` only toggles read-only)."""

_INDEX_FILE_NAMES = frozenset({".gitignore", LOCK_FILENAME, "eval-last.json"})
_INDEX_FILE_PREFIXES = (INDEX_FILENAME, "vectors", ".vectors-")
"""The database with its ``-wal``/``-shm``/``-journal`` files, and the approximate vector index's
``vectors.json``, ``vectors-*.usearch`` and their temporary ``.vectors-*.tmp`` files."""


def files_of(settings: Settings) -> Path:
    """The folder of notes; refused on a server that reads a database index without the files."""
    if settings.root is None:
        raise IndexReadOnly(
            "this server reads an index kept in a database and has no folder of notes; index on the "
            f"machine that has the files: `kbseek index --kb PATH --store URL --kb-name {settings.kb_name}`"
        )
    return settings.root


def check_reader(settings: Settings, *, read_only: bool) -> None:
    """A knowledge base without a folder only reads a database index, and must say which one.

    Raises :class:`ConfigError` naming the option that is missing, before anything is opened.
    """
    if settings.root is not None:
        return
    if not read_only:
        raise ConfigError(
            "no knowledge-base folder given: pass --kb PATH (or kb in the config) to index the notes "
            "there; a server on a machine without the files serves the database's index with --read-only"
        )
    if settings.kb_name is None:
        raise ConfigError(
            "without a folder the knowledge base's name in the database cannot be derived: pass "
            "--kb-name NAME (or set [store] name), the name the writer indexed it under"
        )


def resolve_index_dir(settings: Settings) -> Path:
    """``--index-dir`` if given, else ``<root>/.kbseek``, else (read-only KB) the user cache dir.

    A server without the folder keeps nothing of its own but may look for a folder (an evaluation's
    last run): the user cache dir, under the knowledge base's name. With the index in a database the
    notes folder gets no ``.kbseek`` either: what little is kept locally goes to the user cache dir."""
    if settings.index_dir is not None:
        return settings.index_dir
    if settings.root is None:
        return Path(platformdirs.user_cache_dir("kbseek")) / f"reader-{settings.kb_name}"
    inside = settings.root / INDEX_DIRNAME
    if settings.store_url is None and inside.is_dir() and os.access(inside, os.W_OK):
        return inside
    if settings.store_url is None and not inside.exists() and os.access(settings.root, os.W_OK):
        return inside
    digest = hashlib.sha256(str(settings.root).encode()).hexdigest()[:16]
    return Path(platformdirs.user_cache_dir("kbseek")) / f"{settings.root.name}-{digest}"


def index_file(index_dir: Path) -> Path:
    """The index database inside ``index_dir``."""
    return index_dir / INDEX_FILENAME


def prepare_index_dir(path: Path) -> None:
    """Create the index folder (``0700``), with a ``.gitignore`` of ``*`` so the derived index is never
    committed; tighten an existing one that is open to others (see the module's docstring)."""
    _make_private_dirs(path)
    tighten_index_dir(path)
    gitignore = path / ".gitignore"
    if not gitignore.exists():
        try:
            fd = os.open(gitignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
        except FileExistsError:  # another process made it meanwhile
            return
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("*\n")


def is_index_file(name: str) -> bool:
    """Whether ``name`` is one of the files kbseek writes in an index folder.

    Only these are tightened or reported: an ``--index-dir`` may hold files of the user's own.
    """
    return name in _INDEX_FILE_NAMES or name.startswith(_INDEX_FILE_PREFIXES)


def wider_than_private(index_dir: Path) -> list[tuple[Path, int, bool]]:
    """The index folder and kbseek's files in it that are open to others: ``(path, mode, owned)``.

    ``mode`` is the permission bits (``0o755``), ``owned`` whether this user owns it (and so may
    tighten it). Only looks: creates and changes nothing. Empty on Windows, or with no folder.
    """
    if not POSIX_MODES:
        return []
    uid = os.geteuid()
    found: list[tuple[Path, int, bool]] = []
    try:
        folder = index_dir.stat()
        names = sorted(os.listdir(index_dir))
    except OSError:
        return []
    if stat.S_IMODE(folder.st_mode) & OPEN_TO_OTHERS:
        found.append((index_dir, stat.S_IMODE(folder.st_mode), folder.st_uid == uid))
    for name in names:
        if not is_index_file(name):
            continue
        path = index_dir / name
        try:
            st = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) & OPEN_TO_OTHERS:
            found.append((path, stat.S_IMODE(st.st_mode), st.st_uid == uid))
    return found


def tighten_index_dir(index_dir: Path) -> list[Path]:
    """Take group and other permissions off the index folder and kbseek's files in it, where this user
    owns them; logs what changed (info) and what could not be (warning). Returns what was tightened."""
    changed: list[str] = []
    tightened: list[Path] = []
    for path, mode, owned in wider_than_private(index_dir):
        if not owned:
            log.warning(
                "%s is open to other users (mode %o) and owned by another user, so it is left as it is",
                path, mode,
            )  # fmt: skip
            continue
        new = mode & ~OPEN_TO_OTHERS
        try:
            os.chmod(path, new)
        except OSError as exc:
            log.warning("could not make %s private (mode %o): %s", path, mode, exc)
            continue
        tightened.append(path)
        changed.append(f"{'the folder' if path == index_dir else path.name} {mode:o} -> {new:o}")
    if changed:
        log.info("made the index in %s private to its owner: %s", index_dir, ", ".join(changed))
    return tightened


def _make_private_dirs(path: Path) -> None:
    """``mkdir -p`` where every folder created is ``0700`` (``Path.mkdir`` gives parents the umask's)."""
    missing: list[Path] = []
    for candidate in (path, *path.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:  # made meanwhile by another process
            continue
        if POSIX_MODES:
            os.chmod(folder, PRIVATE_DIR_MODE)  # exactly, whatever the umask took off
    path.mkdir(parents=True, exist_ok=True)  # the same errors as before when it cannot be made


def open_index(settings: Settings, index_dir: Path, *, read_only: bool) -> Store:
    """The store that holds this knowledge base's index: the PostgreSQL database ``[store].url``
    names (the knowledge base's schema in it: ``[store].name``, or one derived from the folder), or
    the SQLite file in ``index_dir``."""
    name = settings.kb_name if settings.kb_name is not None else kb_name_of(files_of(settings))
    return open_store(
        settings.store_url, sqlite_file=index_file(index_dir), kb_name=name, read_only=read_only
    )


def copy_index_to(source: Store, to: str, *, kb_name: str | None, settings: Settings) -> CopyReport:
    """``source`` copied into the empty index ``to`` names (``kbseek store copy``): a
    ``postgresql://`` URL (the schema ``kb_name`` in it), a SQLite file (a path with a suffix), or an
    index folder (``--index-dir``: an existing folder, or a path without a suffix), made if missing.
    ``kb_name`` defaults to this knowledge base's own name."""
    url = to if is_database_url(to) else None
    file = Path(to).expanduser()
    if url is None:
        if file.is_dir() or not file.suffix:
            file = index_file(file)
        file.parent.mkdir(parents=True, exist_ok=True)
    name = kb_name or settings.kb_name or kb_name_of(files_of(settings))
    target = open_store(url, sqlite_file=file, kb_name=name, read_only=False)
    try:
        report = copy_index(source, target)
        recorded = target.meta().embedding
        # A reader of the copy must not scan every vector until some writer starts: a store that
        # answers the dense leg itself gets its index now, as the writer would build it (decision 0045).
        parts = [p.dim for p in settings.embed.parts]  # a pair model's readers search in process
        if (
            recorded is not None and recorded.dim and target.nearest is not None
            and offers_nearest(target, parts) and wants_approximate(report.vectors, settings.approximate_above)
        ):  # fmt: skip
            report = replace(report, vector_index=target.nearest.build_vector_index(recorded.dim))
        if target.warming is not None:  # the copy's pages, graph included, ready for its first reader
            report = replace(report, warmed=target.warming.warm().describe())
        return report
    finally:
        target.close()
