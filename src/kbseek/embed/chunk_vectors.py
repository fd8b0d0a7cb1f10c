"""How a chunk becomes one vector: its passage, leaned towards its section heading.

A chunk's passage (heading path + text) is long and mixed: prose, tables,
commands. A sentence encoder embeds a short phrase far better than such a
passage, and in engineering notes the section heading is exactly that: a
human-written summary of the section ("Rollback", "Connection pool
exhaustion › Triage"). So a chunk under a section heading is stored as the
mean of its passage vector and its heading-path vector; a chunk with only the
document title (the preamble, or a single-section document) keeps its passage
vector. Because cosine is linear, this equals averaging the two similarities at
query time, with one matrix and no extra cost per query.

Measured with the default model (docs/decisions/0006-chunk-vectors-lean-on-section-headings.md):
golden paraphrases recall@5 0.636 -> 0.909; SciFact and JSQuAD, whose documents
have no sections, are unchanged by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

SECTION_SHARE = 0.5
VECTOR_SCHEME = "section-mean-0.5"
"""Recorded beside the model id. Vectors of the same model made another way (an older kbseek)
are re-made by the next embedding pass rather than refused: the model is the same, so the
index needs no user action, only time."""

EmbedFn = Callable[[list[str]], np.ndarray]
ChunkText = tuple[Sequence[str], str]
"""(heading path, text) of one chunk."""


def passage_input(heading_path: Sequence[str], text: str) -> str:
    """The passage text embedded for a chunk: its heading path gives it context."""
    return " › ".join(heading_path) + "\n" + text


def section_input(heading_path: Sequence[str]) -> str | None:
    """The heading path embedded alone, for a chunk under a section heading (below the title)."""
    return " › ".join(heading_path) if len(heading_path) >= 2 else None


def embed_chunks(embed: EmbedFn, chunks: Sequence[ChunkText]) -> np.ndarray:
    """One float32 vector per chunk, in order."""
    vectors = np.array(embed([passage_input(h, t) for h, t in chunks]), dtype=np.float32)
    sections = [(i, s) for i, (h, _) in enumerate(chunks) if (s := section_input(h)) is not None]
    if sections:
        distinct = list(dict.fromkeys(s for _, s in sections))  # the pieces of a long section share one
        by_text = dict(zip(distinct, embed(distinct), strict=True))
        for i, s in sections:
            vectors[i] = (1.0 - SECTION_SHARE) * vectors[i] + SECTION_SHARE * by_text[s]
    return vectors
