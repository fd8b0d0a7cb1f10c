"""The fake embedder keeps the promises of the Embedder protocol, deterministically."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed.base import Embedder
from kbseek.errors import EmbedderUnavailable
from tests.fakes import FakeEmbedder

ROLLBACK = "Rollback: switch the load balancer back to the previous deployment image."
BACKUP = "Nightly database snapshots run at 02:00 UTC and restores are tested monthly."
INCIDENT = "障害対応の手順：まずアラートの内容を確認し、影響範囲を調べる。"


def test_it_is_an_embedder() -> None:
    fake: Embedder = FakeEmbedder()  # checked by the type checker: the protocol is structural
    assert fake.dim == 1024 and fake.model_id == "fake:hashed-terms-v1:1024"
    assert FakeEmbedder(dim=16, model_id="other").model_id == "other"


def test_the_same_text_gives_the_same_vector_in_every_instance_and_process() -> None:
    a, b = FakeEmbedder(), FakeEmbedder()
    texts = [ROLLBACK, BACKUP, INCIDENT]
    assert a.embed_documents(texts).tobytes() == b.embed_documents(texts).tobytes()
    # Pinned buckets: a hash that changed between processes (Python's ``hash``) would move them.
    assert np.flatnonzero(a.vector("rollback")).tolist() == [95]
    assert np.flatnonzero(a.vector("猫")).tolist() == [57]


def test_documents_are_float32_unit_rows_and_a_query_lies_in_the_same_space() -> None:
    fake = FakeEmbedder()
    rows = fake.embed_documents([ROLLBACK, BACKUP, INCIDENT])
    assert rows.shape == (3, fake.dim) and rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-6)
    query = fake.embed_query(ROLLBACK)
    assert query.shape == (fake.dim,) and query.dtype == np.float32
    assert np.array_equal(query, rows[0])


def test_texts_sharing_words_are_closer_than_texts_sharing_none() -> None:
    fake = FakeEmbedder()
    rows = fake.embed_documents([ROLLBACK, BACKUP, INCIDENT])
    order = lambda q: list(np.argsort(-(rows @ fake.embed_query(q))))  # noqa: E731
    assert order("load balancer rollback")[0] == 0
    assert order("when do the database snapshots run")[0] == 1
    assert order("障害の影響範囲")[0] == 2
    # The analyzer's work carries over: inflections and katakana spellings share a term.
    assert float(fake.embed_query("tastes") @ fake.embed_query("taste")) == pytest.approx(1.0)
    assert float(fake.embed_query("ネコ") @ fake.embed_query("猫")) == pytest.approx(1.0)
    # More shared words, more similar; no shared word, no similarity (and never below zero).
    one = float(fake.embed_query("balancer") @ rows[0])
    two = float(fake.embed_query("balancer deployment") @ rows[0])
    assert two > one > 0.0
    assert float(fake.embed_query("platypus") @ rows[0]) == 0.0
    assert (rows @ rows.T >= 0.0).all()


def test_a_text_without_terms_is_a_zero_row_not_nan() -> None:
    rows = FakeEmbedder().embed_documents(["", "  ", "- : ( )"])
    assert np.isfinite(rows).all() and not rows.any()
    assert FakeEmbedder().embed_documents([]).shape == (0, 1024)


def test_a_lone_string_is_refused_as_the_protocol_requires() -> None:
    with pytest.raises(TypeError):
        FakeEmbedder().embed_documents("rollback")
    with pytest.raises(TypeError):
        FakeEmbedder().embed_query(["rollback"])  # type: ignore[arg-type]


def test_load_is_idempotent_and_embedding_loads_on_first_use() -> None:
    fake = FakeEmbedder()
    fake.embed_query("x")
    fake.load()
    fake.embed_documents(["a", "b"])
    assert (fake.loads, fake.documents_embedded, fake.queries) == (1, 2, ["x"])


def test_a_failed_load_raises_embedder_unavailable_and_can_be_retried() -> None:
    fake = FakeEmbedder(fail="the fake model is broken")
    with pytest.raises(EmbedderUnavailable, match="broken"):
        fake.load()
    with pytest.raises(EmbedderUnavailable):
        fake.embed_query("x")
    fake.fail = None
    fake.load()
    assert fake.loaded and fake.loads == 1 and fake.load_attempts == 3


def test_a_loaded_model_that_goes_away_fails_each_call_until_it_is_back() -> None:
    fake = FakeEmbedder()
    fake.load()
    fake.fail = "the model server is down"
    with pytest.raises(EmbedderUnavailable, match="down"):
        fake.embed_documents(["a"])
    fake.fail = None
    assert fake.embed_documents(["a"]).shape == (1, fake.dim) and fake.documents_embedded == 1


def test_a_gated_load_waits_for_the_test_to_open_the_gate() -> None:
    gate = threading.Event()
    fake = FakeEmbedder(gate=gate)
    loader = threading.Thread(target=fake.load)
    loader.start()
    loader.join(0.05)
    assert loader.is_alive() and not fake.loaded  # "the model is still loading"
    gate.set()
    loader.join(5)
    assert fake.loaded and fake.loads == 1


def test_pause_at_holds_that_call_until_the_test_resumes_it() -> None:
    fake = FakeEmbedder(pause_at=2)
    fake.embed_documents(["first"])
    second = threading.Thread(target=fake.embed_documents, args=(["second"],))
    second.start()
    assert fake.paused.wait(5) and fake.documents_embedded == 1
    fake.resume.set()
    second.join(5)
    assert not second.is_alive() and fake.documents_embedded == 2


def test_it_drives_the_dense_leg_and_the_fusion_of_a_knowledge_base(kb_root: Path) -> None:
    fake = FakeEmbedder()
    kb = KnowledgeBase(settings=Settings(root=kb_root, freshness_interval_s=0.0), embedder=fake)
    try:
        kb.index()  # loads the model on first need
        status = kb.status()
        assert (status.semantic, status.embedded, status.model) == ("ok", status.chunks, fake.model_id)
        found = kb.search("load balancer rollback", explain=True)
        assert found.legs.semantic == "ok" and not found.low_confidence
        top = found.hits[0]
        assert top.path == "runbooks/deploy.md" and top.explain is not None
        assert top.explain.dense_rank == 1 and top.explain.lexical_rank == 1
        assert fake.queries == ["load balancer rollback"]
        assert kb.search("platypus").low_confidence
        assert fake.loads == 1
    finally:
        kb.close()
