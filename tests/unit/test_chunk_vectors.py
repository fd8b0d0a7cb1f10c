"""How a chunk becomes a vector, with the real default model."""

from __future__ import annotations

import numpy as np
import pytest

from kbseek.embed import EmbedderSpec, make_embedder
from kbseek.embed.chunk_vectors import SECTION_SHARE, embed_chunks, passage_input, section_input
from kbseek.embed.use import UseEmbedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def use() -> UseEmbedder:
    embedder = make_embedder(EmbedderSpec())
    assert isinstance(embedder, UseEmbedder)
    embedder.load()
    return embedder


def test_a_chunk_under_a_section_heading_leans_towards_it_and_a_title_only_chunk_does_not(
    use: UseEmbedder,
) -> None:
    chunks = [
        (("Rolling back a deployment", "Rollback"), "Switch traffic to the previous image tag."),
        (("Rolling back a deployment",), "Some preamble before the first section."),
        (("Rolling back a deployment", "Rollback"), "Then watch the error rate for ten minutes."),
    ]
    got = embed_chunks(use.embed_documents, chunks)
    passages = use.embed_documents([passage_input(h, t) for h, t in chunks])
    (section,) = use.embed_documents(["Rolling back a deployment › Rollback"])
    for i in (0, 2):
        expected = (1 - SECTION_SHARE) * passages[i] + SECTION_SHARE * section
        assert np.allclose(got[i], expected, atol=1e-5)
    assert np.allclose(got[1], passages[1], atol=1e-5)
    assert got.dtype == np.float32 and got.shape == passages.shape


def test_only_headings_below_the_title_are_embedded_alone() -> None:
    assert section_input(("Title",)) is None
    assert section_input(("Title", "Section", "Sub")) == "Title › Section › Sub"
