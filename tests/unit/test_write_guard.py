"""The write guard: what it accepts stays inside the root, in a writable folder, visible and plainly
named; what is hostile is refused; links, hard links, the index and ignored folders are refused on
a real disk."""

from __future__ import annotations

import os
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.errors import ConfigError, NoteNotFound, NoteTooLarge, WriteNotAllowed
from kbseek.ingest.exclusion import Exclusion
from kbseek.write.guard import (
    NEVER_WRITTEN,
    RESERVED_NAMES,
    WritePolicy,
    WriteTarget,
    check_size,
    ignored_by,
    writable_path,
)

FOLDERS = ("inbox", "notes/daily")
EXTENSIONS = (".md", ".markdown", ".txt")


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    """A root with the writable folders, links inside and out, a hard link, and an ignored folder."""
    with tempfile.TemporaryDirectory() as top:
        root = Path(top) / "kb"
        outside = Path(top) / "outside"
        outside.mkdir()
        (outside / "secret.md").write_text("secret")
        for folder in ("inbox/sub", "notes/daily", "notes/weekly", "drafts", "inbox/node_modules"):
            (root / folder).mkdir(parents=True)
        (root / "inbox/plain.md").write_text("a note")
        (root / "inbox/out").symlink_to(outside)
        (root / "inbox/in").symlink_to(root / "inbox/sub")
        (root / "inbox/link.md").symlink_to(outside / "secret.md")
        (root / "inbox/hard.md").write_text("twice")
        os.link(root / "inbox/hard.md", outside / "hard-elsewhere.md")
        (root / "notes/daily").rename(root / "notes/daily-real")
        (root / "notes/daily").symlink_to(root / "notes/daily-real")
        yield root


def policy(root: Path, **kw: object) -> WritePolicy:
    return WritePolicy(root, folders=FOLDERS, extensions=EXTENSIONS, **kw)  # type: ignore[arg-type]


# -- properties ---------------------------------------------------------------------------------

SAFE = st.sampled_from(
    ["inbox", "notes", "daily", "sub", "a", "Meeting notes", "日本語", "x-1", "v2.0", "in", "out"]
)
HOSTILE = st.sampled_from(
    ["..", ".", "", ".git", ".kbseek", ".hidden.md", "CON", "nul.md", "Com1.txt", "lpt9", "a.", "a ", " a",
     "C:", "c:x.md", "a\\b", "~", "link.md", "hard.md", "node_modules", "a\x00b", "a\x1fb", "a\x7fb", "a\x85b",
     "a\u202eb", "a\u200bb", "a\xadb", "x" * 256, "a:b", "a*b", "plain.md", "notes.pdf", "n.docx"]
)  # fmt: skip
NAMES = st.sampled_from(
    ["a.md", "b.MD", "c.markdown", "d.txt", "e.pdf", "f.docx", "g", "h.md.bak", "i.Markdown"]
)
SEGMENTS = st.one_of(SAFE, HOSTILE)


@st.composite
def paths(draw: st.DrawFn) -> str:
    folders = draw(st.lists(SEGMENTS, max_size=4))
    name = draw(st.one_of(NAMES, SEGMENTS))
    lead = draw(st.sampled_from(["", "", "/", "//", "./", "\\"]))
    return lead + "/".join([*folders, name])


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=paths())
def test_what_the_guard_accepts_is_inside_a_writable_folder_visible_and_plainly_named(
    tree: Path, path: str
) -> None:
    try:
        target = writable_path(policy(tree), path)
    except WriteNotAllowed:
        return
    real_root = Path(os.path.realpath(tree))
    resolved = Path(os.path.realpath(target.path))
    assert resolved == target.path, "a link on the way was followed"
    assert real_root in resolved.parents
    rel = resolved.relative_to(real_root).as_posix()
    assert rel == target.rel
    assert rel.startswith(("inbox/", "notes/daily/"))
    segments = rel.split("/")
    for segment in segments:
        assert not segment.startswith("."), segment
        assert segment.split(".")[0].upper() not in RESERVED_NAMES
        assert all(unicodedata.category(c) not in ("Cc", "Cf") or c in "\u200c\u200d" for c in segment)
        assert segment == segment.strip() and not segment.endswith(".")
        assert len(segment.encode()) <= 255
        assert "\\" not in segment and ":" not in segment
    assert Path(segments[-1]).suffix.lower() in EXTENSIONS
    assert not (tree / rel).is_symlink()


