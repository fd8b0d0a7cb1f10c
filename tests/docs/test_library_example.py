"""The library page's example runs as written, against a copy of the example knowledge base.

The example is what a Python user copies first, so it is executed, not just read: the code is taken
from the page itself (``docs/library.md``, its "Use it as a library" section), with only the folder
swapped for a copy of ``examples/kb``. It loads the real embedding model, as the example would.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fixture_copies import copy_fixture

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def library_example(page: Path) -> str:
    text = page.read_text(encoding="utf-8")
    section = text.split("\n## Use it as a library\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, "the library section holds one Python example"
    return blocks[0]


def test_the_library_page_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = library_example(ROOT / "docs" / "library.md")
    assert '"~/notes"' in code and "from kbseek import Filters, KnowledgeBase" in code
    notes = tmp_path / "notes"
    copy_fixture(ROOT / "examples" / "kb", notes)
    exec(compile(code.replace('"~/notes"', repr(str(notes))), "docs/library.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "runbooks/rollback.md" in printed
    assert re.search(r"^runbooks/rollback\.md \d+ characters$", printed, flags=re.MULTILINE)


def test_the_japanese_library_page_shows_the_same_code() -> None:
    """Only the comment is translated: the code a Japanese reader copies is the tested code."""
    english = library_example(ROOT / "docs" / "library.md")
    text = (ROOT / "docs" / "ja" / "library.md").read_text(encoding="utf-8")
    japanese = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(japanese) == 1

    def code(block: str) -> str:
        return re.sub(r"  # .*", "", block)

    assert code(japanese[0]) == code(english)
