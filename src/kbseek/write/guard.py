"""The one write guard: which paths a write may touch, next to the read guard (``kbseek.ingest.guard``).

Every write (create, replace, move, remove, restore) asks :func:`writable_path` first and then opens
the folder it writes in through :meth:`WriteTarget.open_parent`, which walks the path again at the
moment of writing. So what was checked is what is written: a folder swapped for a link between the
check and the write is refused by the walk, not followed.

**How a path is read.** As the read guard reads it (:func:`kbseek.ingest.guard.literal_path`): only
``/`` separates folders, empty and ``.`` segments are dropped, and a leading ``/`` is taken relative
to the knowledge-base root, because agents often prefix one and the root is the only place kbseek
looks; so a path search returns names the same file for a read and for a write. An absolute path of
the machine (``/home/me/kb/inbox/a.md``) is therefore read as a folder ``home`` under the root, and
refused as outside the writable folders. Writes are stricter than reads in what a *name* may be: no
backslash, no Windows drive letter or UNC prefix, no control or invisible format character, no
Windows-reserved name, no name ending in a dot or a blank, none over 255 bytes, no hidden (dot)
segment, and none of the characters Windows cannot hold (``<>:"|?*``), so a note written here
survives a sync to any machine and never hides from the index.

**What the walk refuses.** From the root, each existing folder is opened relative to its parent with
``O_NOFOLLOW | O_DIRECTORY``, as the read guard does: a symlink anywhere on the way is refused, never
followed. A missing folder at or below the writable folder the path is in may be created
(:meth:`WriteTarget.open_parent` with ``create=True``): ``mkdir`` relative to the parent's
descriptor, then opened like any other folder, so a link planted in between is refused too. The
note itself must be absent or a regular file with one link (not a symlink, not hard-linked: another
name of the same data could live outside the root).

Writing needs ``dir_fd`` and ``O_NOFOLLOW`` (Linux, macOS, the BSDs). Where the OS has neither
(Windows), the guard refuses every write with :class:`~kbseek.errors.WritesReadOnly` rather than fall
back to checking paths by name, which leaves a window a link can use.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kbseek.errors import ConfigError, NoteNotFound, NoteTooLarge, WriteNotAllowed, WritesReadOnly
from kbseek.ingest.exclusion import Exclusion

NEVER_WRITTEN = frozenset(
    {".docx", ".docm", ".doc", ".xlsx", ".xlsm", ".xlsb", ".xls", ".pptx", ".pptm", ".ppt", ".pdf"}
)
"""Office files and PDFs: kbseek reads text out of them, but writing bytes into one would break it,
so no configuration can make them writable (:class:`WritePolicy` refuses them)."""

RESERVED_NAMES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{device}{n}" for device in ("COM", "LPT") for n in (*"123456789", "¹", "²", "³")}
)
"""Device names Windows reserves, with or without an extension (``nul.md`` too): a note named so
cannot be opened there, and on a share it can name the device."""

WINDOWS_FORBIDDEN = frozenset('<>:"|?*')
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4000
"""Below Linux's 4096-byte ``PATH_MAX`` with room for the root in front of it."""

_DRIVE = re.compile(r"^[A-Za-z]:")
_JOINERS = frozenset("\u200c\u200d")
_WALK = (
    hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
    and os.open in os.supports_dir_fd
    and os.stat in os.supports_dir_fd
    and os.mkdir in os.supports_dir_fd
)
_DIR_FLAGS = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)
_ROOT_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_FOLDER_MODE = 0o777
"""Folders are created as ``mkdir`` would (the umask narrows it), like a folder the person made."""


