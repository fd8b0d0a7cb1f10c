"""Distinct documents first: the rule that orders fused chunks into hits (docs/decisions/0012)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from kbseek.search.diversity import distinct_first


@dataclass(frozen=True)
class F:
    rowid: int
    score: float


@dataclass(frozen=True)
class Row:
    document_id: int
    start: int
    end: int


def ranked_of(chunks: list[tuple[int, float]]) -> tuple[list[F], dict[int, Row]]:
    """(document, score) pairs → a best-first ranking with non-overlapping chunks per document."""
    order = sorted(enumerate(chunks), key=lambda item: -item[1][1])
    rows = {i: Row(doc, i * 100, i * 100 + 50) for i, (doc, _) in enumerate(chunks)}
    return [F(i, score) for i, (_, score) in order], rows


def test_a_second_chunk_waits_behind_other_documents_unless_far_ahead() -> None:
    ranked, rows = ranked_of([(1, 0.9), (1, 0.8), (2, 0.7), (3, 0.6)])
    kept, more = distinct_first(ranked, rows, limit=4, per_document=3, far_ahead=0.5)
    assert [rows[f.rowid].document_id for f in kept] == [1, 2, 3, 1] and not more
    ranked, rows = ranked_of([(1, 0.9), (1, 0.8), (2, 0.3), (3, 0.2)])  # 0.8 ≥ 1.5 × 0.3: far ahead
    kept, _ = distinct_first(ranked, rows, limit=4, per_document=3, far_ahead=0.5)
    assert [rows[f.rowid].document_id for f in kept] == [1, 1, 2, 3]


def test_with_nothing_else_waiting_a_documents_chunks_fill_the_list() -> None:
    """The per-document cap makes room for other documents; with none waiting (a search narrowed to
    one file) it capped that file at 3 chunks, and decision 0012's way to read more of it did not work."""
    ranked, rows = ranked_of([(1, 0.9), (1, 0.5), (1, 0.4), (1, 0.3)])
    kept, more = distinct_first(ranked, rows, limit=5, per_document=3, far_ahead=math.inf)
    assert [f.score for f in kept] == [0.9, 0.5, 0.4, 0.3] and not more
    kept, more = distinct_first(ranked, rows, limit=3, per_document=1, far_ahead=math.inf)
    assert [f.score for f in kept] == [0.9, 0.5, 0.4] and more
    ranked, rows = ranked_of([(1, 0.9), (1, 0.8), (1, 0.7), (2, 0.2)])  # another document: it comes first
    kept, _ = distinct_first(ranked, rows, limit=4, per_document=2, far_ahead=math.inf)
    assert [rows[f.rowid].document_id for f in kept] == [1, 2, 1, 1]


def test_more_is_said_when_a_deferred_chunk_did_not_fit() -> None:
    ranked, rows = ranked_of([(1, 0.9), (1, 0.8), (2, 0.7)])
    kept, more = distinct_first(ranked, rows, limit=2, per_document=3, far_ahead=math.inf)
    assert [rows[f.rowid].document_id for f in kept] == [1, 2] and more


def test_an_infinite_margin_defers_even_ahead_of_a_zero_score_document() -> None:
    # found by the property below: 1.0 ahead of 0.0 counted as "far ahead" even with far_ahead = inf
    ranked, rows = ranked_of([(1, 0.0), (2, 1.0), (2, 1.0)])
    kept, more = distinct_first(ranked, rows, limit=2, per_document=2, far_ahead=math.inf)
    assert [rows[f.rowid].document_id for f in kept] == [2, 1] and more


def test_overlapping_chunks_of_one_document_are_never_both_kept() -> None:
    ranked = [F(1, 0.9), F(2, 0.8), F(3, 0.7)]
    rows = {1: Row(1, 0, 100), 2: Row(1, 50, 150), 3: Row(2, 0, 100)}
    kept, _ = distinct_first(ranked, rows, limit=5, per_document=3, far_ahead=0.0)
    assert [f.rowid for f in kept] == [1, 3]


chunk_lists = st.lists(
    st.tuples(st.integers(1, 6), st.floats(0.0, 1.0, allow_nan=False)), min_size=0, max_size=30
)


@given(chunk_lists, st.integers(1, 10), st.integers(1, 3), st.sampled_from([0.0, 0.25, 0.5, math.inf]))
def test_the_rule_only_reorders_later_chunks(
    chunks: list[tuple[int, float]], limit: int, per_document: int, far_ahead: float
) -> None:
    ranked, rows = ranked_of(chunks)
    kept, more = distinct_first(ranked, rows, limit=limit, per_document=per_document, far_ahead=far_ahead)
    docs = [rows[f.rowid].document_id for f in kept]
    assert len(kept) <= limit and len(set(f.rowid for f in kept)) == len(kept)
    available_docs = {rows[f.rowid].document_id for f in ranked}
    if any(docs.count(d) > per_document for d in docs):  # past the cap only when no document waits
        assert set(docs) == available_docs
    if ranked:
        assert kept[0] == ranked[0]  # the best chunk is always first: recall@1 cannot move
    # every document's best chunk comes before any document's deferred later chunk
    available = len({rows[f.rowid].document_id for f in ranked})
    if far_ahead == math.inf:
        first = docs[: min(limit, available)]
        assert len(set(first)) == len(first)
    assert more == (len(chunks) > limit)  # the chunks never overlap here, so each could be a hit
