"""docs/contracts.md stays the place code comments point to, and points only at tests that exist.

Comments cite contracts by id, ``(T3)`` or ``(D4)``; a cited id that the document does not define,
or a pinning test that was renamed away, would send a reader nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = ROOT / "docs" / "contracts.md"
IDS = (
    [f"T{n}" for n in range(1, 12)]
    + [f"D{n}" for n in range(1, 9)]
    + [f"S{n}" for n in range(1, 4)]
    + [f"N{n}" for n in range(1, 4)]
)


def test_every_contract_has_a_section_and_pinning_tests() -> None:
    text = CONTRACTS.read_text(encoding="utf-8")
    sections = re.split(r"^### ", text, flags=re.MULTILINE)[1:]
    assert [s.split(" ", 1)[0] for s in sections] == IDS
    for section in sections:
        assert "Pinned by:" in section, section.splitlines()[0]


def test_every_cited_test_exists() -> None:
    text = CONTRACTS.read_text(encoding="utf-8")
    cited = re.findall(r"`(\w+/test_\w+\.py)::(test_\w+)`", text)
    assert len(cited) > 50
    missing = [
        f"{path}::{name}"
        for path, name in cited
        if not re.search(
            rf"^(async )?def {name}\b", (ROOT / "tests" / path).read_text(encoding="utf-8"), re.MULTILINE
        )
    ]
    assert missing == []


def test_every_contract_id_cited_in_the_code_is_defined() -> None:
    cited: dict[str, set[str]] = {}
    for path in sorted((ROOT / "src" / "kbseek").rglob("*.py")):
        for found in re.findall(r"\b[TDSN]\d{1,2}\b", path.read_text(encoding="utf-8")):
            cited.setdefault(found, set()).add(str(path.relative_to(ROOT)))
    assert cited, "no module cites a contract: has the citation style changed?"
    assert {i: sorted(p) for i, p in cited.items() if i not in IDS} == {}