@dataclass(frozen=True)
class WritePolicy:
    """What writes may touch under ``root``; built once from ``[write]`` and checked as it is built.

    ``folders`` are root-relative folder prefixes a note may be written in or below (``""`` is the
    whole root); ``extensions`` the names a note may end with; ``max_bytes`` the largest note;
    ``index_dir`` the index folder, never written even when it is not hidden; ``excluded`` answers,
    for a note's root-relative path, whether the knowledge base ignores it (a folder on the way is
    hidden, vendored, in ``exclude_dirs`` or ``.kbseekignore``): :func:`ignored_by` makes one from
    kbseek's own :class:`~kbseek.ingest.exclusion.Exclusion`. A note that would not be indexed is not
    written, so an agent never writes what it cannot find again.
    """

    root: Path
    folders: tuple[str, ...] = ("inbox",)
    extensions: tuple[str, ...] = (".md", ".markdown", ".txt")
    max_bytes: int = 1_000_000
    index_dir: Path | None = None
    excluded: Callable[[str], bool] | None = None

    def __post_init__(self) -> None:
        folders = tuple(_policy_folder(f) for f in self.folders)
        if not folders:
            raise ConfigError(
                '[write] folders is empty; name at least one folder writes may touch, or "" for all'
            )
        extensions = tuple(_policy_extension(e) for e in self.extensions)
        if not extensions:
            raise ConfigError('[write] extensions is empty; name at least one, for example ".md"')
        if self.max_bytes < 1:
            raise ConfigError(f"[write] max_bytes is {self.max_bytes}; give a positive number of bytes")
        object.__setattr__(self, "folders", folders)
        object.__setattr__(self, "extensions", extensions)


@dataclass(frozen=True)
class WriteTarget:
    """A path the guard accepted: where the note is, and how to reach its folder without a link.

    ``rel`` is the root-relative POSIX path, ``path`` the absolute one (under the root's real path).
    ``parts`` are the folder names from the root to the note's folder; the first ``fixed`` of them
    must exist (they are above the writable folder), the rest may be created.
    """

    rel: str
    path: Path
    root: Path
    parts: tuple[str, ...]
    name: str
    fixed: int

    def open_parent(self, *, create: bool = False) -> int:
        """A descriptor on the note's folder, reached from the root one folder at a time without
        following a link; missing folders below the writable folder are created when ``create``.

        Raises :class:`~kbseek.errors.WriteNotAllowed` for a link or a file on the way, and
        :class:`~kbseek.errors.NoteNotFound` for a missing folder that may not (or need not) be
        created. The caller closes the descriptor.
        """
        folder = _open_root(self.root, self.rel)
        try:
            for i, name in enumerate(self.parts):
                try:
                    inner = os.open(name, _DIR_FLAGS, dir_fd=folder)
                except FileNotFoundError:
                    where = _shown("/".join(self.parts[: i + 1]))
                    if i < self.fixed:
                        raise NoteNotFound(
                            f"there is no folder {where} for {_shown(self.rel)}, and writes create folders only "
                            "inside the folders they may touch; check the path",
                            self.rel,
                        ) from None
                    if not create:
                        raise NoteNotFound(
                            f"there is no folder {where} for {_shown(self.rel)}; check the path (search returns "
                            "valid paths)",
                            self.rel,
                        ) from None
                    inner = _make_folder(folder, name, self.parts[: i + 1], self.rel)
                except OSError as exc:
                    raise _walk_refusal(exc, self.parts[: i + 1], self.rel, folder) from None
                os.close(folder)
                folder = inner
            return folder
        except BaseException:
            os.close(folder)
            raise


def ignored_by(exclusion: Exclusion) -> Callable[[str], bool]:
    """``WritePolicy.excluded`` from kbseek's own exclusion rules: a note is ignored when a folder on
    its way is (tool, vendor and hidden folders, the index, ``exclude_dirs``, ``.kbseekignore``) or
    the note itself matches ``.kbseekignore``."""

    def excluded(rel: str) -> bool:
        parts = rel.split("/")
        for i in range(len(parts) - 1):
            if exclusion.dir_reason("/".join(parts[: i + 1]), parts[i]) is not None:
                return True
        return exclusion.file_reason(rel) is not None

    return excluded


def check_size(policy: WritePolicy, data: bytes, path: str) -> None:
    """Refuse a note larger than ``max_bytes`` before anything is written."""
    if len(data) > policy.max_bytes:
        raise NoteTooLarge(
            f"the note would be {len(data)} bytes, over the {policy.max_bytes}-byte limit for writes; "
            "write a shorter note or split it in several",
            path,
        )


