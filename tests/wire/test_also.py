"""``also`` on the wire: the MCP ``search`` tool (a real client in process) and the web API take it."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server
from kbseek.server.web import build_web_app

pytestmark = pytest.mark.anyio

QUERY = "zebra quokka sightings"  # shares no word with any note, nor does its translation (bilingual bridge)
ALSO = "猫の写真"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_search_tool_lists_also_and_says_when_to_use_it(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        tools = (await client.list_tools()).tools
    search = next(t for t in tools if t.name == "search")
    assert "required" not in search.input_schema  # a listing of the newest takes no query
    also = search.input_schema["properties"]["also"]
    assert "other language" in also["description"] and "hypothetical answer" in also["description"]
    assert "also" in search.output_schema["properties"]  # type: ignore[index]


async def test_the_search_tool_fuses_the_alternatives(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        alone = await client.call_tool("search", {"query": QUERY})
        helped = await client.call_tool("search", {"query": QUERY, "also": [ALSO], "explain": True})
    assert not alone.is_error and not (alone.structured_content or {})["hits"]
    data: dict[str, Any] = helped.structured_content or {}
    assert not helped.is_error and data["also"] == [ALSO]
    assert data["hits"][0]["path"] == "notes/障害対応.md"
    assert data["hits"][0]["explain"]["phrasing"] == 1
    assert ALSO in helped.content[0].text  # type: ignore[union-attr]


async def test_the_search_tool_refuses_alternatives_without_a_query(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        result = await client.call_tool("search", {"query": " ", "also": [ALSO]})
    assert result.is_error and "query is empty" in result.content[0].text  # type: ignore[union-attr]


async def test_the_web_api_takes_repeated_also_parameters(core: KnowledgeBase) -> None:
    transport = httpx2.ASGITransport(app=build_web_app(core))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        response = await http.get(
            "/api/search", params=[("q", QUERY), ("also", ALSO), ("also", "coffee machine")]
        )
    data = response.json()
    assert response.status_code == 200 and data["also"] == [ALSO, "coffee machine"]
    assert {"notes/障害対応.md", "notes/plain.txt"} <= {h["path"] for h in data["hits"]}
