"""The system calls a safe write needs that ``os`` does not offer, each with a way to tell it is missing.

- ``renameat2`` (Linux 3.15+): ``RENAME_EXCHANGE`` swaps two names atomically, so a replace can look
  at what it displaced and put it back; ``RENAME_NOREPLACE`` renames only onto a free name. Reached
  through libc (glibc 2.28+, musl) or, failing that, the raw system call; where neither exists, or
  the file system refuses the flag (``EINVAL``), the caller takes its portable path.
- ``O_TMPFILE``: a file with no name in a folder, written and synced, then given its name by
  ``linkat`` through ``/proc/self/fd``, so a half-written note never has a name at all.
- Read leases (``F_SETLEASE``, Linux): while one is held, another process's ``open`` of the file
  for writing (or a truncate) waits and the holder sees it pending. An editor that saves in place
  (``open('wb')``, write, close) cannot slip a save in while a replace compares and swaps.
  The lease-break signal is pointed at ``SIGURG``, which is ignored by default, and the owner is
  cleared at once, so a break never signals the process: it is seen by asking (:func:`lease_broken`).
- ``flock``: a writer holds a shared lock on every file it may leave under a temporary name, and
  the sweep of leftovers removes only files it can lock exclusively: those of a process that died.
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import errno
import fcntl
import os
import platform
import signal
import sys
from collections.abc import Callable

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2

_SYSCALL_NUMBERS = {
    "x86_64": 316, "amd64": 316, "aarch64": 276, "arm64": 276, "riscv64": 276, "loongarch64": 276,
    "i386": 353, "i686": 353, "armv7l": 382, "armv6l": 382, "ppc64le": 357, "ppc64": 357, "s390x": 347,
}  # fmt: skip
"""``renameat2``'s number where libc has no wrapper (glibc before 2.28)."""

_F_SETLEASE = getattr(fcntl, "F_SETLEASE", 1024)
_F_GETLEASE = getattr(fcntl, "F_GETLEASE", 1025)
_F_SETSIG = getattr(fcntl, "F_SETSIG", 10)
_F_RDLCK = getattr(fcntl, "F_RDLCK", 0)
_F_UNLCK = getattr(fcntl, "F_UNLCK", 2)
_LEASES = sys.platform.startswith("linux")
_PROC_FD = "/proc/self/fd"


class Unsupported(OSError):
    """The call does not exist here, or the file system refuses it: take the portable path."""


