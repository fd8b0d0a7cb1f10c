"""The record of who read what: one JSON line per authenticated call (docs/decisions/0055).

- ``writer``: the file, its bounded queue and writer thread, its rotation, and reading it back;
- ``record``: what a line says, built from a call's answer, and the hooks the surfaces call.

:func:`open_recorder` is what ``serve --http`` asks for: a recorder when sign-in is configured and
``[audit]`` does not turn it off, else ``None`` (and then nothing is hooked anywhere).
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

from kbseek.audit_spec import AuditSpec
from kbseek.server.audit.record import Recorder
from kbseek.server.audit.writer import AuditWriter


def default_path(collection: str) -> Path:
    """Where the record goes when no path is set: the user's state directory, one file per
    collection served (docs/decisions/0055 says why not beside the index)."""
    return Path(platformdirs.user_state_dir("kbseek")) / "audit" / f"{collection}.jsonl"


def open_recorder(
    spec: AuditSpec, *, signed_in: bool, path: str | None, collection: str, several: bool = False
) -> Recorder | None:
    """The recorder a server with (``signed_in``) or without sign-in keeps; ``path``: ``--audit-log``."""
    if not signed_in or (not spec.enabled and path is None):
        return None
    chosen = Path(path or spec.path or default_path(collection)).expanduser().absolute()
    writer = AuditWriter(chosen, max_bytes=spec.max_bytes, files=spec.files, queue_size=spec.queue)
    return Recorder(writer, queries=spec.queries, collection=collection, several=several)
