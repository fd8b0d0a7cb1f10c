"""Fusion of the two legs, and the dense leg's exact search."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbseek.search import fusion
from kbseek.search.dense import DenseIndex

LEX = [(1, 9.0), (2, 3.0), (3, 1.0)]
DENSE = [(3, 0.8), (4, 0.6), (1, 0.1)]


def test_rrf_rewards_agreement_between_the_legs() -> None:
    ranked = fusion.rrf(LEX, DENSE, k=60)
    assert ranked[0].rowid in (1, 3)  # the two chunks both legs found
    assert {f.rowid for f in ranked} == {1, 2, 3, 4}
    assert ranked[0].lexical_rank is not None and ranked[0].dense_rank is not None


def test_blend_with_full_dense_weight_is_the_dense_order() -> None:
    ranked = fusion.blend(LEX, DENSE, dense_weight=1.0, matched_weight=None)
    assert [f.rowid for f in ranked[:3]] == [3, 4, 1]


def test_blend_with_zero_dense_weight_is_the_lexical_order() -> None:
    ranked = fusion.blend(LEX, DENSE, dense_weight=0.0, matched_weight=None)
    assert [f.rowid for f in ranked[:3]] == [1, 2, 3]


def test_blend_keeps_each_legs_evidence_for_explain() -> None:
    by_id = {f.rowid: f for f in fusion.blend(LEX, DENSE, dense_weight=0.7, matched_weight=None)}
    assert by_id[3].lexical_rank == 3 and by_id[3].dense_rank == 1 and by_id[3].dense_similarity == 0.8
    assert by_id[4].lexical_rank is None and by_id[2].dense_rank is None


def test_the_adaptive_weight_moves_from_unmatched_to_matched_with_the_best_coverage() -> None:
    assert fusion.adaptive_weight(0.8, 0.3, 0.0) == 0.8
    assert fusion.adaptive_weight(0.8, 0.3, 1.0) == pytest.approx(0.3)
    assert abs(fusion.adaptive_weight(0.8, 0.3, 0.5) - 0.55) < 1e-9
    assert fusion.adaptive_weight(0.8, 0.3, 7.0) == pytest.approx(0.3)  # clamped


def test_a_chunk_holding_the_whole_query_lets_the_lexical_leg_lead() -> None:
    """Row 1 holds every query term: with the adaptive weight its lexical score out-votes row 3's
    better cosine; when no chunk covers the query, the dense order stands."""
    covered = {1: 1.0, 2: 0.2, 3: 0.3}
    fixed = fusion.blend(LEX, DENSE, dense_weight=0.8, matched_weight=None, coverage=covered)
    adaptive = fusion.blend(LEX, DENSE, dense_weight=0.8, matched_weight=0.3, coverage=covered)
    assert fixed[0].rowid == 3 and adaptive[0].rowid == 1
    uncovered = {1: 0.0, 2: 0.0, 3: 0.0}
    ranked = fusion.blend(LEX, DENSE, dense_weight=0.8, matched_weight=0.3, coverage=uncovered)
    assert [f.rowid for f in ranked[:3]] == [3, 4, 1]


def test_an_empty_leg_leaves_the_other_ones_order() -> None:
    assert [f.rowid for f in fusion.blend([], DENSE, dense_weight=0.7, matched_weight=None)] == [3, 4, 1]
    assert [f.rowid for f in fusion.rrf(LEX, [], k=60)] == [1, 2, 3]


def test_dense_search_is_exact_and_respects_the_allowed_set() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(50, 8)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    index = DenseIndex.from_arrays(np.arange(100, 150), matrix)
    query = matrix[7]
    hits = index.search(query, 5)
    assert hits[0][0] == 107 and abs(hits[0][1] - 1.0) < 1e-5
    expected = np.argsort(-(matrix @ query))[:5] + 100
    assert [h[0] for h in hits] == list(expected)
    allowed = {120, 130}
    assert {h[0] for h in index.search(query, 5, allowed)} == allowed


def test_the_dense_snapshot_refreshes_incrementally_from_the_store(tmp_path) -> None:
    from kbseek import KnowledgeBase
    from kbseek.config import Settings

    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha text\n", encoding="utf-8")
    core = KnowledgeBase(settings=Settings(root=root, semantic=False))
    core.index()
    store = core.store
    (pending,) = store.chunks_without_vectors()
    with store.transaction() as tx:
        tx.put_vectors({pending.content_hash: np.eye(4, dtype=np.float32)[0]})
    index = DenseIndex(4)
    assert index.refresh(store) == (1, 0) and len(index) == 1
    assert index.refresh(store) == (0, 0)
    (root / "a.md").unlink()
    core.index()
    assert index.refresh(store) == (0, 1) and len(index) == 0
    core.close()


def test_a_replaced_chunk_never_reuses_the_rowid_of_the_one_it_replaced(tmp_path) -> None:
    from kbseek import KnowledgeBase
    from kbseek.config import Settings

    root = tmp_path / "kb"
    root.mkdir()
    note = root / "a.md"
    note.write_text("# A\n\nfirst text\n", encoding="utf-8")
    core = KnowledgeBase(settings=Settings(root=root, semantic=False))
    core.index()

    def rowids() -> list[int]:
        doc = core.store.document("a.md")
        assert doc is not None
        return [c.rowid for c in core.store.neighbours(doc.id, 0, 1_000)]

    before = rowids()
    note.write_text("# A\n\nsecond, longer text\n", encoding="utf-8")
    core.index()
    assert min(rowids()) > max(before)
    core.close()


def test_coverage_counts_terms_found_in_the_heading_or_the_body(tmp_path) -> None:
    from kbseek import KnowledgeBase
    from kbseek.config import Settings
    from kbseek.search.fts_query import compile_query
    from kbseek.search.lexical import lexical_coverage

    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text("# Zebra\n\nThe quokka sleeps.\n", encoding="utf-8")
    (root / "b.md").write_text("# Other\n\nNothing relevant here at all.\n", encoding="utf-8")
    core = KnowledgeBase(settings=Settings(root=root, semantic=False))
    core.index()
    compiled = compile_query("zebra quokka", max_terms=Settings(root=root).limits.max_query_terms)
    rows = core.store.lexical_candidates(compiled.terms, limit=5)
    matched = core.store.rows_matching_each_term(compiled.terms, [r for r, _ in rows])
    assert set(compiled.terms) in matched.values()  # one term from the heading, one from the body
    assert max(lexical_coverage(core.store, compiled, [r for r, _ in rows]).values()) == 1.0
    core.close()


def test_dense_similarities_are_put_on_one_scale_from_the_models_floor() -> None:
    from kbseek.search.pipeline import _on_one_scale

    hits = [(1, 0.9), (2, 0.8), (3, 0.78)]
    assert _on_one_scale(hits, 0.0) == hits
    scaled = _on_one_scale(hits, 0.8)
    assert [r for r, _ in scaled] == [1, 2, 3]
    assert scaled[0][1] == pytest.approx(0.5) and scaled[1][1] == pytest.approx(0.0) and scaled[2][1] < 0


def _phrasings(*rankings: list[tuple[int, float]]) -> list[list[fusion.Fused]]:
    return [[fusion.Fused(rowid, score) for rowid, score in ranked] for ranked in rankings]


def test_without_agreement_each_chunk_keeps_its_best_phrasings_score() -> None:
    ranked = fusion.best_of(_phrasings([(1, 0.8), (2, 0.78)], [(2, 0.7), (3, 0.9)]), agreement=0.0)
    assert [(f.rowid, f.score, f.phrasing) for f in ranked] == [(3, 0.9, 1), (1, 0.8, 0), (2, 0.78, 0)]
    assert all(f.agreement == 0.0 for f in ranked)


def test_agreement_lifts_the_chunk_the_phrasings_agree_on_over_a_near_tie() -> None:
    # docs/decisions/0025: the query's keyword match (1) edged out the chunk every phrasing found (2)
    rankings = _phrasings([(1, 0.80), (2, 0.78)], [(2, 0.70)], [(2, 0.60), (1, 0.1)])
    ranked = fusion.best_of(rankings, agreement=0.3)
    assert [f.rowid for f in ranked] == [2, 1]
    assert ranked[0].agreement == pytest.approx(0.3 * (0.70 + 0.60) / 2)
    assert ranked[0].score == pytest.approx(0.78 + ranked[0].agreement)
    assert ranked[0].phrasing == 0  # the ranks explain shows are still those of its best phrasing


def test_a_chunk_only_one_phrasing_finds_is_not_outvoted_by_half_matches() -> None:
    # the cross-language answer only the alternative in the other language reaches (decision 0011)
    rankings = _phrasings([(1, 0.5)], [(1, 0.5), (2, 0.95)], [(1, 0.5)])
    ranked = fusion.best_of(rankings, agreement=0.3)
    assert ranked[0].rowid == 2 and ranked[0].agreement == 0.0 and ranked[0].phrasing == 1


@given(
    st.lists(
        st.dictionaries(st.integers(0, 8), st.floats(0.0, 1.0, allow_nan=False), max_size=6),
        min_size=2,
        max_size=4,
    ),
    st.floats(0.0, 2.0, allow_nan=False),
)
def test_best_of_scores_are_the_best_plus_a_share_of_the_others_mean(
    rankings: list[dict[int, float]], agreement: float
) -> None:
    ranked = fusion.best_of(_phrasings(*[list(r.items()) for r in rankings]), agreement=agreement)
    assert sorted(f.rowid for f in ranked) == sorted({r for ranking in rankings for r in ranking})
    for f in ranked:
        scores = [ranking.get(f.rowid, 0.0) for ranking in rankings]
        best = max(scores)
        others = (sum(scores) - best) / (len(rankings) - 1)
        assert f.score == pytest.approx(best + agreement * others)
        assert rankings[f.phrasing].get(f.rowid) == best
    assert [f.score for f in ranked] == sorted((f.score for f in ranked), reverse=True)


def test_a_shared_scale_scores_a_weaker_keyword_match_below_the_best_of_all_collections() -> None:
    """Several collections blend on the best BM25 and coverage over all of them (decision 0037): a
    collection whose best match scores half another's must not count it as a perfect match."""
    lexical = [(1, 5.0), (2, 2.5)]
    coverage = {1: 1.0, 2: 1.0}
    own = fusion.blend(lexical, [], dense_weight=0.0, matched_weight=None, coverage=coverage)
    shared = fusion.blend(
        lexical, [], dense_weight=0.0, matched_weight=None, coverage=coverage, scale=(10.0, 1.0)
    )
    assert own[0].score == pytest.approx(1.0)
    assert shared[0].score == pytest.approx(0.5)
    assert [f.rowid for f in shared] == [f.rowid for f in own]


def test_a_shared_scale_never_shrinks_below_the_ranking_own_best() -> None:
    lexical = [(1, 5.0)]
    shared = fusion.blend(
        lexical, [], dense_weight=0.0, matched_weight=None, coverage={1: 1.0}, scale=(1.0, 0.2)
    )
    assert shared[0].score == pytest.approx(1.0)


def test_a_shared_coverage_moves_the_dense_weight_as_one_index_would() -> None:
    lexical, dense = [(1, 5.0)], [(1, 0.5)]
    low = fusion.blend(lexical, dense, dense_weight=0.8, matched_weight=0.2, coverage={1: 0.1})
    high = fusion.blend(
        lexical, dense, dense_weight=0.8, matched_weight=0.2, coverage={1: 0.1}, scale=(5.0, 1.0)
    )
    assert high[0].score != pytest.approx(low[0].score)
