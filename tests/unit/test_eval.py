"""The eval harness's miss report: a miss must say what missed, so it never contradicts its own "got".

A newcomer saw a query listed as a miss while its "got" list held the expected file: the golden
entry named a section (``heading``), the right document ranked first with another section, and
the report showed paths only. Paths written another way ("./a.md", NFD file names) must also
name the same note as the search's paths.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.cli.eval import MISS_K, format_text, load_golden, run_eval, summarize
from tests.conftest import make_core

NAME = "notes/データ移行.md"  # デ decomposes: macOS file systems may hand back NFD

GOLDEN = """
queries:
  - id: right-doc-other-section
    query: load balancer rollback
    expected:
      - path: runbooks/deploy.md
        heading: "## Canary analysis"
  - id: written-another-way
    query: データベースの移行
    expected:
      - path: ./{nfd}
  - id: slash-first
    query: nightly snapshots restore
    expected:
      - path: /runbooks/database/backup.md
"""


@pytest.fixture
def core(kb_root: Path) -> Iterator[KnowledgeBase]:
    (kb_root / NAME).write_text("# データ移行\n\nデータベースの移行手順。\n", encoding="utf-8")
    c = make_core(kb_root)
    c.index()
    yield c
    c.close()


def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.yml"
    nfd = unicodedata.normalize("NFD", NAME)
    assert nfd != NAME
    path.write_text(GOLDEN.format(nfd=nfd), encoding="utf-8")
    return path


def test_a_section_miss_says_the_document_was_found_and_shows_the_sections_it_got(
    core: KnowledgeBase, tmp_path: Path
) -> None:
    queries = load_golden(golden(tmp_path))
    assert queries[0].expected[0].heading == "Canary analysis"  # "## " is how it is written, not its name
    summary = summarize(run_eval(core, queries))
    (miss,) = summary["misses"]
    assert miss["id"] == "right-doc-other-section"
    assert miss["got"][0] == "runbooks/deploy.md" and len(miss["got"]) <= MISS_K
    (item,) = miss["missed"]
    assert item["document_rank"] == 1 and item["rank"] is None
    text = format_text(summary, None)
    assert "1 answerable query missed an expected document or section in the top 5:" in text
    assert (
        "missed runbooks/deploy.md § Canary analysis: the document ranked 1, but no hit in the top 10 "
        "is its section 'Canary analysis'" in text
    )
    assert "got: runbooks/deploy.md › " in text


def test_expected_paths_written_another_way_still_match(core: KnowledgeBase, tmp_path: Path) -> None:
    results = {r.query.id: r for r in run_eval(core, load_golden(golden(tmp_path)))}
    assert results["written-another-way"].ranks == [1]
    assert results["slash-first"].ranks == [1]
