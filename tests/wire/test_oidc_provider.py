"""Sign-in against a real OpenID provider: the installed ``kbseek serve --http`` as the resource
server of the certified ``oidc-provider`` (npm, unmodified, ``oidc/provider.js``), its tokens got
through the provider's own authorization-code flow, and the SDK's OAuth client signing in from
nothing as a host such as claude.ai does.

The tests against an issuer made in the test (``test_http_auth.py``) cover each refusal; these show
that what a real provider issues, and what a real client does, meet kbseek's checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tests.conftest import installed_script
from tests.fixture_copies import example_copy
from tests.oidc_provider import ACCOUNT, GROUPS, REDIRECT_URI, Provider, claims_of, missing, running_provider
from tests.wire.serving import free_port, request, wait_healthy

pytestmark = pytest.mark.anyio

QUERY = "rollback"
EXPECTED_HIT = "runbooks/rollback.md"
INTROSPECTOR = ("kbseek-reader", "introspection-secret-0123")
"""The client the introspecting server asks the provider as (a confidential client of its own)."""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Resources:
    """The resource URLs the provider issues tokens for, chosen before anything starts."""

    jwt_port: int
    opaque_port: int
    other: str = field(default_factory=lambda: f"http://127.0.0.1:{free_port()}/other/mcp")
    """A resource server that is not kbseek (JWT access tokens)."""
    other_opaque: str = field(default_factory=lambda: f"http://127.0.0.1:{free_port()}/other/mcp")
    """Another that is not kbseek (opaque access tokens)."""

    @property
    def jwt(self) -> str:
        return f"http://127.0.0.1:{self.jwt_port}/mcp"

    @property
    def opaque(self) -> str:
        return f"http://127.0.0.1:{self.opaque_port}/mcp"


@dataclass
class Served:
    """A running ``kbseek serve --http`` signed in to the provider."""

    base: str
    resource: str
    provider: Provider
    log: Path
    audit: Path

    def said(self) -> str:
        return self.log.read_text(encoding="utf-8")

    def recorded(self, **fields: Any) -> list[dict[str, Any]]:
        """The record's lines with these ``fields``, waiting a little for them: the record is
        written by a thread of its own, just after the answer."""
        deadline = time.monotonic() + 5
        while True:
            lines = self.audit.read_text(encoding="utf-8").splitlines() if self.audit.exists() else []
            records = [json.loads(line) for line in lines if line]
            found = [r for r in records if all(r.get(k) == v for k, v in fields.items())]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("oidc")


@pytest.fixture(scope="module")
def resources() -> Resources:
    return Resources(free_port(), free_port())


@pytest.fixture(scope="module")
def provider(folder: Path, resources: Resources) -> Iterator[Provider]:
    """The real provider on a free loopback port, once its discovery document answers; the tests are
    skipped, saying what to install, where Node or the package is missing."""
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    with running_provider(
        folder / "provider.log", jwt=[resources.jwt, resources.other],
        opaque=[resources.opaque, resources.other_opaque], introspector=INTROSPECTOR,
    ) as running:  # fmt: skip
        yield running
        assert "server_error" not in running.said(), running.said()  # nothing failed inside the provider


@contextmanager
def serving(
    provider: Provider, folder: Path, name: str, port: int, resource: str, config: str | None = None
) -> Iterator[Served]:
    """``kbseek serve --http`` over a copy of the example knowledge base, taking the provider's
    tokens issued for ``resource``: named by ``--auth-issuer`` and ``--auth-resource``, or, when
    ``config`` is given, by that ``[auth]`` table in its ``kbseek.toml``, with the rest of it."""
    home = folder / name
    home.mkdir()
    log, audit = home / "kbseek.log", home / "audit.jsonl"
    command = [
        installed_script(), "serve", "--kb", str(example_copy(home)), "--lexical-only", "--no-watch", "--http",
        "--port", str(port), "--audit-log", str(audit),
    ]  # fmt: skip
    if config is None:
        command += ["--auth-issuer", provider.url, "--auth-resource", resource]
    else:
        (home / "kbseek.toml").write_text(
            f'[auth]\nissuer = "{provider.url}"\nresource = "{resource}"\n{config}', encoding="utf-8"
        )
        command += ["--config", str(home / "kbseek.toml")]
    env = {**os.environ, "KB_INTROSPECTION_SECRET": INTROSPECTOR[1]}
    with log.open("wb") as stderr, subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=stderr, env=env
    ) as proc:  # fmt: skip
        try:
            wait_healthy(port, proc)
            yield Served(f"http://127.0.0.1:{port}", resource, provider, log, audit)
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@pytest.fixture(scope="module")
def kbseek(provider: Provider, folder: Path, resources: Resources) -> Iterator[Served]:
    """kbseek checking the provider's JWT access tokens against its published keys."""
    with serving(provider, folder, "jwt", resources.jwt_port, resources.jwt) as served:
        yield served


