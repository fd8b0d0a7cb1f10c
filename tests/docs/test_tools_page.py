"""The tools page shows what an agent really sees: its example is a real search's answer.

The "What an agent sees" section holds a search's text block and its structured content. The same
call is made here through a real MCP client on a copy of the example knowledge base, and must give
that answer (the fencing token aside, which is drawn afresh for every answer), so a change to what
a search returns cannot leave the page showing an older answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp import Client

from kbseek import KnowledgeBase, SearchHit, SearchResponse
from kbseek.server.mcp import build_server
from tests.fixture_copies import copy_fixture

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"en": ROOT / "docs" / "tools.md", "ja": ROOT / "docs" / "ja" / "tools.md"}
HEADINGS = {"en": "## What an agent sees", "ja": "## エージェントに見えるもの"}
CALL = {"query": "how do I roll back a release", "limit": 2}
TOKEN = re.compile(r"(<<<kbseek-(?:doc|end)) [0-9a-f]+")


def example(lang: str) -> tuple[str, dict[str, object]]:
    text = PAGES[lang].read_text(encoding="utf-8")
    section = text.split(HEADINGS[lang] + "\n", 1)[1].split("\n## ", 1)[0]
    (shown,) = re.findall(r"```text\n(.*?)```", section, flags=re.DOTALL)
    (structured,) = re.findall(r"```json\n(.*?)```", section, flags=re.DOTALL)
    return shown.strip(), json.loads(structured)


def test_both_languages_show_the_same_answer() -> None:
    assert example("en") == example("ja")


def test_the_structured_example_has_the_fields_of_the_answer_and_its_hits() -> None:
    _, structured = example("en")
    assert set(structured) <= set(SearchResponse.model_fields), set(structured) - set(
        SearchResponse.model_fields
    )
    hits = structured["hits"]
    assert isinstance(hits, list) and hits
    for hit in hits:
        assert set(hit) <= set(SearchHit.model_fields), set(hit) - set(SearchHit.model_fields)


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_example_is_what_the_search_answers(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    copy_fixture(ROOT / "examples" / "kb", notes)
    shown, structured = example("en")
    with KnowledgeBase(notes) as kb:
        kb.index()
        async with Client(build_server(kb)) as client:
            result = await client.call_tool("search", CALL)
    text = result.content[0].text  # type: ignore[union-attr]
    assert TOKEN.sub(r"\1 *", text.strip()) == TOKEN.sub(r"\1 *", shown)
    answer = dict(result.structured_content or {})
    answer["hits"] = answer["hits"][: len(structured["hits"])]  # type: ignore[index]
    assert answer == structured
