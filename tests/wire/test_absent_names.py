"""A name the query mentions that no note holds: said on the wire, and it makes the search low-confidence.

Driven through a real MCP client in process; the knowledge base is the shared test notes, which
speak of rollbacks and load balancers but never of Terraform (docs/decisions/0020).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _search(core: KnowledgeBase, query: str) -> dict[str, Any]:
    async with Client(build_server(core)) as client:
        result = await client.call_tool("search", {"query": query})
    assert not result.is_error
    return result.structured_content or {}


def _absent_note(data: dict[str, Any]) -> str | None:
    notes = [n for n, c in zip(data["notes"], data["note_codes"], strict=True) if c == "absent_names"]
    return notes[0] if notes else None


async def test_a_name_no_note_holds_is_said_and_makes_the_search_low_confidence(core: KnowledgeBase) -> None:
    data = await _search(core, "roll back the load balancer with Terraform")
    assert (
        data["hits"] and data["hits"][0]["path"] == "runbooks/deploy.md"
    )  # the rest of the query still matches
    assert data["low_confidence"]
    note = _absent_note(data)
    assert note is not None and "Terraform" in note and "rollback" not in note


async def test_a_query_whose_names_are_all_held_is_not_flagged_by_them(core: KnowledgeBase) -> None:
    data = await _search(core, "rollback the load balancer with kubectl")
    assert _absent_note(data) is None and not data["low_confidence"]


async def test_a_japanese_query_names_its_latin_words(core: KnowledgeBase) -> None:
    data = await _search(core, "Terraform の障害対応の手順")
    note = _absent_note(data)
    assert note is not None and "Terraform" in note and data["low_confidence"]


async def test_a_name_only_an_ignored_file_holds_is_absent(core: KnowledgeBase) -> None:
    data = await _search(core, "when does Bluebird ship")  # only drafts/, which .kbseekignore hides
    note = _absent_note(data)
    assert note is not None and "Bluebird" in note


async def test_a_name_written_into_a_note_is_found_at_the_next_search(
    core: KnowledgeBase, kb_root: Path
) -> None:
    assert _absent_note(await _search(core, "release a Terraform state lock")) is not None
    (kb_root / "runbooks" / "terraform.md").write_text(
        "# Terraform\n\nRelease a stuck state lock with force-unlock.\n", encoding="utf-8"
    )
    data = await _search(core, "release a Terraform state lock")  # within the minute the term counts are kept
    assert _absent_note(data) is None
    assert data["hits"][0]["path"] == "runbooks/terraform.md" and not data["low_confidence"]
