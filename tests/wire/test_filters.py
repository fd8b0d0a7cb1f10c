"""Search filters end to end through a real MCP client, on both backends (SQLite and PostgreSQL).

"What did we decide about feature flags last month?", "open incidents tagged payments", "the runbooks,
not the ADRs", "what changed this week": each is a filter an agent sends as an argument of
``search``, and each must narrow both legs, say when it matches nothing (naming it), and refuse
what it cannot read with a message saying what is accepted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kbseek import KnowledgeBase, Library
from kbseek.dates import mtime_day
from kbseek.server.library_tools import build_server as build_library_server
from kbseek.server.mcp import build_server
from tests import postgres_server
from tests.conftest import indexed_kb
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.anyio

NOTES = {
    "adr/0004-flags.md": "---\ntitle: Feature flags\ndate: 2024-05-27\nstatus: accepted\nowner: [ana, bo]\n"
    "tags: [adr, deploy]\n---\n# Feature flags\n\nWe adopt feature flags for risky deploys.\n",
    "adr/0009-flags-v2.md": "---\ntitle: Feature flags v2\ndate: 2026-11-20\nstatus: proposed\nowner: cy\n"
    "tags: [adr]\n---\n# Feature flags v2\n\nFeature flags move to a hosted service.\n",
    "adr/0001-old.md": "---\ntitle: Old flags\ndate: 2016-01-04\nstatus: superseded\ntags: [adr]\n---\n"
    "# Old flags\n\nFeature flags were environment variables.\n",
    "incidents/payments-outage.md": "---\ntitle: Payments outage\ndate: 2026-11-30\nstatus: open\n"
    "tags: [incident, payments]\n---\n# Payments outage\n\nCheckout failed; feature flags rolled back.\n",
    "runbooks/deploy.md": "# Deploy\n\nTurn feature flags off before a deploy rollback.\n",
    "notes/plain.txt": "Feature flags in plain text, undated.\n",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite", "postgres"])
def kb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeBase]:
    root = tmp_path / "notes"
    for rel, text in NOTES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    os.utime(root / "runbooks/deploy.md", (time.time(), time.time()))
    extra: dict[str, Any] = {}
    if request.param == "postgres":
        extra = {"store": postgres_server.url(), "kb_name": postgres_server.kb_name("filters")}
    base = KnowledgeBase(root, index_dir=tmp_path / "index", embedder=FakeEmbedder(), **extra)
    base.index()
    yield base
    base.close()


async def search(kb: KnowledgeBase, **arguments: Any) -> tuple[dict[str, Any], str, bool]:
    async with Client(build_server(kb)) as client:
        result = await client.call_tool("search", {"query": "feature flags", **arguments})
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    return result.structured_content or {}, text, bool(result.is_error)


def paths(data: dict[str, Any]) -> set[str]:
    return {h["path"] for h in data["hits"]}


async def test_each_filter_narrows_the_search(kb: KnowledgeBase) -> None:
    data, _, _ = await search(kb, after="2026-01-01", limit=10)
    assert paths(data) == {"adr/0009-flags-v2.md", "incidents/payments-outage.md", "runbooks/deploy.md",
                           "notes/plain.txt"}  # fmt: skip
    data, _, _ = await search(kb, before="2016-12-31", limit=10)
    assert paths(data) == {"adr/0001-old.md"}
    data, _, _ = await search(kb, where={"status": "accepted"})
    assert paths(data) == {"adr/0004-flags.md"}
    data, _, _ = await search(kb, where={"status": ["open", "proposed"]}, limit=10)
    assert paths(data) == {"adr/0009-flags-v2.md", "incidents/payments-outage.md"}
    data, _, _ = await search(kb, where={"owner": "BO"})
    assert paths(data) == {"adr/0004-flags.md"}
    data, _, _ = await search(kb, where={"status": {"exists": False}}, limit=10)
    assert paths(data) == {"runbooks/deploy.md", "notes/plain.txt"}
    data, _, _ = await search(kb, where={"tags": ["payments", "deploy"]}, limit=10)  # tags: any of
    assert paths(data) == {"adr/0004-flags.md", "incidents/payments-outage.md"}
    data, _, _ = await search(kb, tags=["adr"], where={"status": "proposed"})
    assert paths(data) == {"adr/0009-flags-v2.md"}
    data, _, _ = await search(kb, types=["txt"])
    assert paths(data) == {"notes/plain.txt"}
    data, _, _ = await search(kb, path_globs=["runbooks/**", "*.txt"], limit=10)
    assert paths(data) == {"runbooks/deploy.md", "notes/plain.txt"}
    data, _, _ = await search(kb, path_prefix="adr/", after="2020-01-01", limit=10)
    assert paths(data) == {"adr/0004-flags.md", "adr/0009-flags-v2.md"}


async def test_hits_carry_their_date_and_newest_sorts_by_it(kb: KnowledgeBase) -> None:
    data, text, _ = await search(kb, sort="newest", limit=10, path_prefix="adr/")
    assert [h["path"] for h in data["hits"]] == [
        "adr/0009-flags-v2.md",
        "adr/0004-flags.md",
        "adr/0001-old.md",
    ]
    assert [h["date"] for h in data["hits"]] == ["2026-11-20", "2024-05-27", "2016-01-04"]
    assert 'path="adr/0009-flags-v2.md" lines=' in text and "date=2026-11-20>>>" in text
    undated, _, _ = await search(kb, types=["txt"])
    assert undated["hits"][0]["date"] == mtime_day((kb.root / "notes/plain.txt").stat().st_mtime_ns)  # type: ignore[operator]


async def test_an_empty_query_with_newest_lists_what_changed(kb: KnowledgeBase) -> None:
    data, _, error = await search(kb, query="", sort="newest", after="2026-11-01", types=["md"])
    assert not error and data["legs"]["lexical"] == "none"
    listed = [h["path"] for h in data["hits"]]
    assert listed[:2] == ["runbooks/deploy.md", "incidents/payments-outage.md"] or listed[:2] == [
        "incidents/payments-outage.md", "runbooks/deploy.md",
    ]  # fmt: skip
    assert set(listed) == {"runbooks/deploy.md", "incidents/payments-outage.md", "adr/0009-flags-v2.md"}
    _, text, error = await search(kb, query="")
    assert error and "sort='newest'" in text


async def test_a_filter_that_matches_nothing_says_which(kb: KnowledgeBase) -> None:
    data, _, error = await search(kb, where={"status": "rejected"}, after="2020-01-01")
    assert not error and data["hits"] == [] and data["note_codes"][-1] == "empty"
    assert "where status=rejected alone matches no document" in data["notes"][-1]
    data, _, _ = await search(kb, types=["md"], path_globs=["*.txt"])
    assert "none passes all" in data["notes"][-1]


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"after": "last tuesday"}, "after='last tuesday' is not a date: expected a date YYYY-MM-DD"),
        ({"before": "2026-02-30"}, "before='2026-02-30' is not a date"),
        ({"after": "2026-05-01", "before": "2026-04-01"}, "after=2026-05-01 is later than before=2026-04-01"),
        ({"types": ["doc"]}, "types: 'doc' is not a file type kbseek reads; accepted: md, txt, pdf"),
        ({"where": {"stauts": "open"}}, "no document has the front-matter field 'stauts'; fields in this"),
        ({"where": {"status": []}}, "where['status'] is an empty list"),
        ({"where": {"status": {"$in": ["open"]}}}, 'expected a value ("accepted", 3, true)'),
        ({"sort": "oldest"}, "sort"),
    ],
)
async def test_a_filter_it_cannot_read_is_refused_saying_what_is_accepted(
    kb: KnowledgeBase, arguments: dict[str, Any], says: str
) -> None:
    _, text, error = await search(kb, **arguments)
    assert error and says in text, text


async def test_index_status_lists_the_fields_and_the_date_sources(kb: KnowledgeBase) -> None:
    async with Client(build_server(kb)) as client:
        result = await client.call_tool("index_status", {})
    data = result.structured_content or {}
    assert data["fields"]["tags"] == {"adr": 3, "deploy": 1, "incident": 1, "payments": 1}
    assert data["fields"]["status"] == {}  # each value held once: the field is named, its values not
    assert list(data["fields"]) == ["date", "status", "tags", "title", "owner"]  # most documents first
    assert data["date_sources"] == {"frontmatter:date": 4, "mtime": 2}
    async with Client(build_server(kb)) as client:
        document = await client.call_tool("get_document", {"path": "runbooks/deploy.md"})
    assert (document.structured_content or {})["date_source"] == "mtime"


async def test_several_collections_skip_one_without_the_field_and_list_newest_across_all(
    tmp_path: Path,
) -> None:
    lib = Library(
        {
            "team": indexed_kb(
                tmp_path / "team", {"a.md": "---\nowner: ana\ndate: 2025-01-01\n---\n# A\n\nflags\n"}
            ),
            "plain": indexed_kb(tmp_path / "plain", {"b.md": "---\ndate: 2026-01-01\n---\n# B\n\nflags\n"}),
        }
    )
    try:
        async with Client(build_library_server(lib[lib.default], library=lib)) as client:
            owned = await client.call_tool("search", {"query": "flags", "where": {"owner": "ana"}})
            newest = await client.call_tool("search", {"query": "", "sort": "newest"})
            nobody = await client.call_tool("search", {"query": "flags", "where": {"ownr": "ana"}})
        assert [(h["kb"], h["path"]) for h in (owned.structured_content or {})["hits"]] == [("team", "a.md")]
        assert [h["date"] for h in (newest.structured_content or {})["hits"]] == ["2026-01-01", "2025-01-01"]
        assert nobody.is_error and "no document has the front-matter field 'ownr'" in nobody.content[0].text  # type: ignore[union-attr]
    finally:
        lib.close()


async def test_listings_show_each_documents_date(kb: KnowledgeBase) -> None:
    async with Client(build_server(kb)) as client:
        topics = await client.call_tool("list_topics", {})
        body = await client.read_resource("kb://topic/adr/")
    adr = next(t for t in (topics.structured_content or {})["topics"] if t["prefix"] == "adr/")
    assert adr["titles"] == [
        "Feature flags v2 (2026-11-20)",
        "Feature flags (2024-05-27)",
        "Old flags (2016-01-04)",
    ]
    text = body.contents[0].text  # type: ignore[union-attr]
    assert "`adr/0009-flags-v2.md` — 2026-11-20" in text
