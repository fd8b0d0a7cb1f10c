"""Paths round-trip (T8): whatever search returns, get_document, fetch and the kb:// resource open.

The names here are the ones a typed-path reading would mangle: a leading or trailing blank, a
backslash (a plain character in a POSIX name), ``#``, ``%``, ``?`` (URI delimiters) and non-ASCII.
Each is indexed, found by search over a real in-process MCP client, and read back by the path and
the uri the hit gave. A path no file can have (a name over the file system's length limit) is a
refusal that says what was wrong, never a traceback.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from kbseek import KnowledgeBase
from kbseek.server.errors import INVALID_PARAMS
from kbseek.server.mcp import build_server
from kbseek.uris import document_uri, parse_uri
from tests.conftest import make_core

pytestmark = pytest.mark.anyio

POSIX_ONLY = sys.platform == "win32"  # Windows names hold no backslash or '?', nor a trailing blank

NAMES: dict[str, str] = {
    " lead.md": "quarkalpha",
    " lead folder/inner.md": "quarkbravo",
    "trail /t.md": "quarkcharlie",
    "ends in a blank .md": "quarkdelta",
    "h#sh.md": "quarkecho",
    "p%20c.md": "quarkfoxtrot",
    "100%.md": "quarkgolf",
    "日本語 ノート/café.md": "quarkhotel",
}
if not POSIX_ONLY:
    NAMES |= {
        "back\\slash.md": "quarkindia",
        "q?.md": "quarkjuliet",
        "mixed/ sp #?%\\ é.md": "quarkkilo",
    }


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def odd_root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    for name, word in NAMES.items():
        path = root.joinpath(*name.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note\n\nThis note holds the word {word} and nothing else.\n", encoding="utf-8")
    return root


@pytest.fixture
def odd(odd_root: Path) -> Iterator[KnowledgeBase]:
    c = make_core(odd_root)
    c.index()
    yield c
    c.close()


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, text
    assert result.structured_content is not None
    return result.structured_content


async def test_every_path_search_returns_opens_by_path_by_chunk_id_and_by_uri(odd: KnowledgeBase) -> None:
    async with Client(build_server(odd)) as client:
        for name, word in NAMES.items():
            hits = (await call(client, "search", {"query": word}))["hits"]
            assert [h["path"] for h in hits] == [name]
            hit = hits[0]
            doc = await call(client, "get_document", {"path": hit["path"]})
            assert doc["path"] == name and word in doc["text"]
            passages = (await call(client, "fetch", {"chunk_ids": [hit["chunk_id"]]}))["passages"]
            assert [(p["path"], p["uri"]) for p in passages] == [(name, hit["uri"])]
            assert parse_uri(hit["uri"]).path == name
            contents = (await client.read_resource(hit["uri"])).contents[0]
            assert word in contents.text  # type: ignore[union-attr]


async def test_every_folder_list_topics_names_filters_a_search_by_that_prefix(odd: KnowledgeBase) -> None:
    """A folder whose name starts or ends with a blank was trimmed away by path_prefix, so the
    prefix list_topics gave for it found nothing."""
    async with Client(build_server(odd)) as client:
        topics = (await call(client, "list_topics", {}))["topics"]
        prefixes = [t["prefix"] for t in topics if t["prefix"].rstrip("/") in {" lead folder", "trail "}]
        assert len(prefixes) == 2
        for prefix in prefixes:
            wanted = {name for name in NAMES if name.startswith(prefix)}
            data = await call(client, "search", {"query": "note word", "path_prefix": prefix, "limit": 20})
            assert {h["path"] for h in data["hits"]} == wanted, prefix
        typed = await call(client, "search", {"query": "note word", "path_prefix": "  日本語 ノート/ "})
        assert {h["path"] for h in typed["hits"]} == {"日本語 ノート/café.md"}  # typed blanks still trimmed


@pytest.mark.skipif(POSIX_ONLY, reason="a backslash is a folder separator on Windows")
async def test_a_name_as_search_returns_it_wins_over_its_typed_reading(tmp_path: Path) -> None:
    """``a\\b.md`` names that file when it exists, and ``a/b.md`` only when it does not."""
    root = tmp_path / "kb"
    (root / "a").mkdir(parents=True)
    (root / "a\\b.md").write_text("# Backslash\n\nquarkliteral\n", encoding="utf-8")
    (root / "a" / "b.md").write_text("# Folder\n\nquarkfolder\n", encoding="utf-8")
    (root / " lead.md").write_text("# Blank\n\nquarkblank\n", encoding="utf-8")
    (root / "lead.md").write_text("# Plain\n\nquarkplain\n", encoding="utf-8")
    c = make_core(root)
    try:
        c.index()
        assert "quarkliteral" in c.read_document("a\\b.md").text
        assert "quarkfolder" in c.read_document("a/b.md").text
        assert "quarkblank" in c.read_document(" lead.md").text
        assert "quarkplain" in c.read_document("lead.md").text
        assert "quarkliteral" in c.read_resource_document("a\\b.md").text
        assert "quarkblank" in c.read_resource_document(" lead.md").text
        (root / "a\\b.md").unlink()
        (root / " lead.md").unlink()
        # with no such name, the typed readings of before still reach the files they always did
        assert "quarkfolder" in c.read_document("a\\b.md").text
        assert "quarkplain" in c.read_document(" lead.md").text
    finally:
        c.close()


async def test_typed_paths_still_open_their_files(core: KnowledgeBase) -> None:
    assert core.read_document("  notes/plain.txt ").path == "notes/plain.txt"
    assert core.read_document("./runbooks//deploy.md").path == "runbooks/deploy.md"
    assert core.read_document("runbooks\\deploy.md").path == "runbooks/deploy.md"
    assert core.read_resource_document("runbooks\\deploy.md").path == "runbooks/deploy.md"


# -- paths no file can have ----------------------------------------------------------------------

TOO_LONG = ["N" * 5000, "notes/" + "N" * 300 + "/a.md", "runbooks/" + "é" * 200 + ".md"]


@pytest.mark.parametrize("path", TOO_LONG, ids=["5000-byte-name", "long-folder", "long-multibyte-name"])
async def test_an_over_long_name_is_a_clear_refusal_and_no_traceback(
    core: KnowledgeBase, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    caplog.set_level(logging.DEBUG)
    async with Client(build_server(core)) as client:
        result = await client.call_tool("get_document", {"path": path})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error
    assert "longer than the file system allows" in text and "as search returns it" in text
    assert "bug" not in text and len(text) < 600  # the 5000-character path is not echoed whole
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_an_over_long_resource_uri_is_a_clear_refusal_and_no_traceback(
    core: KnowledgeBase, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with Client(build_server(core)) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(document_uri("N" * 5000 + ".md"))
    assert caught.value.code == INVALID_PARAMS and "not offered as a resource" in caught.value.message
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.levelno >= logging.ERROR]
