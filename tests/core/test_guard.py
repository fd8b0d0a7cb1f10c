"""The one document guard (D5, T8): one test per refusal, and no generated path escapes the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.errors import (
    DocumentNotFound,
    DocumentRefused,
    DocumentTooLarge,
    LinkRefused,
    NotARegularFile,
    NotText,
    PathOutsideRoot,
    UnsupportedExtension,
)
from kbseek.guard import load_document, relative_path
from kbseek.ingest.parsers import Registry

REGISTRY = Registry()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    (root / "plain.txt").write_text("plain\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Secret\n", encoding="utf-8")
    return root


def load(root: Path, path: str, max_bytes: int = 1_000_000):
    return load_document(root, path, REGISTRY, max_bytes=max_bytes)


def test_a_registered_file_under_the_root_is_loaded_with_its_media_type(tree: Path) -> None:
    doc = load(tree, "notes/a.md")
    assert doc.text == "# A\n\nalpha\n" and doc.media_type == "text/markdown" and doc.path == "notes/a.md"
    assert load(tree, "plain.txt").media_type == "text/plain"


def test_dot_dot_traversal_is_refused(tree: Path) -> None:
    with pytest.raises(PathOutsideRoot, match=r"uses '\.\.'"):
        load(tree, "../outside.md")


def test_an_absolute_path_is_taken_relative_to_the_root(tree: Path) -> None:
    assert load(tree, "/notes/a.md").path == "notes/a.md"
    with pytest.raises(DocumentNotFound):
        load(tree, str(tree.parent / "outside.md"))  # not the outside file: root/<that path>, which is absent


def test_a_symlink_to_outside_the_root_is_refused(tree: Path) -> None:
    (tree / "escape.md").symlink_to(tree.parent / "outside.md")
    with pytest.raises(PathOutsideRoot, match="outside the knowledge-base root"):
        load(tree, "escape.md")


def test_a_symlink_inside_the_root_is_refused(tree: Path) -> None:
    (tree / "alias.md").symlink_to(tree / "notes" / "a.md")
    with pytest.raises(LinkRefused, match="symlink"):
        load(tree, "alias.md")


def test_a_path_through_a_symlinked_folder_is_refused(tree: Path) -> None:
    (tree / "linked").symlink_to(tree / "notes", target_is_directory=True)
    with pytest.raises(LinkRefused):
        load(tree, "linked/a.md")


def test_a_hard_linked_file_is_refused(tree: Path) -> None:
    os.link(tree / "notes" / "a.md", tree / "hard.md")
    with pytest.raises(LinkRefused, match="hard links"):
        load(tree, "hard.md")


def test_an_unregistered_extension_is_refused_and_the_readable_ones_are_named(tree: Path) -> None:
    (tree / "photo.png").write_bytes(b"\x89PNG")
    with pytest.raises(UnsupportedExtension, match=r"\.md"):
        load(tree, "photo.png")


def test_an_oversize_file_is_refused(tree: Path) -> None:
    (tree / "big.md").write_text("x" * 2000, encoding="utf-8")
    with pytest.raises(DocumentTooLarge, match="over the read cap"):
        load(tree, "big.md", max_bytes=1000)


def test_a_directory_is_refused(tree: Path) -> None:
    with pytest.raises(NotARegularFile, match="is a folder"):
        load(tree, "notes")
    (tree / "dir.md").mkdir()
    with pytest.raises(NotARegularFile):
        load(tree, "dir.md")


def test_a_missing_file_is_refused(tree: Path) -> None:
    with pytest.raises(DocumentNotFound, match="no file at"):
        load(tree, "notes/nope.md")


def test_non_utf8_text_is_refused(tree: Path) -> None:
    (tree / "latin1.md").write_bytes("café".encode("latin-1"))
    with pytest.raises(NotText):
        load(tree, "latin1.md")


def test_a_nul_byte_is_refused(tree: Path) -> None:
    with pytest.raises(PathOutsideRoot, match="NUL"):
        load(tree, "notes/a.md\x00.png")


def test_every_refusal_has_its_own_message() -> None:
    messages = {
        "traversal": relative_path_error("../x.md"),
        "root": relative_path_error("/"),
    }
    assert len(set(messages.values())) == len(messages)


def relative_path_error(path: str) -> str:
    try:
        relative_path(path)
    except DocumentRefused as exc:
        return type(exc).__name__ + str(exc)
    return ""


SEGMENTS = st.sampled_from(
    ["..", ".", "", "notes", "a.md", "outside.md", "%2e%2e", "\\..", "~", "//", "x\\..\\"]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    parts=st.lists(st.one_of(SEGMENTS, st.text(max_size=8)), max_size=6),
    lead=st.sampled_from(["", "/", "./"]),
)
def test_no_generated_path_escapes_the_root(tree: Path, parts: list[str], lead: str) -> None:
    path = lead + "/".join(parts)
    try:
        doc = load(tree, path)
    except DocumentRefused:
        return
    except (OSError, ValueError):
        return  # e.g. a name too long for the filesystem: refused by the OS, nothing read
    real = Path(os.path.realpath(tree / doc.path))
    assert real.is_relative_to(os.path.realpath(tree))
    assert "Secret" not in doc.text
