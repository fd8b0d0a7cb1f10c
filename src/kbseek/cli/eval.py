"""The eval harness: a golden set of queries against the configured knowledge base.

A golden file is YAML::

    queries:
      - id: para-rollback
        query: how do I undo a bad release
        kind: paraphrase            # optional; metrics are also reported per kind
        tags: [ops]                 # optional; and per tag
        also: [ロールバック手順]     # optional: phrasings an agent would add (search's `also`)
        expected:                   # empty list = nothing in the KB answers this
          - path: runbooks/rollback.md
            heading: Rollback       # optional: must appear in the hit's heading path

Metrics are computed per expected item, so a multi-answer query needs each of
its documents; a query with no expected items is scored on whether the search
said ``low_confidence``.
"""

from __future__ import annotations

import json
import math
import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kbseek import KnowledgeBase
from kbseek.documents import HEADING_SEPARATOR
from kbseek.errors import ConfigError, KbError
from kbseek.facade.catalog import document_path
from kbseek.facade.paths import PRIVATE_FILE_MODE
from kbseek.responses import SearchHit
from kbseek.text.plurals import counted

KS = (1, 5, 10)
MISS_K = 5
"""An expected item not in the top MISS_K is a miss; the report shows that many hits as "got"."""
LAST_RUN_FILENAME = "eval-last.json"


def _same_path(a: str, b: str) -> bool:
    """Paths compared as text a person would call equal: a file name typed in the golden file is
    NFC, while the file system may hand back NFD (macOS), and both must name the same note."""
    return unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)


@dataclass(frozen=True)
class Expected:
    path: str
    heading: str | None = None

    def matches(self, hit: SearchHit, chunk_text: str) -> bool:
        """Same document, and the heading is on the hit's heading path or heads a section inside the chunk.

        Small sections are merged into one chunk, so the section a query is about
        may sit inside a chunk whose heading path names its first section only.
        """
        if not _same_path(hit.path, self.path):
            return False
        if self.heading is None or self.heading in hit.heading_path:
            return True
        return any(
            line.lstrip("#").strip() == self.heading
            for line in chunk_text.splitlines()
            if line.startswith("#")
        )

    def label(self) -> str:
        """``path § heading``: a miss on the section must not read like a miss on the document."""
        return f"{self.path} § {self.heading}" if self.heading else self.path


@dataclass(frozen=True)
class GoldenQuery:
    id: str
    query: str
    expected: tuple[Expected, ...]
    kind: str | None = None
    tags: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    """Alternative phrasings an agent would send with the query (``search(also=...)``)."""


@dataclass
class QueryResult:
    query: GoldenQuery
    ranks: list[int | None]
    """1-based rank of each expected item's first matching hit (None = not in the top 10)."""
    low_confidence: bool
    top_paths: list[str] = field(default_factory=list)
    """Paths of the top MISS_K hits: the cut-off a miss is judged by, so "got" holds what was judged."""
    top_sections: list[str] = field(default_factory=list)
    """The same hits as ``path › heading path``, to see which section of a right document came back."""
    document_ranks: list[int | None] = field(default_factory=list)
    """Per expected item: rank of the first hit from its document, whichever section it is."""

    def missed(self) -> list[dict[str, Any]]:
        """Expected items outside the top MISS_K, each with where it (or its document) ranked and why."""
        out = []
        for e, rank, doc_rank in zip(self.query.expected, self.ranks, self.document_ranks, strict=True):
            if rank is not None and rank <= MISS_K:
                continue
            if rank is not None:
                why = f"ranked {rank}, below the top {MISS_K}"
            elif doc_rank is not None and e.heading:
                why = f"the document ranked {doc_rank}, but no hit in the top 10 is its section {e.heading!r}"
            else:
                why = "not in the top 10"
            out.append({"path": e.path, "heading": e.heading, "rank": rank, "document_rank": doc_rank,
                        "why": why})  # fmt: skip
        return out

    def recall(self, k: int) -> float:
        return sum(1 for r in self.ranks if r is not None and r <= k) / len(self.ranks)

    def mrr(self) -> float:
        found = [r for r in self.ranks if r is not None]
        return 1.0 / min(found) if found else 0.0

    def ndcg10(self) -> float:
        dcg = sum(1.0 / math.log2(r + 1) for r in self.ranks if r is not None and r <= 10)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(self.ranks), 10)))
        return dcg / ideal


def load_golden(path: Path) -> list[GoldenQuery]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"golden file {path} does not exist") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"golden file {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        raise ConfigError(f"golden file {path} must be a mapping with a 'queries' list")
    out: list[GoldenQuery] = []
    seen: set[str] = set()
    for i, q in enumerate(data["queries"]):
        where = f"{path}: query #{i + 1}"
        if not isinstance(q, dict) or not isinstance(q.get("query"), str) or not q["query"].strip():
            raise ConfigError(f"{where} needs a non-empty 'query' string")
        qid = str(q.get("id") or f"q{i + 1}")
        if qid in seen:
            raise ConfigError(f"{where}: duplicate id {qid!r}")
        seen.add(qid)
        expected_raw = q.get("expected", [])
        if not isinstance(expected_raw, list):
            raise ConfigError(f"{where} ({qid}): 'expected' must be a list (empty for unanswerable)")
        expected = []
        for e in expected_raw:
            if not isinstance(e, dict) or not isinstance(e.get("path"), str):
                raise ConfigError(f"{where} ({qid}): each expected item needs a 'path'")
            try:
                rel = document_path(e["path"])  # "./a.md", "/a.md", "a\\b.md": the same as search's paths
            except KbError as exc:
                raise ConfigError(f"{where} ({qid}): {exc}") from exc
            heading = e.get("heading")
            if heading is not None:
                heading = str(heading).lstrip("#").strip() or None  # "## Rollback" names "Rollback"
            expected.append(Expected(rel, heading))
        tags = q.get("tags") or []
        also = q.get("also") or []
        if not isinstance(also, list) or not all(isinstance(a, str) for a in also):
            raise ConfigError(f"{where} ({qid}): 'also' must be a list of strings")
        out.append(GoldenQuery(qid, q["query"], tuple(expected), q.get("kind"), tuple(str(t) for t in tags),
                               tuple(also)))  # fmt: skip
    return out


