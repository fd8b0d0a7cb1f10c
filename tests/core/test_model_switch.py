"""A change of embedding model is made in the background while the old vectors answer (decision 0040).

Two fake models with their own ids and dimensions stand in for two real ones (``tests.fakes.two_fake_models``),
built through the provider registry so that the old one is built again from the spec the index
recorded, as kbseek builds it. The switch's batches are small (``batch_size=2``), so a test can stop
it part way: held inside the new model (``pause_at``) or crashed (an embedding call that raises).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed import EmbedderSpec
from kbseek.facade.semantic import spec_from_json, spec_json
from kbseek.ingest.indexer import IndexReport
from kbseek.store.base import Store
from kbseek.store.sqlite.store import SqliteStore
from tests import postgres_server
from tests.fakes import FakeEmbedder, TwoModels, two_fake_models

OLD, NEW = "fake-old:16", "fake-new:24"
NOTES = {
    f"notes/topic-{i:02d}.md": f"# Topic {i}\n\nThe {word} runbook says how to {verb} the {word} service.\n"
    for i, (word, verb) in enumerate(
        zip(
            ["cache", "queue", "ledger", "gateway", "scheduler", "archive", "mailer", "search", "billing"],
            ["restart", "drain", "rotate", "upgrade", "pause", "restore", "retry", "rebuild", "audit"],
            strict=True,
        )
    )
}


@pytest.fixture
def models() -> Iterator[TwoModels]:
    with two_fake_models() as made:
        yield made


@pytest.fixture
def root(tmp_path: Path, models: TwoModels) -> Path:
    """A knowledge base indexed with the old model."""
    root = tmp_path / "kb"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    with open_kb(root, "fake-old") as kb:
        kb.index()
        assert kb.store.meta().embedding is not None
    return root


class open_kb:
    """A knowledge base configured with ``provider``, closed at the end of the block."""

    def __init__(self, root: Path, provider: str, **overrides: Any) -> None:
        spec = EmbedderSpec(provider=provider, batch_size=2)
        self.kb = KnowledgeBase(
            settings=Settings(root=root, freshness_interval_s=0.0, embed=spec, **overrides)
        )

    def __enter__(self) -> KnowledgeBase:
        return self.kb

    def __exit__(self, *_: object) -> None:
        self.kb.close()


def crash_after(model: FakeEmbedder, calls: int) -> None:
    """Make ``model`` raise on its embedding call after ``calls`` more succeed: a pass killed part way.

    The knowledge base is closed after the crash, as the killed process would be: one left open
    owes a pass, which its next call would run."""
    real = partial(FakeEmbedder.embed_documents, model)
    left = [calls]

    def embed_documents(texts: Any) -> np.ndarray:
        if left[0] == 0:
            raise KeyboardInterrupt("killed mid-switch")
        left[0] -= 1
        return real(texts)

    model.embed_documents = embed_documents  # type: ignore[method-assign]


def counts(store: Store) -> tuple[int, int, int]:
    """(chunks, chunks with a vector of the index's model, chunks with a vector of the next one)."""
    return store.counts().chunks, store.embedded_count(), store.next_embedded_count()


def test_the_old_model_answers_during_the_switch_and_the_new_one_after_it(
    root: Path, models: TwoModels
) -> None:
    with open_kb(root, "fake-new") as kb:
        kb.load_semantic()
        old, new = models.last("fake-old"), models.last("fake-new")
        assert old.loaded and kb.model_mismatch  # built again from the spec the index recorded
        new.pause_at = 3  # held inside the switch, with its first batch committed
        passing = threading.Thread(target=kb.index)
        passing.start()
        try:
            assert new.paused.wait(30)
            found = kb.search("rotate the ledger")
            assert found.legs.semantic == "ok" and found.hits[0].path == "notes/topic-02.md"
            assert old.queries == ["rotate the ledger"] and new.queries == []
            status = kb.status()
            chunks, _, done = counts(kb.store)
            assert 0 < done < chunks and status.semantic == "ok" and status.embedded == chunks
            assert any(
                f"switching the embedding model from {OLD} to {NEW}: {done} of {chunks} chunks" in n
                and f"searches use model {OLD}'s vectors" in n
                for n in status.notes
            ), status.notes
            assert status.progress is not None and status.progress.phase == "embed"
        finally:
            new.resume.set()
            passing.join(30)
        meta = kb.store.meta()
        assert meta.embedding is not None and meta.embedding.model == NEW and meta.embedding.dim == 24
        assert meta.next_embedding is None and not kb.model_mismatch
        chunks, embedded, _ = counts(kb.store)
        assert embedded == chunks
        found = kb.search("drain the queue")
        assert found.legs.semantic == "ok" and found.hits[0].path == "notes/topic-01.md"
        assert new.queries == ["drain the queue"] and old.queries == ["rotate the ledger"]
        assert not any("switching" in n for n in kb.status().notes)


def test_a_switch_killed_part_way_resumes_where_it_stopped(root: Path, models: TwoModels) -> None:
    with open_kb(root, "fake-new") as kb:
        kb.load_semantic()
        crash_after(models.last("fake-new"), 4)
        with pytest.raises(KeyboardInterrupt):
            kb.index()
        chunks, embedded, done = counts(kb.store)
        assert 0 < done < chunks and embedded == chunks  # the old vectors are all there still
        meta = kb.store.meta()
        assert meta.embedding is not None and meta.embedding.model == OLD
        assert meta.next_embedding is not None and meta.next_embedding.model == NEW
        missing = kb.store.missing_next_vector_count()

    with open_kb(root, "fake-new") as kb:  # a new process: what was written is kept, the rest is made
        assert kb.search("restore the archive").legs.semantic == "ok"  # by the old model meanwhile
        assert models.last("fake-old").queries == ["restore the archive"]
        report = kb.index()
        assert report.chunks_embedded == missing and report.switched
        meta = kb.store.meta()
        assert meta.embedding is not None and meta.embedding.model == NEW and meta.next_embedding is None
        assert kb.search("restore the archive").hits[0].path == "notes/topic-05.md"
        assert models.last("fake-new").queries == ["restore the archive"]


def test_chunks_written_during_a_switch_get_vectors_of_both_models(root: Path, models: TwoModels) -> None:
    for time in ("before the note", "after it"):
        with open_kb(root, "fake-new") as kb:
            kb.load_semantic()
            crash_after(models.last("fake-new"), 2)
            with pytest.raises(KeyboardInterrupt):
                kb.index()  # after it: writes the note and gives it the old model's vector first
        if time == "before the note":
            (root / "notes/late.md").write_text(
                "# Late\n\nThe telescope manual says how to focus.\n", "utf-8"
            )
    with open_kb(root, "fake-new") as kb:
        chunks, embedded, done = counts(kb.store)
        assert embedded == chunks and 0 < done < chunks and kb.store.meta().next_embedding is not None
        assert kb.search("focus the telescope").hits[0].path == "notes/late.md"
        assert models.last("fake-old").queries == ["focus the telescope"]
        kb.index()
        found = kb.search("focus the telescope")
        assert found.hits[0].path == "notes/late.md" and found.legs.semantic == "ok"
        chunks, embedded, _ = counts(kb.store)
        assert embedded == chunks and kb.store.meta().embedding.model == NEW  # type: ignore[union-attr]


def test_without_the_old_model_search_is_keyword_only_and_says_how_far_the_switch_is(
    root: Path, models: TwoModels
) -> None:
    models.broken.add("fake-old")  # e.g. an embedding server that is gone
    with open_kb(root, "fake-new") as kb:
        kb.load_semantic()
        new = models.last("fake-new")
        new.pause_at = 3
        passing = threading.Thread(target=kb.index)
        passing.start()
        try:
            assert new.paused.wait(30)
            found = kb.search("rotate the ledger")
            assert found.legs.semantic == "unavailable" and found.hits[0].path == "notes/topic-02.md"
            assert new.queries == []
            note = kb.semantic_error or ""
            chunks, _, done = counts(kb.store)
            assert f"from {OLD} to {NEW}: {done} of {chunks} chunks" in note and "keywords" in note
            assert f"model {OLD} cannot be loaded" in note
        finally:
            new.resume.set()
            passing.join(30)
        found = kb.search("rotate the ledger")
        assert found.legs.semantic == "ok" and new.queries == ["rotate the ledger"]


def test_status_without_a_model_says_a_switch_is_due_and_how_far_it_is(root: Path, models: TwoModels) -> None:
    with open_kb(root, "fake-new") as kb:
        status = kb.status()  # what `kbseek status` reads: no model is loaded for it
        assert status.semantic == "unavailable" and models.made["fake-new"][-1].load_attempts == 0
        assert any(f"from {OLD} to {NEW}: 0 of" in n and "--reembed" in n for n in status.notes)


def test_reembed_still_drops_every_vector_and_embeds_with_the_configured_model(
    root: Path, models: TwoModels
) -> None:
    with open_kb(root, "fake-new") as kb:
        kb.load_semantic()
        crash_after(models.last("fake-new"), 2)
        with pytest.raises(KeyboardInterrupt):
            kb.index()
    with open_kb(root, "fake-new") as kb:
        kb.index(reembed=True)
        meta = kb.store.meta()
        assert meta.embedding is not None and meta.embedding.model == NEW and meta.next_embedding is None
        assert kb.store.embedded_count() == kb.store.counts().chunks
        assert kb.search("pause the scheduler").legs.semantic == "ok"
        assert models.made["fake-old"][-1].queries == []


def test_a_server_switches_in_its_background_pass(root: Path, models: TwoModels) -> None:
    with open_kb(root, "fake-new") as kb:
        kb.start_background()
    store = SqliteStore(root / ".kbseek" / "index.sqlite")
    try:
        meta = store.meta()
        assert meta.embedding is not None and meta.embedding.model == NEW and meta.next_embedding is None
        assert store.embedded_count() == store.counts().chunks
    finally:
        store.close()


def test_a_switch_stops_after_its_batch_for_a_pass_that_waits_and_the_next_pass_goes_on(
    root: Path, models: TwoModels
) -> None:
    with open_kb(root, "fake-new") as kb:
        kb.load_semantic()
        new = models.last("fake-new")
        new.pause_at = 3
        reports: dict[str, IndexReport] = {}
        switching = threading.Thread(target=lambda: reports.update(first=kb.index()))
        switching.start()
        assert new.paused.wait(30)
        waiting = threading.Thread(target=lambda: reports.update(second=kb.index()))
        waiting.start()
        for _ in range(3000):  # until the second pass waits for the first (no clock involved)
            if kb._runner._waiters:
                break
            threading.Event().wait(0.01)
        new.resume.set()
        switching.join(30)
        waiting.join(30)
        assert not reports["first"].switched and reports["second"].switched
        meta = kb.store.meta()
        assert meta.embedding is not None and meta.embedding.model == NEW


def test_configuring_the_old_model_again_gives_the_switch_up(root: Path, models: TwoModels) -> None:
    with open_kb(root, "fake-new") as kb:
        kb.load_semantic()
        crash_after(models.last("fake-new"), 2)
        with pytest.raises(KeyboardInterrupt):
            kb.index()
        assert kb.store.next_embedded_count() > 0
    with open_kb(root, "fake-old") as kb:
        kb.index()
        meta = kb.store.meta()
        assert meta.embedding is not None and meta.embedding.model == OLD and meta.next_embedding is None
        assert kb.store.next_embedded_count() == 0 and not kb.model_mismatch
        assert not any("switching" in n for n in kb.status().notes)


def test_an_index_in_postgresql_switches_the_same_way(tmp_path: Path, models: TwoModels) -> None:
    root = tmp_path / "kb"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    # approximate_above=1: the database finds the nearest vectors itself, with pgvector's index
    store = {
        "store_url": postgres_server.url(),
        "kb_name": postgres_server.kb_name("switch"),
        "approximate_above": 1,
    }
    with open_kb(root, "fake-old", **store) as kb:
        kb.index()
    with open_kb(root, "fake-new", **store) as kb:
        kb.load_semantic()
        crash_after(models.last("fake-new"), 4)
        with pytest.raises(KeyboardInterrupt):
            kb.index()
    with open_kb(root, "fake-new", **store) as kb:
        found = kb.search("rotate the ledger")
        assert found.legs.semantic == "ok" and found.hits[0].path == "notes/topic-02.md"
        assert models.last("fake-old").queries == ["rotate the ledger"]
        assert kb.index().switched
        meta = kb.store.meta()
        assert meta.embedding is not None and meta.embedding.model == NEW and meta.next_embedding is None
        found = kb.search("drain the queue")
        assert found.legs.semantic == "ok" and found.hits[0].path == "notes/topic-01.md"
        assert models.last("fake-new").queries == ["drain the queue"]


def test_a_reader_answers_with_the_index_model_and_follows_its_writer_through_the_switch(
    root: Path, models: TwoModels
) -> None:
    spec = EmbedderSpec(provider="fake-new", batch_size=2)
    reader = KnowledgeBase(settings=Settings(root=root, embed=spec), read_only=True)
    configured = models.last("fake-new")
    try:
        reader.load_semantic()
        assert reader.search("rotate the ledger").legs.semantic == "ok"
        assert models.last("fake-old").queries == ["rotate the ledger"]
        assert any("only the index's writer switches it" in n for n in reader.status().notes)
        reader.start_watching()  # follows the writer's passes
        with open_kb(root, "fake-new") as writer:
            assert writer.index().switched
        for _ in range(3000):  # until the follower has seen the pass (no clock involved)
            if not reader.model_mismatch:
                break
            threading.Event().wait(0.01)
        found = reader.search("drain the queue")
        assert found.legs.semantic == "ok" and found.hits[0].path == "notes/topic-01.md"
        assert configured.queries == ["drain the queue"]
    finally:
        reader.close()


def test_a_recorded_spec_reads_back_whatever_fields_it_gained_or_lost() -> None:
    spec = EmbedderSpec(provider="http", url="http://127.0.0.1:9/v1", model="m", batch_size=8)
    assert spec_from_json(spec_json(spec)) == spec
    newer = '{"provider": "http", "url": "http://127.0.0.1:9/v1", "model": "m", "pooling": "cls"}'
    assert spec_from_json(newer) == EmbedderSpec(provider="http", url="http://127.0.0.1:9/v1", model="m")
    for unusable in (None, "", "[1]", '{"provider": "no-such-provider"}', '{"batch_size": 0}'):
        assert spec_from_json(unusable) is None, unusable
