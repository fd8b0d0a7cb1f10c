"""What an in-process model users bring costs to index with, against the default model in the same run.

    python benchmarks/embed_cost.py [--model FOLDER]... [--rounds 2]

A copy of ``examples/kb`` (74 chunks) is indexed from scratch with the default model and with each
``[embed] provider = "fastembed"`` folder model (``model.onnx`` and ``tokenizer.json``), one thread
each, the model loaded before the clock starts. Printed: the median indexing time and chunks per
second of each, and each model's ratio to the default (these machines are noisy: only the ratio
within one run means much). Without ``--model`` the model is the tiny encoder the tests generate
(``tests/tiny_models.py``, random weights), which measures the path, not a real model's cost; pass
a folder exported from a real model (or one of its shape) for that. Needs ``kbseek[models]``.
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
from kbseek.embed import EmbedderSpec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.tiny_models, for the generated encoder


def _index_seconds(root: Path, scratch: Path, spec: EmbedderSpec) -> tuple[float, int]:
    index = Path(tempfile.mkdtemp(dir=scratch))
    settings = Settings(root=root, index_dir=index, embed=spec, freshness_interval_s=3600.0)
    with KnowledgeBase(settings=settings) as kb:
        kb.load_semantic()
        started = time.perf_counter()
        report = kb.index()
        seconds = time.perf_counter() - started
    shutil.rmtree(index)
    return seconds, report.chunks_embedded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, action="append", default=[], help="A fastembed model folder.")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        root = scratch / "kb"
        shutil.copytree(HERE.parent / "examples" / "kb", root, ignore=shutil.ignore_patterns(".kbseek"))
        models = args.model
        if not models:
            from tests.tiny_models import write_encoder

            models = [write_encoder(scratch / "tiny-encoder")]
        specs = [("default", EmbedderSpec())] + [
            (f"fastembed {m.name}", EmbedderSpec(provider="fastembed", model=str(m.resolve()), threads=1))
            for m in models
        ]
        medians: dict[str, tuple[float, int]] = {}
        for name, spec in specs:
            runs = [_index_seconds(root, scratch, spec) for _ in range(args.rounds)]
            medians[name] = (statistics.median(s for s, _ in runs), runs[0][1])
    base = medians["default"][0]
    for name, (seconds, chunks) in medians.items():
        rate = chunks / seconds if seconds else float("inf")
        print(f"{name:40} {seconds:6.2f} s  {rate:7.1f} chunks/s  ({seconds / base:.2f}x the default's time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