def writable_path(policy: WritePolicy, path: str) -> WriteTarget:
    """The :class:`WriteTarget` for ``path``, or the :class:`~kbseek.errors.WriteNotAllowed` that says why not.

    Checks, in order: the path as text (:func:`_lexical`), the writable folders, the extension, the
    index folder, what the knowledge base ignores, and then the disk: every existing folder on the
    way is opened without following a link, and the note, if it exists, must be a regular file with
    one link. Nothing is created here.
    """
    if not _WALK:
        raise WritesReadOnly(
            "writing notes needs a system that opens folders without following links (Linux or macOS); "
            "edit the note with another tool on this machine",
            path,
        )
    parts = _lexical(path)
    rel = "/".join(parts)
    fixed = _writable_depth(policy, parts, path)
    _check_extension(policy, parts[-1], path)
    _check_index(policy, rel, path)
    if policy.excluded is not None and policy.excluded(rel):
        raise WriteNotAllowed(
            f"{_shown(rel)} is in a folder (or matches a rule) the knowledge base ignores, so the note "
            "could not be found again; write it in a folder that is indexed",
            path,
        )
    root = Path(os.path.realpath(policy.root))
    target = WriteTarget(rel, root.joinpath(*parts), root, tuple(parts[:-1]), parts[-1], fixed)
    _check_on_disk(target, path)
    return target


# -- the path as text ---------------------------------------------------------------------------


def _lexical(path: str) -> list[str]:
    """The segments of ``path``, refused if any could climb, hide, name a device or mislead."""
    if not isinstance(path, str) or not path.strip():
        raise WriteNotAllowed(
            "the path is empty; give the note's path relative to the knowledge-base root", str(path)
        )
    if path.startswith(("//", "\\\\")):
        raise WriteNotAllowed(
            f"{_shown(path)} is a network (UNC) path; give a path relative to the knowledge-base root", path
        )
    if "\\" in path:
        raise WriteNotAllowed(
            f"{_shown(path)} holds a backslash; separate folders with '/' and use none in a name", path
        )
    if _DRIVE.match(path.lstrip("/")):
        raise WriteNotAllowed(
            f"{_shown(path)} starts with a drive letter; give a path relative to the knowledge-base root",
            path,
        )
    if path.startswith("~"):
        raise WriteNotAllowed(
            f"{_shown(path)} starts with '~' (a home folder); give a path relative to the knowledge-base root",
            path,
        )
    if path.endswith("/"):
        raise WriteNotAllowed(f"{_shown(path)} names a folder; end the path with the note's file name", path)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        raise WriteNotAllowed(f"{_shown(path)} names the knowledge-base root; give a note's path in it", path)
    for part in parts:
        _check_segment(part, path)
    if len(os.fsencode("/".join(parts))) > MAX_PATH_BYTES:
        raise WriteNotAllowed(
            f"the path is longer than {MAX_PATH_BYTES} bytes; use shorter folder or file names", path
        )
    return parts


