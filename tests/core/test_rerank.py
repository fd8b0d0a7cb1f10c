"""A search with ``[rerank]``: the best fused candidates in the reranker's order, or the fused order
with a note when the reranker is down, slow or failing; without the table, search as it always was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.render import search_text
from kbseek.rerank import RerankSpec
from kbseek.responses import SearchResponse
from tests.conftest import write_notes
from tests.fakes import FakeEmbedder
from tests.rerank_server import (
    FAVOURITE,
    FakeReranker,
    RerankServer,
    fake_reranker,
    rerank_server,
    word_score,
)

NOTES = {
    "cats.md": "# Cats\n\nCats sleep all day. Cats purr at night. Cats are cats.\n",
    "pets.md": f"# Pets\n\nSome people keep cats. This page is my {FAVOURITE}.\n",
    "kittens.md": "# Kittens\n\nA kitten grows into one of the cats.\n",
    "dogs.md": "# Dogs\n\nDogs bark at the mail carrier.\n",
}


def _kb(root: Path, rerank: RerankSpec | None = None, *, semantic: bool = False) -> KnowledgeBase:
    write_notes(root, NOTES)
    settings = Settings(root=root, semantic=semantic, freshness_interval_s=0.0, rerank=rerank or RerankSpec())
    kb = KnowledgeBase(settings=settings, embedder=FakeEmbedder() if semantic else None)
    kb.index()
    return kb


@pytest.fixture
def fakes() -> Iterator[list[FakeReranker]]:
    with fake_reranker() as made:
        yield made


def _paths(response: SearchResponse) -> list[str]:
    return [h.path for h in response.hits]


@pytest.mark.parametrize("semantic", [False, True], ids=["lexical", "fused"])
def test_the_reranker_orders_the_best_candidates(
    tmp_path: Path, fakes: list[FakeReranker], semantic: bool
) -> None:
    plain = _kb(tmp_path / "plain", semantic=semantic)
    reranked = _kb(tmp_path / "reranked", RerankSpec(provider="fake"), semantic=semantic)
    try:
        before = plain.search("cats", explain=True)
        after = reranked.search("cats", explain=True)
    finally:
        plain.close()
        reranked.close()
    assert _paths(before)[0] == "cats.md"  # the fusion's favourite: the most mentions of the word
    assert _paths(after)[0] == "pets.md"  # the reranker's: its page says it is the favourite
    assert sorted(_paths(after)) == sorted(_paths(before))
    # The scores are the fused scores of the places the hits took: falling, and the same set.
    assert [h.score for h in after.hits] == [h.score for h in before.hits]
    assert after.notes == before.notes and after.note_codes == before.note_codes
    assert after.low_confidence == before.low_confidence
    fused_before = {h.path: h.explain.fused_score for h in before.hits if h.explain}
    for hit in after.hits:
        assert hit.explain is not None and hit.explain.rerank_score is not None
        assert hit.explain.rerank_score == round(word_score("cats", _passage(hit.heading_path, hit.path)), 6)
        assert hit.explain.fused_score == pytest.approx(fused_before[hit.path])
    top = after.hits[0].explain
    assert top is not None and f"rerank {top.rerank_score:.4f}" in search_text(
        after
    )  # the readable answer too
    assert "rerank" not in search_text(before)
    ((query, texts),) = fakes[0].calls
    assert query == "cats" and len(texts) == len(before.hits)  # every candidate, as the embedder reads it
    assert "Pets\n" + NOTES["pets.md"].strip() in texts


def _passage(heading_path: list[str], path: str) -> str:
    return " › ".join(heading_path) + "\n" + NOTES[path].split("\n", 2)[2]


def test_only_the_configured_number_of_candidates_is_reranked(
    tmp_path: Path, fakes: list[FakeReranker]
) -> None:
    kb = _kb(tmp_path, RerankSpec(provider="fake", candidates=2))
    try:
        response = kb.search("cats", explain=True)
    finally:
        kb.close()
    assert len(fakes[0].calls[0][1]) == 2
    reranked = [h for h in response.hits if h.explain is not None and h.explain.rerank_score is not None]
    assert len(reranked) == 2 and response.hits[:2] == reranked  # the rest keep their places below


def test_a_failing_reranker_answers_in_the_fused_order_with_a_note(
    tmp_path: Path, fakes: list[FakeReranker]
) -> None:
    plain = _kb(tmp_path / "plain")
    kb = _kb(tmp_path / "kb", RerankSpec(provider="fake"))
    try:
        kb.retrieval().rerank_stage()  # built, so that it can be told to fail
        fakes[0].fail = "the rerank server is down; start it"
        before, after = plain.search("cats", explain=True), kb.search("cats", explain=True)
    finally:
        plain.close()
        kb.close()
    assert after.hits == before.hits  # explain too: no rerank score where there was no reranking
    assert after.notes == [
        *before.notes,
        "not reranked: the rerank server is down; start it; the hits are in the fused order",
    ]
    assert after.note_codes == [*before.note_codes, "rerank_skipped"]


def test_without_the_table_nothing_is_built_and_nothing_changes(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    try:
        response = kb.search("cats", explain=True)
        assert kb.retrieval().rerank_stage() is None
    finally:
        kb.close()
    assert all(h.explain is not None and h.explain.rerank_score is None for h in response.hits)
    assert "rerank_skipped" not in response.note_codes


@pytest.mark.parametrize("trouble", ["slow", "500", "malformed"])
def test_an_http_reranker_in_trouble_costs_its_budget_and_no_error(tmp_path: Path, trouble: str) -> None:
    with rerank_server() as server:
        server.delay_s = 5.0 if trouble == "slow" else 0.0
        server.status = 500 if trouble == "500" else 200
        server.malformed = trouble == "malformed"
        kb = _kb(tmp_path, RerankSpec(provider="http", url=server.base + "/v1", budget_s=0.3))
        try:
            response = kb.search("cats")
        finally:
            kb.close()
    assert _paths(response)[0] == "cats.md"
    assert response.note_codes[-1] == "rerank_skipped"
    expected = {"slow": "did not answer within 0.3 s", "500": "HTTP 500", "malformed": "not JSON"}[trouble]
    assert expected in response.notes[-1]


@pytest.mark.parametrize("path", ["/rerank", "/v1/rerank"])
def test_an_http_reranker_orders_the_hits(tmp_path: Path, path: str) -> None:
    server: RerankServer
    with rerank_server() as server:
        kb = _kb(tmp_path, RerankSpec(provider="http", url=server.base + path, budget_s=5.0))
        try:
            response = kb.search("cats", explain=True)
        finally:
            kb.close()
        assert server.requests and server.requests[-1].path == path
    assert _paths(response)[0] == "pets.md" and "rerank_skipped" not in response.note_codes


def test_a_config_change_turns_reranking_on_without_a_restart(
    tmp_path: Path, fakes: list[FakeReranker]
) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    write_notes(root, NOTES)
    config = tmp_path / "kbseek.toml"
    config.write_text(f'kb = "{root}"\nsemantic = false\n', encoding="utf-8")
    kb = KnowledgeBase(config=config)
    try:
        kb.index()
        assert _paths(kb.search("cats"))[0] == "cats.md"
        config.write_text(f'kb = "{root}"\nsemantic = false\n[rerank]\nprovider = "fake"\n', encoding="utf-8")
        kb.reload_settings()
        assert _paths(kb.search("cats"))[0] == "pets.md"
        assert not any("rerank" in n for n in kb.status().notes)  # applied, not waiting for a restart
    finally:
        kb.close()


def test_several_collections_each_rerank_and_merge_by_the_scores_dealt_out(
    tmp_path: Path, fakes: list[FakeReranker]
) -> None:
    from kbseek.library import Library

    spec = RerankSpec(provider="fake")
    with Library({"a": _kb(tmp_path / "a", spec), "b": _kb(tmp_path / "b", spec)}) as lib:
        response = lib.search("cats", limit=10, explain=True)
    assert len(fakes) == 2 and all(len(f.calls) == 1 for f in fakes)  # each collection reranked its own
    for name in ("a", "b"):
        mine = [h for h in response.hits if h.kb == name]
        assert mine[0].path == "pets.md"  # the reranker's order holds within each collection
    assert [h.score for h in response.hits] == sorted((h.score for h in response.hits), reverse=True)
