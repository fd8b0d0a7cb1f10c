"""``KnowledgeBase.related``: documents related to a document or a chunk, by links and by vectors,
each saying why, within its caps (docs/decisions/0036)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from kbseek import Filters, KnowledgeBase
from kbseek.config import Settings
from kbseek.errors import InvalidArgument
from kbseek.facade import related
from tests.conftest import write_notes
from tests.fakes import FakeEmbedder

NOTES = {
    "home.md": "# Home\n\nStart with the [deploy runbook](ops/deploy.md) and [[Rollback]].\n",
    "ops/deploy.md": (  # two sections long enough to be a chunk each
        "# Deploy runbook\n\n## Build\n\n"
        + "build the container image and push the image to the registry. " * 12
        + "\n\n## Release\n\n"
        + "switch the load balancer to the new image tag. " * 12
        + "\n"
    ),
    "ops/rollback.md": "# Rollback\n\nswitch the load balancer back to the previous image tag\n",
    "ops/images.md": "# Images\n\nthe registry keeps every container image and image tag we push\n",
    "cooking/soup.md": "# Soup\n\nsimmer onions slowly with butter and thyme\n",
    "notes/readme.md": "# Notes\n\nSee [home](../home.md) and the [recipes](/cooking/soup).\n",
}


def _kb(root: Path, *, semantic: bool = True) -> KnowledgeBase:
    settings = Settings(root=root, semantic=semantic, freshness_interval_s=0.0)
    return KnowledgeBase(settings=settings, embedder=FakeEmbedder() if semantic else None)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    write_notes(tmp_path, NOTES)
    k = _kb(tmp_path)
    k.index()
    yield k
    k.close()


def test_each_hit_says_why_links_both_ways_and_similarity(kb: KnowledgeBase) -> None:
    r = kb.related("ops/deploy.md")
    by_path = {h.path: h for h in r.hits}
    assert "ops/deploy.md" not in by_path  # never itself
    assert "linked from" in by_path["home.md"].why
    assert r.backlinks == ["home.md"]
    images = by_path["ops/images.md"]
    assert images.why == [f"similar: {images.score:.2f}"] and images.title == "Images"
    assert r.hits == sorted(r.hits, key=lambda h: -h.score)
    assert not r.truncated and not r.notes


def test_links_count_a_quarter_per_direction_on_top_of_similarity(kb: KnowledgeBase) -> None:
    r = kb.related("home.md")
    by_path = {h.path: h for h in r.hits}
    for path in ("ops/deploy.md", "ops/rollback.md"):  # a Markdown link and a wiki link
        hit = by_path[path]
        assert hit.why[0] == "links to"
        similar = float(hit.why[-1].removeprefix("similar: ")) if hit.why[-1].startswith("similar") else 0.0
        assert hit.score == pytest.approx(similar + related.LINK_WEIGHT, abs=0.01)
    both = {h.path: h.why for h in kb.related("notes/readme.md").hits}
    assert both["home.md"][0] == "links to"
    assert "links to" in both["cooking/soup.md"]  # a root-absolute link without its extension


def test_without_the_link_signal_only_vectors_rank(kb: KnowledgeBase) -> None:
    r = kb.related("home.md", links=False)
    assert r.backlinks == []
    assert all(len(h.why) == 1 and h.why[0].startswith("similar: ") for h in r.hits)


def test_a_chunk_is_compared_alone_and_keeps_its_documents_links(kb: KnowledgeBase) -> None:
    build = next(h for h in kb.search("registry container image").hits if h.path == "ops/deploy.md")
    alone = kb.related(chunk_id=build.chunk_id, links=False)
    assert alone.path == "ops/deploy.md"
    assert alone.hits[0].path == "ops/images.md"  # the passage about the registry, not the release
    r = kb.related(chunk_id=build.chunk_id)
    assert r.backlinks == ["home.md"] and any("a chunk has its document's links" in n for n in r.notes)


def test_bad_subjects_are_refused_saying_what_to_pass(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidArgument, match="either path or chunk_id"):
        kb.related()
    with pytest.raises(InvalidArgument, match="either path or chunk_id"):
        kb.related("home.md", chunk_id="x")
    with pytest.raises(InvalidArgument, match="not an indexed document"):
        kb.related("nowhere.md")
    with pytest.raises(InvalidArgument, match="not a current chunk"):
        kb.related(chunk_id="home.md#000000000000")


def test_limit_is_clamped_and_a_cut_list_says_so(kb: KnowledgeBase) -> None:
    r = kb.related("ops/deploy.md", limit=1)
    assert len(r.hits) == 1 and r.truncated and any("raise limit" in n for n in r.notes)
    r = kb.related("ops/deploy.md", limit=500)
    assert any("limit=500 was clamped to the maximum 50" in n for n in r.notes)


def test_the_chunk_cap_and_the_time_budget_say_what_they_left_out(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(related, "MAX_CHUNKS", 1)
    r = kb.related("ops/deploy.md")
    assert r.truncated and any("only the first 1 chunks" in n for n in r.notes)
    monkeypatch.setattr(related, "MAX_CHUNKS", 32)
    monkeypatch.setattr(related, "TIME_BUDGET", -1.0)  # spent before the first chunk
    r = kb.related("ops/deploy.md")
    assert r.truncated and any("time budget" in n and "0 of 2 chunks" in n for n in r.notes)
    assert r.backlinks == ["home.md"]  # the links still answer


def test_without_a_model_related_answers_by_links_and_says_so(tmp_path: Path) -> None:
    write_notes(tmp_path, NOTES)
    with _kb(tmp_path, semantic=False) as k:
        k.index()
        r = k.related("home.md")
    assert [h.path for h in r.hits] == ["notes/readme.md", "ops/deploy.md", "ops/rollback.md"]
    assert any("semantic search is off: related by links only" in n for n in r.notes)


def test_an_index_from_before_links_gains_them_in_place_with_its_vectors(tmp_path: Path) -> None:
    write_notes(tmp_path, NOTES)
    with _kb(tmp_path) as k:
        k.index()
    db = tmp_path / ".kbseek" / "index.sqlite"
    with closing(sqlite3.connect(db)) as conn, conn:  # as schema 3 and parse version 5 left it
        conn.execute("DROP TABLE links")
        conn.execute("DROP TABLE document_names")
        conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
        conn.execute("UPDATE meta SET value='5' WHERE key='parse_version'")
    embedder = FakeEmbedder()
    with KnowledgeBase(settings=Settings(root=tmp_path, freshness_interval_s=0.0), embedder=embedder) as k:
        k.index()
        assert embedder.documents_embedded == 0  # every vector kept
        assert k.related("ops/deploy.md").backlinks == ["home.md"]


def test_a_document_speaking_to_all_of_the_subject_outranks_one_matching_a_single_passage(
    tmp_path: Path,
) -> None:
    """A document's similarity is the mean over the subject's passages of their best match in it.
    Ranked by the single best pair, a page that shared one passage with the subject (a boilerplate
    section, a common code sample) came before a page about the whole of it."""
    sections = {"First": "apple banana cherry", "Second": "drum flute guitar", "Third": "lion tiger zebra"}
    notes = {  # three passages with no word in common, and two pages
        "subject.md": "# Subject\n\n"
        + "".join(f"## {h}\n\n" + f"{words}. " * 30 + "\n\n" for h, words in sections.items()),
        "one-passage.md": "# One\n\napple banana cherry\n",  # the first passage's words: cosine 1 with it, 0 with the rest
        "whole.md": "# Whole\n\napple banana drum flute lion tiger\n",  # two words of each passage: 0.47 with each
    }
    write_notes(tmp_path, notes)
    with _kb(tmp_path) as kb:
        kb.index()
        assert len(kb.store.neighbours(kb.store.document("subject.md").id, 0, 10)) >= 3  # type: ignore[union-attr]
        ranked = [h.path for h in kb.related("subject.md", links=False).hits]
        assert ranked.index("whole.md") < ranked.index("one-passage.md")
        first_chunk = (
            kb.search("apple banana cherry", filters=Filters(path_prefix="subject")).hits[0].chunk_id
        )
        by_chunk = [h.path for h in kb.related(chunk_id=first_chunk, links=False).hits]
        assert by_chunk[0] == "one-passage.md"  # one passage: its best match decides
