"""The MCP prompts, through a real client connected in process to the real server."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server
from kbseek.server.prompts import MAX_RECENT
from tests.conftest import make_core

pytestmark = pytest.mark.anyio

PROMPTS = {
    "answer_from_kb": {"question": "How do I roll back a deploy?"},
    "summarize_topic": {"topic": "runbooks"},
    "whats_new": {"since": "2026-01-01"},
}
KEY_TOOLS = {
    "answer_from_kb": {"search", "fetch"},
    "summarize_topic": {"search", "fetch", "list_topics"},
    "whats_new": {"search", "fetch", "get_document"},
}
CALL = re.compile(r"\b([A-Za-z_]\w*)\(")
BACKTICKED = re.compile(r"`([^`\n]+)`")
NAMED = re.compile(r"([A-Za-z_]\w*)(?:: .*)?")  # `name` or `name: value`, not a path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def indexed(kb_root: Path) -> Iterator[Callable[[], KnowledgeBase]]:
    """Index ``kb_root`` on demand, after a test has added its own notes."""
    cores: list[KnowledgeBase] = []

    def build() -> KnowledgeBase:
        cores.append(make_core(kb_root))
        cores[-1].index()
        return cores[-1]

    yield build
    for c in cores:
        c.close()


async def render(core: KnowledgeBase, name: str, args: dict[str, str]) -> str:
    async with Client(build_server(core)) as client:
        result = await client.get_prompt(name, args)
    assert len(result.messages) == 1 and result.messages[0].role == "user"
    return result.messages[0].content.text


def _schema_names(schema: Any) -> set[str]:
    """Every property name anywhere in a JSON schema, nested models included."""
    names: set[str] = set()
    if isinstance(schema, dict):
        names |= set(schema.get("properties", {}))
        for value in schema.values():
            names |= _schema_names(value)
    elif isinstance(schema, list):
        for value in schema:
            names |= _schema_names(value)
    return names


def _sections(text: str) -> dict[str, str]:
    """The whats_new text split at its ``## By ...`` headings."""
    body = text.split("\nThen:\n", 1)[0]
    return {part.split(":", 1)[0]: part for part in body.split("\n## ")[1:]}


