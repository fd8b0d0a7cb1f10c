"""The checks of the machine kbseek runs on: the Python interpreter, the file watcher's inotify limits,
and free disk space beside the index."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from kbseek import __version__
from kbseek.cli.doctor.result import CheckResult

MIN_PYTHON = (3, 11)
MiB = 1024 * 1024
DISK_FAIL_BYTES = 50 * MiB
"""Below this, SQLite soon stops with "database or disk is full"."""
DISK_WARN_BYTES = 256 * MiB
"""Below this (or below twice the index size), a rebuild may run out of room."""
SYSCTL_FILE_HINT = "add the same line without 'sudo sysctl -w' to a file in /etc/sysctl.d/ to keep it"


def check_python(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> CheckResult:
    """kbseek needs 3.11+ (``tomllib``, ``datetime.UTC``).

    An older interpreter cannot import kbseek at all, so on a working install this mostly names the
    interpreter in use: the first thing to know when a host or a service runs another kbseek.
    """
    shown = ".".join(str(v) for v in version)
    if tuple(version[:2]) < MIN_PYTHON:
        return CheckResult(
            "python", "fail", f"Python {shown} is too old: kbseek needs Python 3.11 or newer",
            "install Python 3.11 or newer and reinstall kbseek with it "
            "(for example pipx install kbseek --python python3.11)",
        )  # fmt: skip
    return CheckResult("python", "ok", f"Python {shown}, kbseek {__version__} ({sys.executable})")


def check_watcher(root: Path, proc: Path = Path("/proc"), platform: str = sys.platform) -> CheckResult:
    """Will the file watcher start? On Linux it needs one inotify watch per folder, within per-user limits.

    Every folder counts, tool folders (``.git``, ``node_modules``) included: the watcher registers the
    whole tree and filters events afterwards. Without a watcher kbseek still works (a stat scan before
    each call), so a shortfall is a warning, not a failure.
    """
    try:
        import watchfiles  # noqa: F401
    except ImportError as exc:
        return CheckResult(
            "watcher", "warn", f"package watchfiles cannot be imported ({exc}); edits are seen only by the "
            "stat scan before each call", "reinstall kbseek (pip install --force-reinstall kbseek)",
        )  # fmt: skip
    if not platform.startswith("linux"):
        return CheckResult("watcher", "ok", "this system's file events have no per-folder limit")
    max_watches = _read_int(proc / "sys/fs/inotify/max_user_watches")
    max_instances = _read_int(proc / "sys/fs/inotify/max_user_instances")
    if max_watches is None or max_instances is None:
        return CheckResult("watcher", "skip", f"cannot read the inotify limits under {proc}/sys/fs/inotify")
    folders = count_folders(root, stop_after=max_watches + 1)
    instances_used, watches_used = _inotify_usage(proc)
    room = max_watches - watches_used
    counted = f"{folders}{'+' if folders > max_watches else ''}"
    detail = (
        f"{counted} folders to watch (one inotify watch each); max_user_watches {max_watches} "
        f"({watches_used} in use by your processes), "
        f"max_user_instances {max_instances} ({instances_used} in use)"
    )
    if folders > room:
        suggest = _suggest_limit(watches_used + folders)
        return CheckResult(
            "watcher", "warn",
            f"{detail}: too few watches left, so the watcher will stop and edits are seen only by the stat "
            "scan before each call",
            f"sudo sysctl -w fs.inotify.max_user_watches={suggest} ({SYSCTL_FILE_HINT}), or exclude big "
            "folders by moving them out of the knowledge base",
        )  # fmt: skip
    if instances_used >= max_instances:
        return CheckResult(
            "watcher", "warn", f"{detail}: no inotify instance left for the watcher",
            f"sudo sysctl -w fs.inotify.max_user_instances={max(1024, max_instances * 2)} "
            f"({SYSCTL_FILE_HINT}), "
            "or close other programs that watch files",
        )  # fmt: skip
    return CheckResult("watcher", "ok", detail)


def check_disk(index_dir: Path) -> CheckResult:
    """Free space on the disk that holds (or will hold) the index; a rebuild needs about twice its size."""
    place = existing_ancestor(index_dir)
    try:
        free = shutil.disk_usage(place).free
    except OSError as exc:
        return CheckResult("disk", "skip", f"cannot measure free space at {place}: {exc}")
    size = _folder_bytes(index_dir)
    detail = f"{human_bytes(free)} free beside {index_dir} (index {human_bytes(size)})"
    fix = "free some space on that disk, or move the index with --index-dir DIR (or KBSEEK_INDEX_DIR)"
    if free < DISK_FAIL_BYTES:
        return CheckResult(
            "disk", "fail", f"{detail}: indexing will stop with 'database or disk is full'", fix
        )
    if free < max(DISK_WARN_BYTES, 2 * size):
        return CheckResult(
            "disk", "warn", f"{detail}: a rebuild (--reembed, an upgrade) may run out of room", fix
        )
    return CheckResult("disk", "ok", detail)


def existing_ancestor(path: Path) -> Path:
    path = path.expanduser().absolute()
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(path.anchor)


def _folder_bytes(folder: Path) -> int:
    try:
        return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    except OSError:
        return 0


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


def _suggest_limit(needed: int) -> int:
    """A round limit with headroom: twice what is needed, at least the common 524288."""
    limit = 524_288
    while limit < 2 * needed:
        limit *= 2
    return limit


def count_folders(root: Path, stop_after: int | None = None) -> int:
    """Folders under ``root``, itself included, not following links; stops early past ``stop_after``."""
    count = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        count += 1
        if stop_after is not None and count >= stop_after:
            return count
        try:
            with os.scandir(folder) as entries:
                stack.extend(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            continue
    return count


def _own_pids(proc: Path) -> Iterator[Path]:
    uid = os.getuid() if hasattr(os, "getuid") else None
    try:
        entries = list(proc.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            if uid is None or entry.stat().st_uid == uid:
                yield entry
        except OSError:
            continue


def _inotify_usage(proc: Path) -> tuple[int, int]:
    """(instances, watches) of inotify in use by this user's processes, from ``/proc/PID/fdinfo``.

    The limits are per user, so an editor or a sync client that already holds most of them is
    the usual reason a watcher cannot start even though the knowledge base itself is small.
    """
    instances = watches = 0
    for pid in _own_pids(proc):
        try:
            fds = list((pid / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) != "anon_inode:inotify":
                    continue
                info = (pid / "fdinfo" / fd.name).read_text(encoding="ascii", errors="replace")
            except OSError:
                continue
            instances += 1
            watches += sum(1 for line in info.splitlines() if line.startswith("inotify wd:"))
    return instances, watches
