"""Two local models side by side in one vector: the universal sentence encoder and e5.

Why two: measured on the development sets (docs/decisions/0013), the models fail
in opposite places. USE places a question and its answer close together across
English and Japanese, but ranks same-language paraphrases and English technical
text poorly; e5 is the better judge within one language and useless across
them. Each chunk's vector is USE's 512 numbers followed by e5's 384, each part
unit length and scaled by ``1/sqrt(2)`` so the row is unit length as every
stored vector must be. The store, the content-keyed vector cache and the
freshness logic see one model; only the dense leg reads the parts apart
(``DenseIndex.search_parts``) and the fusion gates e5 by language.

The cost is both models per chunk: indexing runs at the speed of the slower
one (e5), a query embeds twice (a few milliseconds for USE, about ten for e5).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kbseek.embed.base import PAIR_PARTS, Embedder, VectorPart, check_texts, embed_queries, query_vector


class PairEmbedder:
    """:class:`~kbseek.embed.base.Embedder` whose vectors hold both models' vectors (``use+e5``)."""

    def __init__(self, cross: Embedder, within: Embedder) -> None:
        self._cross, self._within = cross, within

    @property
    def model_id(self) -> str:
        """Both models' ids: a change in either one makes the stored vectors incomparable."""
        return f"{self._cross.model_id}+{self._within.model_id}"

    @property
    def dim(self) -> int:
        return sum(p.dim for p in PAIR_PARTS)

    def load(self) -> None:
        """Each model's own load is idempotent and thread-safe; a failure names its model."""
        self._cross.load()
        self._within.load()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        return concatenate(
            [self._cross.embed_documents(items), self._within.embed_documents(items)], PAIR_PARTS
        )

    def embed_query(self, text: str) -> np.ndarray:
        return query_vector(self.embed_queries, text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        return concatenate(
            [embed_queries(self._cross, items), embed_queries(self._within, items)], PAIR_PARTS
        )


def concatenate(blocks: Sequence[np.ndarray], parts: Sequence[VectorPart]) -> np.ndarray:
    """Rows of unit-length parts side by side, each scaled by ``1/sqrt(len(parts))``: unit rows again.

    ``DenseIndex.search_parts`` undoes the scale to read each model's cosine.
    """
    if len(blocks) != len(parts) or any(b.shape[1] != p.dim for b, p in zip(blocks, parts, strict=False)):
        shapes = [b.shape for b in blocks]
        raise ValueError(f"vector blocks {shapes} do not match the parts {[p.dim for p in parts]}")
    scale = np.float32(1.0 / np.sqrt(len(parts)))
    return np.ascontiguousarray(np.hstack(blocks).astype(np.float32) * scale)
