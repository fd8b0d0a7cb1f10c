"""Sign-in over HTTP: the installed server as an OAuth resource server, against an issuer made in the
test (its own keys, served on loopback), through the SDK's streamable HTTP client and ``/api``."""

from __future__ import annotations

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

from kbseek.server.auth.gate import Gate
from kbseek.server.auth.identity import current_identity
from kbseek.server.auth.settings import AuthConfig, StaticCredential
from kbseek.server.http import Guard, HttpPolicy
from tests.auth_issuer import Issuer, SigningKey, running_issuer
from tests.conftest import installed_script
from tests.wire.serving import free_port, request, wait_healthy

pytestmark = pytest.mark.anyio

STATIC = "ci-static-secret-0123"
INITIALIZE = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
    b'"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}'
)
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Served:
    port: int
    resource: str
    issuer: Issuer
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def said(self) -> str:
        return self.log.read_text(encoding="utf-8")


@contextmanager
def serving_signed_in(
    kb_root: Path, tmp_path: Path, issuer: Issuer, resource: str | None = None
) -> Iterator[Served]:
    """``serve --http`` with ``[auth]`` in its config file and the issuer and resource as flags."""
    port = free_port()
    resource = resource or f"http://127.0.0.1:{port}/mcp"
    config = tmp_path / "kbseek.toml"
    config.write_text('[auth]\nkey_refetch_interval = 0.2\ntokens = ["ci=KB_CI_TOKEN"]\n', encoding="utf-8")
    log = tmp_path / "stderr.log"
    command = [
        installed_script(), "serve", "--kb", str(kb_root), "--config", str(config), "--lexical-only", "--no-watch",
        "--http", "--port", str(port), "--auth-issuer", issuer.url, "--auth-resource", resource,
    ]  # fmt: skip
    with log.open("wb") as stderr, subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=stderr, env={**os.environ, "KB_CI_TOKEN": STATIC}
    ) as proc:  # fmt: skip
        try:
            wait_healthy(port, proc)
            yield Served(port, resource, issuer, log)
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@pytest.fixture
def served(kb_root: Path, tmp_path: Path) -> Iterator[Served]:
    with running_issuer() as issuer, serving_signed_in(kb_root, tmp_path, issuer) as running:
        yield running


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def api_search(served: Served, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], dict]:
    status, response_headers, body = request(f"{served.base}/api/search?q=rollback", headers)
    return status, {k.lower(): v for k, v in response_headers.items()}, body


