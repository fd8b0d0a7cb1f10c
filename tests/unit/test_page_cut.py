"""Where a page for people stops listing a search, and each hit's relevance in a word
(``search.confidence.confident_count`` and ``relevance``, served by ``facade.page``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kbseek.search.confidence import confident_count, relevance

hits = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.floats(min_value=0.0, max_value=2.0, allow_nan=False)),
    max_size=25,
)
shares = st.floats(min_value=0.0, max_value=1.0)
fews = st.integers(min_value=0, max_value=6)


@given(hits, shares, fews)
def test_the_cut_is_a_prefix_holding_every_strong_hit_and_the_first_few_documents(
    ranked: list[tuple[str, float]], share: float, few: int
) -> None:
    n = confident_count(ranked, share=share, few=few)
    assert 0 <= n <= len(ranked) and (n > 0) == bool(ranked)
    if not ranked:
        return
    best = max(score for _, score in ranked)
    listed = ranked[:n]
    assert not any(score >= best * share for _, score in ranked[n:])  # nothing strong is left out
    first: list[str] = []
    for document, _ in ranked:
        if document not in first:
            first.append(document)
    assert set(first[:few]) <= {d for d, _ in listed}  # the first few documents are all listed
    if n < len(ranked):  # the cut ends on a hit that earned its place
        document, score = listed[-1]
        assert score >= best * share or document in first[:few]


@given(hits, st.floats(min_value=0.0, max_value=0.9), st.floats(min_value=0.0, max_value=0.1), fews)
def test_a_higher_share_never_lists_more(
    ranked: list[tuple[str, float]], low: float, step: float, few: int
) -> None:
    assert confident_count(ranked, share=low + step, few=few) <= confident_count(ranked, share=low, few=few)


def test_a_vague_question_stops_where_the_scores_fall_away() -> None:
    """The shape the page met: one note well ahead, then a flat tail of eighteen others."""
    ranked = [("rollback.md", 0.88), ("rollback.md", 0.61)] + [
        (f"n{i}.md", 0.3 - i * 0.01) for i in range(18)
    ]
    assert confident_count(ranked) == 2


@given(st.floats(min_value=0.0, max_value=5.0), st.floats(min_value=0.001, max_value=5.0), st.booleans())
def test_relevance_is_one_of_three_words_and_never_strong_when_the_search_is_weak(
    score: float, best: float, low: bool
) -> None:
    grade = relevance(score, best, low_confidence=low)
    assert grade in ("strong", "fair", "weak")
    if low:
        assert grade != "strong"


def test_relevance_reads_relative_to_the_best_hit() -> None:
    assert [relevance(s, 0.5, low_confidence=False) for s in (0.5, 0.35, 0.1)] == ["strong", "fair", "weak"]
    assert relevance(0.0, 0.0, low_confidence=False) == "weak"


@given(hits, st.integers(min_value=1, max_value=5))
def test_a_weak_search_lists_at_most_its_first_few_documents(
    ranked: list[tuple[str, float]], doubtful: int
) -> None:
    """A search whose best hit is weak has flat scores: a share of the best would list nearly all."""
    n = confident_count(ranked, low_confidence=True, doubtful=doubtful)
    assert (n > 0) == bool(ranked)
    assert len({d for d, _ in ranked[:n]}) <= doubtful
    assert n <= confident_count(ranked, low_confidence=False)


def test_every_hit_of_a_weak_search_reads_weak() -> None:
    assert relevance(0.5, 0.5, low_confidence=True) == "weak"
