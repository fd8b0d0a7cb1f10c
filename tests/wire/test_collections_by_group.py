"""Collections by group (``[auth.collections]``), through the installed server over HTTP: a caller
reads the collections its groups name, and a collection it may not read does not exist for it.

The hidden collection is the server's default and holds a word nothing else does, so a leak through
the default (a read without ``kb``, a prompt, a resource URI without a collection) shows too. Every
byte the server sends back to the restricted caller, across every tool, resource, prompt and route,
is searched for the hidden collection's name, its document's path and its word; and each request
that names the hidden collection is answered, byte for byte, as one naming a collection that never
existed.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from kbseek.server.auth.gate import Gate
from kbseek.server.auth.settings import AuthConfig, StaticCredential
from kbseek.server.http import WITHHELD, Guard, HttpPolicy
from tests.auth_issuer import Issuer, running_issuer
from tests.conftest import installed_script, write_notes
from tests.wire.serving import free_port, request, wait_healthy
from tests.wire.test_http_auth import Served as SignedIn
from tests.wire.test_http_auth import never

pytestmark = pytest.mark.anyio

HIDDEN = "hrvault"
NEVER = "xxvault"
"""A name of the same length that no server here holds: what the hidden one must look like."""
WORD = "quokkasalary"
HIDDEN_PATH = "pay/band-review.md"
HIDDEN_NOTES = {
    HIDDEN_PATH: f"# Band review\n\nThe {WORD} bands for 2027 and how rollback of a band works.\n",
    "people/leave.md": f"# Leave\n\nParental leave and the {WORD} adjustment after it.\n",
}
SECRET = (HIDDEN, WORD, HIDDEN_PATH)
CI_TOKEN = "ci-static-secret-0123"
HR_TOKEN = "hr-static-secret-4567"
GUEST_TOKEN = "guest-static-secret-89"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Served(SignedIn):
    def token(self, *groups: str) -> str:
        return self.issuer.token(self.resource, groups=list(groups))


@contextmanager
def serving(tmp_path: Path, kb_root: Path, issuer: Issuer) -> Iterator[Served]:
    hidden = tmp_path / "hidden"
    write_notes(hidden, HIDDEN_NOTES)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    config = tmp_path / "kbseek.toml"
    config.write_text(
        "[auth]\n"
        'tokens = ["ci=KB_CI", "hrbot=KB_HR", "guest=KB_GUEST"]\n'
        "[auth.collections]\n"
        'support = ["runbooks"]\n'
        'hr = ["*"]\n'
        '"token:ci" = ["runbooks"]\n'
        f'"token:hrbot" = ["{HIDDEN}"]\n',
        encoding="utf-8",
    )
    log = tmp_path / "stderr.log"
    command = [
        installed_script(), "serve", "--kb", f"{HIDDEN}={hidden}", "--kb", f"runbooks={kb_root}",
        "--config", str(config), "--lexical-only", "--no-watch", "--http", "--port", str(port),
        "--auth-issuer", issuer.url, "--auth-resource", resource,
    ]  # fmt: skip
    env = {**os.environ, "KB_CI": CI_TOKEN, "KB_HR": HR_TOKEN, "KB_GUEST": GUEST_TOKEN}
    with (
        log.open("wb") as stderr,
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env) as proc,
    ):
        try:
            wait_healthy(port, proc)
            yield Served(port, resource, issuer, log)
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@pytest.fixture
def served(kb_root: Path, tmp_path: Path) -> Iterator[Served]:
    with running_issuer() as issuer, serving(tmp_path, kb_root, issuer) as running:
        yield running


@dataclass
class Recording(httpx2.AsyncBaseTransport):
    """A transport that keeps every byte the server sends back: headers and bodies, streamed or not."""

    seen: bytearray = field(default_factory=bytearray)
    inner: httpx2.AsyncHTTPTransport = field(default_factory=httpx2.AsyncHTTPTransport)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        for name, value in response.headers.raw:
            self.seen += name + b": " + value + b"\n"
        seen = self.seen

        class Stream(httpx2.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in response.stream:  # type: ignore[union-attr]
                    seen.extend(chunk)
                    yield chunk

            async def aclose(self) -> None:
                await response.aclose()

        return httpx2.Response(
            response.status_code, headers=response.headers, stream=Stream(), extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


async def every_call(client: Client, chunk_ids: list[str]) -> list[Any]:
    """Every tool, resource and prompt, in each of the ways that reads the default or all collections."""
    answers: list[Any] = [await client.list_tools(), await client.list_resources()]
    answers.append(await client.list_resource_templates())
    answers.append(await client.list_prompts())
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "rollback band"}),
        ("search", {"query": "rollback", "limit": 50}),
        ("search", {"sort": "newest", "limit": 50}),
        ("search", {"query": "parental leave", "kb": "runbooks", "explain": True}),
        ("fetch", {"chunk_ids": chunk_ids}),
        ("get_document", {"path": HIDDEN_PATH}),
        ("get_document", {"path": "guide.md"}),
        ("related", {"path": HIDDEN_PATH}),
        ("list_topics", {}),
        ("index_status", {}),
    ]
    for name, arguments in calls:
        answers.append(await client.call_tool(name, arguments))
    for resource in (await client.list_resources()).resources:
        answers.append(await client.read_resource(str(resource.uri)))
    for uri in ("kb://runbooks/doc/" + HIDDEN_PATH, "kb://runbooks/topic/pay/"):
        try:
            answers.append(await client.read_resource(uri))
        except MCPError as exc:
            answers.append(str(exc))
    for prompt, arguments in (
        ("answer_from_kb", {"question": "how does rollback work"}),
        ("summarize_topic", {"topic": "pay/"}),
        ("whats_new", {"since": "3650d"}),
    ):
        answers.append(await client.get_prompt(prompt, arguments))
    return answers


def http_client(token: str, recording: Recording | None = None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=30, transport=recording or Recording()
    )


async def hidden_chunk_ids(served: Served) -> list[str]:
    """The hidden collection's chunk ids, as a caller allowed it sees them."""
    async with (
        http_client(served.token("hr")) as http,
        Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool("search", {"query": WORD, "kb": HIDDEN})
    hits = result.structured_content["hits"]
    assert {h["kb"] for h in hits} == {HIDDEN} and hits, "the hidden collection must hold the word"
    return [h["chunk_id"] for h in hits]


API_ROUTES = (
    "/api/search?q=rollback+band", "/api/search?sort=newest&limit=50", "/api/collections", "/api/status",
    "/api/topics", f"/api/document?path={HIDDEN_PATH}", f"/api/related?path={HIDDEN_PATH}", "/ui", "/ui/app.js",
    "/readyz", "/healthz", "/.well-known/oauth-protected-resource/mcp",
)  # fmt: skip


async def test_a_collection_a_caller_may_not_read_is_in_none_of_the_bytes_sent_back(served: Served) -> None:
    chunk_ids = await hidden_chunk_ids(served)
    recording = Recording()
    async with (
        http_client(served.token("support"), recording) as http,
        Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client,
    ):
        answers = await every_call(client, chunk_ids)
        for route in API_ROUTES:
            await http.get(served.base + route)
    sent = bytes(recording.seen)
    assert b"runbooks" in sent and b"rollback" in sent.lower()  # the caller's own collection is served
    for secret in (HIDDEN, WORD):  # the hidden path is sent back only where the caller sent it
        for encoded in (secret.encode(), json.dumps(secret)[1:-1].encode()):
            assert encoded not in sent, f"{secret!r} was sent back"
    search = answers[4]
    assert {h["kb"] for h in search.structured_content["hits"]} == {"runbooks"}
    fetched = answers[8].structured_content
    assert not fetched["passages"] and {m["chunk_id"] for m in fetched["missing"]} == set(chunk_ids)
    status = answers[13].structured_content
    assert list(status["collections"]) == ["runbooks"]


async def test_the_same_calls_show_the_hidden_collection_to_a_caller_allowed_it(served: Served) -> None:
    """The check above can fail: the hidden collection is served, and sent, to the group that may read it."""
    recording = Recording()
    async with (
        http_client(served.token("hr"), recording) as http,
        Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client,
    ):
        await every_call(client, [])
    for secret in SECRET:
        assert secret.encode() in bytes(recording.seen)


PROBES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("search", {"query": "rollback", "kb": "{kb}"}),
    ("search", {"query": "rollback", "kb": ["runbooks", "{kb}"]}),
    ("get_document", {"path": HIDDEN_PATH, "kb": "{kb}"}),
    ("list_topics", {"kb": "{kb}"}),
    ("index_status", {"kb": "{kb}"}),
)