def _check_segment(part: str, path: str) -> None:
    if part == "..":
        raise WriteNotAllowed(
            f"{_shown(path)} uses '..' to climb out of its folder; give a path relative to the knowledge-base root",
            path,
        )
    bad = next((c for c in part if _invisible(c)), None)
    if bad is not None:
        raise WriteNotAllowed(
            f"the name {_shown(part)} holds the invisible control or format character U+{ord(bad):04X}; "
            "use only visible characters in a note's path",
            path,
        )
    try:
        size = len(part.encode("utf-8"))
    except UnicodeEncodeError:
        raise WriteNotAllowed(
            f"the name {_shown(part)} holds an unpaired surrogate, which no file name can hold; fix the text",
            path,
        ) from None
    if part.startswith("."):
        raise WriteNotAllowed(
            f"the name {_shown(part)} is hidden (starts with '.'), and hidden files and folders are never "
            "written or indexed; use a name without the leading dot",
            path,
        )
    forbidden = sorted(set(part) & WINDOWS_FORBIDDEN)
    if forbidden:
        raise WriteNotAllowed(
            f"the name {_shown(part)} holds {' '.join(forbidden)}, which Windows cannot hold in a name; "
            "replace it, for example with '-'",
            path,
        )
    if part != part.rstrip(" .") or part != part.strip():
        raise WriteNotAllowed(
            f"the name {_shown(part)} starts or ends with a blank or ends with a dot, which some systems "
            "drop silently; trim it",
            path,
        )
    if part.split(".")[0].rstrip(" ").upper() in RESERVED_NAMES:
        raise WriteNotAllowed(
            f"the name {_shown(part)} is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, "
            "LPT1-9, with any extension); choose another name",
            path,
        )
    if size > MAX_NAME_BYTES:
        raise WriteNotAllowed(
            f"the name {_shown(part)} is {size} bytes, over the {MAX_NAME_BYTES} a file name may have; shorten it",
            path,
        )


def _invisible(c: str) -> bool:
    """Control characters (C0, DEL, C1), format characters (direction marks and overrides, zero-width
    spaces, the soft hyphen, the BOM: invisible, and able to make a name read as another), line and
    paragraph separators. The zero-width joiner and non-joiner stay: emoji and Persian need them."""
    category = unicodedata.category(c)
    return category in ("Cc", "Zl", "Zp") or (category == "Cf" and c not in _JOINERS)


# -- the policy's own rules -----------------------------------------------------------------------


def _policy_folder(folder: str) -> str:
    cleaned = folder.strip().strip("/")
    if cleaned in ("", "."):
        return ""
    try:
        parts = _lexical(cleaned)
    except WriteNotAllowed as exc:
        raise ConfigError(f"[write] folders: {exc}") from None
    return "/".join(parts)


def _policy_extension(extension: str) -> str:
    cleaned = extension.strip().lower()
    if not cleaned.startswith("."):
        cleaned = "." + cleaned
    if cleaned in NEVER_WRITTEN:
        raise ConfigError(
            f"[write] extensions lists {cleaned}, a format kbseek only reads (writing bytes into it would "
            "break it); remove it"
        )
    if len(cleaned) < 2 or "/" in cleaned or any(_invisible(c) for c in cleaned):
        raise ConfigError(
            f'[write] extensions lists {extension!r}, which is not a file extension; write it as ".md"'
        )
    return cleaned


def _writable_depth(policy: WritePolicy, parts: list[str], path: str) -> int:
    """How many folders on the way must already exist: those above the writable folder the note is in."""
    folders = parts[:-1]
    best: int | None = None
    for allowed in policy.folders:
        prefix = allowed.split("/") if allowed else []
        if folders[: len(prefix)] == prefix and (best is None or len(prefix) < best):
            best = len(prefix)  # the widest writable folder the note is in decides what may be made
    if best is None:
        allowed_list = ", ".join(repr(f) if f else "the whole root" for f in policy.folders)
        raise WriteNotAllowed(
            f"{_shown('/'.join(parts))} is outside the folders writes may touch ({allowed_list}); write the "
            "note in one of them",
            path,
        )
    return max(best - 1, 0)


def _check_extension(policy: WritePolicy, name: str, path: str) -> None:
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in NEVER_WRITTEN or suffix not in policy.extensions:
        allowed = ", ".join(policy.extensions)
        raise WriteNotAllowed(
            f"{_shown(name)} does not end with an extension writes may use ({allowed}); name the note with one",
            path,
        )


def _check_index(policy: WritePolicy, rel: str, path: str) -> None:
    if policy.index_dir is None:
        return
    try:
        index_rel = Path(os.path.realpath(policy.index_dir)).relative_to(os.path.realpath(policy.root))
    except ValueError:
        return  # the index lives outside the knowledge base
    inside = index_rel.as_posix()
    if inside in ("", ".") or rel == inside or rel.startswith(inside + "/"):
        raise WriteNotAllowed(
            f"{_shown(rel)} is inside the index folder, which only kbseek writes; write the note elsewhere",
            path,
        )


