"""The MCP wire, through a real client connected in process to the real server."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server

pytestmark = pytest.mark.anyio

TOOLS = {"search", "fetch", "get_document", "related", "list_topics", "index_status"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call(core: KnowledgeBase, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str, bool]:
    async with Client(build_server(core)) as client:
        result = await client.call_tool(name, args)
    text = result.content[0].text if result.content else ""
    return result.structured_content or {}, text, bool(result.is_error)


async def test_the_server_advertises_its_read_only_tools_with_output_schemas(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        tools = (await client.list_tools()).tools
        instructions = client.instructions
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        assert tool.output_schema is not None, tool.name
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert len(tool.description or "") > 30
    search = next(t for t in tools if t.name == "search")
    assert "required" not in search.input_schema  # a listing of the newest takes no query
    assert {"limit", "path_prefix", "tags", "snippet_chars"} <= set(search.input_schema["properties"])
    assert "fetch" in (instructions or "")
    # the agent is told to send the other language's phrasing: the largest measured gain (decision 0011)
    assert "`also` with the same question in the other language" in (instructions or "")
    assert "also" in search.input_schema["properties"]


async def test_search_returns_structured_hits_and_a_readable_text_block(core: KnowledgeBase) -> None:
    data, text, is_error = await call(core, "search", {"query": "rollback load balancer"})
    assert not is_error
    hit = data["hits"][0]
    assert hit["path"] == "runbooks/deploy.md"
    assert hit["heading_path"][0] == "Deploy runbook"
    assert "load balancer" in hit["snippet"]
    assert {"chunk_id", "score", "snippet", "start", "end", "line_start", "line_end"} <= set(hit)
    assert "title" not in hit  # heading_path[0] says it (decision 0035)
    assert hit["tags"] == ["deploy", "runbook"]
    assert data["legs"] == {"lexical": "ok", "semantic": "off"}
    assert "runbooks/deploy.md" in text and hit["chunk_id"] in text


async def test_english_stemming_finds_taste_from_tastes(core: KnowledgeBase) -> None:
    data, _, _ = await call(core, "search", {"query": "taste"})
    assert data["hits"] and data["hits"][0]["path"] == "runbooks/deploy.md"


async def test_a_japanese_query_gets_a_japanese_snippet_centred_on_the_match(core: KnowledgeBase) -> None:
    data, _, _ = await call(core, "search", {"query": "連絡", "snippet_chars": 60})
    hit = data["hits"][0]
    assert hit["path"] == "notes/障害対応.md"
    assert "連絡" in hit["snippet"]
    assert len(hit["snippet"]) <= 60


async def test_a_snippet_is_centred_on_the_match_not_the_chunk_head(kb_root: Path) -> None:
    filler = " ".join(f"word{i}" for i in range(300))
    (kb_root / "long.md").write_text(f"# Long\n\n{filler} zebracrossing {filler}\n", encoding="utf-8")
    c = _core(kb_root)
    data, _, _ = await call(c, "search", {"query": "zebracrossing", "snippet_chars": 80})
    snippet = data["hits"][0]["snippet"]
    assert "zebracrossing" in snippet and not snippet.startswith("# Long")


def _core(root: Path) -> KnowledgeBase:
    from tests.conftest import make_core

    c = make_core(root)
    c.index()
    return c


async def test_limit_and_snippet_length_are_clamped_and_the_response_says_so(core: KnowledgeBase) -> None:
    data, _, _ = await call(core, "search", {"query": "backup", "limit": 10_000, "snippet_chars": 99_999})
    notes = " ".join(data["notes"])
    assert "limit=10000 was clamped to the maximum 50" in notes
    assert "snippet_chars=99999 was clamped" in notes
    data, _, _ = await call(core, "search", {"query": "backup", "limit": 0})
    assert "limit=0 was raised to the minimum 1" in " ".join(data["notes"])


async def test_an_omitted_limit_follows_the_default_a_config_reload_sets(
    kb_root: Path, tmp_path: Path
) -> None:
    """Tools read their defaults per call, so after a reload they agree with the CLI and the web page."""
    for i in range(6):
        (kb_root / f"q{i}.md").write_text(f"# Q {i}\n\nshared keyword quokka {i}\n", encoding="utf-8")
    config = tmp_path / "kbseek.toml"
    config.write_text("semantic = false\n[limits]\ndefault_limit = 5\n", encoding="utf-8")
    kb = KnowledgeBase(kb_root, config=config)
    try:
        kb.index()
        async with Client(build_server(kb)) as client:
            before = await client.call_tool("search", {"query": "quokka"})
            config.write_text("semantic = false\n[limits]\ndefault_limit = 2\n", encoding="utf-8")
            kb.reload_settings()
            after = await client.call_tool("search", {"query": "quokka"})
        assert len((before.structured_content or {})["hits"]) == 5
        assert len((after.structured_content or {})["hits"]) == 2
        assert len(kb.search("quokka").hits) == 2
    finally:
        kb.close()


async def test_a_cut_result_list_is_marked_truncated(kb_root: Path) -> None:
    for i in range(5):
        (kb_root / f"extra{i}.md").write_text(f"# Extra {i}\n\nshared keyword quokka {i}\n", encoding="utf-8")
    c = _core(kb_root)
    data, _, _ = await call(c, "search", {"query": "quokka", "limit": 2})
    assert len(data["hits"]) == 2 and data["truncated"] is True
    assert any("more hits exist" in n for n in data["notes"])


async def test_an_empty_result_says_how_much_is_indexed(core: KnowledgeBase) -> None:
    data, text, is_error = await call(core, "search", {"query": "xylophone"})
    assert not is_error and data["hits"] == []
    assert data["index"]["documents"] == 4 and data["index"]["indexing"] is False
    assert "no chunk matched" in data["notes"][-1] and "4 documents" in data["notes"][-1]
    assert "no chunk matched" in text


async def test_an_empty_index_says_nothing_is_indexed(tmp_path: Path) -> None:
    from tests.conftest import make_core

    root = tmp_path / "empty"
    root.mkdir()
    c = make_core(root)
    data, _, _ = await call(c, "search", {"query": "anything"})
    assert "the index is empty" in data["notes"][-1]


async def test_query_syntax_characters_never_break_search(core: KnowledgeBase) -> None:
    for query in ['"unbalanced', "NOT", "a AND OR b", "-(*)", "col:value", "*", "^ NEAR ("]:
        _, _, is_error = await call(core, "search", {"query": query})
        assert not is_error, query


async def test_an_empty_query_is_an_error_that_says_what_to_do(core: KnowledgeBase) -> None:
    _, text, is_error = await call(core, "search", {"query": "   "})
    assert is_error and "query is empty" in text


async def test_search_filters_by_path_prefix_and_tags(core: KnowledgeBase) -> None:
    data, _, _ = await call(core, "search", {"query": "backups restore", "path_prefix": "runbooks/database"})
    assert {h["path"] for h in data["hits"]} == {"runbooks/database/backup.md"}
    data, _, _ = await call(core, "search", {"query": "image rollback", "tags": ["DEPLOY"]})
    assert data["hits"] and {h["path"] for h in data["hits"]} == {"runbooks/deploy.md"}
    data, _, _ = await call(core, "search", {"query": "image rollback", "tags": ["database"]})
    assert data["hits"] == []


async def test_fetch_expands_a_hit_with_neighbours_and_no_repeated_overlap(core: KnowledgeBase) -> None:
    data, _, _ = await call(core, "search", {"query": "rollback"})
    cid = data["hits"][0]["chunk_id"]
    fetched, _text, is_error = await call(core, "fetch", {"chunk_ids": [cid], "context": 1})
    assert not is_error
    passage = fetched["passages"][0]
    assert passage["requested"] == [cid]
    assert cid in passage["chunk_ids"]
    source = (core.root / "runbooks/deploy.md").read_text(encoding="utf-8")
    # Overlap removed by offsets: the passage is the source slice, each sentence once.
    assert passage["text"].count("Switch the load balancer back") == 1
    assert (
        source[passage["start"] : passage["end"]]
        .replace("\n\n", "\n")
        .strip()
        .startswith(passage["text"].replace("\n\n", "\n").strip()[:40])
    )


async def test_fetch_of_an_unknown_id_answers_precisely_and_asks_for_a_new_search(
    core: KnowledgeBase,
) -> None:
    data, _, is_error = await call(core, "fetch", {"chunk_ids": ["c_doesnotexist"]})
    assert not is_error
    missing = data["missing"][0]
    assert missing["status"] == "unknown" and "search again" in missing["message"]


async def test_an_edited_document_makes_its_old_ids_stale_not_silently_different(core: KnowledgeBase) -> None:
    data, _, _ = await call(core, "search", {"query": "nightly snapshots"})
    old = data["hits"][0]["chunk_id"]
    path = core.root / "runbooks/database/backup.md"
    path.write_text(path.read_text(encoding="utf-8").replace("02:00", "03:30"), encoding="utf-8")
    _bump_mtime(path)
    fetched, _, _ = await call(core, "fetch", {"chunk_ids": [old]})
    assert fetched["passages"] == []
    missing = fetched["missing"][0]
    assert missing["status"] == "stale" and missing["path"] == "runbooks/database/backup.md"
    assert "search again" in missing["message"]


def _bump_mtime(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


async def test_a_file_edited_during_a_live_session_is_found_on_the_next_call(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        before = await client.call_tool("search", {"query": "platypus"})
        assert before.structured_content["hits"] == []
        note = core.root / "notes" / "new.md"
        note.write_text("# New\n\nThe platypus lays eggs.\n", encoding="utf-8")
        deadline = time.monotonic() + 5
        hits: list[Any] = []
        while not hits and time.monotonic() < deadline:
            after = await client.call_tool("search", {"query": "platypus"})
            hits = after.structured_content["hits"]
        assert hits and hits[0]["path"] == "notes/new.md"


async def test_get_document_returns_the_whole_text_and_says_it_is_indexed(core: KnowledgeBase) -> None:
    data, _text, is_error = await call(core, "get_document", {"path": "runbooks/deploy.md"})
    assert not is_error
    assert data["text"] == (core.root / "runbooks/deploy.md").read_text(encoding="utf-8")
    assert data["truncated"] is False and data["next_offset"] is None and data["indexed"] is True
    assert data["media_type"] == "text/markdown"


async def test_get_document_pages_a_long_document_and_reports_truncation(core: KnowledgeBase) -> None:
    data, _, _ = await call(core, "get_document", {"path": "runbooks/deploy.md", "max_chars": 50})
    assert data["truncated"] is True and data["next_offset"] == 50 and data["returned_chars"] == 50
    rest, _, _ = await call(
        core, "get_document", {"path": "runbooks/deploy.md", "offset": 50, "max_chars": 100_000}
    )
    full = (core.root / "runbooks/deploy.md").read_text(encoding="utf-8")
    assert data["text"] + rest["text"] == full and rest["truncated"] is False


async def test_document_in_excluded_dir_is_still_readable(core: KnowledgeBase) -> None:
    """D1: .kbseekignore keeps drafts/ out of the index, never out of reads."""
    search, _, _ = await call(core, "search", {"query": "bluebird codename"})
    assert search["hits"] == []
    data, _, is_error = await call(core, "get_document", {"path": "drafts/secret-plan.md"})
    assert not is_error and "bluebird" in data["text"] and data["indexed"] is False


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside.md", "uses '..'"),
        ("runbooks/../../outside.md", "uses '..'"),
        ("missing.md", "no file at 'missing.md'"),
        ("runbooks", "is a folder"),
        ("image.png", "no active parser opens"),
    ],
)
async def test_get_document_refusals_are_errors_with_a_distinct_message(
    core: KnowledgeBase, path: str, message: str
) -> None:
    (core.root / "image.png").write_bytes(b"\x89PNG")
    _, text, is_error = await call(core, "get_document", {"path": path})
    assert is_error and message in text


async def test_list_topics_groups_documents_by_folder(core: KnowledgeBase) -> None:
    data, text, _ = await call(core, "list_topics", {})
    prefixes = {t["prefix"]: t for t in data["topics"]}
    assert set(prefixes) == {"notes/", "runbooks/", "runbooks/database/"}
    assert prefixes["notes/"]["documents"] == 2
    [deploy] = prefixes["runbooks/"]["titles"]
    assert re.fullmatch(r"Deploy runbook \(\d{4}-\d\d-\d\d\)", deploy)  # with its date
    assert "runbooks/database/" in text


async def test_index_status_reports_counts_location_and_skips(core: KnowledgeBase) -> None:
    data, text, _ = await call(core, "index_status", {})
    assert data["documents"] == 4 and data["chunks"] >= 4 and data["indexing"] is False
    assert data["index_path"].endswith("index.sqlite") and data["last_index_at"]
    assert {"path": "drafts/", "reason": ".kbseekignore"} in data["skipped"]
    assert "documents:" in text
