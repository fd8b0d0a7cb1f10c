"""Every install command the site and the READMEs show works as written from a checkout.

Nothing is published on a package index yet, so ``pip install 'kbseek[postgres]'`` answers "No
matching distribution": a page that installs by name sends a newcomer into that error. Installs
are written from the checkout (``pip install '.[postgres]'``); the only commands naming the package
are the ones under the sentence saying they wait for a release (README and Get started).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [*ROOT.glob("docs/**/*.md"), ROOT / "README.md", ROOT / "README.ja.md", ROOT / "CHANGELOG.md"],
    key=str,
)
BY_NAME = re.compile(r"\b(?:pip|pipx|uv pip) install\s+['\"]?kbseek\b|\buvx\s+(?:--from\s+['\"]?)?kbseek\b")
"""An install (or uvx run) of the package by its name, an extra or not, across a line break too."""
RELEASE = ("Once a release is published", "リリースが公開された後")
NEAR = 400
"""How close after the release sentence a by-name command must come: within its own block."""


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_installs_by_name_only_under_the_sentence_that_waits_for_a_release(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for found in BY_NAME.finditer(text):
        before = text[max(0, found.start() - NEAR) : found.start()]
        line = text.count("\n", 0, found.start()) + 1
        assert any(said in before for said in RELEASE), (
            f"{page.relative_to(ROOT)}:{line} installs kbseek by name ({found.group(0)!r}), which no "
            "index holds yet: install from the checkout ('.[extra]') as Get started does"
        )


def test_the_rule_sees_the_commands_it_is_for() -> None:
    """Guards the pattern itself: each shape a page has used is caught, a checkout install is not."""
    caught = ["pip install 'kbseek[postgres]'", "pip install\n'kbseek[pptx]'", "pipx install kbseek",
              "uvx kbseek serve", "uvx --from 'kbseek[pdf]' kbseek"]  # fmt: skip
    for command in caught:
        assert BY_NAME.search(command), command
    for command in [
        "pip install '.[postgres]'",
        "uvx --from . kbseek serve",
        "pip install dist/kbseek-*.whl",
    ]:
        assert not BY_NAME.search(command), command