# -- the disk -----------------------------------------------------------------------------------


def _check_on_disk(target: WriteTarget, path: str) -> None:
    """Walk the existing folders without following links; the note must be absent or a plain file."""
    try:
        folder = target.open_parent(create=False)
    except NoteNotFound:
        return  # a folder on the way is missing: open_parent(create=True) makes it, or refuses
    try:
        try:
            entry = os.stat(target.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _walk_refusal(exc, [*target.parts, target.name], target.rel) from None
    finally:
        os.close(folder)
    check_note_entry(entry, target.rel, path)


def check_note_entry(entry: os.stat_result, rel: str, path: str) -> None:
    """Refuse a note that is a link, not a regular file, or has another name (a hard link)."""
    if stat.S_ISLNK(entry.st_mode):
        raise WriteNotAllowed(
            f"{_shown(rel)} is a symlink, and writes never follow links; write to the file it points to "
            "by its own path",
            path,
        )
    if not stat.S_ISREG(entry.st_mode):
        raise WriteNotAllowed(
            f"{_shown(rel)} is not a regular file (a folder or a device); choose another name", path
        )
    if entry.st_nlink > 1:
        raise WriteNotAllowed(
            f"{_shown(rel)} has {entry.st_nlink} hard links, and another name of the same data may live "
            "outside the knowledge base; write a new note instead",
            path,
        )


def _open_root(root: Path, rel: str) -> int:
    try:  # the root itself may be reached through a link: it is where the user pointed
        return os.open(root, _ROOT_FLAGS)
    except OSError as exc:
        raise NoteNotFound(
            f"the knowledge-base root cannot be opened ({exc.strerror}); check that its folder exists", rel
        ) from None


def _make_folder(parent: int, name: str, parts: tuple[str, ...], rel: str) -> int:
    """``mkdir`` relative to ``parent``, then open what is there without following a link."""
    try:
        os.mkdir(name, _FOLDER_MODE, dir_fd=parent)
        with contextlib.suppress(OSError):
            os.fsync(parent)  # the new folder's name survives a power cut with the note in it
    except FileExistsError:
        pass  # made meanwhile by someone else: the open below checks what it is
    except OSError as exc:
        raise _walk_refusal(exc, list(parts), rel) from None
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        raise _walk_refusal(exc, list(parts), rel, parent) from None


def _walk_refusal(
    exc: OSError, parts: list[str] | tuple[str, ...], rel: str, parent: int | None = None
) -> WriteNotAllowed:
    """What a failed step of the walk means; ``O_NOFOLLOW | O_DIRECTORY`` on a link fails with
    ``ENOTDIR`` on Linux, so a link is told by looking at the entry (``parent`` holds it)."""
    where = _shown("/".join(parts))
    if parent is not None and exc.errno in (errno.ENOTDIR, errno.ELOOP, errno.EMLINK):
        try:
            link = stat.S_ISLNK(os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode)
        except OSError:
            link = False
        if link:
            exc = OSError(errno.ELOOP, os.strerror(errno.ELOOP))
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return WriteNotAllowed(
            f"{where} is a symlink on the way to {_shown(rel)}, and writes never follow links; write in a "
            "folder reached without one",
            rel,
        )
    if exc.errno == errno.ENOTDIR:
        return WriteNotAllowed(
            f"{where} is a file or a link, not a folder, on the way to {_shown(rel)}; choose another path",
            rel,
        )
    if exc.errno in (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL):
        return WriteNotAllowed(
            f"the file system refuses the name {where} ({exc.strerror}); choose another name", rel
        )
    return WriteNotAllowed(f"{where} cannot be opened ({exc.strerror}); check its permissions", rel)


def _shown(name: str) -> str:
    """``name`` quoted for a message; a very long one is cut in the middle, with its length."""
    if len(name) <= 120:
        return repr(name)
    return f"{name[:60] + '…' + name[-20:]!r} ({len(name)} characters)"
