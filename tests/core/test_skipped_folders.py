"""Hidden folders and the index folder are noise: never indexed (T9).

Tool and vendor folders by name are pinned in test_indexing.py; these are the rules by shape (any
folder whose name starts with a dot) and the index folder itself, which a pass must never read
back in. Like tool folders, they are passed over without a line in the skipped list.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_core


def test_hidden_folders_and_the_index_folder_are_never_indexed(kb_root: Path) -> None:
    for folder in (".private", ".kbseek"):
        (kb_root / folder).mkdir(exist_ok=True)
        (kb_root / folder / "note.md").write_text("# Hidden\n\nwombat burrow\n", encoding="utf-8")
    c = make_core(kb_root)
    try:
        report = c.index()
        assert not any(path.startswith((".private", ".kbseek")) for path, _ in report.skipped)
        assert c.search("wombat burrow").hits == []
        assert c.status().documents == 4
    finally:
        c.close()
