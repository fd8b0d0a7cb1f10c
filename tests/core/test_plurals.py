"""Counts in words read right at one: "1 documents" in a topic body or "1 topics" in list_topics
reads as a bug and makes a reader doubt the number beside it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbseek import KnowledgeBase, render
from kbseek.text.plurals import counted
from tests.conftest import make_core


def test_counted_takes_the_plural_for_everything_but_one() -> None:
    assert [counted(n, "topic") for n in (0, 1, 2)] == ["0 topics", "1 topic", "2 topics"]
    assert counted(1, "query", "queries") == "1 query" and counted(3, "query", "queries") == "3 queries"


@pytest.fixture
def one_note(tmp_path: Path) -> Iterator[KnowledgeBase]:
    root = tmp_path / "kb"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "only.md").write_text("# Only note\n\nA single short note.\n", encoding="utf-8")
    core = make_core(root)
    core.index()
    yield core
    core.close()


def test_one_of_each_reads_in_the_singular_for_agents_and_people(one_note: KnowledgeBase) -> None:
    assert "\n1 document.\n" in (one_note.topic_body("notes/") or "")
    text = render.topics_text(one_note.topics())
    assert text.splitlines()[0] == "1 topic (1 document)"
    assert "- notes/: 1 document — Only note" in text
    empty = one_note.search("zzqx qqzv")
    assert any("the index holds 1 document and 1 chunk." in n for n in empty.notes)
    assert render.search_text(one_note.search("single note")).startswith("1 hit for ")
    status = render.status_text(one_note.status())
    assert "skipped:        0 files or folders" in status
