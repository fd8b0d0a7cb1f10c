"""The official MCP conformance suite against ``kbseek serve --http``.

The suite is pinned in ``conformance/package.json`` and installed by
``make test``. It fails the run on any scenario that fails unexpectedly, and on
any listed in ``conformance/expected-failures.yml`` (each with its reason)
that has started to pass.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.wire.serving import serving

SUITE = Path(__file__).resolve().parents[2] / "conformance"
RUNNER = SUITE / "node_modules" / ".bin" / "conformance"


def test_the_conformance_suite_passes_but_for_the_listed_fixture_scenarios(kb_root: Path) -> None:
    if not RUNNER.exists():
        pytest.skip("the conformance suite is not installed: `npm ci --prefix conformance` (make test does)")
    with serving(kb_root, "--no-watch") as port:
        done = subprocess.run(
            [str(RUNNER), "server", "--url", f"http://127.0.0.1:{port}/mcp",
             "--expected-failures", str(SUITE / "expected-failures.yml")],
            capture_output=True, text=True, timeout=300, cwd=SUITE,
        )  # fmt: skip
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "Baseline check passed" in report
    for scenario in (
        "server-initialize",
        "tools-list",
        "resources-list",
        "prompts-list",
        "dns-rebinding-protection",
    ):
        assert f"✓ {scenario}:" in report, report
