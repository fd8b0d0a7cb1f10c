"""Streamable HTTP: the installed script serving /mcp to real MCP clients, behind its guard."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import installed_script
from tests.wire.serving import free_port, get, request, serving

pytestmark = pytest.mark.anyio

TOKEN = "test-token-123"
INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}).encode()  # fmt: skip
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def http_port(kb_root: Path) -> Iterator[int]:
    with serving(kb_root, "--no-watch") as port:
        yield port


@pytest.fixture
def token_port(kb_root: Path) -> Iterator[int]:
    with serving(kb_root, "--no-watch", "--token-env", "KB_TEST_TOKEN", env={"KB_TEST_TOKEN": TOKEN}) as port:
        yield port


async def search_paths(client: Client, query: str) -> list[str]:
    result = await client.call_tool("search", {"query": query, "limit": 20})
    return [h["path"] for h in result.structured_content["hits"]]


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
    assert get(f"http://127.0.0.1:{http_port}/healthz") == (200, {"status": "ok"})


def test_a_foreign_host_or_origin_is_refused_naming_the_header_without_echoing_it(http_port: int) -> None:
    status, body = get(f"http://127.0.0.1:{http_port}/mcp", {"Host": "evil.example:80"})
    assert status == 403 and "Host header" in body["error"] and "evil" not in body["error"]
    status, body = get(f"http://127.0.0.1:{http_port}/mcp", {"Origin": "http://evil.example"})
    assert status == 403 and "Origin header" in body["error"] and "evil" not in body["error"]


def test_with_a_token_configured_mcp_without_it_is_401(token_port: int) -> None:
    status, body = get(f"http://127.0.0.1:{token_port}/mcp")
    assert status == 401 and "bearer token" in body["error"]
    assert get(f"http://127.0.0.1:{token_port}/healthz")[0] == 200


async def test_with_the_token_a_client_is_served_and_the_web_api_is_guarded_too(token_port: int) -> None:
    base = f"http://127.0.0.1:{token_port}"
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
        assert (await client.call_tool("index_status", {})).structured_content["root"]
    assert get(f"{base}/api/search?q=rollback")[0] == 401
    assert get(f"{base}/api/search?q=rollback", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    assert get(f"{base}/ui")[0] != 401  # the page itself holds no data; it asks for the token


def test_a_request_body_over_the_cap_is_413(kb_root: Path) -> None:
    with serving(kb_root, "--no-watch", "--max-body-bytes", "4096") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        assert request(url, MCP_HEADERS, INITIALIZE)[0] == 200
        padded = json.loads(INITIALIZE)
        padded["params"]["clientInfo"]["name"] = "x" * 10_000
        status, _, _ = request(url, MCP_HEADERS, json.dumps(padded).encode())
        assert status == 413


def test_past_the_session_cap_a_new_session_is_429_with_retry_after(kb_root: Path) -> None:
    with serving(kb_root, "--no-watch", "--max-sessions", "2") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        sessions = []
        for _ in range(2):
            status, headers, _ = request(url, MCP_HEADERS, INITIALIZE)
            assert status == 200
            sessions.append({k.lower(): v for k, v in headers.items()}["mcp-session-id"])
        status, headers, body = request(url, MCP_HEADERS, INITIALIZE)
        assert status == 429
        assert int({k.lower(): v for k, v in headers.items()}["retry-after"]) > 0
        assert "sessions" in json.dumps(body)
        closing = urllib.request.Request(url, method="DELETE", headers={"mcp-session-id": sessions[0]})
        with urllib.request.urlopen(closing, timeout=30) as response:
            assert response.status == 200
        assert request(url, MCP_HEADERS, INITIALIZE)[0] == 200  # the closed session's place is free


async def wait_until(check: Callable[[], Awaitable[bool]], timeout: float = 2.0) -> float:
    """Poll ``check()`` until true; the seconds it took. Fails after ``timeout``."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > timeout:
            pytest.fail(f"not reflected within {timeout} s")
        await anyio.sleep(0.05)
    return time.monotonic() - started


async def test_changes_during_a_live_session_show_in_search_within_two_seconds(kb_root: Path) -> None:
    with serving(kb_root) as port:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await wait_until(lambda: _has(client, "load balancer", "runbooks/deploy.md"), timeout=30)
            new = kb_root / "notes" / "zeppelin.md"
            new.write_text("# Airships\n\nThe zeppelin hangar opens at dawn.\n", encoding="utf-8")
            await wait_until(lambda: _has(client, "zeppelin", "notes/zeppelin.md"))

            new.write_text("# Airships\n\nThe dirigible hangar opens at dusk.\n", encoding="utf-8")
            await wait_until(lambda: _has(client, "dirigible", "notes/zeppelin.md"))

            new.rename(kb_root / "notes" / "airship.md")
            await wait_until(lambda: _has(client, "dirigible", "notes/airship.md", gone="notes/zeppelin.md"))

            (kb_root / "notes" / "airship.md").unlink()
            await wait_until(lambda: _missing(client, "dirigible"))

            (kb_root / "runbooks").rename(kb_root / "playbooks")
            await wait_until(
                lambda: _has(client, "load balancer", "playbooks/deploy.md", gone="runbooks/deploy.md")
            )


async def _has(client: Client, query: str, path: str, gone: str | None = None) -> bool:
    paths = await search_paths(client, query)
    return path in paths and (gone is None or gone not in paths)


async def _missing(client: Client, query: str) -> bool:
    return not await search_paths(client, query)


async def test_two_clients_search_while_a_500_file_batch_is_indexed(kb_root: Path) -> None:
    with serving(kb_root) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url) as a, Client(url) as b:
            await wait_until(lambda: _has(a, "load balancer", "runbooks/deploy.md"), timeout=30)
            before = (await a.call_tool("index_status", {})).structured_content["documents"]
            body = "\n\n".join(
                f"## Part {k}\n\n" + " ".join(f"word{k}x{j}" for j in range(120)) for k in range(4)
            )
            batch = kb_root / "batch"
            batch.mkdir()
            for i in range(500):
                (batch / f"note-{i:03}.md").write_text(
                    f"# Batch note {i}\n\nmarker{i}\n\n{body}\n", encoding="utf-8"
                )
            seen_indexing = False
            answered = 0

            async def searcher(client: Client) -> None:
                nonlocal seen_indexing, answered
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    result = await client.call_tool("search", {"query": "load balancer"})
                    assert not result.is_error
                    data = result.structured_content
                    assert "runbooks/deploy.md" in [h["path"] for h in data["hits"]]
                    answered += 1
                    seen_indexing |= data["index"]["indexing"]
                    if data["index"]["documents"] == before + 500 and not data["index"]["indexing"]:
                        return

            async with anyio.create_task_group() as tg:
                tg.start_soon(searcher, a)
                tg.start_soon(searcher, b)
            assert seen_indexing, "the searches never overlapped the indexing pass"
            assert answered > 4
            assert await _has(b, "marker499", "batch/note-499.md")


def test_a_non_loopback_address_needs_allow_remote_and_then_warns(kb_root: Path) -> None:
    base = [installed_script(), "serve", "--kb", str(kb_root), "--lexical-only", "--no-watch", "--http"]
    refused = subprocess.run([*base, "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "--allow-remote" in refused.stderr
    port = free_port()
    with subprocess.Popen(
        [*base, "--host", "0.0.0.0", "--port", str(port), "--allow-remote"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            assert proc.stderr is not None
            assert "reachable from other machines" in proc.stderr.readline()
        finally:
            proc.terminate()
            proc.wait(timeout=20)
