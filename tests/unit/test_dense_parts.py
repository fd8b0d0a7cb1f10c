"""Vectors of two models side by side: reading each model's cosine back, and the language gate.

docs/decisions/0013-two-dense-models.md: e5 speaks only for chunks in the query's language, USE
for every chunk; the concatenated row must give back each model's own cosine exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed.base import PAIR, PAIR_PARTS, EmbedderSpec, VectorPart
from kbseek.embed.pair import PairEmbedder, concatenate
from kbseek.errors import ConfigError
from kbseek.search.dense import DenseIndex
from kbseek.search.fusion import gated_dense
from kbseek.text.language import is_japanese
from tests.fakes import FakeEmbedder

CROSS = VectorPart(3, 0.0, own_language_only=False)
WITHIN = VectorPart(2, 0.5, own_language_only=True)


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=30))
def test_search_parts_reads_back_each_models_own_cosine(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = unit(rng.normal(size=(n, 3))), unit(rng.normal(size=(n, 2)))
    qa, qb = unit(rng.normal(size=(1, 3))), unit(rng.normal(size=(1, 2)))
    rows = concatenate([a, b], [CROSS, WITHIN])
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)  # still unit rows
    query = concatenate([qa, qb], [CROSS, WITHIN])[0]
    index = DenseIndex.from_arrays(np.arange(100, 100 + n), rows)
    got = dict(index.search_parts(query, n, [3, 2]))
    assert sorted(got) == list(range(100, 100 + n))
    for i in range(n):
        np.testing.assert_allclose(got[100 + i], (a[i] @ qa[0], b[i] @ qb[0]), atol=1e-5)


def test_a_row_either_part_ranks_high_is_a_candidate() -> None:
    # Row 0 is the first part's best, row 1 the second's; row 2 is nobody's: with k=1 both of the
    # first two are candidates, so neither model can silence the other's find.
    a = unit(np.array([[1, 0, 0], [0, 1, 0], [0, 0.9, 0.1]], dtype=np.float32))
    b = unit(np.array([[0, 1], [1, 0], [0.2, 0.8]], dtype=np.float32))
    q = concatenate([unit(np.array([[1.0, 0, 0]])), unit(np.array([[1.0, 0]]))], [CROSS, WITHIN])[0]
    index = DenseIndex.from_arrays(np.array([10, 11, 12]), concatenate([a, b], [CROSS, WITHIN]))
    assert sorted(r for r, _ in index.search_parts(q, 1, [3, 2])) == [10, 11]
    assert [r for r, _ in index.search_parts(q, 1, [3, 2], allowed={12})] == [12]


def test_parts_that_do_not_add_up_to_the_dimension_are_refused() -> None:
    index = DenseIndex.from_arrays(np.array([1]), np.ones((1, 5), dtype=np.float32) / np.sqrt(5))
    with pytest.raises(ValueError, match="do not add up"):
        index.search_parts(np.ones(5, dtype=np.float32), 1, [3, 3])


def test_concatenate_refuses_blocks_that_do_not_match_the_parts() -> None:
    with pytest.raises(ValueError, match="do not match"):
        concatenate([np.ones((1, 3)), np.ones((1, 3))], [CROSS, WITHIN])


def test_the_within_language_model_speaks_only_for_chunks_in_the_querys_language() -> None:
    candidates = [(1, (0.4, 0.9)), (2, (0.6, 0.1))]  # 1: English, 2: Japanese
    english_query = gated_dense(candidates, [CROSS, WITHIN], query_japanese=False, japanese={2})
    # chunk 1: mean(0.4, (0.9 - 0.5) / 0.5 = 0.8) = 0.6; chunk 2: USE alone, 0.6 (e5's 0.1 is not read)
    assert english_query == [(1, pytest.approx(0.6)), (2, pytest.approx(0.6))]
    japanese_query = gated_dense(candidates, [CROSS, WITHIN], query_japanese=True, japanese={2})
    # now chunk 1 is the other language: USE alone (0.4); chunk 2 is read by both: mean(0.6, -0.8)
    assert japanese_query == [(1, pytest.approx(0.4)), (2, pytest.approx(-0.1))]


def test_a_chunk_no_model_may_judge_scores_zero() -> None:
    assert gated_dense([(7, (0.9,))], [WITHIN], query_japanese=False, japanese={7}) == [(7, 0.0)]


def test_the_pair_parts_are_the_two_models_dimensions() -> None:
    from kbseek.embed.e5 import DIM as E5_DIM
    from kbseek.embed.use import DIM as USE_DIM

    assert [p.dim for p in PAIR_PARTS] == [USE_DIM, E5_DIM]
    assert [p.own_language_only for p in PAIR_PARTS] == [False, True]


@pytest.mark.parametrize(
    ("text", "japanese"),
    [
        ("", False),
        ("How do I clean up an effect?", False),
        ("エフェクトのクリーンアップはどう書く？", True),
        ("`useEffect` のクリーンアップ関数を返す", True),
        ("Set the header per request (see 設定 in the admin guide).", False),
        (
            "```js\nuseEffect(() => { const c = connect(); return () => c.disconnect(); }, []);\n```\n接続を解除する",
            False,
        ),
    ],
)
def test_is_japanese_goes_by_what_most_of_the_text_is_written_in(text: str, japanese: bool) -> None:
    assert is_japanese(text) is japanese


@given(st.text(alphabet=st.characters(codec="ascii")))
def test_ascii_text_is_never_japanese(text: str) -> None:
    assert not is_japanese(text)


@given(st.text(alphabet="あいうえおカタカナ漢字", min_size=1), st.text(alphabet="abc ", max_size=30))
def test_mostly_kana_and_kanji_is_japanese(japanese: str, english: str) -> None:
    text = japanese * 10 + english
    assert is_japanese(text)


class _LanguageOnly:
    """A 'within one language' model at its worst: every text of the query's language is close to it.

    Documents: English → e0, Japanese → e1. Queries sit at cosine 0.9 to their own language and
    0.44 to the other: on e5's scale (floor 0.78) the other language scores far below zero.
    """

    model_id = "stub:language-only"
    dim = 384

    def load(self) -> None:
        return None

    def _vector(self, text: str, *, query: bool) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        own, other = (1, 0) if is_japanese(text) else (0, 1)
        if query:
            v[own], v[other] = 0.9, np.sqrt(1 - 0.81)
        else:
            v[own] = 1.0
        return v

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self._vector(t, query=False) for t in texts], dtype=np.float32).reshape(-1, self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text, query=True)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self._vector(t, query=True) for t in texts], dtype=np.float32).reshape(-1, self.dim)


def test_through_a_knowledge_base_the_within_language_model_cannot_bury_the_other_language(
    tmp_path: Path,
) -> None:
    (tmp_path / "en").mkdir()
    (tmp_path / "ja").mkdir()
    (tmp_path / "ja" / "effect.md").write_text(
        "# useEffect\n\nuseEffect のクリーンアップ\n", encoding="utf-8"
    )
    (tmp_path / "en" / "weather.md").write_text(
        "# Weather\n\nThe forecast says light rain on the coast tomorrow.\n", encoding="utf-8"
    )
    pair = PairEmbedder(FakeEmbedder(dim=512), _LanguageOnly())
    settings = Settings(
        root=tmp_path, freshness_interval_s=1e9, embed=EmbedderSpec(provider=PAIR),
        dense_weight=1.0, dense_weight_matched=1.0,  # the dense leg alone decides
    )  # fmt: skip
    with KnowledgeBase(settings=settings, embedder=pair) as kb:
        kb.load_semantic()
        kb.index()
        hits = kb.search("useEffect", explain=True).hits
    # The fake USE half matches the shared identifier; e5's half would have put the English
    # weather note first (its whole case is "same language"), and does not vote on the Japanese one.
    assert [h.path for h in hits][:1] == ["ja/effect.md"]


def test_the_pair_embedder_is_one_model_to_the_index(tmp_path: Path) -> None:
    pair = PairEmbedder(FakeEmbedder(dim=512, model_id="a"), _LanguageOnly())
    assert pair.model_id == "a+stub:language-only" and pair.dim == 896
    rows = pair.embed_documents(["one", "二つ目の文書です"])
    assert rows.shape == (2, 896) and np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert pair.embed_queries(["x", "y"]).shape == (2, 896)


def test_the_pair_provider_takes_no_model_or_floor() -> None:
    assert EmbedderSpec(provider=PAIR).parts == PAIR_PARTS
    assert EmbedderSpec().parts == ()
    for extra in ({"model": "original"}, {"similarity_floor": 0.5}):
        with pytest.raises(ConfigError, match="two fixed models"):
            EmbedderSpec(provider=PAIR, **extra)  # type: ignore[arg-type]
