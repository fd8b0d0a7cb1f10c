"""The dense leg at scale: an approximate (HNSW) index of int8 vectors, kept on disk beside the index.

Exact search (``search.dense``) reads every float32 vector for every query: about 22 ms and 200 MB
at 100k chunks of 512 dimensions, 217 ms and 1.9 GiB at a million. Past
``[index].approximate_above`` vectors the semantic leg uses this index instead (docs/decisions/0017):
a usearch HNSW graph over int8 vectors, about 1 byte per dimension plus the graph, searched in about
a millisecond. What it keeps honest:

- **Scores on the exact scale.** The graph only proposes candidates (``OVERSAMPLE`` per wanted hit);
  their float32 vectors are read back from the store and scored exactly, so a hit's cosine is the
  one ``DenseIndex`` gives, and a better candidate the int8 distances placed too low still wins.
- **Never a row outside the filter.** A small ``allowed`` set (up to ``EXACT_FILTER_MAX`` rows) is
  scanned whole, from the int8 vectors in memory; a larger one oversamples the graph until enough
  allowed rows come back. Either way every returned rowid is in ``allowed``.
- **Never a row the store no longer has.** Candidates are re-read from the store, so a row deleted
  since the last refresh drops out of the answer before the refresh catches up.
- **Crash-safe persistence.** The graph is saved beside the SQLite file under a fresh name and
  published by replacing a small JSON file that names it and records the vectors' model, dimension
  and format. Loading accepts the files only if all of that matches the store, checks a sample of
  vectors against it, then reconciles by the same rowid diff as :meth:`ApproximateIndex.refresh`;
  anything else (a missing, stale, foreign or unreadable file) rebuilds from the store.

A vector made of several models' vectors (``embed.pair``) gets one graph per part, so
:meth:`ApproximateIndex.search_parts` finds each model's own nearest rows, as the exact index does.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import secrets
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kbseek.search.dense import DenseIndex, VectorIndex, part_cosines
from kbseek.store.base import Store


def _share_libstdcxx() -> None:
    """Put the system's ``libstdc++`` in the process's global symbol scope before usearch loads.

    usearch's Linux wheel links libstdc++ statically and exports its locale facet ids
    (``std::numpunct<char>::id`` and others) as GNU unique symbols, which bind process-wide to the
    first definition the dynamic linker meets. Loaded first, usearch's copies win, and a C++
    extension loaded later that uses iostreams (ONNX Runtime) reads facets by the wrong ids: ONNX
    Runtime 1.22 then refuses every exported BERT / XLM-R graph ("Type parameter (T) of Optype
    (Equal) bound to different types", "Type 'tensor(float)' of input parameter ... of operator
    (Gather) ... is invalid") and 1.23 crashes at import. numpy has usually loaded libstdc++
    already, but privately (RTLD_LOCAL); reopening it RTLD_GLOBAL lets usearch bind to the shared
    copy. Elsewhere (macOS, Windows, a libc without it) there is nothing to do.
    """
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError):
        ctypes.CDLL("libstdc++.so.6", mode=os.RTLD_GLOBAL)


_share_libstdcxx()
from usearch.index import Index  # noqa: E402  (only after _share_libstdcxx)

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
"""Bumped whenever the saved files change meaning; a file of another version is rebuilt, never read."""
META_FILENAME = "vectors.json"
"""The file that publishes a saved graph: which files hold it and what made its vectors."""
GRAPH_PREFIX = "vectors-"
GRAPH_SUFFIX = ".usearch"

OVERSAMPLE = 2
"""Graph candidates read per wanted hit and rescored exactly from the store (docs/decisions/0017)."""
EXACT_FILTER_MAX = 4_000
"""A filter allowing at most this many rows is answered by scanning those rows' int8 vectors (about
3 µs a row to gather from usearch); above it the graph is oversampled, which costs less at a million
rows from about this size on (``benchmarks/dense_scale.py``, filtered)."""
PAGE = 20_000
"""Vectors read from the store at a time while building or catching up (about 40 MB at 512 dims)."""
MUTATION_BATCH = 4_096
"""Rows added or removed per hold of the search lock, so searches go on during a large refresh."""
SAVE_AFTER = 0.05
"""A refresh saves the graph again once this share of its rows changed since the last save (at least
1,000 rows); smaller changes are saved when the index is closed, and a load catches up either way."""
SAMPLE_CHECKED = 32
"""Vectors compared with the store when a saved graph is loaded."""


@dataclass(frozen=True)
class HnswParams:
    """The graph's shape; chosen by ``benchmarks/dense_scale.py`` (docs/decisions/0017)."""

    connectivity: int = 32
    """Neighbours per node: more is better recall for more memory and a slower build."""
    expansion_add: int = 128
    """Breadth of the search that places a new node: more is a better graph and a slower build."""
    expansion_search: int = 512
    """Breadth of a query's search (never below the number of candidates asked for)."""


