"""Fusion methods compared on a golden set (default: the example KB's mixed English/Japanese set).

    python benchmarks/fusion_golden.py [--kb examples/kb] [--golden examples/golden.yml]

One embedder is loaded and shared, the index is built once, and every fusion
is scored on the same queries in the same run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kbseek import KnowledgeBase
from kbseek.cli.eval import load_golden, run_eval, summarize
from kbseek.config import Settings

HERE = Path(__file__).resolve().parent
KINDS = ["paraphrase", "japanese", "cross-lingual-ja-en", "cross-lingual-en-ja", "multi-answer", "keyword"]
VARIANTS: list[tuple[str, dict[str, object]]] = [
    ("lexical only", {"semantic": False}),
    *[
        (f"blend {w}", {"fusion": "blend", "dense_weight": w, "dense_weight_matched": w})
        for w in (0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
    ],
    *[
        (f"adaptive {hi}→{lo}", {"fusion": "blend", "dense_weight": hi, "dense_weight_matched": lo})
        for hi, lo in ((0.7, 0.2), (0.8, 0.2), (0.8, 0.3), (0.85, 0.2), (0.9, 0.2), (0.7, 0.4))
    ],
    ("rrf k=60", {"fusion": "rrf"}),
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", type=Path, default=HERE.parent / "examples" / "kb")
    parser.add_argument("--golden", type=Path, default=HERE.parent / "examples" / "golden.yml")
    args = parser.parse_args()
    root = args.kb.resolve()
    queries = load_golden(args.golden)
    base = KnowledgeBase(settings=Settings(root=root, freshness_interval_s=1e9))
    base.index()  # loads the model once; every variant below shares it
    shared = base.retrieval().embedder

    header = [
        "fusion",
        "nDCG@10",
        "R@1",
        "R@5",
        "MRR",
        *[f"{k} R@5" for k in KINDS],
        "identifier R@1",
        "abstained",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, overrides in VARIANTS:
        semantic = overrides.get("semantic", True)
        kb = KnowledgeBase(
            settings=Settings(root=root, freshness_interval_s=1e9, **overrides),  # type: ignore[arg-type]
            embedder=shared if semantic else None,
        )
        summary = summarize(run_eval(kb, queries))
        kb.close()
        o, groups = summary["overall"], summary["groups"]
        cells = [o["ndcg@10"], o["recall@1"], o["recall@5"], o["mrr"]]
        cells += [groups.get(f"kind:{k}", {}).get("recall@5", float("nan")) for k in KINDS]
        cells += [
            groups.get("kind:identifier", {}).get("recall@1", float("nan")),
            o.get("abstained", float("nan")),
        ]
        print(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    base.close()


if __name__ == "__main__":
    main()
