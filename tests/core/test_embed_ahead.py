"""A pass embeds what it has written while it parses the next files, and holds only a bounded part of it.

The worker embeds on one core while parsing runs on the other; these tests pin that it really overlaps,
that every chunk still ends with exactly one vector, that the work handed over stays bounded whatever
the pass's size, and that a failing pass leaves no worker behind.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed.base import EmbedderSpec
from kbseek.embed.chunk_vectors import ChunkText
from kbseek.ingest.embed_ahead import EmbedAhead
from kbseek.progress import ProgressSnapshot
from kbseek.store.records import PendingChunk
from tests.conftest import MANY as NOTES
from tests.fakes import FakeEmbedder

WAIT_S = 10.0


def _settings(root: Path) -> Settings:
    return Settings(root=root, freshness_interval_s=1e9, embed=EmbedderSpec(batch_size=2))


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "kbseek-embed-ahead"]


def test_chunks_are_embedded_while_later_files_are_parsed(many: Path) -> None:
    embedder = FakeEmbedder(pause_at=1)  # the first batch waits until the test has looked
    seen: list[ProgressSnapshot] = []
    during_parse: list[bool] = []
    embedded_before: list[int] = []  # vectors in the store when the embed phase starts
    with KnowledgeBase(settings=_settings(many), embedder=embedder) as kb:
        kb.load_semantic()

        def watch(s: ProgressSnapshot) -> None:
            seen.append(s)
            if s.phase == "parse" and s.done == NOTES - 1:  # before the last file is read
                during_parse.append(embedder.paused.wait(WAIT_S))
                embedder.resume.set()
            if s.phase == "embed" and s.done == 0:
                embedded_before.append(kb.store.embedded_count())

        report = kb.index(progress=watch)
        assert during_parse == [True]  # the model was called while files were still being parsed
        assert report.chunks_embedded == kb.status().embedded == NOTES
    assert len(embedded_before) == 1  # the worker was held, so most chunks were left to the embed phase
    before = embedded_before[0]
    embed = [s for s in seen if s.phase == "embed"]
    assert 0 < before < NOTES and embed[-1].done == embed[-1].total == NOTES - before
    assert not _workers()


def test_a_text_shared_by_several_files_is_embedded_once(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"copy{i:02}.md").write_text("# Same\n\nthe very same words.\n", encoding="utf-8")
        (tmp_path / f"own{i:02}.md").write_text(f"# Own {i}\n\nword{i} here.\n", encoding="utf-8")
    embedder = FakeEmbedder()
    with KnowledgeBase(settings=_settings(tmp_path), embedder=embedder) as kb:
        kb.load_semantic()
        report = kb.index()
        assert report.chunks_embedded == embedder.documents_embedded == 13  # one shared text, 12 own
        assert kb.status().embedded == kb.store.counts().chunks == 24


def test_a_pass_that_fails_while_parsing_stops_its_worker_and_the_next_pass_completes(many: Path) -> None:
    class Interrupted(Exception):
        pass

    def interrupt(s: ProgressSnapshot) -> None:
        if s.phase == "parse" and s.done == NOTES // 2:
            raise Interrupted

    with KnowledgeBase(settings=_settings(many), embedder=FakeEmbedder()) as kb:
        kb.load_semantic()
        with pytest.raises(Interrupted):
            kb.index(progress=interrupt)
        assert not _workers()
        kb.index()
        assert kb.status().embedded == kb.store.counts().chunks == NOTES


def test_the_work_handed_over_stays_bounded_while_the_model_is_slow() -> None:
    release = threading.Event()
    asked: list[int] = []
    saved: dict[str, np.ndarray] = {}

    def embed(inputs: list[ChunkText]) -> np.ndarray:
        assert release.wait(WAIT_S)
        return np.ones((len(inputs), 4), dtype=np.float32)

    def pending(ids: Sequence[int]) -> list[PendingChunk]:
        asked.extend(ids)
        return [PendingChunk(f"h{i}", ("Title",), f"text {i}") for i in ids]

    ahead = EmbedAhead(embed, pending=pending, save=saved.update, batch=2, depth=2)
    for document_id in range(500):
        ahead.written(document_id)
    # One batch in the model, two waiting: the other documents are only ids, their texts unread.
    assert len(asked) <= 3 * 2 + 1
    release.set()
    ahead.close()
    assert set(saved) == {f"h{i}" for i in asked} and not _workers()


def test_a_model_failure_while_parsing_leaves_the_chunks_to_the_embed_phase() -> None:
    saved: dict[str, np.ndarray] = {}

    def embed(inputs: list[ChunkText]) -> np.ndarray:
        raise RuntimeError("the model went away")

    def pending(ids: Sequence[int]) -> list[PendingChunk]:
        return [PendingChunk(f"h{i}", (), "text") for i in ids]

    ahead = EmbedAhead(embed, pending=pending, save=saved.update, batch=1)
    for document_id in range(20):
        ahead.written(document_id)
    ahead.close()
    assert saved == {} and isinstance(ahead.failure, RuntimeError) and not _workers()
