"""Does a search over two collections rank like one index holding both? Measured on the dev sets.

    python benchmarks/multi_kb.py                          # react-mixed and tldr-mixed, both halves
    python benchmarks/multi_kb.py --only react-mixed --json

Each development collection (``benchmarks/devset.py``) is split in two by its top-level folders
(sorted, alternating: react's ``learn/`` and ``reference/``; tldr's platforms), each half copied into
a root of its own under ``benchmarks/.work/multi_kb/`` so its paths stay those the questions
name. The same questions are then asked of one index holding both halves and of a
:class:`~kbseek.library.Library` over the two, merging by fused score (decision 0037), and, for
comparison, merging by rank (reciprocal rank, k=60) and by a score normalised within each
collection (each collection's best hit scored 1). Reported per variant: single-answer R@1 and MRR,
R@5 (document level), on every question of the collection.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from devset import Scored as DevScored
from devset import _copy_tree, assemble, metrics, questions, split_of
from kbseek import KnowledgeBase
from kbseek.cli.eval import run_eval
from kbseek.config import Settings
from kbseek.library import Library, merge_searches
from kbseek.responses import SearchResponse

SPLIT = Path(__file__).resolve().parent / ".work" / "multi_kb"


def split(name: str) -> dict[str, Path]:
    """The two halves' roots, built once: top-level folders alternate between ``a`` and ``b``."""
    source = assemble(name)
    folders = sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))
    roots = {"a": SPLIT / name / "a", "b": SPLIT / name / "b"}
    if not (SPLIT / name / ".assembled").exists():
        for i, folder in enumerate(folders):
            _copy_tree(folder, roots["ab"[i % 2]] / folder.name)
        (SPLIT / name / ".assembled").write_text("", encoding="utf-8")
    return roots


def _rrf(answers: Mapping[str, SearchResponse], limit: int) -> SearchResponse:
    ranked = {
        n: [h.model_copy(update={"score": 1.0 / (60 + i)}) for i, h in enumerate(r.hits, 1)]
        for n, r in answers.items()
    }
    return merge_searches({n: r.model_copy(update={"hits": ranked[n]}) for n, r in answers.items()}, limit)


def _per_collection(answers: Mapping[str, SearchResponse], limit: int) -> SearchResponse:
    def scaled(r: SearchResponse) -> SearchResponse:
        best = max((h.score for h in r.hits), default=1.0) or 1.0
        return r.model_copy(update={"hits": [h.model_copy(update={"score": h.score / best}) for h in r.hits]})

    return merge_searches({n: scaled(r) for n, r in answers.items()}, limit)


class _Merged:
    """A library whose merge is swapped, so every rule is scored by the same ``run_eval``."""

    def __init__(
        self, library: Library, merge: Callable[[Mapping[str, SearchResponse], int], SearchResponse]
    ):
        self.library, self.merge = library, merge

    def search(self, query: str, *, limit: int, also: Sequence[str] = ()) -> SearchResponse:
        answers = {n: kb.search(query, limit=limit, also=also) for n, kb in self.library}
        return self.merge(answers, limit)

    def fetch(self, chunk_ids: Sequence[str], *, context: int | None = None) -> Any:
        return self.library.fetch(chunk_ids, context=context)


DENSE_ONLY = {"dense_weight": 1.0, "dense_weight_matched": 1.0, "bridge_weight": 0.0}
"""``--dense-only``: the dense leg alone, whose cosine is on one scale across indexes by construction,
to show where a gap between the merged ranking and one index comes from."""


def measure(name: str, overrides: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    queries, _ = questions(name)
    halves = split_of(name, queries)
    roots = split(name)
    fixed: dict[str, Any] = {"freshness_interval_s": 1e9, **(overrides or {})}
    one = KnowledgeBase(settings=Settings(root=assemble(name), **fixed))
    one.index()
    shared = one.retrieval().embedder
    kbs = {}
    for half, root in roots.items():
        kbs[half] = KnowledgeBase(
            settings=Settings(root=root, index_dir=SPLIT / name / f"{half}.index", **fixed), embedder=shared
        )
        kbs[half].index()
    library = Library(kbs)
    variants: dict[str, Any] = {
        "one index": one,
        "two, merged by fused score": library,
        "two, merged by rank (RRF)": _Merged(library, _rrf),
        "two, each collection's best = 1": _Merged(library, _per_collection),
    }
    rows = []
    for variant, target in variants.items():
        scored = [DevScored(r.query, halves[r.query.id], r) for r in run_eval(target, queries)]
        m = metrics(scored)
        rows.append({"collection": name, "variant": variant, "queries": m["queries"],
                     "single R@1": m["single R@1"], "single MRR": m["single MRR"], "R@5": m["R@5"]})  # fmt: skip
    library.close()
    one.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="A collection name (repeatable).")
    parser.add_argument("--dense-only", action="store_true", help="The dense leg alone (DENSE_ONLY).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    overrides = DENSE_ONLY if args.dense_only else None
    rows = [row for name in args.only or ["react-mixed", "tldr-mixed"] for row in measure(name, overrides)]
    if args.json:
        print(json.dumps(rows))
        return 0
    print("| collection | variant | queries | single R@1 | single MRR | R@5 |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['collection']} | {r['variant']} | {r['queries']} | {r['single R@1']:.3f} | "
              f"{r['single MRR']:.3f} | {r['R@5']:.3f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
