"""The learned ranking: a model trained on the development collections reorders a search's best documents.

The fused ranking's constants were each chosen by hand and measured alone (decisions 0011, 0024,
0025, 0027, 0028); a rule that helped one collection often cost another. The learned stage weighs
every signal of ``search.features`` at once, as ``scripts/train_ranker.py`` fitted them on the
development collections' tune halves (docs/decisions/0044). It runs after the fusion and before a
reranker, and it ranks documents: those of the fused ranking's first :attr:`LearnedRanker.depth`
candidates, each read through ``search.features``; the rest stay below them, so what the legs did
not find it cannot find either.

The model is a few hundred small regression trees (LightGBM's lambdarank, trained offline), kept in
``ranker.json`` beside this module as flat arrays: evaluating them is a few NumPy lookups, with no
run-time dependency, and each feature's part of a score is exact, which is what ``explain`` shows.
The score a hit carries is the logistic of the trees' sum: between 0 and 1, so
``search.diversity``'s ratio between documents keeps its meaning.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kbseek.search import features
from kbseek.search.fusion import Fused
from kbseek.store.records import ChunkRow

SHOWN_CONTRIBUTIONS = 3
"""How many features ``explain`` names per hit: the largest parts either way."""


class Ranking(Protocol):
    """A stage that reorders a fused ranking (the pipeline's seam; the training script records through it)."""

    def order(
        self,
        ranked: Sequence[Fused],
        rows: Mapping[int, ChunkRow],
        view: features.QueryView,
        japanese: Mapping[int, bool],
    ) -> list[Fused]: ...


class RankerFileError(ValueError):
    """A model file that is not one this version can read: say which and why, never misrank quietly."""


@dataclass(frozen=True, eq=False)
class LearnedRanker:
    """Boosted regression trees over :data:`search.features.FEATURES`, held as flat arrays.

    Every tree's nodes are numbered together; a leaf points at itself, so walking all trees for all
    documents at once is a few array lookups per level, whatever the number of trees.
    """

    names: tuple[str, ...]
    feature: np.ndarray
    """Per node, the feature it splits on (unused at a leaf)."""
    threshold: np.ndarray
    """Per node, go left when the feature is at most this."""
    left: np.ndarray
    right: np.ndarray
    """Per node, its children's numbers; a leaf's are its own."""
    value: np.ndarray
    """Per node, the tree's output there: a leaf's value, or LightGBM's value for the node."""
    roots: np.ndarray
    depth: int
    """How many of the fused ranking's first candidates it reads (their documents are reordered)."""
    levels: int
    """The deepest tree's depth: how many steps reach every leaf."""
    source: str = ""
    """Where the model was read from, for messages."""

    @classmethod
    def from_file(cls, path: Path | str) -> LearnedRanker:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RankerFileError(f"cannot read the ranking model {path}: {exc}") from exc
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "") -> LearnedRanker:
        """Read a model written by ``scripts/train_ranker.py`` (LightGBM's own dump, flattened there)."""
        where = source or "ranking model"
        if data.get("kind") != "trees":
            raise RankerFileError(f"{where}: kind {data.get('kind')!r}, expected 'trees'")
        names = tuple(data.get("features", ()))
        if names != features.FEATURES:
            missing = [n for n in features.FEATURES if n not in names]
            unknown = [n for n in names if n not in features.FEATURES]
            raise RankerFileError(
                f"{where} was trained on other features (missing {missing}, unknown {unknown}, or "
                "another order): train it again with scripts/train_ranker.py"
            )
        try:
            nodes = {k: np.asarray(data["nodes"][k], dtype=np.float64) for k in _NODE_ARRAYS}
            roots = np.asarray(data["roots"], dtype=np.int64)
            depth, levels = int(data["depth"]), int(data["levels"])
        except (KeyError, TypeError, ValueError) as exc:
            raise RankerFileError(f"{where}: {exc!r} is missing or malformed") from exc
        size = len(nodes["value"])
        links = np.concatenate([nodes["left"], nodes["right"], roots.astype(np.float64)])
        if (
            any(a.shape != (size,) for a in nodes.values())
            or not all(np.isfinite(a).all() for a in nodes.values())
            or (links.size and (links.min() < 0 or links.max() >= size))
            or (size and not 0 <= nodes["feature"].min() <= nodes["feature"].max() < len(names))
        ):
            raise RankerFileError(f"{where}: the node arrays disagree in length or point outside the model")
        return cls(
            names, nodes["feature"].astype(np.int64), nodes["threshold"], nodes["left"].astype(np.int64),
            nodes["right"].astype(np.int64), nodes["value"], roots, depth, levels, source,
        )  # fmt: skip

    def walk(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``x``: the model's sum, and each feature's part of it.

        A feature's part is how much the trees' output changed at the splits on it along the row's
        paths (the path attribution of decision trees): the parts and the roots' values add up to
        the sum exactly, so ``explain`` shows where a score came from, not an approximation of it.
        """
        rows = np.arange(len(x))[:, None]
        position = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        parts = np.zeros(x.shape, dtype=np.float64)
        where = np.broadcast_to(rows, position.shape)
        for _ in range(self.levels):
            feature = self.feature[position]
            left = x[rows, feature] <= self.threshold[position]
            nxt = np.where(left, self.left[position], self.right[position])
            np.add.at(parts, (where, feature), self.value[nxt] - self.value[position])
            position = nxt
        return self.value[position].sum(axis=1), parts

    def order(
        self,
        ranked: Sequence[Fused],
        rows: Mapping[int, ChunkRow],
        view: features.QueryView,
        japanese: Mapping[int, bool],
    ) -> list[Fused]:
        """``ranked`` with the documents of its first :attr:`depth` candidates in the model's order.

        Each chunk of such a document scores the document's score (the logistic of the model's sum)
        times its fused score over the document's best, so a document's chunks keep their fused
        order; the other documents' chunks follow, in their fused order, under every such document.
        """
        live = [f for f in ranked if f.rowid in rows]
        head = live[: self.depth]
        if not head:
            return list(ranked)
        documents, x = features.matrix(head, rows, view, japanese)
        logits, parts = self.walk(x)
        scored = dict(zip(documents, (1.0 / (1.0 + np.exp(-logits))).tolist(), strict=True))
        largest = np.argsort(-np.abs(parts), axis=1)[:, :SHOWN_CONTRIBUTIONS]
        why = {
            doc: tuple(
                (self.names[j], round(float(parts[i, j]), 4)) for j in largest[i] if abs(parts[i, j]) > 1e-9
            )
            for i, doc in enumerate(documents)
        }
        best: dict[int, float] = {}
        for f in head:
            best.setdefault(rows[f.rowid].document_id, f.score)
        floor, top = min(scored.values()), max(head[0].score, 1e-12)
        out = []
        for f in live:  # new entries: the ones given are the caller's, as a function's arguments are
            doc = rows[f.rowid].document_id
            if doc in scored:
                share = min(f.score / best[doc], 1.0) if best[doc] > 0 else 1.0
                out.append(replace(f, score=scored[doc] * share, learned=why[doc]))
            else:
                out.append(replace(f, score=floor * min(f.score / top, 1.0) * 0.5))
        out.sort(key=lambda f: (-f.score, f.rowid))
        return out


_NODE_ARRAYS = ("feature", "threshold", "left", "right", "value")


@functools.cache
def shipped() -> LearnedRanker:
    """The model inside the package (``ranker.json``), read once."""
    ref = resources.files("kbseek.search") / "ranker.json"
    return LearnedRanker.from_dict(
        json.loads(ref.read_text(encoding="utf-8")), source="kbseek/search/ranker.json"
    )
