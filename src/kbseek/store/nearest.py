"""What a store may offer besides ``Store``: finding the nearest chunk vectors itself.

A declared capability, not a type to test for: every store has ``nearest`` (``store.base.VectorReads``),
``None`` where it does not offer it, so a caller reads what a store can do from the protocol. Only
the dense leg that asks the store (``search.store_vectors``) and the store that answers (PostgreSQL)
use the methods.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

import numpy as np
import numpy.typing as npt


class NearestVectors(Protocol):
    """What a store may offer besides :class:`Store`: the nearest chunk vectors found by the store
    itself, so the dense leg holds no vectors and builds no graph (PostgreSQL with pgvector;
    docs/decisions/0032). The SQLite store does not offer it (its ``nearest`` is ``None``);
    ``search.store_vectors`` uses it when a store does."""

    def nearest_vectors(
        self, query: npt.NDArray[np.float32], k: int, allowed: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """At most ``k`` (chunk rowid, cosine) best first, ties by rowid; with ``allowed``, only those.

        Exact while the store holds no approximate index for the query's dimension; approximate
        (recall@10 at least 0.95 against exact) once :meth:`build_vector_index` has built one. The
        cosine is the float32 dot product of the stored vector with the query, as ``DenseIndex``
        gives it, whichever way the row was found. Chunks sharing a content hash share its vector.
        """
        ...

    def build_vector_index(self, dim: int) -> bool:
        """Build the approximate index for vectors of ``dim`` unless one is there (minutes at a million
        vectors), dropping any of another dimension; returns whether it built one.

        Reads and writes go on meanwhile and never wait for it. Called by the process that writes
        the index, outside any transaction; a second caller while one builds returns at once.
        """
        ...