def _load_renameat2() -> Callable[[int, bytes, int, bytes, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    wrapper = getattr(libc, "renameat2", None)
    if wrapper is not None:
        wrapper.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        wrapper.restype = ctypes.c_int
        return lambda a, b, c, d, f: int(wrapper(a, b, c, d, f))
    number = _SYSCALL_NUMBERS.get(platform.machine().lower())
    raw = getattr(libc, "syscall", None)
    if number is None or raw is None:
        return None
    raw.restype = ctypes.c_long

    def call(a: int, b: bytes, c: int, d: bytes, f: int) -> int:
        return int(
            raw(
                ctypes.c_long(number),
                ctypes.c_int(a),
                ctypes.c_char_p(b),
                ctypes.c_int(c),
                ctypes.c_char_p(d),
                ctypes.c_uint(f),
            )
        )

    return call


_RENAMEAT2 = _load_renameat2()


def renameat2(src_dir: int, src: str, dst_dir: int, dst: str, flags: int) -> None:
    """``renameat2(2)``; :class:`Unsupported` where it is missing or the file system refuses ``flags``."""
    if _RENAMEAT2 is None:
        raise Unsupported(errno.ENOSYS, "renameat2 is not available")
    if _RENAMEAT2(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), flags) == 0:
        return
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        raise Unsupported(code, os.strerror(code))
    raise OSError(code, os.strerror(code), src, None, dst)


def exchange(dir_fd: int, a: str, b: str) -> None:
    """Swap the names ``a`` and ``b`` in one folder atomically: each now names the other's file."""
    renameat2(dir_fd, a, dir_fd, b, RENAME_EXCHANGE)


def rename_noreplace(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    """Rename onto a free name only (``FileExistsError`` otherwise), atomically; the portable
    fallback is ``link`` then ``unlink``, which is exclusive too but shows the file under both
    names for a moment."""
    try:
        renameat2(src_dir, src, dst_dir, dst, RENAME_NOREPLACE)
        return
    except Unsupported:
        pass
    os.link(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir, follow_symlinks=False)
    os.unlink(src, dir_fd=src_dir)


# -- files with no name yet -------------------------------------------------------------------------


def open_tmpfile(dir_fd: int, mode: int) -> int | None:
    """A nameless file open for writing in the folder ``dir_fd``, or ``None`` where ``O_TMPFILE``
    (or ``/proc``, through which it is later named) is not there."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir(_PROC_FD):
        return None
    try:
        return os.open(".", flag | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # a file system without O_TMPFILE
        raise


def link_tmpfile(fd: int, dir_fd: int, name: str) -> None:
    """Give the nameless file ``fd`` the name ``name`` in ``dir_fd``; ``FileExistsError`` if taken.

    ``linkat`` never replaces a name, so this is the exclusive create: the file appears complete
    under its name, or not at all.
    """
    os.link(f"{_PROC_FD}/{fd}", name, dst_dir_fd=dir_fd, follow_symlinks=True)


def reopen_readonly(fd: int) -> int:
    """A second, read-only descriptor on ``fd``'s file (a lease needs one; a nameless file has no path)."""
    return os.open(f"{_PROC_FD}/{fd}", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))


# -- leases -------------------------------------------------------------------------------------------


class Lease(enum.Enum):
    """What asking for a read lease gave."""

    HELD = "held"
    BUSY = "busy"
    """Another process has the file open for writing right now."""
    UNAVAILABLE = "unavailable"
    """Not here: another system, a file system without leases, or a file this user does not own."""


def take_read_lease(fd: int) -> Lease:
    """A read lease on ``fd`` (opened read-only): from now on an open of its file for writing waits
    until the lease is released (at most ``/proc/sys/fs/lease-break-time``), and :func:`lease_broken`
    says one is waiting."""
    if not _LEASES:
        return Lease.UNAVAILABLE
    try:
        fcntl.fcntl(fd, _F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, _F_SETLEASE, _F_RDLCK)
    except OSError as exc:
        return Lease.BUSY if exc.errno == errno.EAGAIN else Lease.UNAVAILABLE
    fcntl.fcntl(fd, fcntl.F_SETOWN, 0)  # no signal at a break: it is asked for
    return Lease.HELD


def lease_broken(fd: int) -> bool:
    """Whether a process is waiting to open the leased file for writing (or to truncate it), or
    already has it open for writing (the lease could not be renewed)."""
    try:
        if fcntl.fcntl(fd, _F_GETLEASE) != _F_RDLCK:
            return True
        fcntl.fcntl(fd, _F_SETLEASE, _F_RDLCK)  # renewing checks for writers the break did not reach yet
    except OSError:
        return True
    fcntl.fcntl(fd, fcntl.F_SETOWN, 0)
    return False


def release_lease(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETLEASE, _F_UNLCK)


# -- locks and syncing -----------------------------------------------------------------------------


def hold_shared(fd: int) -> None:
    """A shared ``flock``: this file is in use by a live writer (released when the descriptor closes)."""
    fcntl.flock(fd, fcntl.LOCK_SH)


def try_exclusive(fd: int) -> bool:
    """Whether no live process holds a lock on ``fd``'s file (an exclusive ``flock`` was had)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
    return True


def fsync_folder(dir_fd: int) -> None:
    """Make a folder's names durable (a rename or link survives a power cut); ignored where the
    file system cannot sync a folder."""
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
