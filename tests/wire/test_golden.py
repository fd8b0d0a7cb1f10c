"""The example golden set, gated at the floors measured for the default configuration.

Raising retrieval quality should raise these floors; lowering one needs a reason
in the commit that does it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.cli.eval import load_golden, run_eval, summarize
from kbseek.config import Settings
from tests.fixture_copies import copy_fixture

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Measured with `kbseek eval --kb examples/kb --golden examples/golden.yml` (default settings),
# rounded down a little so that harmless ranking noise does not fail the build.
FLOORS = {
    ("overall", "ndcg@10"): 0.83,  # measured 0.849
    ("overall", "recall@5"): 0.92,  # 0.930 (0.947 before distinct documents first, decision 0012)
    ("kind:identifier", "recall@1"): 1.0,  # 1.0
    ("kind:japanese", "recall@5"): 1.0,  # 1.0
    ("kind:cross-lingual-en-ja", "recall@5"): 0.95,  # 1.0
    # 0.714: one query expects the second section of the document that ranks first; with distinct
    # documents first that section waits behind other documents (decision 0012). The document is found.
    ("kind:cross-lingual-ja-en", "recall@5"): 0.7,
    ("kind:paraphrase", "recall@5"): 0.9,  # 0.909
    ("kind:multi-answer", "recall@5"): 0.95,  # 1.0
    ("kind:unanswerable", "abstained"): 0.6,  # 0.667
}


def test_the_example_golden_set_stays_above_its_floors(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    copy_fixture(EXAMPLES / "kb", root)
    core = KnowledgeBase(settings=Settings(root=root))
    core.load_semantic()
    core.index()
    summary = summarize(run_eval(core, load_golden(EXAMPLES / "golden.yml")))
    core.close()
    below = []
    for (group, metric), floor in FLOORS.items():
        value = summary["overall"][metric] if group == "overall" else summary["groups"][group][metric]
        if value < floor:
            below.append(f"{group} {metric} = {value:.3f} < {floor}")
    assert not below, "; ".join(below)
