"""``make demo``'s script, run as the README runs it: each question is printed above its hits.

The demo is the first thing a newcomer reads; five blocks of "3 hits" without the question each
answers told them nothing about what was asked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixture_copies import ROOT, example_copy

pytestmark = pytest.mark.slow  # the demo waits for the bundled model, as a newcomer's run does


def test_the_demo_prints_each_question_above_the_hits_it_got(tmp_path: Path) -> None:
    kb = example_copy(tmp_path)
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from demo import QUERIES
    finally:
        sys.path.remove(str(ROOT / "examples"))
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), str(kb)],
        capture_output=True, text=True, encoding="utf-8", timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    for query in QUERIES:
        at = lines.index(f"search: {query}")
        assert "hit" in lines[at + 1], lines[at : at + 3]  # the response's first line follows it
