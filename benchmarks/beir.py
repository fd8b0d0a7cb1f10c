"""Shared pieces of the retrieval benchmarks: BEIR collections written out as Markdown, and the metrics.

The collections are read from the ``datasets`` folder beside the checkout (or
``KBSEEK_DATASETS``); they are measurement data and never part of the package.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"


def datasets_dir() -> Path:
    env = os.environ.get("KBSEEK_DATASETS")
    if env:
        return Path(env)
    return HERE.parent.parent / "shared" / "datasets"


@dataclass(frozen=True)
class Collection:
    name: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load(name: str, split: str) -> Collection:
    base = datasets_dir() / name
    if not base.is_dir():
        raise SystemExit(f"dataset {name!r} not found under {datasets_dir()}; set KBSEEK_DATASETS")
    corpus: dict[str, tuple[str, str]] = {}
    with (base / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            corpus[str(d["_id"])] = (d.get("title") or "", d.get("text") or "")
    qrels: dict[str, dict[str, int]] = {}
    with (base / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    queries: dict[str, str] = {}
    with (base / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if str(q["_id"]) in qrels:
                queries[str(q["_id"])] = q["text"]
    return Collection(name, corpus, queries, qrels)


def write_markdown(collection: Collection) -> Path:
    """One Markdown file per corpus document (``<id>.md``, title as H1); reused when already written."""
    root = WORK / collection.name / "kb"
    marker = root / ".complete"
    if marker.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for did, (title, text) in collection.corpus.items():
        safe = did.replace("/", "_")
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        (root / f"{safe}.md").write_text(body, encoding="utf-8")
    marker.write_text("", encoding="utf-8")
    return root


def doc_id(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".md")


def ndcg_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def mrr_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    for i, d in enumerate(ranked[:k]):
        if d in relevant:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))
    return ordered[idx]


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0