def _with(segments: list[str], name: str, bad: str, at: int) -> str:
    parts = [*segments, name]
    parts.insert(min(at, len(parts) - 1), bad)
    return "/".join(parts)


CONTROL = st.one_of(st.integers(0, 0x1F), st.just(0x7F), st.integers(0x80, 0x9F)).map(chr)
RESERVED = st.builds(
    lambda name, ext, upper: (name.upper() if upper else name.lower()) + ext,
    st.sampled_from(sorted(RESERVED_NAMES)),
    st.sampled_from(["", ".md", ".txt", ".tar.md", " .md"]),
    st.booleans(),
)
DRIVE = st.builds(
    lambda letter, sep: f"{letter}:{sep}", st.sampled_from("ACcZz"), st.sampled_from(["", "/", "\\"])
)
SAFE_LIST = st.lists(st.sampled_from(["inbox", "sub", "a b"]), min_size=0, max_size=3)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["climb", "absolute", "drive", "unc", "control", "reserved", "backslash"]),
    segments=SAFE_LIST,
    at=st.integers(0, 4),
    control=CONTROL,
    reserved=RESERVED,
    drive=DRIVE,
    host=st.sampled_from(["/etc/passwd.md", "/tmp/x.md", "/home/me/kb/inbox/a.md", "/var/../inbox/a.md"]),
)
def test_hostile_paths_are_always_refused(
    tree: Path, kind: str, segments: list[str], at: int, control: str, reserved: str, drive: str, host: str
) -> None:
    base = ["inbox", *segments]
    path = {
        "climb": _with(base, "a.md", "..", at),
        "absolute": host,
        "drive": drive + "/".join([*base, "a.md"]),
        "unc": "//server/share/" + "/".join([*base, "a.md"]),
        "control": _with(base, "a.md", f"x{control}y", at),
        "reserved": "/".join([*base, reserved]),
        "backslash": "\\".join([*base, "a.md"]),
    }[kind]
    with pytest.raises(WriteNotAllowed):
        writable_path(policy(tree), path)


# -- the policy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("extension", sorted(NEVER_WRITTEN))
def test_office_files_and_pdfs_can_never_be_made_writable(tmp_path: Path, extension: str) -> None:
    with pytest.raises(ConfigError, match="only reads"):
        WritePolicy(tmp_path, extensions=(".md", extension.upper()))


def test_a_policy_refuses_a_hidden_or_climbing_folder(tmp_path: Path) -> None:
    for bad in ("../up", ".git", "inbox/../x"):
        with pytest.raises(ConfigError):
            WritePolicy(tmp_path, folders=(bad,))


def test_the_whole_root_can_be_writable(tmp_path: Path) -> None:
    target = writable_path(WritePolicy(tmp_path, folders=("",)), "top.md")
    assert target.rel == "top.md"
    with pytest.raises(WriteNotAllowed, match="hidden"):
        writable_path(WritePolicy(tmp_path, folders=("",)), ".obsidian/x.md")


def test_a_leading_slash_is_read_from_the_root_as_the_read_guard_reads_it(tree: Path) -> None:
    assert writable_path(policy(tree), "/inbox/new.md").rel == "inbox/new.md"
    assert writable_path(policy(tree), "inbox//./new.md").rel == "inbox/new.md"


def test_size_is_checked_against_max_bytes(tmp_path: Path) -> None:
    p = WritePolicy(tmp_path, max_bytes=10)
    check_size(p, b"x" * 10, "inbox/a.md")
    with pytest.raises(NoteTooLarge, match="over the 10-byte limit"):
        check_size(p, b"x" * 11, "inbox/a.md")


