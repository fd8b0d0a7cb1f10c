"""Resources through the MCP client: kb://doc and kb://topic, bounded by the index (D2–D8)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from kbseek import KnowledgeBase
from kbseek.config import Limits
from kbseek.server.mcp import build_server
from kbseek.uris import document_uri, parse_uri
from tests.conftest import make_core

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def read(core: KnowledgeBase, uri: str) -> tuple[str, str | None]:
    async with Client(build_server(core)) as client:
        result = await client.read_resource(uri)
    content = result.contents[0]
    return content.text, content.mime_type  # type: ignore[union-attr]


async def refused(core: KnowledgeBase, uri: str) -> str:
    async with Client(build_server(core)) as client:
        with pytest.raises(MCPError) as info:
            await client.read_resource(uri)
    return str(info.value)


async def test_the_listing_is_topic_groups_and_every_uri_in_them_reads_back(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["kb://doc/{+path}"]
        uris = {str(r.uri): r for r in listed}
        assert set(uris) == {"kb://topic/notes/", "kb://topic/runbooks/", "kb://topic/runbooks/database/"}
        assert uris["kb://topic/notes/"].description == "2 documents"
        seen_docs = 0
        for uri in uris:
            body = (await client.read_resource(uri)).contents[0]
            assert body.mime_type == "text/markdown"
            for line in body.text.splitlines():  # type: ignore[union-attr]
                if "](kb://doc/" in line:
                    doc_uri = line.split("](", 1)[1].split(")", 1)[0]
                    doc = await client.read_resource(doc_uri)
                    assert doc.contents[0].text  # type: ignore[union-attr]
                    seen_docs += 1
        assert seen_docs == 4


async def test_media_types_are_what_is_served(core: KnowledgeBase) -> None:
    _, md = await read(core, document_uri("runbooks/deploy.md"))
    _, txt = await read(core, document_uri("notes/plain.txt"))
    assert (md, txt) == ("text/markdown", "text/plain")


async def test_every_uri_returned_by_search_is_readable(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        for query in ("rollback", "障害", "backup", "coffee"):
            hits = (await client.call_tool("search", {"query": query})).structured_content["hits"]
            for hit in hits:
                assert hit["uri"] == document_uri(hit["path"])
                text = (await client.read_resource(hit["uri"])).contents[0].text  # type: ignore[union-attr]
                assert text == (core.root / hit["path"]).read_text(encoding="utf-8")


async def test_a_file_written_after_the_last_pass_is_refused_as_a_resource_but_returned_by_get_document(
    kb_root: Path,
) -> None:
    c = make_core(kb_root, freshness_interval_s=3600.0)
    c.index()
    (kb_root / "notes" / "late.md").write_text("# Late\n\nwritten after indexing\n", encoding="utf-8")
    message = await refused(c, document_uri("notes/late.md"))
    assert "not offered as a resource" in message and "get_document" in message
    assert "written after indexing" in c.read_document("notes/late.md").text


async def test_an_ignored_document_is_not_a_resource_and_still_readable_by_get_document(
    core: KnowledgeBase,
) -> None:
    async with Client(build_server(core)) as client:
        topics = [str(r.uri) for r in (await client.list_resources()).resources]
        doc = await client.call_tool("get_document", {"path": "drafts/secret-plan.md"})
    assert not any("drafts" in t for t in topics)
    assert "not offered" in await refused(core, document_uri("drafts/secret-plan.md"))
    assert "bluebird" in doc.structured_content["text"]


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("kb://doc/../outside.md", "'..' segment"),
        ("kb://doc/%2e%2e/outside.md", "'..' segment"),
        ("kb://doc/%2E%2E%2Foutside.md", "'..' segment"),
        ("kb://doc/notes\\plain.txt", "backslash"),
        ("kb://doc/notes/plain.txt%00.md", "NUL"),
        ("kb://doc/bad%zzescape.md", "malformed percent-escape"),
        ("file:///etc/passwd", "not a kbseek resource"),
        ("kb://doc/runbooks/", "names a folder"),
        ("kb://topic/nope/", "no topic"),
    ],
)
async def test_untrusted_uris_are_refused_with_the_reason(core: KnowledgeBase, uri: str, reason: str) -> None:
    assert reason in await refused(core, uri)


async def test_links_are_refused_through_the_resource_path(kb_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n", encoding="utf-8")
    c = make_core(kb_root, freshness_interval_s=3600.0)  # the index still lists deploy.md as servable
    c.index()
    (kb_root / "link.md").symlink_to(outside)
    os.link(kb_root / "runbooks" / "deploy.md", kb_root / "hard.md")
    assert "not offered" in await refused(c, document_uri("link.md"))
    assert "not offered" in await refused(c, document_uri("hard.md"))
    # deploy.md is indexed and servable, but now has two links: the shared guard refuses the read.
    assert "hard links" in await refused(c, document_uri("runbooks/deploy.md"))
    (kb_root / "runbooks" / "deploy.md").unlink()
    (kb_root / "runbooks" / "deploy.md").symlink_to(outside)
    assert "outside the knowledge-base root" in await refused(c, document_uri("runbooks/deploy.md"))


async def test_an_over_cap_document_is_not_offered_but_its_hits_remain(kb_root: Path) -> None:
    c = make_core(kb_root, limits=Limits(max_resource_bytes=200))
    c.index()
    size = (kb_root / "runbooks" / "deploy.md").stat().st_size
    assert size > 200
    data = c.search("load balancer")
    hit = next(h for h in data.hits if h.path == "runbooks/deploy.md")
    assert hit.uri is None
    assert "runbooks/deploy.md" not in c.servable_document_paths()
    assert "not offered" in await refused(c, document_uri("runbooks/deploy.md"))


async def test_a_resource_over_the_read_cap_is_cut_with_a_delimited_note(kb_root: Path) -> None:
    c = make_core(kb_root, limits=Limits(max_resource_chars=100))
    c.index()
    text, _ = await read(c, document_uri("runbooks/deploy.md"))
    full = (kb_root / "runbooks" / "deploy.md").read_text(encoding="utf-8")
    assert text.startswith(full[:100])
    assert (
        "truncated at character 100" in text and "get_document(path='runbooks/deploy.md', offset=100)" in text
    )


async def test_narrowing_the_parsers_without_reindexing_keeps_hits_but_stops_offering(kb_root: Path) -> None:
    full = make_core(kb_root)
    full.index()
    full.close()
    narrow = make_core(kb_root, parsers=("md",))
    data = narrow.search("descaling coffee machine")
    hit = next(h for h in data.hits if h.path == "notes/plain.txt")
    assert hit.uri is None  # still findable, no longer offered
    assert "notes/plain.txt" not in narrow.servable_document_paths()
    assert "not offered" in await refused(narrow, document_uri("notes/plain.txt"))
    narrow.index()  # an explicit index pass prunes what the registry cannot open
    assert all(h.path != "notes/plain.txt" for h in narrow.search("descaling coffee machine").hits)


async def test_japanese_and_space_paths_round_trip(kb_root: Path) -> None:
    (kb_root / "notes" / "team onboarding.md").write_text(
        "# Onboarding\n\nwelcome aboard\n", encoding="utf-8"
    )
    c = make_core(kb_root)
    c.index()
    for path in ("notes/障害対応.md", "notes/team onboarding.md"):
        uri = document_uri(path)
        assert uri.isascii() and " " not in uri
        assert parse_uri(uri).path == path
        text, _ = await read(c, uri)
        assert text == (kb_root / path).read_text(encoding="utf-8")


async def test_list_changed_is_declared_and_sent_when_a_file_is_added_during_a_session(
    core: KnowledgeBase,
) -> None:
    received: list[str] = []

    async def on_message(message: object) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method:
            received.append(method)

    async with Client(build_server(core), mode="legacy", message_handler=on_message) as client:
        caps = client.server_capabilities
        assert caps.resources is not None and caps.resources.list_changed is True
        (core.root / "notes" / "fresh.md").write_text("# Fresh\n\nadded while connected\n", encoding="utf-8")
        await client.call_tool("search", {"query": "added while connected"})  # the freshness pass runs here
        with anyio.fail_after(5):
            while "notifications/resources/list_changed" not in received:
                await anyio.sleep(0.05)
        topic = await client.read_resource("kb://topic/notes/")
        assert "kb://doc/notes/fresh.md" in topic.contents[0].text  # type: ignore[union-attr]
