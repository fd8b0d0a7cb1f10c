"""Copies of the folders tests index, without the state an earlier run left inside them.

``make demo`` indexes ``examples/kb`` in place, and a developer's own runs can leave an index (or
caches) in any fixture folder. A test that copied such a folder as it stands would start from that
index, not from the files: a model switch, stale vectors or a different document count, depending on
what ran before it. Every test that copies a fixture folder goes through :func:`copy_fixture`, so
the suite gives the same answer on a fresh clone and after ``make demo``.

The module needs only the standard library: the wheel smoke test, which must not rely on the
editable install, uses it too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_KB = ROOT / "examples" / "kb"
"""The bundled example knowledge base (``make demo`` indexes it in place)."""

GENERATED: tuple[str, ...] = (".kbseek", "__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache")
"""Names that only a run creates: kbseek's index folder (``INDEX_DIRNAME``) and tool caches."""


def copy_fixture(source: Path, destination: Path) -> Path:
    """Copy ``source`` to ``destination`` (which must not exist), leaving generated state behind."""
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns(*GENERATED))
    return destination


def example_copy(parent: Path) -> Path:
    """A clean copy of ``examples/kb`` at ``parent/kb``, made on the first call and reused after."""
    destination = parent / "kb"
    if not destination.exists():
        copy_fixture(EXAMPLE_KB, destination)
    return destination


REALFILES = ROOT.parent / "shared" / "realfiles"
"""Office, HTML and notebook files from other projects' test suites, beside the checkout (its README
names their sources and licences); never part of the package."""


def real_file(relative: str) -> bytes:
    """The bytes of ``REALFILES / relative``; the test is skipped, saying why, where they are absent."""
    path = REALFILES / relative
    if not path.is_file():
        import pytest

        pytest.skip(f"{path} is absent: the real test files live beside the checkout in ../shared/realfiles")
    return path.read_bytes()
