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
``KEEP``. Then, with that rule, the bound on a search whose best hit is weak (``low_confidence``:
its scores are flat, so a share of the best lists most of them): the fewest documents that keep
as many answers on tune as no bound does. The ``heldout`` rows are the ones to report; they are
never used to choose.
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
from kbseek.search.confidence import DOUBTFUL_DOCUMENTS, FEW_DOCUMENTS, STRONG_SHARE, confident_count

LIMIT = 20
"""What the page asks for (``app.js``)."""
KEEP = 0.95
SHARES = (0.3, 0.4, 0.5, 0.6, 0.7)
FEWS = (1, 2, 3, 5)
DOUBTFULS: tuple[int | None, ...] = (None, 1, 2, 3, 5)
COLLECTIONS = ("examples-kb", "react-mixed", "tldr-mixed")


@dataclass(frozen=True)
class Answer:
    collection: str
    half: str
    expected: frozenset[str]
    low_confidence: bool
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
            expected = frozenset(e.path for e in q.expected)
            out.append(Answer(name, halves[q.id], expected, r.low_confidence, hits))
        kb.close()
        print(f"{name}: {len(queries)} queries", file=sys.stderr)
    return out


def measure(
    items: Sequence[Answer], share: float | None, few: int, doubtful: int | None = None
) -> dict[str, float]:
    """``share`` ``None``: the full list, as the page showed it before. ``doubtful``: the bound on a
    low-confidence search (``None``: none)."""
    kept = judged = 0
    docs = unanswerable_docs = unanswerable = 0
    for a in items:
        if share is None:
            n = len(a.hits)
        else:
            n = confident_count(
                a.hits, low_confidence=a.low_confidence, share=share, few=few, doubtful=doubtful
            )
        shown = {path for path, _ in a.hits[:n]}
        docs += len(shown)
        if not a.expected:
            unanswerable += 1
            unanswerable_docs += len(shown)
        if a.expected and a.expected & {path for path, _ in a.hits}:
            judged += 1
            kept += bool(a.expected & shown)
    return {
        "kept": kept / judged if judged else 1.0,
        "docs": docs / max(len(items), 1),
        "unanswerable docs": unanswerable_docs / max(unanswerable, 1),
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
            rows.append({"half": half, "share": share, "few": few, **measure(part, share, few, None)})
    tune = [r for r in rows if r["half"] == "tune" and r["share"] is not None and r["kept"] >= KEEP]
    best = min(tune, key=lambda r: (r["docs"], -r["kept"])) if tune else None
    print("| half | rule | kept | docs listed |\n|---|---|---|---|")
    for r in rows:
        rule = "all 20 hits" if r["share"] is None else f"share {r['share']}, few {r['few']}"
        mark = " (chosen on tune)" if best and (r["share"], r["few"]) == (best["share"], best["few"]) else ""
        current = " (in force)" if (r["share"], r["few"]) == (STRONG_SHARE, FEW_DOCUMENTS) else ""
        print(f"| {r['half']} | {rule}{mark}{current} | {r['kept']:.3f} | {r['docs']:.1f} |")
    share, few = (best["share"], best["few"]) if best else (STRONG_SHARE, FEW_DOCUMENTS)
    bounded = []
    for half in HALVES:
        part = [a for a in items if a.half == half]
        for doubtful in DOUBTFULS:
            bounded.append({"half": half, "doubtful": doubtful, **measure(part, share, few, doubtful)})
    unbounded_kept = next(r["kept"] for r in bounded if r["half"] == "tune" and r["doubtful"] is None)
    fit = [
        r
        for r in bounded
        if r["half"] == "tune" and r["doubtful"] is not None and r["kept"] >= unbounded_kept
    ]
    chosen = min(fit, key=lambda r: r["doubtful"])["doubtful"] if fit else None
    print(f"\nWith share {share}, few {few}: at most this many documents when low_confidence\n")
    print("| half | bound | kept | docs listed | unanswerable: docs listed |\n|---|---|---|---|---|")
    for r in bounded:
        mark = " (chosen on tune)" if r["doubtful"] == chosen else ""
        mark += " (in force)" if r["doubtful"] == DOUBTFUL_DOCUMENTS else ""
        bound = "none" if r["doubtful"] is None else str(r["doubtful"])
        print(
            f"| {r['half']} | {bound}{mark} | {r['kept']:.3f} | {r['docs']:.1f} | {r['unanswerable docs']:.1f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows + bounded, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