def _naming(value: Any, kb: str) -> Any:
    if isinstance(value, str):
        return value.replace("{kb}", kb)
    if isinstance(value, list):
        return [_naming(v, kb) for v in value]
    return {k: _naming(v, kb) for k, v in value.items()}


async def test_asking_for_a_hidden_collection_by_name_is_answered_as_one_that_never_existed(
    served: Served,
) -> None:
    async with (
        http_client(served.token("support")) as http,
        Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client,
    ):
        for tool, arguments in PROBES:
            hidden = await client.call_tool(tool, _naming(arguments, HIDDEN))
            never = await client.call_tool(tool, _naming(arguments, NEVER))
            assert hidden.is_error and never.is_error
            shown = hidden.model_dump_json().replace(HIDDEN, NEVER)
            assert shown == never.model_dump_json(), tool
        refusals = []
        for kb in (HIDDEN, NEVER):
            for uri in (f"kb://{kb}/doc/{HIDDEN_PATH}", f"kb://{kb}/topic/pay/"):
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(uri)
                refusals.append(str(refused.value).replace(kb, "KB"))
        assert refusals[:2] == refusals[2:]
        for route in ("/api/search?q=rollback&kb={kb}", "/api/status?kb={kb}", "/api/topics?kb={kb}",
                      f"/api/document?path={HIDDEN_PATH}&kb={{kb}}"):  # fmt: skip
            hidden_answer = await http.get(served.base + route.replace("{kb}", HIDDEN))
            never_answer = await http.get(served.base + route.replace("{kb}", NEVER))
            assert hidden_answer.status_code == never_answer.status_code == 400
            assert hidden_answer.content.replace(HIDDEN.encode(), NEVER.encode()) == never_answer.content


