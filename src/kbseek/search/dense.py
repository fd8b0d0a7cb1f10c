"""The dense leg: exact cosine search over an in-memory float32 matrix.

Brute force is exact and, at the sizes a notes folder reaches, faster than
building an approximate index: one matrix-vector product per query.

A vector may be the concatenation of several models' vectors (``embed.pair``):
each part unit length, scaled by ``1/sqrt(parts)`` so the whole row is unit length
too. :meth:`DenseIndex.search_parts` then reads each model's cosine on its own,
because the fusion trusts the models in different places (docs/decisions/0013).

Past ``[index].approximate_above`` vectors the semantic leg uses ``search.ann.ApproximateIndex``
instead (docs/decisions/0017); both satisfy :class:`VectorIndex`, which is all the pipeline sees.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from kbseek.store.base import Store


class VectorIndex(Protocol):
    """What search and the semantic leg ask of a dense index, exact (:class:`DenseIndex`) or approximate.

    Rowids are the store's chunk rowids; a cosine is on the exact scale whichever index gives it.
    """

    @property
    def dim(self) -> int:
        """The vectors' dimension."""
        ...

    def __len__(self) -> int:
        """How many chunk vectors a search sees now."""
        ...

    def reload(self, store: Store) -> None:
        """Read every vector again (they were remade under the same rowids); searches go on meanwhile."""
        ...

    def refresh(self, store: Store) -> tuple[int, int]:
        """Take in the store's new vector rowids and drop its deleted ones; returns (added, removed)."""
        ...

    def search(
        self, query: np.ndarray, k: int, allowed: frozenset[int] | None = None
    ) -> list[tuple[int, float]]:
        """At most ``k`` (chunk rowid, cosine) best first; with ``allowed``, only rowids in it."""
        ...

    def search_parts(
        self, query: np.ndarray, k: int, parts: Sequence[int], allowed: frozenset[int] | None = None
    ) -> list[tuple[int, tuple[float, ...]]]:
        """(chunk rowid, each part's cosine) for the best ``k`` rows of every part (``embed.pair``)."""
        ...

    def close(self) -> None:
        """Keep what should outlive the process (the approximate index saves its graph); no search follows."""
        ...


class DenseIndex:
    """A snapshot of every chunk vector; :meth:`reload` swaps in a new one after an index pass."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._ids = np.empty(0, dtype=np.int64)
        self._matrix = np.empty((0, dim), dtype=np.float32)
        self._lock = threading.Lock()

    @classmethod
    def from_arrays(cls, ids: np.ndarray, matrix: np.ndarray) -> DenseIndex:
        """An index over given rowids and unit-length rows (the store's snapshot, or any other)."""
        index = cls(matrix.shape[1])
        index._ids, index._matrix = np.asarray(ids, dtype=np.int64), np.asarray(matrix, dtype=np.float32)
        return index

    def __len__(self) -> int:
        return len(self._ids)

    def close(self) -> None:
        """Nothing to keep: the snapshot is read from the store again at the next start."""

    def reload(self, store: Store) -> None:
        ids, matrix = store.chunk_vectors(self.dim)
        with self._lock:  # searches keep using the old snapshot until the swap
            self._ids, self._matrix = ids, matrix

    def refresh(self, store: Store) -> tuple[int, int]:
        """Bring the snapshot up to date reading only new vectors; returns (added, removed).

        Chunk rowids are never reused for other text (a changed chunk gets a
        new row), so a rowid present in both the snapshot and the store still
        has the same vector.
        """
        live = store.vector_rowids()
        with self._lock:
            ids, matrix = self._ids, self._matrix
        keep = np.isin(ids, live)
        new = np.setdiff1d(live, ids, assume_unique=True)
        new_ids, new_matrix = store.vectors_for_rowids(new.tolist(), self.dim)
        ids = np.concatenate([ids[keep], new_ids])
        matrix = np.concatenate([matrix[keep], new_matrix]) if len(new_ids) else matrix[keep]
        with self._lock:
            self._ids, self._matrix = ids, matrix
        return len(new_ids), int((~keep).sum())

    def search(
        self, query: np.ndarray, k: int, allowed: frozenset[int] | None = None
    ) -> list[tuple[int, float]]:
        """(chunk rowid, cosine similarity) best first. Vectors are unit length, so a dot product is the cosine."""
        with self._lock:
            ids, matrix = self._ids, self._matrix
        if len(ids) == 0 or k <= 0:
            return []
        sims = matrix @ np.asarray(query, dtype=np.float32)
        mask = _allowed_mask(ids, allowed)
        if mask is not None:
            sims = np.where(mask, sims, -np.inf)
        k = min(k, len(ids))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(int(ids[i]), float(sims[i])) for i in top if np.isfinite(sims[i])]

    def search_parts(
        self, query: np.ndarray, k: int, parts: Sequence[int], allowed: frozenset[int] | None = None
    ) -> list[tuple[int, tuple[float, ...]]]:
        """(chunk rowid, each part's cosine) for the best ``k`` rows of every part, unranked.

        ``parts`` are the lengths of the concatenated vectors, in order; they sum to the dimension.
        A row is a candidate when any part ranks it in its top ``k``: a model that alone finds a
        passage is never silenced here (the fusion decides how much each part counts).
        """
        if sum(parts) != self.dim:
            raise ValueError(f"vector parts {tuple(parts)} do not add up to the dimension {self.dim}")
        with self._lock:
            ids, matrix = self._ids, self._matrix
        if len(ids) == 0 or k <= 0:
            return []
        mask = _allowed_mask(ids, allowed)
        k = min(k, len(ids))
        cosines = part_cosines(matrix, np.asarray(query, dtype=np.float32), parts)
        chosen: set[int] = set()
        for sims in cosines:
            ranked = np.where(mask, sims, -np.inf) if mask is not None else sims
            top = np.argpartition(-ranked, k - 1)[:k]
            chosen.update(int(i) for i in top if np.isfinite(ranked[i]))
        return [(int(ids[i]), tuple(float(c[i]) for c in cosines)) for i in sorted(chosen)]


def part_cosines(matrix: np.ndarray, query: np.ndarray, parts: Sequence[int]) -> list[np.ndarray]:
    """Each model's cosine of every row with the query, for concatenated vectors of ``parts``.

    Each part was scaled by ``1/sqrt(n)`` in both the row and the query, so its dot product is
    multiplied by ``n`` to give that model's own cosine back.
    """
    scale = float(len(parts))
    cosines: list[np.ndarray] = []
    start = 0
    for width in parts:
        cosines.append((matrix[:, start : start + width] @ query[start : start + width]) * scale)
        start += width
    return cosines


def _allowed_mask(ids: np.ndarray, allowed: frozenset[int] | None) -> np.ndarray | None:
    """Which rows a filtered search may return (``None``: every row)."""
    if allowed is None:
        return None
    return np.isin(ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