# -- the disk -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("inbox/out/new.md", "symlink on the way"),  # a folder link leading out of the root
        ("inbox/in/new.md", "symlink on the way"),  # a folder link that stays inside
        ("notes/daily/new.md", "symlink on the way"),  # the writable folder itself is a link
        ("inbox/link.md", "is a symlink"),
        ("inbox/hard.md", "2 hard links"),
        ("inbox/sub", "not a regular file"),
    ],
)
def test_links_and_odd_files_are_refused_on_disk(tree: Path, path: str, words: str) -> None:
    if path == "inbox/sub":
        path = "inbox/sub.md"
        (tree / path).mkdir(exist_ok=True)
    with pytest.raises(WriteNotAllowed, match=words):
        writable_path(policy(tree), path)


def test_the_index_folder_is_refused_even_when_it_is_not_hidden(tree: Path) -> None:
    p = policy(tree, index_dir=tree / "inbox" / "index")
    with pytest.raises(WriteNotAllowed, match="index folder"):
        writable_path(p, "inbox/index/notes.md")
    assert writable_path(p, "inbox/indexed.md").rel == "inbox/indexed.md"


def test_what_the_knowledge_base_ignores_is_refused(tree: Path) -> None:
    (tree / ".kbseekignore").write_text("inbox/private/\n*.draft.md\n")
    p = policy(tree, excluded=ignored_by(Exclusion(tree, exclude_dirs=("scratch",))))
    for path in ("inbox/private/a.md", "inbox/x.draft.md", "inbox/node_modules/a.md", "inbox/scratch/a.md"):
        with pytest.raises(WriteNotAllowed, match="ignores"):
            writable_path(p, path)
    assert writable_path(p, "inbox/public.md").rel == "inbox/public.md"


def test_missing_folders_are_created_inside_a_writable_folder_only(tmp_path: Path) -> None:
    p = WritePolicy(tmp_path, folders=("notes/inbox",))
    deep = writable_path(p, "notes/inbox/2026/05/a.md")
    with pytest.raises(NoteNotFound, match="inside the folders they may touch"):
        deep.open_parent(create=True)  # 'notes' is above the writable folder: never made
    (tmp_path / "notes").mkdir()
    with pytest.raises(NoteNotFound):
        deep.open_parent(create=False)
    os.close(deep.open_parent(create=True))
    assert (tmp_path / "notes/inbox/2026/05").is_dir()


def test_a_link_planted_where_a_folder_is_about_to_be_made_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "kb"
    root.mkdir()
    target: WriteTarget = writable_path(WritePolicy(root), "inbox/new/a.md")  # nothing exists yet
    (root / "inbox").symlink_to(outside)  # planted between the check and the write
    with pytest.raises(WriteNotAllowed, match="symlink on the way"):
        target.open_parent(create=True)
    assert list(outside.iterdir()) == []


def test_a_folder_swapped_for_a_link_after_the_check_is_refused_at_write_time(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "inbox/sub").mkdir(parents=True)
    target = writable_path(WritePolicy(root), "inbox/sub/a.md")
    (root / "inbox/sub").rmdir()
    (root / "inbox/sub").symlink_to(tmp_path)
    with pytest.raises(WriteNotAllowed, match="symlink"):
        target.open_parent(create=True)


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("", "empty"),
        ("inbox/", "names a folder"),
        ("inbox/a.doc", "extension"),
        ("inbox/a.PDF", "extension"),
        ("inbox/noext", "extension"),
        ("drafts/a.md", "outside the folders"),
        ("inbox.md", "outside the folders"),
        ("inbox/.a.md", "hidden"),
        ("inbox/a.md.", "ends with"),
        ("inbox/a\u200f.md", "invisible"),
        ("inbox/a\ud800.md", "surrogate"),
        ("inbox/" + "é" * 130 + ".md", "bytes"),
        ("~/inbox/a.md", "home"),
        ("\\\\server\\share\\a.md", "UNC"),
    ],
)
def test_each_refusal_says_what_was_wrong(tree: Path, path: str, words: str) -> None:
    with pytest.raises(WriteNotAllowed, match=words) as caught:
        writable_path(policy(tree), path)
    message = str(caught.value)
    assert message.count(". ") == 0 or "(" in message, "one sentence"
    assert ";" in message, "what was wrong; what to do"
