"""``low_confidence`` over hits the caller can see comes with a note saying why (code ``low_confidence``).

A search whose first hit looked strong said "the knowledge base may not cover this" with no reason,
and the ``answer_from_kb`` prompt then told the agent to say the question was not covered.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server
from tests.fixture_copies import example_copy

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def examples(tmp_path: Path) -> KnowledgeBase:
    kb = KnowledgeBase(example_copy(tmp_path), semantic=False)  # keywords: the verdict is the words'
    kb.index()
    return kb


async def test_a_weak_best_hit_is_flagged_with_its_share_of_the_query(examples: KnowledgeBase) -> None:
    async with Client(build_server(examples)) as client:
        result = await client.call_tool("search", {"query": "how do I roll back a bad release"})
    data, text = result.structured_content or {}, result.content[0].text  # type: ignore[union-attr]
    assert data["low_confidence"] and data["hits"] and "low_confidence" in data["note_codes"]
    note = data["notes"][data["note_codes"].index("low_confidence")]
    assert note.startswith("low confidence: best hit has ") and note.endswith("% of query words")
    assert text.splitlines()[1] == f"note: {note}"  # right under the count, before the hits
    examples.close()


async def test_phrasings_that_do_not_agree_say_so(examples: KnowledgeBase) -> None:
    r = examples.search("本番でエラーが増えたら", also=["errors increase in production", "rollback"])
    assert r.low_confidence and r.hits[0].path == "runbooks/rollback.md"
    note = r.notes[r.note_codes.index("low_confidence")]
    assert note.startswith("low confidence: ") and note.endswith(
        "found a strong best hit, no two in one document"
    )
    examples.close()


async def test_a_confident_search_has_no_such_note(examples: KnowledgeBase) -> None:
    r = examples.search("LNT-4012")
    assert not r.low_confidence and "low_confidence" not in r.note_codes
    examples.close()
