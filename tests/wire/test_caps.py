"""Every cap is enforced by the server and said in the response (T3), and no cut is silent (D7).

The search caps most agents meet (limit, snippet length, more hits) are pinned in test_tools.py;
these are the rest: fetch's context, chunk ids and characters, the whole search response, the
query's terms, get_document's characters and offset, and list_topics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.config import Limits
from kbseek.server.mcp import build_server
from tests.conftest import make_core

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call(core: KnowledgeBase, name: str, args: dict[str, Any]) -> dict[str, Any]:
    async with Client(build_server(core)) as client:
        result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    return result.structured_content or {}


def capped(root: Path, **limits: int) -> KnowledgeBase:
    c = make_core(root, limits=Limits(**limits))
    c.index()
    return c


async def first_hit(core: KnowledgeBase, query: str) -> dict[str, Any]:
    return (await call(core, "search", {"query": query}))["hits"][0]


async def test_fetch_context_is_clamped_both_ways_and_the_response_says_so(core: KnowledgeBase) -> None:
    cid = (await first_hit(core, "rollback"))["chunk_id"]
    wide = await call(core, "fetch", {"chunk_ids": [cid], "context": 99})
    assert "context=99 was clamped to the maximum 5" in " ".join(wide["notes"])
    narrow = await call(core, "fetch", {"chunk_ids": [cid], "context": -3})
    assert "context=-3 was raised to the minimum 0" in " ".join(narrow["notes"])
    assert narrow["passages"][0]["chunk_ids"] == [cid]


async def test_chunk_ids_past_the_cap_are_not_fetched_and_the_response_says_so(kb_root: Path) -> None:
    c = capped(kb_root, max_chunk_ids=2)
    data = await call(c, "fetch", {"chunk_ids": ["c_one", "c_two", "c_three"]})
    assert data["truncated"] is True
    assert "3 chunk ids were given; only the first 2 were fetched" in data["notes"]
    assert [m["chunk_id"] for m in data["missing"]] == ["c_one", "c_two"]


async def test_a_passage_past_the_fetch_cap_is_cut_and_says_where_to_read_on(kb_root: Path) -> None:
    c = capped(kb_root, max_fetch_chars=60)
    hit = await first_hit(c, "rollback load balancer")
    data = await call(c, "fetch", {"chunk_ids": [hit["chunk_id"]], "context": 0})
    passage = data["passages"][0]
    assert data["truncated"] is True and passage["truncated"] is True
    assert len(passage["text"]) == 60 and passage["end"] == passage["start"] + 60
    source = (kb_root / hit["path"]).read_text(encoding="utf-8")
    assert passage["text"] == source[passage["start"] : passage["end"]]
    note = next(n for n in data["notes"] if "per fetch" in n)
    assert f"get_document(path={hit['path']!r}, offset={passage['end']})" in note
    rest = await call(c, "get_document", {"path": hit["path"], "offset": passage["end"]})
    assert rest["text"] == source[passage["end"] :]


async def test_a_search_response_over_its_character_cap_drops_hits_from_the_end(kb_root: Path) -> None:
    full = capped(kb_root)
    query = {"query": "image backups 障害 coffee machine", "limit": 10, "snippet_chars": 1200}
    whole = await call(full, "search", query)
    assert len(whole["hits"]) >= 3
    cap = _json_size(whole) - 1
    data = await call(capped(kb_root, max_response_chars=cap), "search", query)
    assert 0 < len(data["hits"]) < len(whole["hits"])
    kept = len(data["hits"])
    assert [h["chunk_id"] for h in data["hits"]] == [h["chunk_id"] for h in whole["hits"][:kept]]
    assert data["truncated"] is True and data["note_codes"][-1] == "cut_to_fit"
    assert "lower snippet_chars" in data["notes"][-1]


def _json_size(data: dict[str, Any]) -> int:
    from kbseek.responses import SearchResponse

    return len(SearchResponse.model_validate(data).model_dump_json())


async def test_query_terms_past_the_cap_are_named_not_silently_dropped(kb_root: Path) -> None:
    c = capped(kb_root, max_query_terms=2)
    data = await call(c, "search", {"query": "rollback balancer registry snapshots"})
    assert data["truncated"] is True and "terms_dropped" in data["note_codes"]
    note = data["notes"][data["note_codes"].index("terms_dropped")]
    assert "these were not used: registry snapshot" in note and "shorten the query" in note


async def test_get_document_clamps_max_chars_and_says_when_the_offset_is_past_the_end(
    core: KnowledgeBase,
) -> None:
    data = await call(core, "get_document", {"path": "runbooks/deploy.md", "max_chars": 10**9})
    assert "max_chars=1000000000 was clamped to the maximum 200000" in data["notes"]
    total = data["total_chars"]
    past = await call(core, "get_document", {"path": "runbooks/deploy.md", "offset": total + 5})
    assert past["text"] == "" and past["offset"] == total
    assert any("past the end of the document" in n for n in past["notes"])


async def test_list_topics_caps_topics_and_titles_and_says_so(kb_root: Path) -> None:
    c = capped(kb_root, max_topics=2, max_titles_per_topic=1)
    data = await call(c, "list_topics", {})
    assert data["truncated"] is True and len(data["topics"]) == 2
    assert "3 topics exist; only the first 2 are listed" in data["notes"]
    notes_topic = next(t for t in data["topics"] if t["prefix"] == "notes/")
    assert (notes_topic["documents"], len(notes_topic["titles"]), notes_topic["more_titles"]) == (2, 1, 1)
    assert any("search with path_prefix" in n for n in data["notes"])


async def test_a_cut_search_response_fits_its_cap_note_included(kb_root: Path) -> None:
    query = {"query": "image backups 障害 coffee machine", "limit": 10, "snippet_chars": 1200}
    data = await call(capped(kb_root, max_response_chars=600), "search", query)
    assert "cut_to_fit" in data["note_codes"]
    assert _json_size(data) <= 600
