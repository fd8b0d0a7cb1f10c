"""The checks of a SQLite index: the file and its schema, the folder's modes, and the writer lock."""

from __future__ import annotations

import os
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

from kbseek.cli.doctor.result import CheckResult, index_verdict
from kbseek.cli.doctor.system import existing_ancestor
from kbseek.config import Settings
from kbseek.errors import IndexIncompatible
from kbseek.facade.paths import INDEX_FILENAME, POSIX_MODES, resolve_index_dir, wider_than_private
from kbseek.store.lock import WriterLock
from kbseek.store.sqlite.schema import SCHEMA_VERSION, inspect_index, updated_in_place
from kbseek.text.plurals import counted


def check_index(settings: Settings, model_id: str | None, index_command: str) -> CheckResult:
    """Open the index read-only: does it exist, is its schema this kbseek's, do its vectors fit the model?

    ``index_command`` is the ``kbseek index …`` line to suggest, built from the user's own options.
    """
    index_dir = resolve_index_dir(settings)
    db = index_dir / INDEX_FILENAME
    if not db.is_file():
        ancestor = existing_ancestor(index_dir)
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
    return index_verdict(
        summary, recorded=recorded, model_id=model_id, vectorless=not recorded and chunks > 0,
        documents=documents, run=lambda extra: f"run `{index_command}{extra}`",
    )  # fmt: skip


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
