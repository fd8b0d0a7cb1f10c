"""An argument a tool does not take is an error on every tool, never silently dropped.

``search`` with ``after``, ``before``, ``where`` or ``sort`` once answered ten hits from every date
and topic and no word that the arguments were not understood: an agent that believes it filtered
cites the wrong decade's decision. Those are arguments now; a name from another tool's vocabulary
(``date_from``, ``metadata_filters``) must still be refused by name.
"""

from __future__ import annotations

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_search_with_arguments_it_does_not_take_is_an_error_naming_them(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        result = await client.call_tool(
            "search",
            {
                "query": "rollback",
                "date_from": "7d",
                "metadata_filters": {"status": "accepted"},
                "after": "7d",
            },
        )
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "search takes no argument 'date_from', 'metadata_filters'" in text
    assert "it accepts: " in text and "query" in text and "path_prefix" in text and "after" in text


async def test_every_tool_refuses_an_argument_it_does_not_take(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            result = await client.call_tool(tool.name, {"no_such_argument": 1})
            assert result.is_error, tool.name
            text = result.content[0].text  # type: ignore[union-attr]
            assert f"{tool.name} takes no argument 'no_such_argument'" in text, text
            accepted = sorted(tool.input_schema.get("properties", {}))
            takes = f"it accepts: {', '.join(accepted)}" if accepted else "it takes no arguments"
            assert text.endswith(takes), text


async def test_the_arguments_a_tool_takes_still_work(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        result = await client.call_tool(
            "search", {"query": "rollback", "limit": 2, "path_prefix": "runbooks/"}
        )
    assert not result.is_error
    assert result.structured_content is not None and result.structured_content["hits"]
