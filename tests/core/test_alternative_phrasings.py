"""``also``: the calling agent adds other phrasings of its question, and each chunk ranks by its best one.

The fake embedder knows no other language and no synonyms, so "an alternative brings a document in"
is tested with words: the query shares none with the answer, the alternative does (as a question in
the knowledge base's other language would). docs/decisions/0011-alternative-phrasings.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Limits, Settings
from kbseek.errors import ConfigError, InvalidArgument
from kbseek.responses import SearchResponse
from tests.conftest import make_core
from tests.fakes import FakeEmbedder

JAPANESE = "notes/障害対応.md"
QUERY = "kitten pictures channel"  # no word of it is in any note, in either language
ALSO = "猫の写真"  # the same question as the Japanese note words it


def semantic_core(root: Path, embedder: FakeEmbedder | None = None, **overrides: Any) -> KnowledgeBase:
    kb = KnowledgeBase(
        settings=Settings(root=root, freshness_interval_s=0.0, **overrides),
        embedder=embedder if embedder is not None else FakeEmbedder(),
    )
    kb.load_semantic()
    kb.index()
    return kb


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def kb(kb_root: Path, fake: FakeEmbedder) -> Any:
    k = semantic_core(kb_root, fake)
    yield k
    k.close()


def score_of(r: SearchResponse, path: str) -> float:
    return max((h.score for h in r.hits if h.path == path), default=0.0)


def test_an_alternative_sharing_words_with_a_document_brings_it_to_the_top(kb: KnowledgeBase) -> None:
    alone = kb.search(QUERY)
    assert score_of(alone, JAPANESE) < 0.05  # the query alone knows nothing of it
    helped = kb.search(QUERY, also=[ALSO], explain=True)
    top = helped.hits[0]
    assert top.path == JAPANESE and top.score > 0.3
    assert top.explain is not None and top.explain.phrasing == 1  # the alternative gave it its score
    assert top.explain.lexical_rank == 1  # and the ranks shown are that phrasing's
    assert helped.also == [ALSO]


def test_lexical_only_an_alternative_brings_its_document_in_too(kb_root: Path) -> None:
    # Without the bilingual bridge, which would find the Japanese note from "kitten" and "pictures"
    # itself (tests/core/test_bridge.py): here the alternative alone must bring it in.
    core = make_core(kb_root, bridge_weight=0.0)
    core.index()
    try:
        assert not core.search(QUERY).hits
        helped = core.search(QUERY, also=["coffee machine", ALSO], explain=True)
        paths = {h.path: h for h in helped.hits}
        assert {JAPANESE, "notes/plain.txt"} <= set(paths)
        assert paths["notes/plain.txt"].explain is not None and paths["notes/plain.txt"].explain.phrasing == 1
        assert paths[JAPANESE].explain is not None and paths[JAPANESE].explain.phrasing == 2
        # Normalised per phrasing: scores are on one scale (at most 1), not raw BM25 of different queries.
        assert all(0.0 < h.score <= 1.0 for h in helped.hits)
    finally:
        core.close()


def test_hits_the_query_finds_keep_phrasing_zero_and_their_place(kb: KnowledgeBase) -> None:
    alone = kb.search("rollback load balancer", explain=True)
    helped = kb.search("rollback load balancer", also=["zebra quokka platypus"], explain=True)
    assert [h.chunk_id for h in helped.hits[:2]] == [h.chunk_id for h in alone.hits[:2]]
    assert helped.hits[0].explain is not None and helped.hits[0].explain.phrasing == 0
    assert helped.hits[0].score == alone.hits[0].score


def test_all_phrasings_are_embedded_in_one_call(kb: KnowledgeBase, fake: FakeEmbedder) -> None:
    before = fake.query_calls
    kb.search(QUERY, also=[ALSO, "kitten photo channel for incidents"])
    assert fake.query_calls == before + 1
    assert fake.queries[-3:] == [QUERY, ALSO, "kitten photo channel for incidents"]


def test_more_alternatives_than_the_maximum_are_dropped_with_a_note(kb: KnowledgeBase) -> None:
    also = ["one", "two", "three", "four", "five"]
    r = kb.search(QUERY, also=also)
    assert r.also == ["one", "two", "three"]
    note = next(n for n in r.notes if n.startswith("also had"))
    assert "5 alternative phrasings" in note and "four; five" in note and "first 3" in note
    assert r.note_codes[r.notes.index(note)] == "clamped"
    assert len(r.notes) == len(r.note_codes)


def test_blank_and_repeated_alternatives_are_ignored_without_a_note(kb: KnowledgeBase) -> None:
    r = kb.search(QUERY, also=["", "   ", QUERY.upper(), ALSO, f" {ALSO} "])
    assert r.also == [ALSO]
    assert not any("also" in n for n in r.notes)


def test_the_query_stays_required(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidArgument, match="query is empty"):
        kb.search("  ", also=[ALSO])


def test_with_alternatives_confidence_needs_two_phrasings_that_agree(kb: KnowledgeBase) -> None:
    """Decision 0029: one phrasing's strong match is not enough; two confident ones on one document are."""
    assert kb.search(QUERY).low_confidence
    assert kb.search(QUERY, also=["zebra quokka platypus"]).low_confidence  # weak for both
    assert kb.search(QUERY, also=[ALSO]).low_confidence  # one phrasing alone finds it
    assert not kb.search(QUERY, also=[ALSO, "猫 写真 共有 チャンネル"]).low_confidence  # two agree
    assert not kb.search("rollback load balancer").low_confidence
    # A confident query and an alternative that finds the same document agree.
    assert not kb.search("rollback load balancer", also=["load balancer rollback steps"]).low_confidence
    # A confident query whose alternative finds nothing strong has no second voice.
    assert kb.search("rollback load balancer", also=["zebra quokka platypus"]).low_confidence