@pytest.fixture(scope="module")
def kbseek_introspecting(provider: Provider, folder: Path, resources: Resources) -> Iterator[Served]:
    """kbseek asking the provider's introspection endpoint (found in its metadata) about opaque
    tokens, its sign-in all in ``[auth]``: the file's introspection client cannot be combined with
    ``--auth-issuer`` and ``--auth-resource``, since the file's table is checked on its own first."""
    config = f'introspection_client_id = "{INTROSPECTOR[0]}"\nintrospection_secret_env = "KB_INTROSPECTION_SECRET"\n'
    with serving(provider, folder, "opaque", resources.opaque_port, resources.opaque, config) as served:
        yield served


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def api_search(served: Served, token: str) -> tuple[int, str | None, dict[str, Any]]:
    """``/api/search``'s status, ``WWW-Authenticate`` and body."""
    status, headers, body = request(f"{served.base}/api/search?q={QUERY}", bearer(token))
    return status, {k.lower(): v for k, v in headers.items()}.get("www-authenticate"), body


async def search(served: Served, http: httpx2.AsyncClient) -> list[str]:
    """The paths ``search`` finds over MCP through ``http`` (its headers or its auth)."""
    async with http, Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client:
        result = await client.call_tool("search", {"query": QUERY})
    assert not result.is_error, result
    return [hit["path"] for hit in result.structured_content["hits"]]


async def test_a_jwt_the_provider_issued_for_kbseek_searches_over_mcp_and_the_api(kbseek: Served) -> None:
    issued = await anyio.to_thread.run_sync(kbseek.provider.token, kbseek.resource)
    token = issued["access_token"]
    claims = claims_of(token)
    assert claims["header"]["typ"] == "at+jwt" and claims["header"]["alg"] == "RS256"
    assert (claims["iss"], claims["aud"], claims["sub"]) == (kbseek.provider.url, kbseek.resource, ACCOUNT)
    assert claims["scope"] == "kb:read" and claims["groups"] == GROUPS

    assert EXPECTED_HIT in await search(kbseek, httpx2.AsyncClient(headers=bearer(token), timeout=30))
    status, _, body = api_search(kbseek, token)
    assert status == 200 and any(hit["path"] == EXPECTED_HIT for hit in body["hits"])
    assert kbseek.recorded(
        subject=ACCOUNT, client=claims["client_id"], method="jwt", tool="search", outcome="ok"
    )


async def test_a_jwt_the_provider_issued_for_another_resource_is_401_invalid_token(
    kbseek: Served, resources: Resources
) -> None:
    issued = await anyio.to_thread.run_sync(kbseek.provider.token, resources.other)
    token = issued["access_token"]
    assert claims_of(token)["aud"] == resources.other  # a good token, for another server
    status, challenge, _ = api_search(kbseek, token)
    assert status == 401 and challenge is not None
    assert challenge.startswith('Bearer error="invalid_token", resource_metadata=')
    with pytest.raises(Exception):  # noqa: B017 - the client fails to connect, in whichever way it chooses
        await search(kbseek, httpx2.AsyncClient(headers=bearer(token), timeout=30))
    assert (
        f"bearer token refused (audience): aud '{resources.other}' does not name the resource"
        in kbseek.said()
    )


