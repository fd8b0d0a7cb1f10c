"""What ``[audit]`` says: the record of who read what, kept by ``serve --http`` with sign-in.

A server that takes bearer tokens knows who asks; the record answers "who read this document last
week" (docs/decisions/0055). This value holds the settings only, checked when the file is read; the
server's ``server/audit/`` writes the record. Lives in the settings layer beside ``config`` (which
lists it in ``SECTIONS``), as ``auth_spec`` does, because the config file is read below the surfaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kbseek.errors import ConfigError

MAX_BYTES = 10_000_000
"""A file is rotated past this size: a day of a busy team's reads, opened quickly in any editor."""
FILES = 5
"""Files kept, the one being written included: at most ``FILES × MAX_BYTES`` on disk."""
QUEUE = 10_000
"""Records waiting for the writer at most; past it a record is dropped and counted, never waited for."""


@dataclass(frozen=True)
class AuditSpec:
    """The ``[audit]`` table. Every check is made here, so a typo fails at start naming the key."""

    enabled: bool = True
    """Whether a server with sign-in configured (``[auth]``, ``--auth-token``, ``--token-env``)
    records each authenticated call. A server without sign-in records nothing: it knows no caller."""
    path: str | None = None
    """The record's file (``~`` expanded; absolute, so a service started from another directory
    writes the same file). Unset: ``audit/<collection>.jsonl`` in the user's state directory
    (``~/.local/state/kbseek`` on Linux), never beside the notes. Also ``serve --audit-log``."""
    queries: bool = False
    """Whether a search's query text (and a prompt's question) is recorded too. Off: the record says
    who read which documents, not what they were asking."""
    max_bytes: int = MAX_BYTES
    """A file is rotated (``audit.jsonl`` → ``audit.jsonl.1`` …) once it would grow past this size."""
    files: int = FILES
    """Files kept, the current one included; the oldest is removed when another is started."""
    queue: int = QUEUE
    """Records waiting to be written at most; a record past it is dropped and counted, so a slow disk
    never slows a search. The count is said in the server's log and in the record itself."""

    def __post_init__(self) -> None:
        if self.path is not None:
            if not isinstance(self.path, str) or not self.path.strip():
                raise ConfigError(f"[audit].path must be a file's path, not {self.path!r}")
            if not Path(self.path).expanduser().is_absolute():
                raise ConfigError(f"[audit].path must be absolute (or start with ~): {self.path!r}")
        if self.max_bytes < 1024:
            raise ConfigError("[audit].max_bytes must be at least 1024")
        if not 1 <= self.files <= 1000:
            raise ConfigError("[audit].files must be between 1 and 1000")
        if not 1 <= self.queue <= 10_000_000:
            raise ConfigError("[audit].queue must be between 1 and 10000000")