def mcp_initialize(served: Served, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    status, response_headers, _ = request(
        f"{served.base}/mcp", {**MCP_HEADERS, **(headers or {})}, INITIALIZE
    )
    return status, {k.lower(): v for k, v in response_headers.items()}


async def search_over_mcp(served: Served, token: str) -> list[str]:
    http = httpx2.AsyncClient(headers=bearer(token), timeout=30)
    async with http, Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client:
        result = await client.call_tool("search", {"query": "rollback"})
    return [hit["path"] for hit in result.structured_content["hits"]]


def test_without_a_token_mcp_and_the_api_are_401_pointing_at_the_metadata(served: Served) -> None:
    expected = (
        f'Bearer resource_metadata="{served.base}/.well-known/oauth-protected-resource/mcp", scope="kb:read"'
    )
    status, headers = mcp_initialize(served)
    assert (status, headers["www-authenticate"]) == (401, expected)
    status, headers, body = api_search(served)
    assert (status, headers["www-authenticate"]) == (401, expected) and "bearer token" in body["error"]
    assert request(f"{served.base}/healthz")[0] == 200 and request(f"{served.base}/ui")[0] == 200


def test_the_metadata_is_served_at_the_path_suffixed_and_the_root_well_known_uri(served: Served) -> None:
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        status, _, document = request(served.base + path)
        assert status == 200, path
        assert document == {
            "resource": served.resource, "authorization_servers": [served.issuer.url],
            "scopes_supported": ["kb:read", "kb:write"], "bearer_methods_supported": ["header"],
            "resource_name": "kbseek",
        }  # fmt: skip


async def test_a_token_issued_for_the_server_searches_over_mcp_and_the_api(served: Served) -> None:
    issuer = served.issuer
    for token in (
        issuer.token(served.resource),
        issuer.token(served.resource, aud=["account", served.resource]),
    ):
        assert await search_over_mcp(served, token) == ["runbooks/deploy.md"]
        assert api_search(served, bearer(token))[0] == 200


REFUSED = {
    "audience": lambda i, r: i.token("http://127.0.0.1:1/mcp"),
    "issuer": lambda i, r: i.token(r, iss="https://evil.example.com"),
    "expired": lambda i, r: i.token(r, exp=int(time.time()) - 600),
    "not_yet_valid": lambda i, r: i.token(r, nbf=int(time.time()) + 600),
    "algorithm": lambda i, r: i.unsigned(r),
    "unknown_key": lambda i, r: i.token(r, key=SigningKey.new("stranger")),
    "signature": lambda i, r: i.token(r, key=SigningKey.new(), kid="k1"),
}
"""Each refused token by the reason the log names."""


async def test_refused_tokens_are_401_invalid_token_and_only_the_log_says_why(served: Served) -> None:
    issuer = served.issuer
    tokens: dict[str, str] = {reason: make(issuer, served.resource) for reason, make in REFUSED.items()}
    tokens["algorithm (HS256 keyed with the public key)"] = issuer.hmac_with_public_key(served.resource)
    for reason, token in tokens.items():
        for status, headers, body in (
            api_search(served, bearer(token)),
            (*mcp_initialize(served, bearer(token)), {}),
        ):
            assert status == 401, reason
            assert headers["www-authenticate"].startswith(
                'Bearer error="invalid_token", resource_metadata='
            ), reason
            assert reason.split()[0] not in str(body)
        with pytest.raises(Exception):  # noqa: B017 - the client fails to connect, in whichever way it chooses
            await search_over_mcp(served, token)
        assert f"bearer token refused ({reason.split()[0]})" in served.said(), reason
    assert all(token not in served.said() for token in tokens.values())


async def test_a_token_without_the_read_scope_is_403_insufficient_scope(served: Served) -> None:
    token = served.issuer.token(served.resource, scope="kb:write profile")
    status, headers, body = api_search(served, bearer(token))
    assert status == 403 and "kb:read" in body["error"]
    assert headers["www-authenticate"].startswith('Bearer error="insufficient_scope", resource_metadata=')
    assert headers["www-authenticate"].endswith('scope="kb:read"')
    assert mcp_initialize(served, bearer(token))[0] == 403
    assert "bearer token refused (scope)" in served.said()


async def test_a_key_rotated_while_serving_is_taken_without_a_restart(served: Served) -> None:
    issuer = served.issuer
    assert api_search(served, bearer(issuer.token(served.resource)))[0] == 200
    upcoming = SigningKey.new("k2")
    early = issuer.token(served.resource, key=upcoming)
    assert api_search(served, bearer(early))[0] == 401  # signed with a key not yet published
    assert "bearer token refused (unknown_key)" in served.said()
    with issuer.lock:
        issuer.keys.append(upcoming)
        issuer.published = [*issuer.published, upcoming]
    deadline = time.monotonic() + 10  # the refetch interval is 0.2 s in this server's [auth]
    while api_search(served, bearer(early))[0] != 200:
        assert time.monotonic() < deadline, "the rotated key was never picked up"
        time.sleep(0.1)
    assert await search_over_mcp(served, issuer.token(served.resource, key=upcoming)) == [
        "runbooks/deploy.md"
    ]


async def test_a_named_static_token_works_beside_oauth(served: Served) -> None:
    assert "static tokens: ci (kb:read)" in served.said()
    assert api_search(served, bearer(STATIC))[0] == 200
    assert await search_over_mcp(served, STATIC) == ["runbooks/deploy.md"]
    assert api_search(served, bearer(STATIC + "x"))[0] == 401
    assert "bearer token refused (unknown_token)" in served.said()


def test_a_public_url_at_odds_with_the_server_is_said_at_start(kb_root: Path, tmp_path: Path) -> None:
    with (
        running_issuer() as issuer,
        serving_signed_in(kb_root, tmp_path, issuer, "http://kb.example.com/team/mcp") as s,
    ):
        said = s.said()
    assert "warning: the resource URL's path is '/team/mcp'" in said
    assert "warning: the resource URL http://kb.example.com/team/mcp is plain http://" in said
    assert "--allow-host kb.example.com" in said


async def never(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError(f"{scope['path']} reached the app behind the gate")


async def test_an_unauthenticated_call_reaches_nothing_behind_the_gate() -> None:
    """The SDK's app and the web app are never called, so no store is queried and no slot taken."""
    gate = Gate(AuthConfig(static=(StaticCredential("ci", STATIC, ("kb:read",)),)))
    app = Guard(never, HttpPolicy(port=8765), web=never, gate=gate)
    transport = httpx2.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as http:
        for headers in ({}, bearer("wrong"), {"Authorization": "Basic Y2k6eA=="}):
            assert (await http.get("/api/search?q=x", headers=headers)).status_code == 401
            assert (
                await http.post("/mcp", content=INITIALIZE, headers={**MCP_HEADERS, **headers})
            ).status_code == 401


async def test_the_caller_is_kept_where_the_sdk_and_starlette_look() -> None:
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        identity = current_identity()
        seen.update(credential=identity and identity.credential, user=scope["user"].display_name,
                    scopes=list(scope["auth"].scopes))  # fmt: skip
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    gate = Gate(AuthConfig(static=(StaticCredential("ci", STATIC, ("kb:read", "kb:write")),)))
    transport = httpx2.ASGITransport(app=Guard(app, HttpPolicy(port=8765), web=app, gate=gate))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as http:
        for path in ("/mcp", "/api/search?q=x"):
            seen.clear()
            assert (await http.get(path, headers=bearer(STATIC))).status_code == 200
            assert seen == {"credential": "ci", "user": "ci", "scopes": ["kb:read", "kb:write"]}
    assert current_identity() is None  # reset once the request is answered


async def test_a_server_with_neither_serves_no_metadata_and_asks_for_no_token() -> None:
    async def answer(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 404 if "well-known" in scope["path"] else 200,
                    "headers": []})  # fmt: skip
        await send({"type": "http.response.body", "body": b""})

    transport = httpx2.ASGITransport(app=Guard(answer, HttpPolicy(port=8765), web=answer))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as http:
        assert (await http.get("/.well-known/oauth-protected-resource")).status_code == 404
        assert (await http.get("/mcp")).status_code == 200 and (
            await http.get("/api/search")
        ).status_code == 200
