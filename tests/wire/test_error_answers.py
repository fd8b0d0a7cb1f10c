"""Each surface answers errors from the one table: a refusal with its code and message, a bug as a bug.

A bug is injected by making a ``KnowledgeBase`` method raise what no refusal is (``RuntimeError``,
or kbseek's own ``KbBug``): the caller must be told it is a bug in kbseek, never that its request
was wrong, and must not see the exception's text; the log gets the traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError

from kbseek import KnowledgeBase
from kbseek.errors import EmbedderUnavailable, IndexLocked, KbBug
from kbseek.server.errors import BUG_MESSAGE, INTERNAL_ERROR, INVALID_PARAMS
from kbseek.server.mcp import build_server
from kbseek.server.web import build_web_app
from kbseek.uris import document_uri, topic_uri

pytestmark = pytest.mark.anyio

SECRET = "secret-internals-42"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def raising(exc: BaseException) -> Callable[..., Any]:
    def call(*_: Any, **__: Any) -> Any:
        raise exc

    return call


BUGS = [RuntimeError(SECRET), KbBug(SECRET)]


def assert_logged_bug(caplog: pytest.LogCaptureFixture) -> None:
    assert "a bug in kbseek" in caplog.text and "Traceback" in caplog.text and SECRET in caplog.text


# -- MCP tools ---------------------------------------------------------------------------------------


async def call_tool(core: KnowledgeBase, name: str, args: dict[str, Any]) -> tuple[str, bool]:
    async with Client(build_server(core)) as client:
        result = await client.call_tool(name, args)
    return (result.content[0].text if result.content else ""), bool(result.is_error)  # type: ignore[union-attr]


async def test_a_tool_refusal_is_an_error_result_with_its_message(core: KnowledgeBase) -> None:
    text, is_error = await call_tool(core, "get_document", {"path": "notes/nothing-here.md"})
    assert is_error and "no file at 'notes/nothing-here.md'" in text
    text, is_error = await call_tool(core, "search", {"query": " "})
    assert is_error and "query is empty: pass the words or question to search for, or sort='newest'" in text


@pytest.mark.parametrize("bug", BUGS, ids=lambda e: type(e).__name__)
async def test_a_bug_in_a_tool_is_an_error_result_saying_it_is_a_bug(
    core: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, bug: Exception
) -> None:
    monkeypatch.setattr(core, "search", raising(bug))
    text, is_error = await call_tool(core, "search", {"query": "rollback"})
    assert is_error and text.endswith(BUG_MESSAGE) and SECRET not in text  # the SDK names the tool first
    assert_logged_bug(caplog)


# -- MCP resources and prompts ---------------------------------------------------------------------


async def read_error(core: KnowledgeBase, uri: str) -> MCPError:
    async with Client(build_server(core)) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    return caught.value


async def test_resource_refusals_are_invalid_params_with_their_message(core: KnowledgeBase) -> None:
    missing = await read_error(core, document_uri("notes/nothing-here.md"))
    assert missing.code == INVALID_PARAMS and "nothing-here.md" in missing.message
    assert missing.data == {"uri": document_uri("notes/nothing-here.md")}  # MCP's not-found carries the uri
    malformed = await read_error(core, "kb://doc/notes/%zz.md")
    assert malformed.code == INVALID_PARAMS and "malformed percent-escape" in malformed.message
    no_topic = await read_error(core, topic_uri("nowhere/"))
    assert no_topic.code == INVALID_PARAMS and "resources/list shows the topics" in no_topic.message


async def test_a_setup_refusal_in_a_resource_read_is_an_internal_error_with_its_message(
    core: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "topic_body", raising(IndexLocked("another process holds the index; wait")))
    error = await read_error(core, topic_uri("notes/"))
    assert error.code == INTERNAL_ERROR and error.message == "another process holds the index; wait"


@pytest.mark.parametrize("bug", BUGS, ids=lambda e: type(e).__name__)
async def test_a_bug_in_a_resource_read_is_an_internal_error_saying_it_is_a_bug(
    core: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, bug: Exception
) -> None:
    monkeypatch.setattr(core, "read_resource_document", raising(bug))
    error = await read_error(core, document_uri("runbooks/deploy.md"))
    assert error.code == INTERNAL_ERROR and error.message == BUG_MESSAGE
    assert_logged_bug(caplog)


async def prompt_error(core: KnowledgeBase, name: str, args: dict[str, str]) -> MCPError:
    async with Client(build_server(core)) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt(name, args)
    return caught.value


async def test_prompt_refusals_keep_their_code_and_message(
    core: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = await prompt_error(core, "summarize_topic", {"topic": " "})
    assert empty.code == INVALID_PARAMS and empty.message == "topic is empty: pass the topic as text"
    monkeypatch.setattr(core, "topic_groups", raising(IndexLocked("another process holds the index; wait")))
    locked = await prompt_error(core, "summarize_topic", {"topic": "runbooks"})
    assert locked.code == INTERNAL_ERROR and locked.message == "another process holds the index; wait"


@pytest.mark.parametrize("bug", BUGS, ids=lambda e: type(e).__name__)
async def test_a_bug_in_a_prompt_is_an_internal_error_saying_it_is_a_bug(
    core: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, bug: Exception
) -> None:
    monkeypatch.setattr(core, "recent_documents", raising(bug))
    error = await prompt_error(core, "whats_new", {"since": "7d"})
    assert error.code == INTERNAL_ERROR and error.message == BUG_MESSAGE
    assert_logged_bug(caplog)


# -- the web API -------------------------------------------------------------------------------------


async def api(core: KnowledgeBase, path: str) -> tuple[int, dict[str, Any]]:
    transport = httpx2.ASGITransport(app=build_web_app(core))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        response = await http.get(path)
    return response.status_code, response.json()


async def test_api_refusals_have_their_status_and_message(
    core: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    (core.root / "image.png").write_bytes(b"\x89PNG")
    for path, status, words in [
        ("/api/search?q=", 400, "q is empty"),
        ("/api/document?path=", 400, "path is empty"),
        ("/api/document?path=../outside.md", 400, "uses '..'"),
        ("/api/document?path=notes/nothing-here.md", 404, "nothing-here.md"),
        ("/api/document?path=image.png", 403, "no active parser opens"),
    ]:
        got, body = await api(core, path)
        assert (got, words in body["error"]) == (status, True), (path, body)
    monkeypatch.setattr(core, "search", raising(EmbedderUnavailable("the model cannot load; reinstall")))
    got, body = await api(core, "/api/search?q=rollback")
    assert (got, body["error"]) == (503, "the model cannot load; reinstall")


@pytest.mark.parametrize("bug", BUGS, ids=lambda e: type(e).__name__)
async def test_a_bug_behind_the_api_is_a_500_saying_it_is_a_bug(
    core: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, bug: Exception
) -> None:
    """It used to come back as 409, which tells the page its request conflicted with something."""
    monkeypatch.setattr(core, "search", raising(bug))
    status, body = await api(core, "/api/search?q=rollback")
    assert (status, body["error"]) == (500, BUG_MESSAGE)
    assert_logged_bug(caplog)