def test_the_snippet_highlights_the_alternatives_words(kb: KnowledgeBase) -> None:
    r = kb.search(QUERY, also=[ALSO], snippet_chars=80)
    top = r.hits[0]
    marked = [top.snippet[s:e] for s, e in top.highlights]
    assert "猫" in marked and "写真" in marked


def test_max_also_is_validated_and_zero_turns_alternatives_off(kb_root: Path) -> None:
    with pytest.raises(ConfigError, match="max_also"):
        Limits(max_also=9)
    with pytest.raises(ConfigError, match="max_also"):
        Limits(max_also=-1)
    core = make_core(kb_root, limits=Limits(max_also=0))
    core.index()
    try:
        r = core.search("coffee", also=[ALSO])
        assert r.also == [] and r.note_codes == ["clamped"]
        assert "turned off" in r.notes[0] and ALSO in r.notes[0]
        assert {h.path for h in r.hits} == {"notes/plain.txt"}
    finally:
        core.close()


def test_an_embedder_without_a_batch_call_embeds_each_phrasing_alone() -> None:
    """``embed_queries`` is not in the Embedder protocol: one written against it keeps working."""
    import numpy as np

    from kbseek.embed.base import embed_queries

    inner = FakeEmbedder(dim=16)

    class OneAtATime:
        model_id, dim = inner.model_id, inner.dim
        load, embed_documents, embed_query = inner.load, inner.embed_documents, inner.embed_query

    vectors = embed_queries(OneAtATime(), ["rollback", "猫"])
    assert vectors.shape == (2, 16) and inner.query_calls == 2
    assert np.allclose(vectors[1], inner.vector("猫"))
    assert embed_queries(OneAtATime(), []).shape == (0, 16)


def test_a_hit_the_other_phrasings_find_too_ranks_higher_and_explain_says_by_how_much(
    kb_root: Path,
) -> None:
    phrasings = dict(also=["rollback steps load balancer", "load balancer rollback"], explain=True)
    agreeing = semantic_core(kb_root)
    alone = semantic_core(kb_root, also_agreement=0.0)
    try:
        lifted, best_only = agreeing.search("rollback", **phrasings), alone.search("rollback", **phrasings)
        top = lifted.hits[0]
        assert top.explain is not None and top.explain.agreement > 0
        assert top.score == pytest.approx(top.explain.fused_score)
        same = next(h for h in best_only.hits if h.chunk_id == top.chunk_id)
        assert same.explain is not None and same.explain.agreement == 0.0
        assert top.score == pytest.approx(same.score + top.explain.agreement, abs=1e-5)
    finally:
        agreeing.close()
        alone.close()


@pytest.mark.parametrize("value", [-0.1, float("nan"), float("inf")])
def test_also_agreement_must_be_a_finite_share(kb_root: Path, value: float) -> None:
    with pytest.raises(ConfigError, match=r"\[search\]\.also_agreement must be a finite number"):
        Settings(root=kb_root, also_agreement=value)
