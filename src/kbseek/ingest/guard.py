"""The one function that loads a document for a reader (D5, T8), and the one way kbseek reads a file.

``get_document`` and resource reads both come here (:func:`load_document`), and
indexing reads every file through :func:`read_regular_file`: the same checks,
without the parser, so nothing is indexed that a read would refuse.

What the scan checked by ``stat`` is checked again at read time, on descriptors: every folder on
the path is opened relative to its parent without following a link, the file is opened without
following a link and tied to that folder, and the open descriptor must be a regular file with one
link. At most the size cap is read from it, whatever size it claimed. So a folder or file swapped
for a link, or a file hard-linked or grown, between the scan (or any check) and the read cannot
widen what is served: it is refused with a :class:`~kbseek.errors.DocumentRefused` that says why.
Where the OS cannot open relative to a folder without following links (Windows), the path is
resolved and checked, then opened, and the descriptor is checked the same way.

A path names its file exactly as search returned it (:func:`literal_path`: a leading blank or a
backslash is part of a name), and only failing that as an agent may have typed it
(:func:`relative_path`). Whether a path is *indexed* is not this module's question:
``get_document`` may read any registered file under the root (D1); the resource surface adds its
own servable-set check on top.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kbseek.errors import (
    DocumentNotFound,
    DocumentRefused,
    DocumentTooLarge,
    LinkRefused,
    NotARegularFile,
    NotText,
    PathOutsideRoot,
    UnsupportedExtension,
)
from kbseek.ingest.parsers import Registry, raw_size_limit
from kbseek.ingest.parsers.unreadable import reason_for, too_large


@dataclass(frozen=True)
class LoadedDocument:
    path: str
    """Root-relative POSIX path."""
    text: str
    media_type: str
    size: int
    parser: str
    digest: str = ""
    """The SHA-256 (hex) of the bytes read, as the index records a document's ``content_hash``: what
    a read tells an agent that may edit the note (``kbseek.write.hashes``)."""


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
    Surrounding blanks are trimmed and ``\\`` is read as ``/``, the forms a person
    or an agent types; :func:`literal_path` is the reading that keeps them.
    """
    return _joined(path.strip().replace("\\", "/"), path)


def literal_path(path: str) -> str:
    """``path`` read as the scan names files: only ``/`` separates folders and nothing is trimmed.

    A name that starts or ends with a blank, or holds a backslash (a plain character on POSIX), is
    kept as it is, so every path search returns names its own file. On Windows, where no name
    holds a backslash or ends with a blank, ``\\`` separates too and trailing blanks are trimmed.
    Empty and ``.`` segments and a leading ``/`` are dropped as :func:`relative_path` drops them;
    ``..`` is refused the same way.
    """
    return _joined(path if os.sep == "/" else path.rstrip().replace("\\", "/"), path)


def _joined(cleaned: str, path: str) -> str:
    if "\x00" in path:
        raise PathOutsideRoot("the path contains a NUL character", path)
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathOutsideRoot(
            f"the path {_shown(path)} uses '..' to climb out of its folder; give a path relative to the "
            "knowledge-base root, as returned by search",
            path,
        )
    if not parts:
        raise NotARegularFile(f"the path {_shown(path)} names the knowledge-base root, not a document", path)
    return "/".join(parts)


def load_document(
    root: Path, path: str, registry: Registry, *, max_bytes: int, exact: bool = False
) -> LoadedDocument:
    """Load and decode one document, or raise the :class:`~kbseek.errors.DocumentRefused` that says why not.

    ``path`` is read literally first (:func:`literal_path`), as search returns it; if no document is
    there, it is read as typed (:func:`relative_path`: `` a.md``, ``a\\b.md`` for ``a/b.md``).
    ``exact`` is for a path as the index lists it: read as it is, with no second reading.
    """
    rel = literal_path(path)
    try:
        return _load(root, rel, path, registry, max_bytes)
    except (DocumentNotFound, UnsupportedExtension):
        if exact:
            raise
        typed = relative_path(path)
        if typed == rel:
            raise
    return _load(root, typed, path, registry, max_bytes)