Int8Matrix = npt.NDArray[np.int8]


def quantize(matrix: npt.NDArray[np.float32]) -> Int8Matrix:
    """Rows as int8, each scaled so its largest component is ±127.

    Cosine ignores a row's length, so every row may use the whole int8 range: on unit vectors of 512
    dimensions (components about ±0.04) a fixed ``× 127`` leaves three to four bits per component,
    this about seven. The same rows always give the same bytes, which the load check relies on.
    """
    peak = np.abs(matrix).max(axis=1, keepdims=True) if matrix.size else np.ones((len(matrix), 1))
    scale = np.divide(127.0, peak, out=np.zeros_like(peak, dtype=np.float32), where=peak > 0)
    return np.rint(matrix * scale).astype(np.int8)


BuildProgress = Callable[[int, int], None]
"""Hears (vectors in the graph so far, vectors to put in it) while a graph is built."""


def wants_approximate(vectors: int, approximate_above: int) -> bool:
    """Whether ``vectors`` chunk vectors call for the approximate index (``approximate_above == 0``: always)."""
    return approximate_above == 0 or vectors > approximate_above


def open_vector_index(
    store: Store,
    dim: int,
    *,
    approximate_above: int,
    folder: Path | None,
    parts: Sequence[int] = (),
    progress: BuildProgress | None = None,
) -> VectorIndex:
    """The dense index for the store's vectors now: exact up to ``approximate_above``, approximate above.

    ``folder`` is where an approximate index is saved (``None``: in memory only, as a read-only
    knowledge base has it); ``parts`` the lengths of concatenated models' vectors (``embed.pair``);
    ``progress`` hears how far a graph being built is.
    """
    if wants_approximate(store.embedded_count(), approximate_above):
        return ApproximateIndex.open(dim, store, folder=folder, parts=parts, progress=progress)
    if folder is not None:
        discard_saved(folder)  # a graph left from when the index was larger would only grow stale
    exact = DenseIndex(dim)
    exact.reload(store)
    return exact


def suits(index: VectorIndex, approximate_above: int, size: int | None = None) -> bool:
    """Whether the index's kind suits its size after a refresh (or ``size`` vectors, if given).

    An approximate index goes back to exact only below half the threshold, so a knowledge base
    hovering around it is not switched (and its graph rebuilt) at every pass.
    """
    n = len(index) if size is None else size
    if isinstance(index, ApproximateIndex):
        return approximate_above == 0 or n > approximate_above // 2
    return not wants_approximate(n, approximate_above)


def discard_saved(folder: Path) -> None:
    """Remove a saved graph and the JSON file that publishes it (nothing else in the folder)."""
    meta = folder / META_FILENAME
    names = _listed_files(_read_json(meta))
    meta.unlink(missing_ok=True)
    for name in names:
        (folder / name).unlink(missing_ok=True)


