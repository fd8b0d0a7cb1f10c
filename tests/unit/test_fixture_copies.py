"""The suite's copies of fixture folders leave behind what an earlier run wrote into them.

``make demo`` indexes ``examples/kb`` in place; a test copying it as it stands started from the
demo's index instead of the files (a model switch inside a fast test). These tests run the helper on a
copy that carries an index, and keep every copy in the suite going through it.
"""

from __future__ import annotations

import re
from pathlib import Path

from kbseek.ingest.filenames import INDEX_DIRNAME
from tests.conftest import make_core
from tests.fixture_copies import EXAMPLE_KB, GENERATED, copy_fixture

TESTS = Path(__file__).resolve().parents[1]


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_the_index_folder_kbseek_writes_is_among_the_generated_names() -> None:
    assert INDEX_DIRNAME in GENERATED


def test_a_copy_of_an_indexed_knowledge_base_holds_its_files_and_no_index(tmp_path: Path) -> None:
    carrier = copy_fixture(EXAMPLE_KB, tmp_path / "after-the-demo")
    first = make_core(carrier)
    documents = len(first.index().added)
    first.close()
    (carrier / "notes" / "__pycache__").mkdir()
    (carrier / "notes" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert (carrier / INDEX_DIRNAME).is_dir() and documents > 0

    clean = copy_fixture(carrier, tmp_path / "copy")

    assert not (clean / INDEX_DIRNAME).exists()
    kept = {p for p in files_under(carrier) if not set(p.split("/")) & set(GENERATED)}
    assert files_under(clean) == kept
    # The copy's first pass starts from the files: everything is new, nothing switched or deleted.
    second = make_core(clean)
    report = second.index()
    second.close()
    assert (len(report.added), report.deleted, report.unchanged) == (documents, [], 0)


def test_every_copy_of_a_folder_in_the_suite_goes_through_the_helper() -> None:
    offenders = [
        f"{path.relative_to(TESTS)}:{number}"
        for path in TESTS.rglob("*.py")
        if path.name != "fixture_copies.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bcopytree\(", line)
    ]
    assert offenders == [], "copy fixture folders with tests.fixture_copies.copy_fixture"
