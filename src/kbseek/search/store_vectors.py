"""The dense leg answered by the store: no vectors in memory, no graph to build at start.

A store that finds nearest vectors itself (``store.nearest.NearestVectors``: PostgreSQL with an HNSW
index, docs/decisions/0032) serves a large knowledge base better than the in-process indexes: a
reader on another machine starts at once and holds nothing, and every process sees the same index,
current to the last commit. Past ``[index].approximate_above`` vectors the semantic leg uses
:class:`StoreVectorIndex` when the store offers it; below, the in-process exact ``DenseIndex``
stays, because it is an order of magnitude faster than a scan inside the database at that size
(measured by ``benchmarks/pg_vectors.py``). A store without the capability keeps ``search.ann``.

A vector made of several models' vectors (``embed.pair``) is searched per part, which one index of
the whole vector cannot do, so it keeps ``search.ann`` too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kbseek.search.ann import BuildProgress, open_vector_index, wants_approximate
from kbseek.search.ann import suits as suits_in_process
from kbseek.search.dense import VectorIndex
from kbseek.store.base import Store
from kbseek.store.nearest import NearestVectors

log = logging.getLogger(__name__)


def offers_nearest(store: Store, parts: Sequence[int] = ()) -> bool:
    """Whether the store can answer the dense leg itself for vectors of these parts."""
    return len(parts) <= 1 and store.nearest is not None


def open_dense_index(
    store: Store,
    dim: int,
    *,
    approximate_above: int,
    folder: Path | None,
    parts: Sequence[int] = (),
    builds: bool = False,
    progress: BuildProgress | None = None,
) -> VectorIndex:
    """The dense index for the store's vectors now: as ``ann.open_vector_index``, except that past the
    threshold a store offering nearest vectors answers itself.

    ``builds``: this process writes the index, so it builds the store's approximate index when it is
    missing (before answering: searches meanwhile use the index the caller holds). A reader never
    builds; it searches exactly in the store until the writer's index is there. ``progress`` hears
    how far an in-process graph being built is (the store builds its own index out of sight).
    """
    if offers_nearest(store, parts) and wants_approximate(store.embedded_count(), approximate_above):
        return StoreVectorIndex(store, dim, builds=builds)
    return open_vector_index(
        store, dim, approximate_above=approximate_above, folder=folder, parts=parts, progress=progress
    )


def suits(index: VectorIndex, approximate_above: int, size: int | None = None) -> bool:
    """``ann.suits`` for every kind: the store's index, like the in-process graph, goes back to exact
    only below half the threshold, so a size hovering around it does not switch at every pass."""
    if isinstance(index, StoreVectorIndex):
        n = len(index) if size is None else size
        return approximate_above == 0 or n > approximate_above // 2
    return suits_in_process(index, approximate_above, size)


class StoreVectorIndex:
    """Every search asks the store (``NearestVectors.nearest_vectors``); the count is read after
    each pass.

    Nothing here can go stale: the store answers from what it holds when asked, so a row deleted
    since the last pass is never returned, and ``refresh`` has nothing to read but the count.
    """

    def __init__(self, store: Store, dim: int, *, builds: bool = False) -> None:
        if store.nearest is None:
            raise TypeError(f"the store at {store.location} does not find nearest vectors itself")
        self._store = store
        self._nearest: NearestVectors = store.nearest
        self._dim = dim
        self._builds = builds
        self._count = 0
        self._prepare(store)

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        """Chunks with a vector at the last pass (or the start): what ``covered`` reports."""
        return self._count

    def _prepare(self, store: Store) -> None:
        self._count = store.embedded_count()
        built = self._builds and self._count > 0 and self._nearest.build_vector_index(self._dim)
        if built:
            log.info("built the approximate vector index in %s", store.location)

    def reload(self, store: Store) -> None:
        """The store re-reads nothing: vectors remade under the same rowids are what it searches."""
        self._prepare(store)

    def refresh(self, store: Store) -> tuple[int, int]:
        """The new count, and the index built if the writer finds it missing (after a dimension
        change, or a build cut off midway); (added, removed) as the count moved."""
        before = self._count
        self._prepare(store)
        return max(self._count - before, 0), max(before - self._count, 0)

    def search(
        self, query: np.ndarray, k: int, allowed: frozenset[int] | None = None
    ) -> list[tuple[int, float]]:
        return self._nearest.nearest_vectors(np.asarray(query, dtype=np.float32), k, allowed)

    def search_parts(
        self, query: np.ndarray, k: int, parts: Sequence[int], allowed: frozenset[int] | None = None
    ) -> list[tuple[int, tuple[float, ...]]]:
        """One part only: each part of a concatenated vector needs its own index (``search.ann``)."""
        if len(parts) > 1 or sum(parts) != self._dim:
            raise ValueError(
                f"the store's index holds whole vectors of {self._dim}, not parts {tuple(parts)}"
            )
        return [(rowid, (cosine,)) for rowid, cosine in self.search(query, k, allowed)]

    def close(self) -> None:
        """Nothing to keep: the index lives in the store."""
