"""The embed phase reads the chunks it embeds a page at a time: memory bounded by a page, not the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed.base import EmbedderSpec
from kbseek.progress import ProgressSnapshot
from kbseek.store.sqlite.store import SqliteStore
from tests.conftest import MANY as NOTES
from tests.fakes import FakeEmbedder


def test_a_pass_embeds_every_chunk_reading_one_page_at_a_time(
    many: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages: list[int] = []
    limits: list[int | None] = []
    original = SqliteStore.chunks_without_vectors

    def spy(self: SqliteStore, *, after: str = "", limit: int | None = None) -> list:  # type: ignore[type-arg]
        page = original(self, after=after, limit=limit)
        pages.append(len(page))
        limits.append(limit)
        return page

    monkeypatch.setattr(SqliteStore, "chunks_without_vectors", spy)
    settings = Settings(root=many, freshness_interval_s=1e9, embed=EmbedderSpec(batch_size=2))
    seen: list[ProgressSnapshot] = []
    with KnowledgeBase(settings=settings, embedder=FakeEmbedder()) as kb:
        kb.load_semantic()
        kb.index(embed=False)  # every chunk is written and left to the embed phase of the next pass
        report = kb.index(progress=seen.append)
        assert report.chunks_embedded == NOTES
        assert kb.status().embedded == NOTES  # nothing was skipped between pages
    # batch 2 → pages of 8: never the whole corpus in one read, and the last read finds nothing left
    assert set(limits) == {8}
    assert max(pages) == 8 and sum(pages) == NOTES and pages[-1] == 0
    embed = [s for s in seen if s.phase == "embed"]
    assert {s.total for s in embed} == {NOTES} and embed[-1].done == NOTES  # the total is known up front


def test_pages_follow_content_hash_order_and_pending_count_matches(many: Path) -> None:
    with KnowledgeBase(settings=Settings(root=many, semantic=False, freshness_interval_s=1e9)) as kb:
        kb.index()
        store = kb.store
        everything = store.chunks_without_vectors()
        assert store.pending_vector_count() == len(everything) == NOTES
        paged, after = [], ""
        while page := store.chunks_without_vectors(after=after, limit=7):
            paged.extend(page)
            after = page[-1].content_hash
        assert paged == everything
        assert store.chunks_without_vectors(limit=0) == []
