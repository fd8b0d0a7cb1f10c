"""What the rerank stage costs a search, against the fused order measured in the same run.

    python benchmarks/rerank_cost.py [--rounds 3] [--model FOLDER]

A copy of ``examples/kb`` is indexed once with the default model; the same queries are then asked
with ``[rerank]`` off and with ``provider = "local"``, and the median search time of each is
printed with their ratio (these machines are noisy: only the ratio within one run means much).
Without ``--model`` the cross-encoder is the tiny one the tests generate (``tests/tiny_models.py``,
random weights, 63 KiB): it measures the stage's own cost (tokenising, the ONNX run, reordering),
not a real model's, whose time grows with its size. Needs ``kbseek[models]`` (or the dev install).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.rerank.base import RerankSpec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.tiny_models, for the generated cross-encoder

QUERIES = (
    "how do I roll back a release", "deploy", "cache invalidation", "on-call rotation",
    "database migration", "ロールバック", "監視", "incident review", "rate limiting", "backup restore",
)  # fmt: skip


def _median_ms(kb: KnowledgeBase, rounds: int) -> float:
    kb.search("warm up")
    times = []
    for _ in range(rounds):
        for query in QUERIES:
            started = time.perf_counter()
            kb.search(query)
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", type=Path, help="A cross-encoder folder (model.onnx, tokenizer.json).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "kb"
        shutil.copytree(HERE.parent / "examples" / "kb", root, ignore=shutil.ignore_patterns(".kbseek"))
        model = args.model
        if model is None:
            from tests.tiny_models import write_cross_encoder

            model = write_cross_encoder(Path(scratch) / "cross-encoder")
        size = sum(p.stat().st_size for p in model.rglob("*") if p.is_file())
        medians = {}
        for name, spec in (
            ("fused", RerankSpec()),
            ("reranked", RerankSpec(provider="local", model=str(model))),
        ):
            settings = Settings(
                root=root, index_dir=Path(scratch) / "index", rerank=spec, freshness_interval_s=3600.0
            )
            with KnowledgeBase(settings=settings) as kb:
                kb.index()
                medians[name] = _median_ms(kb, args.rounds)
                skipped = [n for n in kb.search(QUERIES[0]).notes if "rerank" in n]
                if name == "reranked" and skipped:
                    print(f"the reranker did not run: {skipped[0]}", file=sys.stderr)
                    return 1
    fused, reranked = medians["fused"], medians["reranked"]
    print(f"cross-encoder {model.name}: {size / 1024:.0f} KiB, {RerankSpec().candidates} candidates")
    print(f"median search: fused {fused:.1f} ms, reranked {reranked:.1f} ms ({reranked / fused:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