def read_regular_file(
    root: Path, rel: str, *, max_bytes: int, max_file_bytes: int | None = None, parser: str | None = None
) -> RawFile:
    """The bytes of the file at ``rel``, under the same checks as :func:`load_document`.

    This is how indexing reads a file, so that what is indexed passed the very checks a read
    passes: no symlink anywhere on the path, not hard-linked, a regular file, at most
    ``max_bytes`` read, all decided on the descriptor the bytes come from. The scan checked most of
    this by ``stat`` already; reading through here closes the gap between that scan and the read.

    ``rel`` is a root-relative POSIX path as the scan lists it, taken literally (an argument from
    outside goes through :func:`literal_path` first). Extension and decoding are the caller's:
    the indexer reports those in the words of ``parsers.unreadable``. ``max_bytes`` is the parser's raw
    size limit (``parsers.raw_size_limit``); ``max_file_bytes`` and ``parser``, when it differs, let a
    refusal say which limit it is. Raises a :class:`~kbseek.errors.DocumentRefused` subclass, or
    ``OSError`` for an I/O failure.
    """
    fd, st = _open(root, rel, rel)
    try:
        return _read_capped(fd, st, rel, rel, max_bytes, max_file_bytes, parser)
    finally:
        os.close(fd)


def _load(root: Path, rel: str, path: str, registry: Registry, max_bytes: int) -> LoadedDocument:
    fd, st = _open(root, rel, path)
    try:
        parser = registry.for_path(rel)
        if parser is None:
            if (unopened := registry.unopened_reason(rel)) is not None:  # what the index lists for it
                raise UnsupportedExtension(f"{_shown(rel)} cannot be read: {unopened}", path)
            allowed = ", ".join(sorted(registry.extensions))
            raise UnsupportedExtension(
                f"{_shown(rel)} has an extension no active parser opens; readable extensions: {allowed}", path
            )
        limit = raw_size_limit(parser, max_bytes)
        raw = _read_capped(fd, st, rel, path, limit, max_bytes, parser.name)
    finally:
        os.close(fd)
    try:
        text = parser.decode(raw.data)
    except (UnicodeDecodeError, ValueError) as exc:
        # The very sentence the index lists for this file when a pass skipped it (parsers.unreadable).
        raise NotText(f"{_shown(rel)} cannot be read: {reason_for(exc)}", path) from None
    return LoadedDocument(
        rel, text, parser.media_type, len(raw.data), parser.name, hashlib.sha256(raw.data).hexdigest()
    )


# -- opening: every folder without following a link, then the file --------------------------------

_WALK = (
    hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
    and os.open in os.supports_dir_fd
    and os.stat in os.supports_dir_fd
)
"""Whether each folder on a path can be opened relative to its parent without following a link
(POSIX). Where not (Windows), the path is resolved and checked, then opened: :func:`_open_by_path`."""

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)
_OPEN_ATTEMPTS = 3
"""Walks before a path whose file keeps changing under it is refused (an editor's save replaces the
file; a second walk sees the new one)."""
_READ_STEP = 1 << 20


def _open(root: Path, rel: str, path: str) -> tuple[int, os.stat_result]:
    """A descriptor on the file at ``rel``, reached inside the root without following any link, and
    its ``fstat``, checked (:func:`_check_descriptor`); the caller closes it.

    ``path`` is the argument as the caller gave it, carried into the errors.
    """
    parts = _checked_parts(rel, path)
    root_real = os.path.realpath(root)
    opening = _open_beneath if _WALK else _open_by_path
    for _ in range(_OPEN_ATTEMPTS):
        if (opened := opening(root_real, rel, parts, path)) is not None:
            break
    else:
        raise LinkRefused(
            f"{_shown(rel)} kept changing while it was opened (a folder on its path was replaced, for "
            "example by a symlink), so it was not read; try again",
            path,
        )
    fd, st = opened
    try:
        _check_descriptor(st, rel, path)
    except BaseException:
        os.close(fd)
        raise
    return opened


def _checked_parts(rel: str, path: str) -> list[str]:
    """The names along ``rel``; refused if one climbs or could not be a file name at all."""
    parts = rel.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise PathOutsideRoot(f"{_shown(rel)} has an empty, '.' or '..' segment; paths never climb", path)
        try:
            os.fsencode(part)
        except UnicodeEncodeError:
            raise DocumentNotFound(
                f"no file can be at {_shown(rel)}: the name {_shown(part)} holds a character no file name "
                "can hold (an unpaired surrogate); pass the path exactly as search returns it",
                path,
            ) from None
    return parts


