"""How a chunk becomes a vector: its passage, leaned towards its section heading.

The blend is kbseek's arithmetic, not the model's, so the fake embedder stands in; what the blend
buys with the real model is measured in docs/decisions/0006-chunk-vectors-lean-on-section-headings.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from kbseek.embed.chunk_vectors import SECTION_SHARE, embed_chunks, passage_input, section_input
from tests.fakes import FakeEmbedder


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder()


def test_a_chunk_under_a_section_heading_leans_towards_it_and_a_title_only_chunk_does_not(
    fake: FakeEmbedder,
) -> None:
    chunks = [
        (("Rolling back a deployment", "Rollback"), "Switch traffic to the previous image tag."),
        (("Rolling back a deployment",), "Some preamble before the first section."),
        (("Rolling back a deployment", "Rollback"), "Then watch the error rate for ten minutes."),
    ]
    got = embed_chunks(fake.embed_documents, chunks)
    # One call for the passages, one for the headings: the two chunks of one section share its vector.
    assert (fake.document_calls, fake.documents_embedded) == (2, 3 + 1)
    passages = fake.embed_documents([passage_input(h, t) for h, t in chunks])
    (section,) = fake.embed_documents(["Rolling back a deployment › Rollback"])
    for i in (0, 2):
        expected = (1 - SECTION_SHARE) * passages[i] + SECTION_SHARE * section
        assert np.allclose(got[i], expected, atol=1e-5)
        assert float(got[i] @ section) > float(passages[i] @ section)  # it leans towards its heading
    assert np.allclose(got[1], passages[1], atol=1e-5)
    assert got.dtype == np.float32 and got.shape == passages.shape


def test_only_headings_below_the_title_are_embedded_alone() -> None:
    assert section_input(("Title",)) is None
    assert section_input(("Title", "Section", "Sub")) == "Title › Section › Sub"
