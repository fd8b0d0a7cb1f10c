"""The one document guard (D5, T8): one test per refusal, no generated path escapes the root, and every
file name opens by exactly that name."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kbseek.ingest.guard
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
from kbseek.ingest.guard import load_document, read_regular_file, relative_path
from kbseek.ingest.parsers import Registry
from kbseek.uris import document_uri, parse_uri

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
    (tree / "latin1.md").write_bytes("été".encode("latin-1"))  # a word too short to tell its encoding by
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


def test_a_name_no_file_can_have_is_a_refusal_that_says_so(tree: Path) -> None:
    with pytest.raises(DocumentNotFound, match="longer than the file system allows"):
        load(tree, "N" * 5000)
    with pytest.raises(DocumentNotFound, match="longer than the file system allows"):
        load(tree, "notes/" + "N" * 300 + "/a.md")
    with pytest.raises(DocumentNotFound, match="unpaired surrogate"):
        load(tree, "notes/\ud800.md")


@pytest.fixture
def linked(tree: Path) -> Path:
    """The tree, plus every kind of link that could lead a read outside it."""
    outside = tree.parent / "outside"
    outside.mkdir()
    (outside / "a.md").write_text("# Secret\n", encoding="utf-8")
    (tree / "out").symlink_to(outside, target_is_directory=True)
    (tree / "in").symlink_to(tree / "notes", target_is_directory=True)
    (tree / "escape.md").symlink_to(tree.parent / "outside.md")
    os.link(tree.parent / "outside.md", tree / "hard.md")
    (tree / " blank.md").write_text("# Blank\n", encoding="utf-8")
    (tree / "back\\slash.md").write_text("# Backslash\n", encoding="utf-8")
    return tree


SEGMENTS = st.sampled_from(
    ["..", ".", "", "notes", "a.md", "outside.md", "%2e%2e", "\\..", "~", "//", "x\\..\\", "out", "in",
     "escape.md", "hard.md", " blank.md", "back\\slash.md", "N" * 300, "\ud800", " ", "\\"]
)  # fmt: skip


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    parts=st.lists(st.one_of(SEGMENTS, st.text(max_size=8)), max_size=6),
    lead=st.sampled_from(["", "/", "./", " ", "\\"]),
    walk=st.booleans(),
)
def test_no_generated_path_escapes_the_root(linked: Path, parts: list[str], lead: str, walk: bool) -> None:
    """Every path is read or refused with a DocumentRefused (never an OSError or a traceback), by the
    descriptor walk and by the path fallback alike, and what is read is inside the root."""
    path = lead + "/".join(parts)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kbseek.ingest.guard, "_WALK", walk and kbseek.ingest.guard._WALK)
        try:
            doc = load(linked, path)
        except DocumentRefused:
            return
    real = Path(os.path.realpath(linked / doc.path))
    assert real.is_relative_to(os.path.realpath(linked))
    assert "Secret" not in doc.text


NAME = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="/\x00"), min_size=1, max_size=40
).filter(lambda n: n not in (".", ".."))


@pytest.mark.skipif(sys.platform == "win32", reason="Windows names hold none of \\ : * ? < > |")
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(folder=st.one_of(st.none(), NAME), stem=NAME)
def test_every_file_name_opens_by_exactly_that_name(tmp_path_factory: pytest.TempPathFactory, folder: str | None,
                                                    stem: str) -> None:  # fmt: skip
    """A name as the scan lists it (blanks, backslashes, '#', '%', '?', any script) loads as given, and
    its kb:// uri decodes to it."""
    root = tmp_path_factory.mktemp("names")
    rel = stem + ".md" if folder is None else f"{folder}/{stem}.md"
    target = root.joinpath(*rel.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("# Named\n\nfound\n", encoding="utf-8")
    doc = load(root, rel)
    assert doc.path == rel and "found" in doc.text
    assert read_regular_file(root, rel, max_bytes=1000).data == target.read_bytes()
    climbs = ".." in rel.replace("\\", "/").split("/")
    if not climbs:
        assert parse_uri(document_uri(rel)).path == rel