def run_eval(
    kb: KnowledgeBase, queries: Sequence[GoldenQuery], *, limit: int = 10, with_also: bool = False
) -> list[QueryResult]:
    """``with_also``: send each query's alternative phrasings too, as an agent using ``also`` would."""
    results = []
    for q in queries:
        r = kb.search(q.query, limit=limit, also=q.also if with_also else ())
        texts = {h.chunk_id: _chunk_text(kb, h.chunk_id) for h in r.hits}
        ranks: list[int | None] = []
        document_ranks: list[int | None] = []
        for e in q.expected:
            rank = next((i for i, h in enumerate(r.hits, 1) if e.matches(h, texts[h.chunk_id])), None)
            ranks.append(rank)
            document_ranks.append(
                next((i for i, h in enumerate(r.hits, 1) if _same_path(h.path, e.path)), None)
            )
        top = r.hits[:MISS_K]
        sections = [f"{h.path} › {HEADING_SEPARATOR.join(h.heading_path[1:]) or '(top)'}" for h in top]
        paths = [h.path for h in top]
        results.append(QueryResult(q, ranks, r.low_confidence, paths, sections, document_ranks))
    return results


def _chunk_text(kb: KnowledgeBase, chunk_id: str) -> str:
    """The hit's own chunk, without neighbours: a heading is credited only if this chunk holds it."""
    passages = kb.fetch([chunk_id], context=0).passages
    return passages[0].text if passages else ""


def _aggregate(results: Sequence[QueryResult]) -> dict[str, float]:
    answerable = [r for r in results if r.ranks]
    unanswerable = [r for r in results if not r.ranks]
    out: dict[str, float] = {"queries": float(len(results))}
    if answerable:
        for k in KS:
            out[f"recall@{k}"] = sum(r.recall(k) for r in answerable) / len(answerable)
        out["mrr"] = sum(r.mrr() for r in answerable) / len(answerable)
        out["ndcg@10"] = sum(r.ndcg10() for r in answerable) / len(answerable)
        out["false_low_confidence"] = sum(r.low_confidence for r in answerable) / len(answerable)
    if unanswerable:
        out["abstained"] = sum(r.low_confidence for r in unanswerable) / len(unanswerable)
    return out


def summarize(results: Sequence[QueryResult]) -> dict[str, Any]:
    """Overall metrics, then per kind and per tag; plus the misses, to see what to fix."""
    groups: dict[str, list[QueryResult]] = {}
    for r in results:
        if r.query.kind:
            groups.setdefault(f"kind:{r.query.kind}", []).append(r)
        for t in r.query.tags:
            groups.setdefault(f"tag:{t}", []).append(r)
    misses = [
        {"id": r.query.id, "query": r.query.query, "expected": [e.path for e in r.query.expected],
         "got": r.top_paths, "got_sections": r.top_sections, "missed": r.missed()}
        for r in results
        if r.ranks and r.missed()
    ]  # fmt: skip
    return {
        "overall": _aggregate(results),
        "groups": {name: _aggregate(rs) for name, rs in sorted(groups.items())},
        "misses": misses,
    }


def compare_with_last(summary: dict[str, Any], store_dir: Path, golden: Path) -> dict[str, float] | None:
    """Store this run beside the index and return the change of each overall metric since the previous one."""
    path = store_dir / LAST_RUN_FILENAME
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        previous = {}
    key = str(golden.resolve())
    before = previous.get(key)
    previous[key] = summary["overall"]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)  # private like the index
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(previous, indent=2))
    if not before:
        return None
    return {m: v - before[m] for m, v in summary["overall"].items() if m in before and m != "queries"}


def format_text(summary: dict[str, Any], delta: dict[str, float] | None) -> str:
    metrics = ["recall@1", "recall@5", "recall@10", "mrr", "ndcg@10", "abstained"]
    lines = [f"{'group':<28} {'n':>4} " + " ".join(f"{m:>9}" for m in metrics)]

    def row(name: str, agg: dict[str, float]) -> str:
        cells = " ".join(f"{agg[m]:>9.3f}" if m in agg else f"{'-':>9}" for m in metrics)
        return f"{name:<28} {int(agg['queries']):>4} {cells}"

    lines.append(row("overall", summary["overall"]))
    lines.extend(row(name, agg) for name, agg in summary["groups"].items())
    if delta:
        lines.append("change since the previous run: " + ", ".join(f"{m} {v:+.3f}" for m, v in delta.items()))
    if summary["misses"]:
        n = len(summary["misses"])
        lines.append(
            f"{counted(n, 'answerable query', 'answerable queries')} missed an expected document or section "
            f"in the top {MISS_K}:"
        )
        for m in summary["misses"]:
            lines.append(f"  {m['id']}: {m['query']!r}")
            for item in m["missed"]:
                where = f"{item['path']} § {item['heading']}" if item["heading"] else item["path"]
                lines.append(f"    missed {where}: {item['why']}")
            lines.append(f"    got: {'; '.join(m['got_sections']) or 'no hits'}")
    return "\n".join(lines)
