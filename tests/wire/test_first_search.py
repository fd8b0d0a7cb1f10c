"""The first search of a one-shot client is answered by both legs, through the installed command.

A client that starts the server and searches at once (a script, the MCP Inspector, a host's first
call) arrived before the bundled model had loaded, about two seconds, and got keyword results marked
low confidence every time. A search now waits for the model the server is loading, within
``facade.semantic.SEARCH_PATIENCE``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import installed_script
from tests.fixture_copies import example_copy

pytestmark = [pytest.mark.slow, pytest.mark.anyio]  # the bundled model, as a user's server loads it


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_one_shot_client_s_first_search_is_semantic(tmp_path: Path) -> None:
    kb = example_copy(tmp_path)
    subprocess.run(
        [installed_script(), "index", "--kb", str(kb)], check=True, capture_output=True, timeout=300
    )
    params = StdioServerParameters(command=installed_script(), args=["serve", "--kb", str(kb)])
    async with Client(params) as client:  # initialize, then the search at once
        result = await client.call_tool("search", {"query": "get the project working on my workstation"})
    data = result.structured_content or {}
    assert not result.is_error and data["legs"] == {"lexical": "ok", "semantic": "ok"}, data.get("notes")
    assert data["hits"][0]["path"] == "notes/local-dev-setup.md"
