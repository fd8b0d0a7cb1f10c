"""Where the web page stops listing: the cut of ``search.confidence.confident_count`` on the development sets.

    python benchmarks/page_cut.py                 # every collection, the grid of rules, both halves
    python benchmarks/page_cut.py --only examples-kb

The page asks for 20 hits and used to list them all: a vague question over a small knowledge base
listed eighteen notes where one answers. ``confident_count`` lists through the last hit within a
share of the best score, and at least the first few documents. Each rule of the grid (share × few)
is run on the queries of ``benchmarks/devsets`` as the page sends them (the query alone, limit 20)
and measured by:

- **kept**: of the answerable queries whose 20 hits hold an expected document, the share whose cut
  list still holds one (what the cut must not lose);
- **docs**: documents listed per query, answerable and unanswerable alike (what a person reads).

The rule is chosen on the ``tune`` halves: fewest documents listed with ``kept`` at least
``KEEP``. The ``heldout`` rows are the ones to report; they are never used to choose.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devset import ASSEMBLE, HALVES, assemble, questions
from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.search.confidence import FEW_DOCUMENTS, STRONG_SHARE, confident_count

LIMIT = 20
"""What the page asks for (``app.js``)."""
KEEP = 0.95
SHARES = (0.3, 0.4, 0.5, 0.6, 0.7)
FEWS = (1, 2, 3, 5)
COLLECTIONS = ("examples-kb", "react-mixed", "tldr-mixed")


@dataclass(frozen=True)
class Answer:
    collection: str
    half: str
    expected: frozenset[str]
    hits: list[tuple[str, float]]
    """(path, score) in rank order."""


def answers(names: Sequence[str]) -> list[Answer]:
    out: list[Answer] = []
    for name in names:
        queries, halves = questions(name)
        kb = KnowledgeBase(settings=Settings(root=assemble(name), freshness_interval_s=1e9))
        kb.index()
        for q in queries:
            r = kb.search(q.query, limit=LIMIT)
            hits = [(h.path, h.score) for h in r.hits]
            out.append(Answer(name, halves[q.id], frozenset(e.path for e in q.expected), hits))
        kb.close()
        print(f"{name}: {len(queries)} queries", file=sys.stderr)
    return out


def measure(items: Sequence[Answer], share: float | None, few: int) -> dict[str, float]:
    """``share`` ``None``: the full list, as the page showed it before."""
    kept = judged = 0
    docs = 0
    for a in items:
        n = len(a.hits) if share is None else confident_count(a.hits, share=share, few=few)
        shown = {path for path, _ in a.hits[:n]}
        docs += len(shown)
        if a.expected and a.expected & {path for path, _ in a.hits}:
            judged += 1
            kept += bool(a.expected & shown)
    return {
        "kept": kept / judged if judged else 1.0,
        "docs": docs / max(len(items), 1),
        "queries": len(items),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", action="append", choices=sorted(ASSEMBLE))
    parser.add_argument("--json", type=Path, help="Also write the rows as JSON here.")
    args = parser.parse_args()
    items = answers(args.only or COLLECTIONS)
    rules: list[tuple[float | None, int]] = [(None, 0)] + [(s, f) for s in SHARES for f in FEWS]
    rows = []
    for half in HALVES:
        part = [a for a in items if a.half == half]
        for share, few in rules:
            rows.append({"half": half, "share": share, "few": few, **measure(part, share, few)})
    tune = [r for r in rows if r["half"] == "tune" and r["share"] is not None and r["kept"] >= KEEP]
    best = min(tune, key=lambda r: (r["docs"], -r["kept"])) if tune else None
    print("| half | rule | kept | docs listed |\n|---|---|---|---|")
    for r in rows:
        rule = "all 20 hits" if r["share"] is None else f"share {r['share']}, few {r['few']}"
        mark = " (chosen on tune)" if best and (r["share"], r["few"]) == (best["share"], best["few"]) else ""
        current = " (in force)" if (r["share"], r["few"]) == (STRONG_SHARE, FEW_DOCUMENTS) else ""
        print(f"| {r['half']} | {rule}{mark}{current} | {r['kept']:.3f} | {r['docs']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