def _open_beneath(root_real: str, rel: str, parts: list[str], path: str) -> tuple[int, os.stat_result] | None:
    """Walk from the root one folder at a time, each opened relative to its parent with ``O_NOFOLLOW``.

    A folder swapped for a link before or during the walk is refused here. The file itself is then
    opened by its path with ``O_NOFOLLOW`` and tied to the walked folder by device and inode: if a
    folder on the path was swapped after the walk, what opened is not the file in that folder, and
    ``None`` says to walk again (the next walk meets the link and refuses it). A file replaced as it
    is opened (an editor's save) is ``None`` too, and the next walk opens the new one.
    """
    try:  # the configured root itself may be reached through a link: it is where the user pointed
        folder = os.open(root_real, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise _os_refusal(exc, rel, path, name=None) from None
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=folder)
            except OSError as exc:
                raise _walk_refusal(exc, folder, name, root_real, parts[: i + 1], rel, path) from None
            os.close(folder)
            folder = inner
        name = parts[-1]
        try:
            entry = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError as exc:
            raise _walk_refusal(exc, folder, name, root_real, parts, rel, path) from None
        _check_entry(entry, root_real, parts, rel, path)
        fd = _open_file(os.path.join(root_real, *parts), rel, path)
        try:
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        if (st.st_dev, st.st_ino) != (entry.st_dev, entry.st_ino):
            os.close(fd)
            return None
        return fd, st
    finally:
        os.close(folder)


def _open_by_path(root_real: str, rel: str, parts: list[str], path: str) -> tuple[int, os.stat_result] | None:
    """Without ``dir_fd``: resolve the path and refuse it unless no link is on it, open it, then
    resolve it again and refuse it unless it still has no link; ``None`` if it no longer names what
    was opened (replaced meanwhile: look again).

    A folder swapped for a link before the open and left so is caught by the second look; one
    swapped and swapped back between the two looks is not: that window is what ``dir_fd`` closes.
    """
    candidate = os.path.join(root_real, *parts)
    entry = _resolved_entry(candidate, root_real, parts, rel, path)
    _check_entry(entry, root_real, parts, rel, path)
    fd = _open_file(candidate, rel, path)
    try:
        st = os.fstat(fd)
        again = _resolved_entry(candidate, root_real, parts, rel, path)
    except BaseException:
        os.close(fd)
        raise
    if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        return None
    return fd, st


def _resolved_entry(candidate: str, root_real: str, parts: list[str], rel: str, path: str) -> os.stat_result:
    """``lstat`` of ``candidate``, refused if resolving it meets a link (on the path, or the file itself)."""
    try:
        real = os.path.realpath(candidate)
        entry = os.lstat(candidate)
    except OSError as exc:
        raise _os_refusal(exc, rel, path, name=None) from None
    if os.path.normcase(real) != os.path.normcase(candidate):
        raise _link_refusal(root_real, parts, rel, path)
    return entry


def _check_entry(entry: os.stat_result, root_real: str, parts: list[str], rel: str, path: str) -> None:
    """Refuse, before opening it, a name that is a link, a folder or anything but a regular file."""
    if stat.S_ISLNK(entry.st_mode):
        raise _link_refusal(root_real, parts, rel, path)
    if stat.S_ISDIR(entry.st_mode):
        raise _folder_refusal(rel, path)
    if not stat.S_ISREG(entry.st_mode):
        raise NotARegularFile(f"{_shown(rel)} is not a regular file", path)


