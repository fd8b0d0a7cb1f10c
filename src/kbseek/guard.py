"""The one function that loads a document for a reader (D5, T8), and the one way kbseek reads a file.

``get_document`` and resource reads both come here (:func:`load_document`), and
indexing reads every file through :func:`read_regular_file`: the same checks,
without the parser, so nothing is indexed that a read would refuse.
Containment is decided after resolving symlinks; the file is checked on the
same open descriptor it is read from, so swapping the file for a link between
check and read cannot widen what is served. Whether a path is *indexed* is not
this module's question: ``get_document`` may read any registered file under the
root (D1); the resource surface adds its own servable-set check on top.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

from kbseek.errors import (
    DocumentNotFound,
    DocumentTooLarge,
    LinkRefused,
    NotARegularFile,
    NotText,
    PathOutsideRoot,
    UnsupportedExtension,
)
from kbseek.ingest.parsers import Registry


@dataclass(frozen=True)
class LoadedDocument:
    path: str
    """Root-relative POSIX path."""
    text: str
    media_type: str
    size: int
    parser: str


@dataclass(frozen=True)
class RawFile:
    """The bytes of one regular file and what ``fstat`` said of the descriptor they were read from."""

    data: bytes
    size: int
    mtime_ns: int


def relative_path(path: str) -> str:
    """Normalise an argument to a root-relative POSIX path, refusing traversal.

    An absolute-looking argument (``/notes/a.md``) is taken relative to the
    root: agents often prefix a slash, and the root is the only place we look.
    """
    if "\x00" in path:
        raise PathOutsideRoot("the path contains a NUL character", path)
    cleaned = path.strip().replace("\\", "/")
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathOutsideRoot(
            f"the path {path!r} uses '..' to climb out of its folder; give a path relative to the "
            "knowledge-base root, as returned by search",
            path,
        )
    if not parts:
        raise NotARegularFile(f"the path {path!r} names the knowledge-base root, not a document", path)
    return posixpath.join(*parts)


def load_document(root: Path, path: str, registry: Registry, *, max_bytes: int) -> LoadedDocument:
    """Load and decode one document, or raise the :class:`~kbseek.errors.DocumentRefused` that says why not."""
    rel = relative_path(path)
    candidate = _locate(root, rel, path)
    parser = registry.for_path(rel)
    if parser is None:
        allowed = ", ".join(sorted(registry.extensions))
        raise UnsupportedExtension(
            f"{rel!r} has an extension no active parser opens; readable extensions: {allowed}", path
        )
    raw = _read_checked(candidate, rel, path, max_bytes)
    try:
        text = parser.decode(raw.data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotText(f"{rel!r} is not readable as {parser.media_type} text ({exc})", path) from None
    return LoadedDocument(rel, text, parser.media_type, len(raw.data), parser.name)


def read_regular_file(root: Path, rel: str, *, max_bytes: int) -> RawFile:
    """The bytes of the file at ``rel``, under the same checks as :func:`load_document`.

    This is how indexing reads a file, so that what is indexed passed the very checks a read
    passes: contained after resolving links, not a symlink, not hard-linked, a regular file within
    ``max_bytes``, all decided on the descriptor the bytes come from. The scan checked most of this
    by ``stat`` already; reading through here closes the gap between that scan and the read.

    ``rel`` is a root-relative POSIX path as the scan lists it, taken literally (an argument from
    outside goes through :func:`relative_path` first). Extension and decoding are the caller's:
    the indexer reports those in its own words. Raises a
    :class:`~kbseek.errors.DocumentRefused` subclass, or ``OSError`` for an I/O failure.
    """
    return _read_checked(_locate(root, rel, rel), rel, rel, max_bytes)


def _locate(root: Path, rel: str, path: str) -> str:
    """The absolute path of ``rel``, refused unless it is inside the root and neither a link nor a folder.

    ``path`` is the argument as the caller gave it, carried into the errors.
    """
    root_real = os.path.realpath(root)
    candidate = os.path.join(root_real, *rel.split("/"))
    real = os.path.realpath(candidate)
    if os.path.commonpath([root_real, real]) != root_real:
        raise PathOutsideRoot(
            f"{rel!r} resolves to a location outside the knowledge-base root (through a symlink); "
            "only files inside the root can be read",
            path,
        )
    try:
        lst = os.lstat(candidate)
    except FileNotFoundError:
        raise DocumentNotFound(
            f"no file at {rel!r} under the knowledge-base root; check the path (search returns valid paths)",
            path,
        ) from None
    except NotADirectoryError:
        raise DocumentNotFound(f"no file at {rel!r}: a parent of it is a file, not a folder", path) from None
    if stat.S_ISLNK(lst.st_mode) or real != candidate:
        raise LinkRefused(
            f"{rel!r} is or passes through a symlink; links are not followed, read the target's own path",
            path,
        )
    if stat.S_ISDIR(lst.st_mode):
        raise NotARegularFile(
            f"{rel!r} is a folder, not a document; use list_topics or search with path_prefix to see what it holds",
            path,
        )
    return candidate


def _read_checked(candidate: str, rel: str, path: str, max_bytes: int) -> RawFile:
    """Open without following a link, check the open descriptor, and read from that same descriptor.

    Checking the descriptor rather than the name is what makes the checks hold for the bytes read:
    a file swapped for a link or another file after :func:`_locate` is caught here.
    """
    try:
        fd = os.open(candidate, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise DocumentNotFound(f"no file at {rel!r} (it was removed just now)", path) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW met a link (EMLINK on the BSDs)
            raise LinkRefused(f"{rel!r} became a symlink; links are not followed", path) from None
        raise NotARegularFile(f"{rel!r} cannot be opened: {exc.strerror}", path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(f"{rel!r} is not a regular file", path)
        if st.st_nlink > 1:
            raise LinkRefused(
                f"{rel!r} has {st.st_nlink} hard links; hard-linked files are refused because another "
                "name for the same data may live outside the root",
                path,
            )
        if st.st_size > max_bytes:
            raise DocumentTooLarge(
                f"{rel!r} is {st.st_size} bytes, over the read cap of {max_bytes} bytes (max_file_bytes)",
                path,
            )
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise DocumentTooLarge(f"{rel!r} grew over the read cap of {max_bytes} bytes while being read", path)
    return RawFile(data, st.st_size, st.st_mtime_ns)
