"""Sign-in on a team's reader: ``serve --http --read-only --store postgresql://…`` without the files,
behind the same gate and the same collection rules as a server beside its folder."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests import postgres_server
from tests.auth_issuer import Issuer, running_issuer
from tests.conftest import installed_script
from tests.wire.serving import free_port, request, wait_healthy
from tests.wire.test_team import index

pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")

pytestmark = pytest.mark.anyio

OPS, GUEST = "ops-static-secret-0123", "guest-static-secret-4567"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Reader:
    base: str
    resource: str
    name: str
    issuer: Issuer
    log: Path


@contextmanager
def signed_in_reader(kb_root: Path, tmp_path: Path) -> Iterator[Reader]:
    name = postgres_server.kb_name("signin")
    store = ["--store", postgres_server.url(), "--kb-name", name]
    index(kb_root, store)
    config = tmp_path / "kbseek.toml"
    config.write_text(
        f'[auth]\ntokens = ["ops=KB_OPS", "guest=KB_GUEST"]\n[auth.collections]\n"token:ops" = ["{name}"]\n'
        f'support = ["{name}"]\n',
        encoding="utf-8",
    )
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    log = tmp_path / "stderr.log"
    with running_issuer() as issuer:
        command = [
            installed_script(), "serve", "--http", "--read-only", *store, "--lexical-only", "--port", str(port),
            "--config", str(config), "--auth-issuer", issuer.url, "--auth-resource", resource,
        ]  # fmt: skip
        env = {**os.environ, "KB_OPS": OPS, "KB_GUEST": GUEST}
        with (
            log.open("wb") as stderr,
            subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env) as proc,
        ):
            try:
                wait_healthy(port, proc)
                yield Reader(f"http://127.0.0.1:{port}", resource, name, issuer, log)
            finally:
                proc.terminate()
                proc.wait(timeout=20)


async def test_a_reader_without_the_files_checks_tokens_and_collections_as_a_server_beside_them(
    kb_root: Path, tmp_path: Path
) -> None:
    with signed_in_reader(kb_root, tmp_path) as reader:
        allowed = reader.issuer.token(reader.resource, groups=["support"])
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {allowed}"}, timeout=30)
        async with http, Client(streamable_http_client(f"{reader.base}/mcp", http_client=http)) as client:
            result = await client.call_tool("search", {"query": "rollback"})
        assert result.structured_content["hits"], "the reader serves the writer's index to the support group"
        status, _, body = request(f"{reader.base}/api/search?q=rollback", {"Authorization": f"Bearer {OPS}"})
        assert status == 200 and body["hits"]

        status, headers, body = request(f"{reader.base}/api/search?q=rollback")
        assert (
            status == 401
            and "resource_metadata=" in {k.lower(): v for k, v in headers.items()}["www-authenticate"]
        )
        wrong = reader.issuer.token("https://elsewhere.example/mcp", groups=["support"])
        status, _, _ = request(f"{reader.base}/api/search?q=rollback", {"Authorization": f"Bearer {wrong}"})
        assert status == 401
        for token in (reader.issuer.token(reader.resource, groups=["marketing"]), GUEST):
            for path, data in (("/api/status", None), ("/mcp", b"{}")):
                headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
                status, answer_headers, body = request(reader.base + path, headers, data)
                assert status == 403
                assert reader.name not in str(body) + str(answer_headers)
        said = reader.log.read_text(encoding="utf-8")
        assert "(no_collection)" in said and "(audience)" in said
