"""Two knowledge bases in one server, through a real MCP client in process: search over both or one,
each hit naming its collection, kb:// URIs that carry it, topics and status per collection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from kbseek.library import Library
from kbseek.server.library_tools import build_server
from tests.conftest import indexed_kb

pytestmark = pytest.mark.anyio

NOTES = {
    "ops/deploy.md": "# Deploy runbook\n\nbuild the container image and push it to the registry\n",
    "ops/rollback.md": "# Rollback\n\nrevert the release tag and redeploy the previous image\n",
}
DOCS = {
    "api/keys.md": "# Signing keys\n\nrotate the signing key every ninety days with keyctl\n",
    "api/limits.md": "# Rate limits\n\nthe gateway allows one hundred requests per minute\n",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Library]:
    lib = Library(
        {"notes": indexed_kb(tmp_path / "notes", NOTES), "docs": indexed_kb(tmp_path / "docs", DOCS)}
    )
    yield lib
    lib.close()


def _server(lib: Library):  # type: ignore[no-untyped-def]
    return build_server(lib[lib.default], library=lib)


async def test_a_search_over_both_names_each_hits_collection_and_its_uri_reads(library: Library) -> None:
    async with Client(_server(library)) as client:  # the client checks each answer against the schema
        both = await client.call_tool("search", {"query": "rotate signing key registry image"})
        data = both.structured_content or {}
        kbs = {h["kb"] for h in data["hits"]}
        uris = [h["uri"] for h in data["hits"]]
        texts = [await client.read_resource(u) for u in uris]
    assert not both.is_error and kbs == {"notes", "docs"}
    assert all(u.startswith(("kb://notes/doc/", "kb://docs/doc/")) for u in uris)
    assert "kb://docs/doc/api/keys.md" in uris
    keys = texts[uris.index("kb://docs/doc/api/keys.md")].contents[0]
    assert "keyctl" in getattr(keys, "text", "")
    assert "docs:api/keys.md" in both.content[0].text  # type: ignore[union-attr]
    assert data["index"]["documents"] == 4


async def test_kb_narrows_a_search_to_one_collection_or_a_list(library: Library) -> None:
    async with Client(_server(library)) as client:
        one = await client.call_tool("search", {"query": "rotate signing key registry image", "kb": "notes"})
        listed = await client.call_tool("search", {"query": "signing key", "kb": ["docs"]})
        unknown = await client.call_tool("search", {"query": "signing key", "kb": "nope"})
    assert {h["kb"] for h in (one.structured_content or {})["hits"]} == {"notes"}
    assert {h["kb"] for h in (listed.structured_content or {})["hits"]} == {"docs"}
    assert unknown.is_error and "notes, docs" in unknown.content[0].text  # type: ignore[union-attr]


async def test_fetch_and_get_document_read_from_the_hits_collection(library: Library) -> None:
    async with Client(_server(library)) as client:
        hits = (await client.call_tool("search", {"query": "signing key keyctl"})).structured_content or {}
        top = hits["hits"][0]
        fetched = await client.call_tool("fetch", {"chunk_ids": [top["chunk_id"]]})
        doc = await client.call_tool("get_document", {"path": top["path"], "kb": top["kb"]})
        wrong = await client.call_tool("get_document", {"path": "api/keys.md"})  # the default: notes
    assert top["kb"] == "docs" and "keyctl" in (fetched.structured_content or {})["passages"][0]["text"]
    assert (fetched.structured_content or {})["passages"][0]["uri"] == "kb://docs/doc/api/keys.md"
    assert "keyctl" in (doc.structured_content or {})["text"]
    assert wrong.is_error


async def test_topics_status_and_resources_are_per_collection(library: Library) -> None:
    async with Client(_server(library)) as client:
        topics = (await client.call_tool("list_topics", {})).structured_content or {}
        status = (await client.call_tool("index_status", {"kb": "docs"})).structured_content or {}
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        body = await client.read_resource("kb://notes/topic/ops/")
    assert set(topics["collections"]) == {"notes", "docs"}
    assert [t["prefix"] for t in topics["collections"]["docs"]["topics"]] == ["api/"]
    assert set(status["collections"]) == {"docs"} and status["collections"]["docs"]["documents"] == 2
    assert "kb://notes/topic/ops/" in listed and "kb://docs/topic/api/" in listed
    assert "Rollback" in getattr(body.contents[0], "text", "")


async def test_with_one_collection_the_wire_is_that_of_one_knowledge_base(tmp_path: Path) -> None:
    kb = indexed_kb(tmp_path / "notes", NOTES)
    try:
        one = Library({"notes": kb})
        async with Client(build_server(kb)) as plain, Client(build_server(kb, library=one)) as lib:
            tools_plain = [t.model_dump() for t in (await plain.list_tools()).tools]
            tools_lib = [t.model_dump() for t in (await lib.list_tools()).tools]
            hits = (await lib.call_tool("search", {"query": "registry image"})).structured_content or {}
    finally:
        kb.close()
    assert tools_plain == tools_lib
    assert hits["hits"] and all("kb" not in h and h["uri"].startswith("kb://doc/") for h in hits["hits"])


async def test_the_tool_list_of_two_collections_stays_under_the_cap(library: Library) -> None:
    async with Client(_server(library)) as client:
        listed = await client.list_tools()
    sent = listed.model_dump_json(by_alias=True, exclude_none=True)
    assert len(sent) <= 8000, len(sent)
