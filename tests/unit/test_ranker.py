"""The learned ranking: its features, the shipped model as the package reads it, and how it reorders."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kbseek.config import Settings
from kbseek.errors import ConfigError
from kbseek.search import features, ranker
from kbseek.search.features import FEATURES, QueryView
from kbseek.search.fusion import Fused
from kbseek.search.ranker import LearnedRanker, RankerFileError
from kbseek.store.records import ChunkRow


def chunk(
    rowid: int, document: int, text: str = "plain words", heading: tuple[str, ...] = ("Title",)
) -> ChunkRow:
    return ChunkRow(
        rowid=rowid, chunk_id=f"c_{rowid:016}", document_id=document, path=f"d{document}.md", title=heading[0],
        ordinal=rowid, start=0, end=len(text), line_start=1, line_end=1, heading_path=heading, text=text,
        content_hash=f"h{rowid}",
    )  # fmt: skip


def view(**changes: Any) -> QueryView:
    base: dict[str, Any] = {
        "japanese": False, "terms": (("deploy", "rollback"),), "best_lexical": (10.0,), "coverage": ({},),
        "top_coverage": 0.5, "best_similarity": 0.6, "legs_agree": True,
    }  # fmt: skip
    return QueryView(**{**base, **changes})


def model_file() -> dict[str, Any]:
    return json.loads((resources.files("kbseek.search") / "ranker.json").read_text(encoding="utf-8"))


def stump(feature: str, threshold: float, low: float, high: float, depth: int = 40) -> LearnedRanker:
    """One tree of one split: ``low`` at or under ``threshold`` of ``feature``, ``high`` above."""
    return LearnedRanker.from_dict({
        "kind": "trees", "features": list(FEATURES), "depth": depth, "levels": 1, "roots": [0],
        "nodes": {"feature": [FEATURES.index(feature), 0, 0], "threshold": [threshold, 0, 0],
                  "left": [1, 1, 2], "right": [2, 1, 2], "value": [0.0, low, high]},
    })  # fmt: skip


# -- features -----------------------------------------------------------------------------------


def test_features_describe_each_document_by_its_best_chunk_and_the_rest() -> None:
    rows = {1: chunk(1, 10), 2: chunk(2, 20, "see [a](a.md) and [b](b.md)"), 3: chunk(3, 10)}
    ranked = [
        Fused(1, 0.9, lexical_rank=1, lexical_score=10.0, dense_rank=2, dense_similarity=0.5),
        Fused(2, 0.6, dense_rank=1, dense_similarity=0.7),
        Fused(3, 0.3, lexical_rank=2, lexical_score=5.0),
    ]
    documents, x = features.matrix(ranked, rows, view(), {})
    assert documents == [10, 20]
    first, second = dict(zip(FEATURES, x[0], strict=True)), dict(zip(FEATURES, x[1], strict=True))
    assert first["fused_share"] == 1.0 and second["fused_share"] == pytest.approx(0.6 / 0.9)
    assert first["lexical"] == 1.0 and first["document_lexical"] == 1.0
    assert first["document_chunks"] == pytest.approx(np.log1p(2)) and second[
        "document_chunks"
    ] == pytest.approx(np.log1p(1))
    assert first["document_mass"] == pytest.approx(1.0 + 0.3 / 0.9)
    assert second["lexical"] == 0.0 and second["dense"] == 0.7 and second["both_legs"] == 0.0
    assert second["links"] > 0 and first["links"] == 0
    assert first["lexical_confident"] == pytest.approx(0.5) and second["dense_uncovered"] == pytest.approx(
        0.35
    )


def test_the_title_and_the_other_language_are_read_off_the_chunk() -> None:
    rows = {1: chunk(1, 1, "本番環境へのデプロイ手順を説明します。", ("Deploy", "Rollback")), 2: chunk(2, 2)}
    ranked = [
        Fused(1, 1.0, dense_rank=1, dense_similarity=0.8),
        Fused(2, 0.5, lexical_rank=1, lexical_score=3.0),
    ]
    _, x = features.matrix(ranked, rows, view(), {})
    first, second = dict(zip(FEATURES, x[0], strict=True)), dict(zip(FEATURES, x[1], strict=True))
    assert first["title_terms"] == 1.0 and first["heading_depth"] == 1.0 and second["title_terms"] == 0.0
    assert first["other_language"] == 1.0 and first["other_language_dense"] == pytest.approx(0.8)
    assert second["other_language"] == 0.0
    # the dense gate's verdict is reused rather than made again
    _, again = features.matrix(ranked, rows, view(), {1: False})
    assert again[0][FEATURES.index("other_language")] == 0.0


# -- the model file -----------------------------------------------------------------------------


def test_the_shipped_model_scores_its_recorded_candidates_as_lightgbm_did() -> None:
    data = model_file()
    model = ranker.shipped()
    assert data["checks"], "the training script writes the scores LightGBM gave"
    x = np.array([c["x"] for c in data["checks"]])
    scores, _ = model.walk(x)
    assert scores == pytest.approx([c["score"] for c in data["checks"]], abs=1e-9)
    assert model.depth > 0 and len(model.roots) == data["trained"]["rounds"]


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, (3, len(FEATURES)), elements=st.floats(-2, 6, allow_nan=False)))
def test_each_features_part_adds_up_to_the_score(x: np.ndarray) -> None:
    model = ranker.shipped()
    scores, parts = model.walk(x)
    assert parts.sum(axis=1) + model.value[model.roots].sum() == pytest.approx(scores, abs=1e-9)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"kind": "linear"}, "expected 'trees'"),
        ({"features": list(FEATURES[:-1])}, "train it again with scripts/train_ranker.py"),
        ({"features": [*FEATURES[1:], FEATURES[0]]}, "another order"),
        ({"roots": [10**6]}, "point outside the model"),
        ({"depth": None}, "missing or malformed"),
    ],
)
def test_a_model_file_this_version_cannot_read_is_refused_with_the_reason(
    change: dict[str, Any], says: str
) -> None:
    with pytest.raises(RankerFileError, match=says):
        LearnedRanker.from_dict({**model_file(), **change}, source="ranker.json")


def test_a_model_file_that_is_not_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ranker.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(RankerFileError, match="cannot read the ranking model"):
        LearnedRanker.from_file(path)


# -- reordering ---------------------------------------------------------------------------------


def test_documents_move_as_the_model_says_and_their_chunks_keep_their_fused_order() -> None:
    rows = {1: chunk(1, 10), 2: chunk(2, 10), 3: chunk(3, 20, "[x](x.md) " * 5), 4: chunk(4, 30)}
    ranked = [Fused(3, 0.9), Fused(1, 0.8), Fused(2, 0.4), Fused(4, 0.1)]
    hub_last = stump("links", 0.5, 1.0, -3.0, depth=3)  # a page of links loses
    out = hub_last.order(ranked, rows, view(), {})
    assert [f.rowid for f in out] == [1, 2, 3, 4]
    assert out[0].score > out[1].score  # chunk 2 keeps its place below chunk 1 of the same document
    assert out[0].learned == (("links", 1.0),) and out[2].learned == (("links", -3.0),)
    assert out[3].learned == () and out[3].score < min(f.score for f in out[:3])  # beyond the depth: after


def test_the_entries_given_are_left_as_they_were() -> None:
    """``order`` reads as a function of its arguments: it once rescored the caller's entries in place."""
    rows = {1: chunk(1, 10), 3: chunk(3, 20, "[x](x.md) " * 5), 4: chunk(4, 30)}
    ranked = [Fused(3, 0.9), Fused(1, 0.8), Fused(4, 0.1)]
    before = [replace(f) for f in ranked]
    out = stump("links", 0.5, 1.0, -3.0, depth=2).order(ranked, rows, view(), {})
    assert ranked == before and all(o is not f for o in out for f in ranked)


def test_a_search_with_no_candidates_is_left_as_it_is() -> None:
    assert stump("links", 0.5, 1.0, -1.0).order([Fused(9, 1.0)], {}, view(), {}) == [Fused(9, 1.0)]


# -- the setting --------------------------------------------------------------------------------


def test_fusion_learned_is_a_setting_and_a_wrong_one_lists_the_choices(tmp_path: Path) -> None:
    assert Settings(root=tmp_path, fusion="learned").fusion == "learned"
    with pytest.raises(ConfigError, match="'blend', 'learned', 'rrf'"):
        Settings(root=tmp_path, fusion="trees")
