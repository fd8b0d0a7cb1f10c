"""The rerank stage: the reranker's order when it answers in time, the fused order and a note otherwise."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import pytest

from kbseek.rerank import RERANKERS, RerankFailed, RerankSpec, RerankStage, register_reranker, reorder
from tests.rerank_server import FAVOURITE, FakeReranker, word_score


def _stage(reranker: object, budget_s: float = 5.0) -> RerankStage:
    return RerankStage(reranker, candidates=30, budget_s=budget_s)  # type: ignore[arg-type]


def test_reorder_follows_the_scores_and_deals_the_fused_scores_out_again() -> None:
    fused = [0.9, 0.7, 0.4, 0.2]
    placed = reorder([0.1, 0.8, 0.5, 0.8], fused)
    # Best rerank score first; the tie between positions 1 and 3 keeps the fused order.
    assert [i for i, _ in placed] == [1, 3, 2, 0]
    # The scores fall as the new ranking does, and are the candidates' own fused scores.
    assert [s for _, s in placed] == fused


def test_reorder_of_one_order_changes_nothing() -> None:
    assert reorder([3.0, 2.0, 1.0], [0.5, 0.3, 0.1]) == [(0, 0.5), (1, 0.3), (2, 0.1)]
    with pytest.raises(ValueError, match="2 rerank scores for 3 candidates"):
        reorder([1.0, 2.0], [0.5, 0.3, 0.1])


def test_the_stage_returns_the_rerankers_scores() -> None:
    reranker = FakeReranker()
    texts = ["about cats", f"about dogs, my {FAVOURITE}", "cats and dogs"]
    outcome = _stage(reranker).score("cats dogs", texts)
    assert outcome.note is None
    assert outcome.scores == tuple(word_score("cats dogs", t) for t in texts)
    assert reranker.calls == [("cats dogs", texts)] and reranker.loads >= 1


def test_a_failing_reranker_keeps_the_fused_order_and_says_why() -> None:
    outcome = _stage(FakeReranker(fail="the server is down; start it")).score("q", ["a", "b"])
    assert outcome.scores is None
    assert outcome.note == "not reranked: the server is down; start it; the hits are in the fused order"


def test_a_slow_reranker_costs_the_budget_and_no_more() -> None:
    release = threading.Event()
    reranker = FakeReranker(wait=release)
    stage = _stage(reranker, budget_s=0.2)
    try:
        outcome = stage.score("q", ["a", "b"])
    finally:
        release.set()
    assert outcome.scores is None
    assert (
        outcome.note is not None
        and "fake reranker did not answer within 0.2 s (rerank budget_s)" in outcome.note
    )


def test_calls_queued_behind_overrunning_ones_never_start() -> None:
    release = threading.Event()
    reranker = FakeReranker(wait=release)
    stage = _stage(reranker, budget_s=0.1)
    try:
        notes = [stage.score("q", [f"text {i}"]).note for i in range(4)]
    finally:
        release.set()
    assert all(n is not None and "did not answer" in n for n in notes)
    assert len(reranker.calls) <= 2  # WORKERS: the rest were cancelled before they started


class _Loading(FakeReranker):
    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate

    def load(self) -> None:
        self.gate.wait(10)
        super().load()


def test_a_reranker_still_loading_is_said_to_be() -> None:
    gate = threading.Event()
    stage = _stage(_Loading(gate), budget_s=0.1)
    try:
        outcome = stage.score("q", ["a"])
    finally:
        gate.set()
    assert (
        outcome.note
        == "not reranked: fake reranker is still loading its model; the hits are in the fused order"
    )
    assert stage.score("q", ["a"]).scores == (0.0,)  # loaded now: the next search is reranked


class _Wrong(FakeReranker):
    def __init__(self, answer: list[float] | None = None, error: Exception | None = None) -> None:
        super().__init__()
        self.answer, self.error = answer, error

    def score(self, query: str, texts: Sequence[str], *, timeout_s: float) -> list[float]:
        if self.error is not None:
            raise self.error
        assert self.answer is not None
        return self.answer


@pytest.mark.parametrize(
    ("reranker", "note"),
    [
        (_Wrong([1.0]), "fake reranker gave 1 scores for 2 texts"),
        (_Wrong([1.0, math.nan]), "fake reranker gave a score that is not a finite number"),
        (
            _Wrong(error=KeyError("index")),
            "fake reranker failed unexpectedly (a bug; the log has the details)",
        ),
    ],
)
def test_a_wrong_answer_keeps_the_fused_order(
    reranker: FakeReranker, note: str, caplog: pytest.LogCaptureFixture
) -> None:
    outcome = _stage(reranker).score("q", ["a", "b"])
    assert outcome.scores is None and outcome.note == f"not reranked: {note}; the hits are in the fused order"
    if "bug" in note:
        assert "failed unexpectedly" in caplog.text and "KeyError" in caplog.text


def test_a_failed_load_is_tried_again_by_the_next_search() -> None:
    class FlakyLoad(FakeReranker):
        def load(self) -> None:
            super().load()
            if self.loads == 1:
                raise RerankFailed("the model file is missing")

    reranker = FlakyLoad()
    stage = _stage(reranker)
    assert stage.score("q", ["q"]).scores == (1.0,)
    assert reranker.loads == 2


def test_nothing_to_rerank_asks_nothing() -> None:
    reranker = FakeReranker()
    assert _stage(reranker).score("q", []).scores == ()
    assert reranker.calls == []


def test_a_provider_that_cannot_be_built_is_a_note_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    def broken(spec: RerankSpec) -> FakeReranker:
        raise RuntimeError("the plugin needs a licence key")

    register_reranker("broken", broken)
    try:
        stage = RerankStage.from_spec(RerankSpec(provider="broken"))
    finally:
        RERANKERS.unregister("broken")
    outcome = stage.score("q", ["a"])
    assert outcome.scores is None
    assert outcome.note == (
        "not reranked: rerank provider 'broken' could not be built (RuntimeError: the plugin needs a licence "
        "key); check its [rerank] settings; the hits are in the fused order"
    )
    assert "could not be built" in caplog.text
