"""Streamable HTTP: the installed script serving /mcp to a real MCP client, behind its guard."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.conftest import installed_script

pytestmark = pytest.mark.anyio

TOKEN = "test-token-123"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def _serve(kb_root: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[int]:
    port = _free_port()
    with subprocess.Popen(
        [installed_script(), "serve", "--kb", str(kb_root), "--lexical-only", "--no-watch", "--http", "--port", str(port), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})},
    ) as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    if _get(f"http://127.0.0.1:{port}/healthz")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.1)
            yield port
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@pytest.fixture
def http_port(kb_root: Path) -> Iterator[int]:
    yield from _serve(kb_root)


@pytest.fixture
def token_port(kb_root: Path) -> Iterator[int]:
    yield from _serve(kb_root, "--token-env", "KB_TEST_TOKEN", env={"KB_TEST_TOKEN": TOKEN})


async def test_a_real_client_searches_over_streamable_http(http_port: int) -> None:
    async with Client(f"http://127.0.0.1:{http_port}/mcp") as client:
        hits: list = []
        for _ in range(100):  # the catch-up pass runs in the background
            hits = (await client.call_tool("search", {"query": "rollback"})).structured_content["hits"]
            if hits:
                break
            await anyio.sleep(0.1)
    assert hits and hits[0]["path"] == "runbooks/deploy.md"


def test_healthz_answers(http_port: int) -> None:
    assert _get(f"http://127.0.0.1:{http_port}/healthz") == (200, {"status": "ok"})


def test_a_foreign_host_or_origin_is_refused_naming_the_header_without_echoing_it(http_port: int) -> None:
    status, body = _get(f"http://127.0.0.1:{http_port}/mcp", {"Host": "evil.example:80"})
    assert status == 403 and "Host header" in body["error"] and "evil" not in body["error"]
    status, body = _get(f"http://127.0.0.1:{http_port}/mcp", {"Origin": "http://evil.example"})
    assert status == 403 and "Origin header" in body["error"] and "evil" not in body["error"]


def test_with_a_token_configured_mcp_without_it_is_401(token_port: int) -> None:
    status, body = _get(f"http://127.0.0.1:{token_port}/mcp")
    assert status == 401 and "bearer token" in body["error"]
    assert _get(f"http://127.0.0.1:{token_port}/healthz")[0] == 200