def _open_file(candidate: str, rel: str, path: str) -> int:
    try:
        return os.open(candidate, _FILE_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW met a link (EMLINK on the BSDs)
            raise LinkRefused(f"{_shown(rel)} became a symlink; links are not followed", path) from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise DocumentNotFound(f"no file at {_shown(rel)} (it was removed just now)", path) from None
        raise _os_refusal(exc, rel, path, name=None) from None


def _walk_refusal(
    exc: OSError, folder: int, name: str, root_real: str, parts: list[str], rel: str, path: str
) -> DocumentRefused:
    """What a failed step of the walk means: a link, a file where a folder should be, nothing there …"""
    if exc.errno in (errno.ENOTDIR, errno.ELOOP, errno.EMLINK):
        try:
            entry = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            entry = None
        if entry is not None and stat.S_ISLNK(entry.st_mode):
            return _link_refusal(root_real, parts, rel, path)
    return _os_refusal(exc, rel, path, name=name)


def _os_refusal(exc: OSError, rel: str, path: str, *, name: str | None) -> DocumentRefused:
    """An ``OSError`` met while locating ``rel`` as a refusal that says what was wrong, never a traceback."""
    if exc.errno == errno.ENOENT:
        return DocumentNotFound(
            f"no file at {_shown(rel)} under the knowledge-base root; check the path (search returns valid paths)",
            path,
        )
    if exc.errno == errno.ENOTDIR:
        return DocumentNotFound(f"no file at {_shown(rel)}: a parent of it is a file, not a folder", path)
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return LinkRefused(f"{_shown(rel)} passes through a symlink; links are not followed", path)
    if exc.errno == errno.ENAMETOOLONG:
        if name is None:
            what = f"the path is {len(os.fsencode(rel))} bytes"
        elif name == rel:
            what = f"that name is {len(os.fsencode(name))} bytes"
        else:
            what = f"the name {_shown(name)} in it is {len(os.fsencode(name))} bytes"
        return DocumentNotFound(
            f"no file can be at {_shown(rel)}: {what}, longer than the file system allows; "
            "pass the path exactly as search returns it",
            path,
        )
    if exc.errno in (errno.EILSEQ, errno.EINVAL):
        return DocumentNotFound(
            f"no file can be at {_shown(rel)}: the file system refuses that name ({exc.strerror}); "
            "pass the path exactly as search returns it",
            path,
        )
    return NotARegularFile(f"{_shown(rel)} cannot be opened: {exc.strerror}", path)


def _link_refusal(root_real: str, parts: list[str], rel: str, path: str) -> DocumentRefused:
    """A link on the path: said as outside the root when it leads there, else as a link."""
    try:
        real = os.path.realpath(os.path.join(root_real, *parts))
        outside = os.path.commonpath([root_real, real]) != root_real
    except (OSError, ValueError):
        outside = True
    if outside:
        return PathOutsideRoot(
            f"{_shown(rel)} resolves to a location outside the knowledge-base root (through a symlink); "
            "only files inside the root can be read",
            path,
        )
    return LinkRefused(
        f"{_shown(rel)} is or passes through a symlink; links are not followed, read the target's own path",
        path,
    )


def _folder_refusal(rel: str, path: str) -> NotARegularFile:
    return NotARegularFile(
        f"{_shown(rel)} is a folder, not a document; use list_topics or search with path_prefix to see "
        "what it holds",
        path,
    )


# -- reading: the descriptor's own checks, and never more than the cap ----------------------------


def _check_descriptor(st: os.stat_result, rel: str, path: str) -> None:
    """What was opened, checked on its descriptor's ``fstat``: a regular file with one link."""
    if stat.S_ISDIR(st.st_mode):
        raise _folder_refusal(rel, path)
    if not stat.S_ISREG(st.st_mode):
        raise NotARegularFile(f"{_shown(rel)} is not a regular file", path)
    if st.st_nlink > 1:
        raise LinkRefused(
            f"{_shown(rel)} has {st.st_nlink} hard links; hard-linked files are refused because another "
            "name for the same data may live outside the root",
            path,
        )


def _read_capped(
    fd: int,
    st: os.stat_result,
    rel: str,
    path: str,
    max_bytes: int,
    max_file_bytes: int | None = None,
    parser: str | None = None,
) -> RawFile:
    """At most ``max_bytes`` from ``fd``: refused by its size first, and if it grew, after one byte more.

    The size ``fstat`` reported is not trusted to bound the read: a file that grows after it is
    read only up to the cap, and then refused. ``max_file_bytes`` (``max_bytes`` when not given) and
    ``parser`` word the refusal when ``max_bytes`` is a parser's own raw size limit.
    """
    configured = max_bytes if max_file_bytes is None else max_file_bytes
    if st.st_size > max_bytes:
        reason = too_large(st.st_size, max_bytes, configured, parser)
        raise DocumentTooLarge(f"{_shown(rel)} cannot be read: {reason}", path)
    pieces: list[bytes] = []
    left = max_bytes + 1
    while left > 0:
        piece = os.read(fd, min(left, _READ_STEP))
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
    data = b"".join(pieces)
    if len(data) > max_bytes:
        reason = too_large(None, max_bytes, configured, parser)
        raise DocumentTooLarge(f"{_shown(rel)} cannot be read: {reason}", path)
    return RawFile(data, st.st_size, st.st_mtime_ns)


def _shown(name: str) -> str:
    """``name`` quoted for a message; a very long one is cut in the middle, with its length."""
    if len(name) <= 120:
        return repr(name)
    return f"{name[:60] + '…' + name[-20:]!r} ({len(name)} characters)"