async def test_the_three_prompts_are_listed_with_titles_and_described_arguments(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == set(PROMPTS)
    for name, args in PROMPTS.items():
        prompt = prompts[name]
        assert prompt.title and len(prompt.description or "") > 30, name
        assert [(a.name, a.required) for a in prompt.arguments or []] == [(arg, True) for arg in args]
        assert all(len(a.description or "") > 10 for a in prompt.arguments or [])


@pytest.mark.parametrize("name", sorted(PROMPTS))
async def test_a_rendered_prompt_names_only_tools_fields_and_arguments_that_exist(
    core: KnowledgeBase, name: str
) -> None:
    async with Client(build_server(core)) as client:
        tools = (await client.list_tools()).tools
        result = await client.get_prompt(name, PROMPTS[name])
    text = result.messages[0].content.text
    tool_names = {t.name for t in tools}
    called = set(CALL.findall(text))
    assert called <= tool_names, called - tool_names
    assert KEY_TOOLS[name] <= called
    vocabulary = tool_names | set(PROMPTS[name])
    for tool in tools:
        vocabulary |= _schema_names(tool.input_schema) | _schema_names(tool.output_schema)
    quoted = {m[1] for q in BACKTICKED.findall(text) if (m := NAMED.fullmatch(q))}
    assert quoted, text
    assert quoted <= vocabulary, quoted - vocabulary


async def test_answer_from_kb_asks_for_citations_and_to_admit_silence(core: KnowledgeBase) -> None:
    text = await render(core, "answer_from_kb", {"question": "What is the rollback procedure?"})
    assert "What is the rollback procedure?" in text
    assert "`low_confidence: true`" in text and "does not cover" in text
    assert "`chunk_id`" in text and "`path`" in text and "heading" in text


async def test_summarize_topic_lists_the_topic_groups_and_the_matching_folder(core: KnowledgeBase) -> None:
    text = await render(core, "summarize_topic", {"topic": "runbooks/"})
    assert "- runbooks/: 1" in text and "- runbooks/database/: 1" in text and "- notes/: 2" in text
    assert 'path_prefix="runbooks/"' in text
    assert "drafts/" not in text  # excluded: never indexed, so never offered


async def test_summarize_topic_without_a_folder_match_still_suggests_path_prefix(core: KnowledgeBase) -> None:
    text = await render(core, "summarize_topic", {"topic": "incident response"})
    assert "The topic names a folder" not in text
    assert "search(query=..., path_prefix=...)" in text


async def test_whats_new_lists_documents_by_frontmatter_date_and_says_so(
    kb_root: Path, indexed: Callable[[], KnowledgeBase]
) -> None:
    (kb_root / "notes" / "release.md").write_text(
        "---\ntitle: Release notes\ndate: 2026-06-15\n---\n# Release notes\n\nShipped.\n", encoding="utf-8"
    )
    (kb_root / "notes" / "memo.md").write_text(
        "---\ntitle: Old memo\ndate: 2025-01-10\n---\n# Old memo\n\nLong ago.\n", encoding="utf-8"
    )
    (kb_root / "notes" / "odd.md").write_text(
        "---\ndate: sometime\n---\n# Odd\n\nUndated.\n", encoding="utf-8"
    )
    text = await render(indexed(), "whats_new", {"since": "2026-05-01"})
    by_date = _sections(text)["By frontmatter date"]
    assert "Criterion: the document's frontmatter date" in by_date and "2026-05-01" in by_date
    assert "`notes/release.md`" in by_date and "2026-06-15" in by_date
    assert "notes/memo.md" not in by_date
    assert "runbooks/deploy.md" not in by_date  # dated 2026-03-01, before since
    assert "1 document with a frontmatter date that does not start with YYYY-MM-DD" in by_date
    assert "drafts/" not in text


async def test_whats_new_lists_documents_by_index_time_and_says_so(core: KnowledgeBase) -> None:
    since = datetime.now(UTC)
    edited = core.root / "runbooks" / "database" / "backup.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nSnapshots are kept for 30 days.\n", "utf-8")
    st = edited.stat()
    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    text = await render(core, "whats_new", {"since": since.isoformat()})
    sections = _sections(text)
    by_index = sections["By index time"]
    assert "Criterion: the document's current content was indexed" in by_index
    assert "`runbooks/database/backup.md`" in by_index and "no frontmatter date" in by_index
    assert "runbooks/deploy.md" not in by_index and "notes/plain.txt" not in by_index
    assert "None: no document has a frontmatter date" in sections["By frontmatter date"]


async def test_whats_new_says_when_a_list_is_empty_and_when_it_is_capped(
    kb_root: Path, indexed: Callable[[], KnowledgeBase]
) -> None:
    (kb_root / "log").mkdir()
    for i in range(MAX_RECENT + 3):
        (kb_root / "log" / f"entry{i:02}.md").write_text(
            f"---\ndate: 2030-01-{i % 28 + 1:02}\n---\n# Entry {i}\n\nText.\n", encoding="utf-8"
        )
    c = indexed()
    capped = _sections(await render(c, "whats_new", {"since": "2029-12-31"}))["By frontmatter date"]
    assert f"{MAX_RECENT + 3} documents dated 2029-12-31 or later" in capped
    assert f"capped: showing {MAX_RECENT} of {MAX_RECENT + 3}" in capped
    assert capped.count("\n- ") == MAX_RECENT
    text = await render(c, "whats_new", {"since": "2031-01-01"})
    assert "None: no document has a frontmatter date on or after 2031-01-01" in text
    assert "None: no document's content was indexed" in text
    assert "Neither criterion finds anything new" in text


async def test_whats_new_accepts_a_relative_age(core: KnowledgeBase) -> None:
    text = await render(core, "whats_new", {"since": "2w"})
    assert "since 2 weeks ago (" in text
    assert "`runbooks/deploy.md`" in _sections(text)["By index time"]  # indexed moments ago


@pytest.mark.parametrize("since", ["last tuesday", "2026-13-01", "2026/03/01", "7x", "", "７d", "٢٠٢٦-٠٣-٠١"])
async def test_a_bad_since_is_an_error_that_says_what_format_is_expected(
    core: KnowledgeBase, since: str
) -> None:
    async with Client(build_server(core)) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("whats_new", {"since": since})
    assert caught.value.code == INVALID_PARAMS
    assert "YYYY-MM-DD" in caught.value.message and "7d" in caught.value.message
    assert repr(since) in caught.value.message


async def test_an_empty_question_is_an_error_that_says_what_to_pass(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        with pytest.raises(MCPError, match="question is empty"):
            await client.get_prompt("answer_from_kb", {"question": "  "})
