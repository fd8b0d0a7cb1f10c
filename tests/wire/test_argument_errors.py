"""Every malformed argument of every tool is answered in one sentence naming it, what was sent and
what the tool takes (``server/argument_errors.py``), never with pydantic's report.

The shapes are derived from each tool's own schema in ``tools/list``, so a tool or argument added
later is covered without a change here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server

pytestmark = pytest.mark.anyio

SDK_REPORT = ("validation error", "pydantic", "For further information", "Arguments\n", "[type=")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _kind(node: dict[str, Any]) -> str | None:
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and isinstance(node.get("anyOf"), list):
        kinds = [n.get("type") for n in node["anyOf"] if isinstance(n, dict) and n.get("type") != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    return kind if isinstance(kind, str) else None


WRONG: dict[str, list[Any]] = {
    "string": [5, ["a"], {"a": 1}],
    "integer": [[1], {"n": 1}, 2.5, True],
    "boolean": ["maybe", [True], 3],
    "array": ["abc", {"a": 1}, 7],
    "object": [[1], "abc", 3],
}
"""Values of another JSON kind for each kind of argument (an integer sent as text has its own rule,
decision 0048, and its own tests)."""


def malformed(tools: list[Any]) -> Iterator[tuple[str, str, Any, dict[str, Any]]]:
    """(tool, argument, bad value, the call's arguments) for every argument of every tool."""
    for tool in tools:
        schema = tool.input_schema
        required = {name: _valid(schema["properties"][name]) for name in schema.get("required", [])}
        if "query" in schema.get("properties", {}):
            required["query"] = "x"  # a search without words is a refusal of its own
        for name, node in schema.get("properties", {}).items():
            kind = _kind(node)
            for bad in WRONG.get(kind or "", []):
                yield tool.name, name, bad, {**required, name: bad}


def _valid(node: dict[str, Any]) -> Any:
    return {"string": "x", "integer": 1, "boolean": False, "array": [], "object": {}}.get(
        _kind(node) or "", "x"
    )


async def test_every_wrong_kind_of_every_argument_is_one_sentence_naming_it(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        tools = (await client.list_tools()).tools
        cases = list(malformed(tools))
        assert len({t for t, *_ in cases}) >= 4 and len(cases) > 40
        for tool, name, bad, arguments in cases:
            result = await client.call_tool(tool, arguments)
            text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            assert result.is_error, (tool, name, bad)
            assert "\n" not in text and not any(s in text for s in SDK_REPORT), (tool, name, bad, text)
            assert text.startswith(f"{tool}: {name} takes "), (tool, name, bad, text)
            assert text.endswith(")"), text  # ... not <what was sent> (<its kind>)


async def test_a_missing_argument_names_it_and_what_it_takes(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            for name in tool.input_schema.get("required", []):
                result = await client.call_tool(tool.name, {})
                text = result.content[0].text  # type: ignore[union-attr]
                assert result.is_error and text.startswith(f"{tool.name}: the argument ")
                assert " is missing; it takes " in text and not any(s in text for s in SDK_REPORT), text
                assert name in text or text.count("missing") == 1


async def test_the_sentences_read_as_an_agent_needs_them(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        fetched = await client.call_tool("fetch", {"chunk_ids": "c_1"})
        tags = await client.call_tool("search", {"query": "x", "tags": "ops"})
        explain = await client.call_tool("search", {"query": "x", "explain": "maybe"})
        two = await client.call_tool("search", {"query": 5, "explain": "maybe"})
    assert fetched.content[0].text == "fetch: chunk_ids takes a list of texts, not 'c_1' (text)"  # type: ignore[union-attr]
    assert tags.content[0].text == (  # type: ignore[union-attr]
        "search: tags takes a list of texts (or null to leave it out), not 'ops' (text)"
    )
    assert explain.content[0].text == "search: explain takes true or false, not 'maybe' (text)"  # type: ignore[union-attr]
    assert two.content[0].text.endswith("; 1 more argument did not fit either")  # type: ignore[union-attr]


async def test_a_listing_of_the_newest_needs_no_query(core: KnowledgeBase) -> None:
    """The sort's description invites it ("with no query: what changed"); it used to be refused as
    a missing argument in pydantic's words."""
    async with Client(build_server(core)) as client:
        newest = await client.call_tool("search", {"sort": "newest", "limit": 3})
        empty = await client.call_tool("search", {})
    assert not newest.is_error and newest.structured_content is not None
    assert len(newest.structured_content["hits"]) == 3
    assert empty.is_error and "query is empty" in empty.content[0].text  # type: ignore[union-attr]


# -- what the schema tells an agent before it calls ---------------------------------------------------


async def test_every_argument_says_what_it_is_for_its_default_and_its_bounds(core: KnowledgeBase) -> None:
    """An agent read the cap of 50 only from a "clamped" note after the fact, and some hosts' function
    calling refuses the type arrays an optional argument used to have (``["integer", "null"]``)."""
    async with Client(build_server(core)) as client:
        tools = (await client.list_tools()).tools
    limits = core.limits
    for tool in tools:
        schema = tool.input_schema
        required = set(schema.get("required", []))
        for name, node in schema.get("properties", {}).items():
            where = f"{tool.name}.{name}"
            assert node.get("description"), where
            assert isinstance(node.get("type"), str) and "anyOf" not in node, where
            if node["type"] in ("integer", "boolean") or "enum" in node:
                assert name in required or "default" in node, where
            if node["type"] == "integer":
                assert "minimum" in node, where
    search = next(t for t in tools if t.name == "search").input_schema["properties"]
    assert (search["limit"]["default"], search["limit"]["maximum"]) == (
        limits.default_limit,
        limits.max_limit,
    )
    assert "owner" in search["where"]["description"]  # a working form: {"exists": true} alone names no field
    related = next(t for t in tools if t.name == "related").input_schema["properties"]
    assert "not both" in related["path"]["description"] and "not both" in related["chunk_id"]["description"]
