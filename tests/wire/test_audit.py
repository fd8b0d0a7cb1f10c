"""The record of who read what, from the installed server with sign-in, through the SDK's streamable
HTTP client and the HTTP JSON API (docs/decisions/0055)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.auth_issuer import Issuer, running_issuer
from tests.conftest import installed_script
from tests.wire.serving import free_port, request, wait_healthy

pytestmark = pytest.mark.anyio

STATIC = "ci-static-secret-audit-0123"
QUERY = "rollback"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Served:
    port: int
    resource: str
    issuer: Issuer
    audit: Path
    stderr: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def records(self, at_least: int) -> list[dict[str, Any]]:
        """The record's lines once ``at_least`` are written (the writer is a thread of its own)."""
        deadline = time.monotonic() + 20
        while True:
            lines = self.audit.read_text(encoding="utf-8").splitlines() if self.audit.exists() else []
            if len(lines) >= at_least or time.monotonic() > deadline:
                return [json.loads(line) for line in lines]
            time.sleep(0.05)


@contextmanager
def serving(kb_root: Path, tmp_path: Path, issuer: Issuer, *, audit: str = "") -> Iterator[Served]:
    """``serve --http`` with an issuer, the static token ``ci`` and ``[audit]`` as given."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    config = tmp_path / "kbseek.toml"
    config.write_text(f'[auth]\ntokens = ["ci=KB_CI_TOKEN"]\n\n[audit]\n{audit}\n', encoding="utf-8")
    record, stderr = tmp_path / "audit" / "reads.jsonl", tmp_path / "stderr.log"
    command = [
        installed_script(), "serve", "--kb", str(kb_root), "--config", str(config), "--lexical-only", "--no-watch",
        "--http", "--port", str(port), "--auth-issuer", issuer.url, "--auth-resource", resource,
        "--audit-log", str(record),
    ]  # fmt: skip
    with stderr.open("wb") as err, subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "KB_CI_TOKEN": STATIC}
    ) as proc:  # fmt: skip
        try:
            wait_healthy(port, proc)
            yield Served(port, resource, issuer, record, stderr)
        finally:
            proc.terminate()
            proc.wait(timeout=20)


async def read_over_mcp(served: Served, token: str) -> dict[str, Any]:
    """A search, a fetch of its first hit, a get_document and a resource read: what each returned."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client:
        hits = (await client.call_tool("search", {"query": QUERY})).structured_content["hits"]
        fetched = await client.call_tool("fetch", {"chunk_ids": [hits[0]["chunk_id"]]})
        document = await client.call_tool("get_document", {"path": "notes/plain.txt"})
        missing = await client.call_tool("get_document", {"path": "nowhere.md"})
        await client.read_resource("kb://doc/runbooks/deploy.md")
        with pytest.raises(Exception):  # noqa: B017 - not found, in whichever form the client raises it
            await client.read_resource("kb://doc/nowhere.md")
    assert not document.is_error and missing.is_error
    return {"hits": [h["path"] for h in hits], "passages": fetched.structured_content["passages"]}


async def test_each_call_is_one_line_naming_the_caller_the_tool_and_the_paths(
    kb_root: Path, tmp_path: Path
) -> None:
    with running_issuer() as issuer, serving(kb_root, tmp_path, issuer) as served:
        token = issuer.token(served.resource)
        answered = await read_over_mcp(served, STATIC)
        await read_over_mcp(served, token)
        assert request(f"{served.base}/api/search?q={QUERY}", {"Authorization": f"Bearer {STATIC}"})[0] == 200
        assert (
            request(f"{served.base}/api/document?path=notes/plain.txt", {"Authorization": f"Bearer {token}"})[
                0
            ]
            == 200
        )
        assert request(f"{served.base}/api/search?q={QUERY}", {"Authorization": "Bearer wrong"})[0] == 401
        assert request(f"{served.base}/api/search?q={QUERY}")[0] == 401  # no credential: nothing recorded
        records = served.records(15)
    assert len(records) == 15, records
    static = [r for r in records if r["credential"] == "ci"]
    assert [r["tool"] for r in static] == [
        "search", "fetch", "get_document", "get_document", "resources/read", "resources/read", "/api/search",
    ]  # fmt: skip
    search, fetch, document, missing, resource, unread, api = static
    assert search["paths"] == answered["hits"] and search["outcome"] == "ok"
    assert fetch["paths"] == [p["path"] for p in answered["passages"]]
    assert document["paths"] == ["notes/plain.txt"] and document["collection"] == kb_root.name
    assert missing["outcome"] == "DocumentNotFound" and missing["paths"] == []
    assert resource["paths"] == ["runbooks/deploy.md"] and resource["outcome"] == "ok"
    assert unread["paths"] == [] and unread["outcome"] == "NotServable"  # the error class
    assert api["paths"] == answered["hits"]
    assert search["client"] == "ci" and search["method"] == "static" and search["subject"] is None
    oauth = [r for r in records if r["method"] == "jwt"]
    assert [r["tool"] for r in oauth] == [
        "search", "fetch", "get_document", "get_document", "resources/read", "resources/read", "/api/document",
    ]  # fmt: skip
    assert {r["subject"] for r in oauth} == {"alice"} and oauth[-1]["paths"] == ["notes/plain.txt"]
    assert records[-1]["outcome"] == "refused" and records[-1]["subject"] is None
    assert all(time_utc(r["time"]) for r in records)
    raw = served.audit.read_text(encoding="utf-8")
    assert STATIC not in raw and token not in raw and "wrong" not in raw  # never a token
    assert QUERY not in raw and "query" not in raw  # nor what was asked, unless the operator says so
    assert "descaling" not in raw  # nor a document's text
    assert oct(served.audit.stat().st_mode & 0o777) == oct(0o600)


def time_utc(text: str) -> bool:
    return text.endswith("Z") and "T" in text


async def test_with_queries_on_the_query_is_recorded(kb_root: Path, tmp_path: Path) -> None:
    with running_issuer() as issuer, serving(kb_root, tmp_path, issuer, audit="queries = true") as served:
        await read_over_mcp(served, STATIC)
        assert request(f"{served.base}/api/search?q=deploy", {"Authorization": f"Bearer {STATIC}"})[0] == 200
        records = served.records(7)  # six MCP calls and the /api search, the last written last
    assert records[0]["query"] == QUERY and records[-1]["query"] == "deploy"
    assert "query" not in records[1]  # a fetch asks nothing


async def test_without_sign_in_nothing_is_recorded(kb_root: Path, tmp_path: Path) -> None:
    port = free_port()
    record = tmp_path / "reads.jsonl"
    command = [
        installed_script(), "serve", "--kb", str(kb_root), "--lexical-only", "--no-watch", "--http",
        "--port", str(port), "--audit-log", str(record),
    ]  # fmt: skip
    stderr = tmp_path / "stderr.log"
    with stderr.open("wb") as err, subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err) as proc:
        try:
            wait_healthy(port, proc)
            assert request(f"http://127.0.0.1:{port}/api/search?q={QUERY}")[0] == 200
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    assert not record.exists()
    assert "nothing is recorded without sign-in" in stderr.read_text(encoding="utf-8")