class ApproximateIndex:
    """Every chunk vector in an HNSW graph (one per vector part); the same interface as ``DenseIndex``.

    ``folder``: where the graph is saved (the index folder); ``None`` keeps it in memory only.
    ``parts``: the lengths of the concatenated models' vectors (``embed.pair``), in order; empty or a
    single part for one model. ``rescore=False`` returns the int8 distances' cosines and skips the
    store read (the benchmark's comparison; a search never wants it).
    """

    def __init__(
        self,
        dim: int,
        store: Store,
        *,
        folder: Path | None = None,
        parts: Sequence[int] = (),
        params: HnswParams | None = None,
        rescore: bool = True,
    ) -> None:
        widths = tuple(parts) if len(parts) > 1 else (dim,)
        if sum(widths) != dim:
            raise ValueError(f"vector parts {widths} do not add up to the dimension {dim}")
        self.dim = dim
        self.folder = folder
        self.params = params or HnswParams()
        self.rescore = rescore or len(widths) > 1  # a part's cosine is only known exactly from the store
        self._store = store
        self._slices = [(sum(widths[:i]), w) for i, w in enumerate(widths)]
        self._graphs = [self._new_graph(w) for w in widths]
        self._ids = np.empty(0, dtype=np.int64)
        """The rowids in the graphs, ascending (the diff a refresh makes, the filter's membership test)."""
        self._lock = threading.Lock()
        self._scanned: dict[int, tuple[frozenset[int], np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        """Per graph, the last small filter's gathered rows (``_scan``)."""
        """Held by every search and by each batch of a mutation: usearch graphs are not read while written."""
        self._writing = threading.Lock()
        """One reload, refresh or save at a time."""
        self._unsaved = 0
        self.loaded_from_disk = False
        """Whether the last :meth:`open` restored a saved graph (rather than building one)."""

    # -- building ------------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        dim: int,
        store: Store,
        *,
        folder: Path | None = None,
        parts: Sequence[int] = (),
        params: HnswParams | None = None,
        progress: BuildProgress | None = None,
    ) -> ApproximateIndex:
        """The index of ``store``'s vectors: the saved graph brought up to date, or a new one built.

        Nothing is saved until the graph is whole, so a process stopped midway (a crash, a kill)
        leaves no graph, or the last whole one, and the next start builds or catches up from the
        store: the vectors are there, only the graph is missing.
        """
        index = cls(dim, store, folder=folder, parts=parts, params=params)
        with index._writing:
            restored = index._restore(store)
        if restored:
            index.loaded_from_disk = True
            index.refresh(store)
        else:
            index.reload(store, progress)
        return index

    def _new_graph(self, width: int) -> Index:
        p = self.params
        return Index(
            ndim=width, metric="cos", dtype="i8", connectivity=p.connectivity,
            expansion_add=p.expansion_add, expansion_search=p.expansion_search,
        )  # fmt: skip

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def memory_bytes(self) -> int:
        """What the graphs hold in memory (vectors and links), as usearch counts it."""
        return sum(int(g.memory_usage) for g in self._graphs)

    def reload(self, store: Store, progress: BuildProgress | None = None) -> None:
        """Build new graphs from the store, a page at a time, and swap them in; then save them.

        Searches use the old graphs until the swap. Used when every vector was made again under the
        same rowids (a refresh, which trusts that a kept rowid keeps its vector, would miss that).
        ``progress`` hears (vectors added, vectors in the store) after each page.
        """
        with self._writing:
            self._store = store
            graphs = [self._new_graph(w) for _, w in self._slices]
            seen: list[np.ndarray] = []
            total, done = store.embedded_count(), 0
            if progress is not None:
                progress(0, total)
            for ids, matrix in store.vector_pages(self.dim, page=PAGE):
                self._add(graphs, ids, matrix, locked=False)
                seen.append(ids)
                done += len(ids)
                if progress is not None:
                    progress(done, max(total, done))
            ids = np.unique(np.concatenate(seen)) if seen else np.empty(0, dtype=np.int64)
            with self._lock:
                self._graphs, self._ids = graphs, ids
            self._catch_up(store)  # rows written while the pages were read
            self._save()

    def refresh(self, store: Store) -> tuple[int, int]:
        """Add the store's new vector rowids and remove its deleted ones; returns (added, removed).

        Never rebuilds: a rowid present in both the graph and the store still has the same vector
        (chunk rowids are never reused, ``ChunkRow.rowid``). Saves once enough has changed.
        """
        with self._writing:
            self._store = store
            added, removed = self._catch_up(store)
            if self._unsaved >= max(1_000, SAVE_AFTER * len(self._ids)):
                self._save()
            return added, removed

    def _catch_up(self, store: Store) -> tuple[int, int]:
        live = store.vector_rowids()
        ids = self._ids
        gone = np.setdiff1d(ids, live, assume_unique=True)
        new = np.setdiff1d(live, ids, assume_unique=True)
        for start in range(0, len(gone), MUTATION_BATCH):
            batch = gone[start : start + MUTATION_BATCH]
            with self._lock:  # the rowids and the graphs change together: a filter scan trusts both
                for graph in self._graphs:
                    graph.remove(batch.astype(np.uint64))
                self._ids = np.setdiff1d(self._ids, batch, assume_unique=True)
        added = 0
        for start in range(0, len(new), PAGE):
            got, matrix = store.vectors_for_rowids(new[start : start + PAGE].tolist(), self.dim)
            self._add(self._graphs, got, matrix, locked=True)  # rowids follow each batch's graphs
            added += len(got)
        self._unsaved += added + len(gone)
        return added, len(gone)

    def _add(self, graphs: list[Index], ids: np.ndarray, matrix: np.ndarray, *, locked: bool) -> None:
        """Add rows to graphs, in batches; ``locked``: the graphs are live, so searches wait per batch."""
        for start in range(0, len(ids), MUTATION_BATCH if locked else len(ids) or 1):
            stop = start + (MUTATION_BATCH if locked else len(ids))
            keys = ids[start:stop].astype(np.uint64)
            quantized = [quantize(matrix[start:stop, s : s + w]) for s, w in self._slices]
            with self._lock if locked else contextlib.nullcontext():
                for graph, vectors in zip(graphs, quantized, strict=True):
                    graph.add(keys, vectors)
                if locked:
                    self._ids = np.union1d(self._ids, ids[start:stop])

    def close(self) -> None:
        """Save changes a refresh left unsaved, so the next start loads a graph that is nearly current."""
        with self._writing:
            if self._unsaved:
                self._save()

    # -- searching -----------------------------------------------------------------------------------

    def search(
        self, query: np.ndarray, k: int, allowed: frozenset[int] | None = None
    ) -> list[tuple[int, float]]:
        """(chunk rowid, cosine similarity) best first, on the same scale as exact search."""
        if k <= 0 or len(self._ids) == 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        want = k * OVERSAMPLE if self.rescore else k
        found = [self._graph_top(i, q, want, allowed) for i in range(len(self._graphs))]
        if not self.rescore:
            keys, sims = found[0]
            return [(int(r), float(s)) for r, s in zip(keys[:k], sims[:k], strict=True)]
        candidates = np.unique(np.concatenate([keys for keys, _ in found]))
        ids, matrix = self._store.vectors_for_rowids(candidates.tolist(), self.dim)
        if len(ids) == 0:
            return []
        sims = matrix @ q
        top = np.argsort(-sims, kind="stable")[:k]
        return [(int(ids[i]), float(sims[i])) for i in top]

    def search_parts(
        self, query: np.ndarray, k: int, parts: Sequence[int], allowed: frozenset[int] | None = None
    ) -> list[tuple[int, tuple[float, ...]]]:
        """(chunk rowid, each part's cosine) for the best ``k`` rows of every part, unranked.

        As ``DenseIndex.search_parts``: a row is a candidate when any part ranks it in its top ``k``.
        Each part's graph proposes its candidates; the cosines are read exactly from the store.
        """
        if sum(parts) != self.dim:
            raise ValueError(f"vector parts {tuple(parts)} do not add up to the dimension {self.dim}")
        widths = tuple(w for _, w in self._slices)
        if len(parts) > 1 and tuple(parts) != widths:
            raise ValueError(f"this index was built for vector parts {widths}, not {tuple(parts)}")
        if k <= 0 or len(self._ids) == 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        want = k * OVERSAMPLE
        found = [self._graph_top(i, q, want, allowed)[0] for i in range(len(self._graphs))]
        ids, matrix = self._store.vectors_for_rowids(np.unique(np.concatenate(found)).tolist(), self.dim)
        if len(ids) == 0:
            return []
        cosines = part_cosines(matrix, q, parts)
        chosen: set[int] = set()
        for sims in cosines:
            chosen.update(int(i) for i in np.argsort(-sims, kind="stable")[:k])
        return [(int(ids[i]), tuple(float(c[i]) for c in cosines)) for i in sorted(chosen)]

    def _graph_top(
        self, graph: int, query: np.ndarray, count: int, allowed: frozenset[int] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, int8 cosines) of about the best ``count`` rows of one graph, best first, all allowed."""
        start, width = self._slices[graph]
        q = quantize(query[None, start : start + width])[0]
        if allowed is not None and len(allowed) <= EXACT_FILTER_MAX:
            return self._scan(graph, q, count, allowed)
        with self._lock:
            index, total = self._graphs[graph], len(self._ids)
            # A filter passing a share p of the rows keeps about p of what the graph returns. Half the
            # rows wanted are enough (still ``OVERSAMPLE``'s worth of hits, the rest are only rescored
            # candidates), so the graph is asked for half as much again as 1/p times that half: one
            # search nearly always keeps enough, and the graph's cost grows with what it is asked for
            # (``benchmarks/filtered.py``). Too few kept: again, twice as wide.
            enough = max(count // 2, 1)
            share = -(-3 * total // max(2 * len(allowed), 1)) if allowed is not None else 1
            asked = min(total, enough * max(8, share) if allowed is not None else count)
            while True:
                keys, sims = self._graph_search(index, q, asked)
                if allowed is None:
                    return keys, sims
                keep = np.fromiter((int(r) in allowed for r in keys), dtype=bool, count=len(keys))
                if keep.sum() >= enough or asked >= total:
                    return keys[keep][:count], sims[keep][:count]
                asked = min(total, asked * 2)

    def _graph_search(self, index: Index, q: Int8Matrix, count: int) -> tuple[np.ndarray, np.ndarray]:
        _set_expansion_search(index, max(self.params.expansion_search, count))
        matches: Any = index.search(q, count)
        keys = np.asarray(matches.keys, dtype=np.int64)
        sims = 1.0 - np.asarray(matches.distances, dtype=np.float64)
        return keys, sims

    def _scan(
        self, graph: int, q: Int8Matrix, count: int, allowed: frozenset[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Score every allowed row from its int8 vector (a small filter: exact over the quantised rows)."""
        with self._lock:
            cached = self._scanned.get(graph)
            if cached is not None and cached[0] is allowed and cached[1] is self._ids:
                present, vectors, norms = cached[2], cached[3], cached[4]
            else:
                # Gathering the rows is most of a scan's cost: kept while both inputs are the same
                # objects (``allowed`` is frozen; ``_ids`` is replaced, never changed, as rows change).
                wanted = np.fromiter(allowed, dtype=np.int64, count=len(allowed))
                ids = self._ids
                at = np.searchsorted(ids, wanted)
                present = wanted[(at < len(ids)) & (ids[np.minimum(at, len(ids) - 1)] == wanted)]
                present, rows = _vectors(self._graphs[graph], present)
                vectors = rows.astype(np.float32)
                norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
                self._scanned[graph] = (allowed, ids, present, vectors, norms)
        if len(present) == 0:
            return present, np.empty(0)
        sims = (vectors @ q.astype(np.float32)) / np.maximum(
            norms * max(float(np.linalg.norm(q)), 1e-12), 1e-12
        )
        top = np.argsort(-sims, kind="stable")[:count]
        return present[top], sims[top]

    # -- persistence -----------------------------------------------------------------------------------

    def _meta(self, store: Store, files: list[str]) -> dict[str, Any]:
        embedding = store.meta().embedding
        return {
            "format": FORMAT_VERSION,
            "model": embedding.model if embedding else None,
            "scheme": embedding.scheme if embedding else None,
            "dim": self.dim,
            "parts": [w for _, w in self._slices],
            "dtype": "i8",
            "metric": "cos",
            "params": asdict(self.params),
            "rows": len(self._ids),
            "files": files,
        }

    def _save(self) -> None:
        """Write the graphs under fresh names, then publish them by replacing the JSON file (0600)."""
        folder = self.folder
        if folder is None or not folder.is_dir():
            return
        old = _read_json(folder / META_FILENAME)
        token = secrets.token_hex(6)
        files = [f"{GRAPH_PREFIX}{token}.{i}{GRAPH_SUFFIX}" for i in range(len(self._graphs))]
        try:
            with self._lock:  # a graph is not written to while it is saved
                for graph, name in zip(self._graphs, files, strict=True):
                    with _temporary(folder) as tmp:
                        graph.save(str(tmp))
                        os.replace(tmp, folder / name)
                meta = self._meta(self._store, files)
            with _temporary(folder) as tmp:
                tmp.write_text(json.dumps(meta, indent=1), encoding="utf-8")
                os.replace(tmp, folder / META_FILENAME)
        except OSError as exc:
            log.warning("the approximate vector index could not be saved in %s: %s", folder, exc)
            for name in files:
                (folder / name).unlink(missing_ok=True)
            return
        self._unsaved = 0
        for name in _listed_files(old):
            if name not in files:
                (folder / name).unlink(missing_ok=True)

    def _restore(self, store: Store) -> bool:
        """Load the saved graphs if they are of this store's vectors; ``False`` means build instead."""
        folder = self.folder
        if folder is None:
            return False
        meta = _read_json(folder / META_FILENAME)
        if meta is None:
            return False
        fresh = self._meta(store, meta.get("files", []))
        same = ("format", "model", "scheme", "dim", "parts", "dtype", "metric")
        if fresh["model"] is None or any(meta.get(key) != fresh[key] for key in same):
            log.info("the saved approximate vector index does not match the index's vectors; rebuilding")
            return False
        files = _listed_files(meta)
        if len(files) != len(self._slices):
            return False
        graphs: list[Index] = []
        try:
            for name, (_, width) in zip(files, self._slices, strict=True):
                path = str(folder / name)
                header = Index.metadata(path)
                if not header or header.get("dimensions") != width or str(header.get("kind_scalar")) != _I8:
                    return False
                graph = self._new_graph(width)  # loading keeps this graph's expansion settings
                graph.load(path)
                graphs.append(graph)
        except (OSError, ValueError, RuntimeError) as exc:
            log.warning("the saved approximate vector index is unreadable (%s); rebuilding", exc)
            return False
        ids = np.unique(np.asarray(graphs[0].keys, dtype=np.int64))
        if any(len(g) != len(ids) for g in graphs) or not _sample_matches(graphs, ids, store, self):
            log.warning("the saved approximate vector index disagrees with the index; rebuilding")
            return False
        with self._lock:
            self._graphs, self._ids = graphs, ids
        self._unsaved = 0
        return True


def _sample_matches(graphs: list[Index], ids: np.ndarray, store: Store, index: ApproximateIndex) -> bool:
    """Whether a sample of saved vectors equals the store's vectors quantised (a stale file does not)."""
    if len(ids) == 0:
        return True
    rng = np.random.default_rng()
    sample = rng.choice(ids, size=min(SAMPLE_CHECKED, len(ids)), replace=False)
    got, matrix = store.vectors_for_rowids(sorted(int(r) for r in sample), index.dim)
    if len(got) == 0:
        return True  # every sampled row is gone from the store: the reconcile removes them
    for graph, (start, width) in zip(graphs, index._slices, strict=True):
        found, saved = _vectors(graph, got)
        if len(found) != len(got) or not np.array_equal(saved, quantize(matrix[:, start : start + width])):
            return False
    return True


_I8 = str(Index(ndim=1, metric="cos", dtype="i8").dtype)
"""How usearch names the int8 scalar kind in a saved file's header."""


def _vectors(graph: Index, keys: np.ndarray) -> tuple[np.ndarray, Int8Matrix]:
    """(the keys the graph holds, their int8 rows), in the order of ``keys``."""
    rows = graph.get(keys.astype(np.uint64)) if len(keys) else ()
    found = [i for i, r in enumerate(rows if isinstance(rows, tuple) else ()) if r is not None]
    if not found:
        return keys[:0], np.empty((0, graph.ndim), dtype=np.int8)
    assert isinstance(rows, tuple)
    matrix = np.stack([np.asarray(rows[i], dtype=np.int8).reshape(-1) for i in found])
    return keys[found], matrix


def _set_expansion_search(graph: Index, expansion: int) -> None:
    # usearch's setter carries no annotations, so mypy takes the property for read-only.
    graph.expansion_search = expansion  # type: ignore[misc]


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _listed_files(meta: dict[str, Any] | None) -> list[str]:
    """The graph files a JSON file names, only ever bare names of ours (never a path elsewhere)."""
    files = meta.get("files") if meta else None
    if not isinstance(files, list):
        return []
    return [
        f for f in files
        if isinstance(f, str) and f.startswith(GRAPH_PREFIX) and f.endswith(GRAPH_SUFFIX) and "/" not in f
        and "\\" not in f
    ]  # fmt: skip


@contextlib.contextmanager
def _temporary(folder: Path) -> Iterator[Path]:
    """A new empty file in ``folder`` readable by its owner only (0600); removed unless replaced away."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=".vectors-", suffix=".tmp")
    os.close(fd)
    path = Path(name)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