async def test_an_opaque_token_is_introspected_at_the_provider_and_searches(
    kbseek_introspecting: Served,
) -> None:
    served = kbseek_introspecting
    issued = await anyio.to_thread.run_sync(served.provider.token, served.resource)
    token = issued["access_token"]
    assert token.count(".") != 2  # not a JWT: only the provider can say what it means
    assert EXPECTED_HIT in await search(served, httpx2.AsyncClient(headers=bearer(token), timeout=30))
    assert api_search(served, token)[0] == 200
    assert served.recorded(subject=ACCOUNT, method="introspection", tool="search", outcome="ok")


async def test_an_opaque_token_for_another_resource_is_401_after_introspection(
    kbseek_introspecting: Served, resources: Resources
) -> None:
    served = kbseek_introspecting
    issued = await anyio.to_thread.run_sync(served.provider.token, resources.other_opaque)
    status, challenge, _ = api_search(served, issued["access_token"])
    assert status == 401 and challenge is not None and challenge.startswith('Bearer error="invalid_token"')
    assert f"bearer token refused (audience): aud '{resources.other_opaque}'" in served.said()
    status, challenge, _ = api_search(served, "not-a-token-the-provider-issued")
    assert status == 401 and "bearer token refused (introspection_inactive)" in served.said()


class InMemoryStorage:
    """The SDK's ``TokenStorage``, holding what one sign-in obtained."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_the_sdks_oauth_client_signs_in_from_nothing_and_searches(kbseek: Served) -> None:
    """What a host does: call ``/mcp``, be refused, read kbseek's metadata, discover the provider,
    register, send the person to sign in, exchange the code with the resource indicator, call again."""
    served = kbseek
    seen: list[tuple[str, str, int]] = []
    authorization_urls: list[str] = []
    redirects: list[str] = []

    async def on_response(response: httpx2.Response) -> None:
        url = urlsplit(str(response.request.url))
        seen.append((response.request.method, f"{url.scheme}://{url.netloc}{url.path}", response.status_code))

    async def redirect_handler(authorization_url: str) -> None:
        authorization_urls.append(authorization_url)
        redirects.append(await anyio.to_thread.run_sync(served.provider.sign_in, authorization_url))

    async def callback_handler() -> AuthorizationCodeResult:
        back = parse_qs(urlsplit(redirects[-1]).query)
        assert "error" not in back, back
        return AuthorizationCodeResult(code=back["code"][0], state=back["state"][0], iss=back["iss"][0])

    storage = InMemoryStorage()
    auth = OAuthClientProvider(
        server_url=f"{served.base}/mcp",
        client_metadata=OAuthClientMetadata(client_name="kbseek test host", redirect_uris=[AnyUrl(REDIRECT_URI)]),
        storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler,
    )  # fmt: skip
    http = httpx2.AsyncClient(auth=auth, timeout=30, event_hooks={"response": [on_response]})
    assert EXPECTED_HIT in await search(served, http)

    issuer, mcp = served.provider.url, f"{served.base}/mcp"
    steps = seen
    assert steps[:4] == [
        ("POST", mcp, 401),
        ("GET", f"{served.base}/.well-known/oauth-protected-resource/mcp", 200),
        ("GET", f"{issuer}/.well-known/oauth-authorization-server", 200),
        ("POST", f"{issuer}/reg", 201),
    ], steps
    assert steps[4:6] == [("POST", f"{issuer}/token", 200), ("POST", mcp, 200)], steps
    assert all(status < 400 for _, url, status in steps[6:]), steps

    (authorization_url,) = authorization_urls
    asked = parse_qs(urlsplit(authorization_url).query)
    assert asked["resource"] == [served.resource] and asked["code_challenge_method"] == ["S256"]
    assert "kb:read" in asked["scope"][0].split()  # the scope of kbseek's challenge
    assert storage.client is not None and storage.tokens is not None
    claims = claims_of(storage.tokens.access_token)
    assert claims["aud"] == served.resource and claims["sub"] == ACCOUNT
    assert claims["client_id"] == storage.client.client_id and "kb:read" in claims["scope"].split()
    assert served.recorded(subject=ACCOUNT, client=storage.client.client_id, method="jwt", tool="search")