async def test_static_tokens_read_the_collections_named_for_them(served: Served) -> None:
    for token, expected in ((CI_TOKEN, {"runbooks"}), (HR_TOKEN, {HIDDEN})):
        async with http_client(token) as http:
            answer = await http.get(f"{served.base}/api/search?q=rollback")
        assert answer.status_code == 200
        assert {h["kb"] for h in answer.json()["hits"]} == expected


def test_a_caller_whose_groups_name_no_collection_is_403_naming_none(served: Served) -> None:
    for token in (served.token("marketing"), served.token(), GUEST_TOKEN):
        for path, body in (("/api/collections", None), ("/mcp", b"{}")):
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            status, _, answer = request(served.base + path, headers, body)
            assert status == 403
            assert answer == {
                "error": "the token grants no collection on this server: ask its operator for access"
            }
    said = served.log.read_text(encoding="utf-8")
    assert "no_collection" in said and "guest" in said


async def test_readiness_names_no_collection_where_collections_are_shown_by_group() -> None:
    """``/readyz`` is asked without a token; its reason would name the collection that is not ready."""
    credential = (StaticCredential("ci", CI_TOKEN, ("kb:read",)),)
    for readers, expected in (
        (None, f"{HIDDEN}: the index is not built"),
        ((("token:ci", ("wiki",)),), WITHHELD),
    ):
        gate = Gate(AuthConfig(static=credential, readers=readers), served=(HIDDEN, "wiki"))
        app = Guard(
            never, HttpPolicy(port=8765), ready=lambda: f"{HIDDEN}: the index is not built", gate=gate
        )
        transport = httpx2.ASGITransport(app=app, client=("127.0.0.1", 50000))
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as http:
            answer = await http.get("/readyz")
        assert answer.status_code == 503 and answer.json() == {"ready": False, "reason": expected}
