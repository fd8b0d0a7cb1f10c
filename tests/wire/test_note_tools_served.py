"""Writing notes through the installed server: over stdio with ``--allow-write`` (the SDK's own stdio
client), and over HTTP with sign-in, where writing needs the write scope."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from kbseek.write.trail import TRAIL_NAME
from tests.conftest import installed_script
from tests.wire.serving import free_port, wait_healthy

pytestmark = pytest.mark.anyio

NOTE = "# Zebra cache\n\nWarm the zebracache before each launch.\n"
READER, WRITER = "reader-static-secret-01", "writer-static-secret-02"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def write_and_find(client: Client) -> tuple[dict[str, Any], list[str]]:
    made = await client.call_tool("write_note", {"path": "inbox/zebra.md", "content": NOTE})
    assert not made.is_error, made.content
    found = await client.call_tool("search", {"query": "zebracache"})
    return made.structured_content or {}, [h["path"] for h in (found.structured_content or {})["hits"]]


async def test_over_stdio_a_note_written_is_found_by_the_next_search(kb_root: Path) -> None:
    params = StdioServerParameters(
        command=installed_script(),
        args=["serve", "--kb", str(kb_root), "--allow-write", "--lexical-only", "--no-watch"],
        env={**os.environ},
    )  # fmt: skip
    with (kb_root.parent / "stdio.err").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            made, paths = await write_and_find(client)
    assert paths[0] == "inbox/zebra.md" and made["searchable"]
    assert (kb_root / "inbox/zebra.md").read_text(encoding="utf-8") == NOTE


async def test_over_http_writing_needs_the_write_scope(kb_root: Path, tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "kbseek.toml"
    config.write_text(
        '[auth]\ntokens = ["reader=KB_READER", "writer=KB_WRITER kb:read kb:write"]\n', encoding="utf-8"
    )
    command = [
        installed_script(), "serve", "--kb", str(kb_root), "--config", str(config), "--allow-write", "--lexical-only",
        "--no-watch", "--http", "--port", str(port),
    ]  # fmt: skip
    env = {**os.environ, "KB_READER": READER, "KB_WRITER": WRITER}
    with (tmp_path / "serve.err").open("wb") as err, subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=err, env=env
    ) as proc:  # fmt: skip
        try:
            wait_healthy(port, proc)
            url = f"http://127.0.0.1:{port}/mcp"
            for token in (READER, WRITER):
                http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
                async with http, Client(streamable_http_client(url, http_client=http)) as client:
                    if token == READER:
                        refused = await client.call_tool(
                            "write_note", {"path": "inbox/zebra.md", "content": NOTE}
                        )
                        assert (
                            refused.is_error and (refused.structured_content or {})["code"] == "not_allowed"
                        )
                        assert not (kb_root / "inbox").exists()
                    else:
                        _, paths = await write_and_find(client)
                        assert paths[0] == "inbox/zebra.md"
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    trails = list(kb_root.rglob(TRAIL_NAME))
    assert trails and '"client": "token:writer"' in trails[0].read_text(encoding="utf-8")
