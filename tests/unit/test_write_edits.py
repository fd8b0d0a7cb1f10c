"""The edits an agent makes to a note, and the bytes they are written back as: everything an edit does
not touch stays byte for byte, a section is the one kbseek's own parser and heading paths name, front
matter stays one block that kbseek's reader reads as asked, and a note keeps its encoding and line
endings (CRLF stays CRLF, Shift_JIS stays Shift_JIS, down to bytes that decode alike)."""

from __future__ import annotations

import codecs
import datetime as dt
import re
from collections import Counter
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kbseek.documents import HEADING_SEPARATOR
from kbseek.errors import InvalidArgument
from kbseek.ingest.chunker import ChunkOptions, LineIndex
from kbseek.ingest.parsers.markdown import MarkdownParser, read_frontmatter
from kbseek.ingest.parsers.text import decode_text
from kbseek.write.edits import (
    append,
    find_replace,
    insert_after_section,
    insert_before_section,
    prepend,
    replace_section,
)
from kbseek.write.encoding import NEWLINE, decode_note, encode_note, line_start, newline_of
from kbseek.write.frontmatter import set_frontmatter

fast = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NEWLINES = st.sampled_from(["\n", "\r\n", "\r"])
WORDS = st.sampled_from(
    [
        "deploy",
        "rollback",
        "café",
        "notes",
        "x",
        "障害対応",
        "ログを確認してください",
        "サーバー",
        "手順",
        "*bold*",
    ]
)
LINE = st.lists(WORDS, min_size=1, max_size=4).map(" ".join)
BODY_LINE = st.one_of(
    LINE,
    st.sampled_from(["", "  ", "- item", "1. first", "> quoted", "***", "    indented code"]),
    st.integers(1, 4).flatmap(lambda n: LINE.map(lambda line: "#" * n + " " + line)),
    st.just("```"),  # may stay open: what follows is code, and no heading
)
ADDITION = st.lists(
    st.one_of(LINE, st.sampled_from(["", "- new item", "## New heading"])), min_size=1, max_size=5
)


def _join(lines: list[str], endings: list[str], final: bool) -> str:
    text = "".join(line + ending for line, ending in zip(lines, endings, strict=True))
    return text if final or not lines else text[: len(text) - len(endings[-1])]


@st.composite
def notes(draw: st.DrawFn, *, mixed: bool = True) -> str:
    """A note as people write them: front matter or not, Markdown lines, one line ending style or
    several, a final line ending or not."""
    lines = draw(st.lists(BODY_LINE, max_size=20))
    if draw(st.booleans()):
        lines = ["---", "title: Runbook", "tags: [ops, 障害]  # mine", "---", *lines]
    nl = draw(NEWLINES)
    if mixed and draw(st.booleans()):
        endings = draw(
            st.lists(st.sampled_from([nl, nl, "\n", "\r\n", "\r"]), min_size=len(lines), max_size=len(lines))
        )
    else:
        endings = [nl] * len(lines)
    return _join(lines, endings, draw(st.booleans()))


def _block(addition: list[str], nl: str) -> str:
    lines = list(addition)
    while lines and not lines[0].strip(" \t"):
        lines.pop(0)
    while lines and not lines[-1].strip(" \t"):
        lines.pop()
    return nl.join(lines)


def _body_start(text: str) -> int:
    lines = LineIndex(text)
    return lines.start_of(read_frontmatter(text, lines).body_line)


def _fields(text: str) -> dict[str, Any]:
    return read_frontmatter(text, LineIndex(text)).fields


def _trailing_blank_lines(text: str) -> int:
    """Complete blank lines at the end of ``text`` (none unless it ends with a line ending)."""
    if not text.endswith(("\r", "\n")):
        return 0
    lines = NEWLINE.split(text)[:-1]
    count = 0
    while lines and not lines[-1].strip(" \t"):
        lines.pop()
        count += 1
    return count


# --------------------------------------------------------------------------- append and prepend


@fast
@given(notes(), ADDITION)
def test_append_keeps_the_note_as_it_was_and_puts_the_addition_last_after_one_blank_line(
    text: str, addition: list[str]
) -> None:
    assume(_block(addition, "\n"))
    nl = newline_of(text)
    result = append(text, "\n".join(addition) + "\n\n")
    block = _block(addition, nl)
    assert result.startswith(text)
    rest = result[len(text) :]
    joint = rest[: len(rest) - len(rest.lstrip("\r\n"))]
    assert joint in ("", nl, nl + nl)
    assert rest[len(joint) :] in (block, block + nl)
    assert rest.endswith(nl) == (not text or text[-1] in "\r\n")
    if text[_body_start(text) :].strip():
        last_blank = text[-1] not in "\r\n" and not text[line_start(text, len(text)) :].strip(" \t")
        existing = _trailing_blank_lines(text + nl if last_blank else text)  # a last line of spaces is blank
        assert _trailing_blank_lines(text + joint) == max(1, existing)
    else:  # nothing above but front matter: no blank line is needed, only a line of its own
        assert joint == ("" if not text or text[-1] in "\r\n" else nl)
    assert _fields(result) == _fields(text)


@fast
@given(notes(), ADDITION)
def test_prepend_puts_the_addition_first_in_the_body_after_the_front_matter(
    text: str, addition: list[str]
) -> None:
    assume(_block(addition, "\n"))
    nl = newline_of(text)
    result = prepend(text, "\n".join(addition))
    body = _body_start(text)
    at = body + len(text[body:]) - len(re.sub(r"^(?:[ \t]*(?:\r\n|\r|\n))*", "", text[body:]))
    if not text[at:].strip():
        at = len(text)
    assert result.startswith(text[:at]) and result.endswith(text[at:])
    middle = result[at : len(result) - len(text) + at]
    block = _block(addition, nl)
    ended = not text or text[-1] in "\r\n"
    assert middle == (block + nl + nl if text[at:] else ("" if ended else nl) + block + (nl if ended else ""))
    assert result[: _body_start(result)].rstrip("\r\n") == text[:body].rstrip("\r\n")  # still first
    assert _fields(result) == _fields(text)


def test_the_joints_in_examples() -> None:
    assert append("", "new") == "new\n"
    assert append("text", "new") == "text\n\nnew"  # no final line ending before, none after
    assert append("text\n", "new\n\n\n") == "text\n\nnew\n"
    assert append("text\n\n\n", "new") == "text\n\n\nnew\n"  # blank lines there are kept, none added
    assert append("---\na: 1\n---\n", "new") == "---\na: 1\n---\nnew\n"
    assert prepend("---\na: 1\n---\n\n# Title\n", "new") == "---\na: 1\n---\n\nnew\n\n# Title\n"
    assert prepend("---\na: 1\n---\n# Title\n", "\n\nnew\n") == "---\na: 1\n---\nnew\n\n# Title\n"
    assert prepend("# Title\r\n\r\nText\r\n", "a\nb") == "a\r\nb\r\n\r\n# Title\r\n\r\nText\r\n"
    assert prepend("", "new") == "new\n"


def test_a_note_with_mixed_line_endings_keeps_each_and_adds_lines_with_the_most_common() -> None:
    mixed = "a\r\nb\r\nc\n"
    assert append(mixed, "x\ny") == "a\r\nb\r\nc\n\r\nx\r\ny\r\n"
    assert prepend(mixed, "x\ny") == "x\r\ny\r\n\r\na\r\nb\r\nc\n"
    assert set_frontmatter(mixed, {"k": "v"}) == "---\r\nk: v\r\n---\r\n" + mixed


@pytest.mark.parametrize(
    ("edit", "text"),
    [
        (prepend, "# Title\n\ntext\n\n---\n\nmore\n"),  # the note's thematic break would close it
        (append, "---\ntitle: unclosed\n\ntext\n"),  # it would close the note's open '---'
        (append, ""),
    ],
)
def test_an_addition_that_would_make_front_matter_is_refused(edit: Any, text: str) -> None:
    with pytest.raises(InvalidArgument, match="front matter"):
        edit(text, "---\ntitle: mine\n---\nbody")


def test_empty_additions_are_refused() -> None:
    for edit in (append, prepend):
        with pytest.raises(InvalidArgument, match="empty"):
            edit("text\n", " \n\n")


# --------------------------------------------------------------------------- sections

NAMES = st.sampled_from(["Deploy", "Rollback", "障害対応", "手順", "Café notes", "Steps"])


@st.composite
def outlines(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, int, int, str, str]]]:
    """A note of sections, and for each: heading start, body start, section end, level, name, and its
    heading path as a search hit shows it. Bodies hold code fences with '#' lines, which are no headings."""
    nl = draw(NEWLINES)
    count = draw(st.integers(1, 7))
    levels = [1, *draw(st.lists(st.integers(1, 4), min_size=count - 1, max_size=count - 1))]
    text, heads = "", []
    for index, level in enumerate(levels):
        name = f"{draw(NAMES)} {index}"
        start = len(text)
        text += "#" * level + " " + name + nl
        body_start = len(text)
        for part in draw(st.lists(st.sampled_from(["para", "blank", "fence", "list"]), max_size=5)):
            text += {
                "para": "Some text, ログ." + nl,
                "blank": nl,
                "fence": f"```{nl}# not a heading {index}{nl}```{nl}",
                "list": f"- item{nl}",
            }[part]
        heads.append((start, body_start, level, name))
    final = draw(st.booleans())
    if not final:
        text = text.removesuffix(nl)
    sections = []
    for i, (start, body_start, level, name) in enumerate(heads):
        end = next((h[0] for h in heads[i + 1 :] if h[2] <= level), len(text))
        stack = [h for h in heads[: i + 1] if h[2] <= level]
        chain: list[tuple[int, int, int, str]] = []
        for h in stack:
            while chain and chain[-1][2] >= h[2]:
                chain.pop()
            chain.append(h)
        names = [h[3] for h in chain]
        title = heads[0][3]
        path = [title, *(names[1:] if names[0] == title else names)]
        sections.append((start, min(body_start, len(text)), end, level, name, HEADING_SEPARATOR.join(path)))
    return text, sections


@fast
@given(outlines(), st.data(), st.sampled_from(["name", "path", "tail", "angle"]))
def test_replace_section_replaces_the_body_of_the_section_a_heading_path_names_and_nothing_else(
    outline: tuple[str, list[tuple[int, int, int, int, str, str]]], data: st.DataObject, form: str
) -> None:
    text, sections = outline
    _start, body, end, _level, name, path = data.draw(st.sampled_from(sections))
    named = {
        "name": name,
        "path": path,
        "tail": HEADING_SEPARATOR.join(path.split(HEADING_SEPARATOR)[-2:]),
        "angle": path.replace(HEADING_SEPARATOR, " > "),
    }[form]
    nl = newline_of(text)
    result = replace_section(text, named, "New text\nand 新しい行\n")
    assert result.startswith(text[:body]) and result.endswith(text[end:])
    replaced = result[body : len(result) - len(text) + end]
    assert replaced.strip("\r\n") == f"New text{nl}and 新しい行"
    assert all(e == nl for e in NEWLINE.findall(result))
    assert "# not a heading" not in replaced


@fast
@given(outlines(), st.data())
def test_inserting_before_or_after_a_section_keeps_everything_else_and_adds_one_block(
    outline: tuple[str, list[tuple[int, int, int, int, str, str]]], data: st.DataObject
) -> None:
    text, sections = outline
    start, _body, end, _level, name, path = data.draw(st.sampled_from(sections))
    nl = newline_of(text)
    before = insert_before_section(text, path, "Inserted")
    assert before.startswith(text[:start]) and before.endswith(text[start:])
    assert before[start : len(before) - len(text) + start].lstrip(nl) == "Inserted" + nl + nl
    after = insert_after_section(text, name, "Inserted")
    assert after.startswith(text[:end]) and after.endswith(text[end:])
    added = after[end : len(after) - len(text) + end]
    assert added.lstrip(nl) in ("Inserted" + nl + nl, "Inserted" + nl, "Inserted")
    assert all(e == nl for e in NEWLINE.findall(before) + NEWLINE.findall(after))


@fast
@given(outlines(), st.data())
def test_the_heading_path_of_a_search_hit_names_the_section_its_chunk_is_in(
    outline: tuple[str, list[tuple[int, int, int, int, str, str]]], data: st.DataObject
) -> None:
    text, sections = outline
    chunks = MarkdownParser().parse("note.md", text, ChunkOptions(min_chars=0)).chunks
    chunk = data.draw(st.sampled_from(chunks))
    start = max(s[0] for s in sections if s[0] <= chunk.start)
    result = insert_before_section(text, chunk.heading, "MARK")
    assert result.startswith(text[:start]) and result[start:].lstrip("\r\n").startswith("MARK")


DOC = """# Runbook

Intro.

## Deploy

Steps.

```sh
# Rollback
```

### Rollback

Undo it.

## Restore

### Rollback

Again.
"""


def test_a_heading_in_a_code_fence_is_no_section_and_a_path_tells_two_alike_apart() -> None:
    with pytest.raises(
        InvalidArgument, match=r"names 2 sections .*Runbook › Deploy › Rollback.*more of its heading path"
    ):
        replace_section(DOC, "Rollback", "x")
    changed = replace_section(DOC, "Runbook › Restore › Rollback", "Done.")
    assert changed == DOC.replace("Again.", "Done.")
    assert replace_section(DOC, "restore > rollback", "Done.") == changed  # case and '>' as hits are typed
    assert replace_section(DOC, "## Deploy", "New steps.") == DOC.replace(
        "Steps.\n\n```sh\n# Rollback\n```\n\n### Rollback\n\nUndo it.", "New steps."
    )


def test_a_missing_section_is_refused_with_the_headings_there_are() -> None:
    with pytest.raises(
        InvalidArgument, match=r"no section .* 'Deploy › Nope'; its headings are: Runbook; Runbook › Deploy;"
    ):
        replace_section(DOC, "Deploy › Nope", "x")
    many = "".join(f"## H{i}\n\ntext\n\n" for i in range(30))
    with pytest.raises(InvalidArgument, match=r"H19 and 10 more$"):
        insert_after_section(many, "Nope", "x")
    with pytest.raises(InvalidArgument, match="no headings"):
        replace_section("just text\n", "Deploy", "x")
    with pytest.raises(InvalidArgument, match="same heading path"):
        replace_section("# A\n\n## B\n\none\n\n## B\n\ntwo\n", "A › B", "x")


def test_replace_section_keeps_the_heading_unless_the_new_text_starts_with_one_of_its_level() -> None:
    doc = "# T\n\n## Deploy {#deploy}\n\nOld.\n\n### Sub\n\nOld sub.\n\n## Next\n"
    assert replace_section(doc, "Deploy", "New.") == "# T\n\n## Deploy {#deploy}\n\nNew.\n\n## Next\n"
    same = replace_section(doc, "Deploy {#deploy}", "## Deploy {#deploy}\n\nNew.")  # sent back: not doubled
    assert same == "# T\n\n## Deploy {#deploy}\n\nNew.\n\n## Next\n"
    renamed = replace_section(doc, "T › Deploy", "## Shipping\nNew.")
    assert renamed == "# T\n\n## Shipping\n\nNew.\n\n## Next\n"
    deeper = replace_section(doc, "Deploy", "### First\n\nNew.")
    assert deeper == "# T\n\n## Deploy {#deploy}\n\n### First\n\nNew.\n\n## Next\n"
    with pytest.raises(InvalidArgument, match="level-1 heading, above the section's level 2"):
        replace_section(doc, "Deploy", "# Top\n\nNew.")
    assert replace_section(doc, "Deploy", "") == "# T\n\n## Deploy {#deploy}\n\n## Next\n"
    assert replace_section("# T\n## A\n## B", "A", "x") == "# T\n## A\n\nx\n\n## B"
    assert replace_section("# T\n## A", "A", "x") == "# T\n## A\n\nx"
    assert replace_section("# T\n## A\ntight\n## B\n", "A", "x") == "# T\n## A\nx\n## B\n"  # its style kept


def test_text_that_would_turn_the_rest_of_the_note_into_code_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="code fence"):
        insert_before_section(DOC, "Deploy", "```\nunclosed")
    with pytest.raises(InvalidArgument, match="code fence"):
        replace_section(DOC, "Deploy", "<!-- open comment")
    assert append(DOC, "```\nunclosed").endswith("```\nunclosed\n")  # nothing after it to change


def test_japanese_headings_and_text() -> None:
    doc = (
        "---\ntitle: 障害対応の手順\n---\n# 障害対応の手順\n\n## 再起動\n\n古い手順。\n\n## 連絡先\n\n上長\n"
    )
    result = replace_section(doc, f"障害対応の手順{HEADING_SEPARATOR}再起動", "新しい手順。\n確認すること。")
    assert result == doc.replace("古い手順。", "新しい手順。\n確認すること。")
    assert insert_after_section(doc, "再起動", "追記") == doc.replace(
        "古い手順。\n\n", "古い手順。\n\n追記\n\n"
    )


# --------------------------------------------------------------------------- find and replace


@fast
@given(
    st.text(alphabet="ab\n", max_size=40),
    st.text(alphabet="ab\n", min_size=1, max_size=3),
    st.text(alphabet="abc\n", max_size=4),
    st.integers(1, 4),
)
def test_find_replace_replaces_exactly_the_expected_count_or_says_how_many_there_are(
    text: str, find: str, replace: str, expected: int
) -> None:
    count = text.count(find)
    if count == expected:
        assert find_replace(text, find, replace, expected) == text.replace(find, replace)
    else:
        with pytest.raises(InvalidArgument, match=f"occurs {count} times" if count else "does not occur"):
            find_replace(text, find, replace, expected)


def test_find_replace_arguments_and_line_endings() -> None:
    with pytest.raises(InvalidArgument, match="empty"):
        find_replace("text", "", "x")
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InvalidArgument, match="expected_replacements"):
            find_replace("text", "t", "x", bad)  # type: ignore[arg-type]
    crlf = "one\r\ntwo\r\nthree\r\n"
    assert find_replace(crlf, "two\nthree", "2\n3") == "one\r\n2\r\n3\r\n"  # LF sent for a CRLF note
    with pytest.raises(InvalidArgument, match="between the CR and LF"):
        find_replace(crlf, "\ntwo", "x")
    assert find_replace("a.b", ".", "[.*]") == "a[.*]b"  # literal, not a pattern


def test_find_replace_may_change_a_field_but_not_break_or_make_front_matter() -> None:
    doc = "---\ntitle: Old\n---\nbody\n"
    assert _fields(find_replace(doc, "title: Old", "title: New")) == {"title": "New"}
    with pytest.raises(InvalidArgument, match="not valid YAML"):
        find_replace(doc, "title: Old", "title: [unclosed")
    with pytest.raises(InvalidArgument, match="end the note's front matter"):
        find_replace(doc, "---\nbody", "body")
    with pytest.raises(InvalidArgument, match="add a front-matter block"):
        find_replace("# T\n\n---\n\nx\n", "# T", "---\na: 1")


# --------------------------------------------------------------------------- front matter

KEYS = ["title", "tags", "date", "owner", "status", "priority", "aliases", "draft", "担当", "due-date"]
SCALARS = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.dates(),
)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3))


def _as_read(value: Any) -> Any:
    """``value`` as kbseek's reader gives it back from front matter: a date as ISO text."""
    if isinstance(value, list):
        return [_as_read(v) for v in value]
    return value.isoformat() if isinstance(value, dt.date) else value


def _one_line(value: Any, **style: Any) -> str:
    return yaml.safe_dump(value, allow_unicode=True, width=1 << 20, **style).removesuffix("\n...\n").strip()


@st.composite
def frontmatters(draw: st.DrawFn) -> tuple[str, dict[str, list[str]], list[str]]:
    """A note with front matter written by hand: fields in any order, some lists as '-' lines,
    comments after values and on lines of their own. Also each field's lines, and the comment lines."""
    nl = draw(NEWLINES)
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=len(KEYS)))
    entries: dict[str, list[str]] = {}
    comments: list[str] = []
    lines: list[str] = []
    for key in keys:
        value = draw(VALUES)
        if isinstance(value, list) and value and draw(st.booleans()):
            entry = [f"{key}:", *(f"  - {_one_line(v)}" for v in value)]
        else:
            entry = [f"{key}: {_one_line(value, default_flow_style=True)}"]
        assume(not any(NEWLINE.search(line) for line in entry))
        if draw(st.booleans()):
            entry[-1] += "  # about " + key
        if draw(st.booleans()):
            comments.append("# " + key + " follows")
            lines.append(comments[-1])
        entries[key] = entry
        lines += entry
    body = draw(st.sampled_from(["", "# Title\n\nText.\n", "---\n\nnot front matter\n", "本文。"]))
    text = nl.join(["---", *lines, "---", ""]) + body.replace("\n", nl)
    assume(list(_fields(text)) == keys)
    return text, entries, comments


def _in_order(lines: list[str], within: list[str]) -> bool:
    at = 0
    for line in lines:
        if line not in within[at:]:
            return False
        at = within.index(line, at) + 1
    return True


@fast
@given(frontmatters(), st.data())
def test_set_frontmatter_changes_the_fields_asked_and_keeps_every_other_line_and_the_body(
    note: tuple[str, dict[str, list[str]], list[str]], data: st.DataObject
) -> None:
    text, entries, comments = note
    changes = data.draw(
        st.dictionaries(st.sampled_from(KEYS), st.one_of(st.none(), VALUES), min_size=1, max_size=4)
    )
    result = set_frontmatter(text, changes)
    expected = {k: v for k, v in _fields(text).items() if changes.get(k, 0) is not None}
    expected |= {k: _as_read(v) for k, v in changes.items() if v is not None}
    got = _fields(result)
    assert got == expected  # what kbseek's reader reads: the fields it read before, with the changes
    assert list(got) == [k for k in entries if k in expected] + [
        k for k in changes if k in expected and k not in entries
    ]
    assert result[_body_start(result) :] == text[_body_start(text) :]
    block = NEWLINE.split(result[: _body_start(result)])
    kept = [line for key, lines in entries.items() if key not in changes for line in lines]
    assert _in_order(kept, block) and _in_order(comments, block)  # untouched lines, as written, in order
    assert block[0] == "---" and block.count("---") == 2  # one block
    nl = newline_of(text)
    assert all(e == nl for e in NEWLINE.findall(result[: _body_start(result)]))


@fast
@given(
    st.sampled_from(["", "# Title\n\nText.\n", "Just text", "本文\r\n"]),
    st.dictionaries(st.sampled_from(KEYS), VALUES, min_size=1, max_size=3),
)
def test_a_note_without_front_matter_gets_one_block_at_the_top_and_its_text_after_it(
    body: str, fields: dict[str, Any]
) -> None:
    result = set_frontmatter(body, fields)
    assert result.endswith(body) and result[: _body_start(result)] + body == result
    assert _fields(result) == {k: _as_read(v) for k, v in fields.items()}
    nl = newline_of(body)
    assert result.startswith("---" + nl) and result[: _body_start(result)].endswith(nl + "---" + nl)


def test_set_frontmatter_in_examples() -> None:
    doc = "---\n# my header\ntitle: Old  # keep this\ntags:\n  - a\n  - b\n# why\nowner: me\n---\n# Body\n"
    assert set_frontmatter(doc, {"title": "New: one"}) == doc.replace("Old  #", "'New: one'  #")
    assert set_frontmatter(doc, {"tags": ["x", "y z"]}) == doc.replace("  - a\n  - b", "  - x\n  - y z")
    assert set_frontmatter(doc, {"tags": None}) == doc.replace("tags:\n  - a\n  - b\n", "")
    assert set_frontmatter(doc, {"due": "2026-05-01", "n": 3}) == doc.replace(
        "owner: me\n", "owner: me\ndue: '2026-05-01'\nn: 3\n"
    )
    assert set_frontmatter(doc, {"owner": "line one\nline two"}) == doc.replace(
        "owner: me", 'owner: "line one\\nline two"'
    )
    assert set_frontmatter(doc, {"title": "Old"}) == doc  # unchanged values are not rewritten
    assert set_frontmatter("---\n---\nx", {"a": [1, "b"]}) == "---\na: [1, b]\n---\nx"
    assert set_frontmatter("---\nempty:\n---\n", {"empty": "now"}) == "---\nempty: now\n---\n"
    assert set_frontmatter("x\r\n", {"a": "b"}) == "---\r\na: b\r\n---\r\nx\r\n"
    breaks = set_frontmatter("x", {"a": "NEL\x85 LS\u2028 end", "b": ["---", "..."]})
    assert breaks == "---\na: \"NEL\\N LS\\L end\"\nb: ['---', '...']\n---\nx"
    assert _fields(breaks) == {"a": "NEL\x85 LS\u2028 end", "b": ["---", "..."]}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("---\ntitle: [unclosed\n---\nbody\n", "not valid YAML"),
        ("---\n- a\n- b\n---\nbody\n", "list, not a mapping"),
        ("---\n{title: a}\n---\nbody\n", "flow mapping"),
        ("---\ntitle: a\n\nbody without a closing line\n", "no line closes it"),
        ("---\nbase: &b x\nother: *b\n---\n", "anchor"),
        ("---\ntitle: a\ntitle: b\n---\n", "more than once"),
    ],
)
def test_front_matter_that_cannot_be_rewritten_safely_is_refused(text: str, match: str) -> None:
    field = "base" if "base" in text else "title"
    with pytest.raises(InvalidArgument, match=match):
        set_frontmatter(text, {field: "new"})


def test_set_frontmatter_refuses_unusable_fields() -> None:
    for fields in ({}, {"": 1}, {"a\nb": 1}, {"a": object()}, {"a": float("nan")}, {"a": {1: 2}}):
        with pytest.raises(InvalidArgument):
            set_frontmatter("text\n", fields)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- bytes and encodings

JAPANESE = st.sampled_from(
    [
        "サーバーが応答しないときは、まずログを確認してください。",
        "再起動の前に上長へ連絡すること。",
        "# 障害対応の手順",
        "担当: 髙橋",
        "",
    ]
)
WESTERN = st.sampled_from(["The café was closed – déjà vu.", "Größe: 12 €", "# Notes", "plain ascii", ""])
WIDE = [
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
]


@st.composite
def files(draw: st.DrawFn) -> bytes:
    """The bytes of a note: UTF-8 with or without a BOM, UTF-16/32 with one, or a legacy encoding."""
    kind = draw(
        st.sampled_from(["utf-8", "utf-8-bom", "wide", "cp932", "euc_jp", "iso2022_jp_ext", "cp1252"])
    )
    pool = (
        WESTERN
        if kind == "cp1252"
        else st.one_of(JAPANESE, WESTERN)
        if kind in ("utf-8", "utf-8-bom", "wide")
        else JAPANESE
    )
    lines = draw(st.lists(pool, min_size=1, max_size=8))
    nl = draw(NEWLINES)
    endings = draw(
        st.lists(st.sampled_from([nl, nl, "\n", "\r\n", "\r"]), min_size=len(lines), max_size=len(lines))
    )
    text = _join(lines, endings, draw(st.booleans()))
    if kind == "utf-8-bom":
        return codecs.BOM_UTF8 + text.encode()
    if kind == "wide":
        bom, codec = draw(st.sampled_from(WIDE))
        return bom + text.encode(codec)
    if kind in ("euc_jp", "iso2022_jp_ext"):
        text = text.replace("髙", "高")  # JIS X 0208 has only the common form
    return text.encode("utf-8" if kind == "utf-8" else kind)


@fast
@given(files())
def test_every_readable_note_is_written_back_byte_for_byte_and_its_shape_is_known(raw: bytes) -> None:
    try:
        note = decode_note(raw)
    except ValueError:  # kbseek cannot read it (not sure of the encoding): nor may it be edited
        return
    assert note.text == decode_text(raw)
    assert encode_note(note, note.text) == raw
    assert raw.startswith(note.bom) and note.raw == raw
    assert note.final_newline == note.text.endswith(("\r", "\n"))
    assert note.newline == newline_of(note.text)


@fast
@given(files(), st.sampled_from(["追記した行。", "added line", "新しい\n二行"]))
def test_an_edit_writes_back_the_same_encoding_and_keeps_the_bytes_it_does_not_touch(
    raw: bytes, addition: str
) -> None:
    try:
        note = decode_note(raw)
    except ValueError:
        return
    assume("\u00e9" not in addition or note.codec != "cp932")
    edited = append(note.text, addition)
    try:
        written = encode_note(note, edited, path="notes/a.md")
    except InvalidArgument as refused:  # only when the encoding cannot hold it, or would be unsure after
        assert "notes/a.md" in str(refused)
        return
    assert written.startswith(raw) or note.codec.startswith("iso2022")
    again = decode_note(written)
    assert again.text == edited and again.codec == note.codec and again.bom == note.bom
    assert all(e == note.newline for e in NEWLINE.findall(edited[len(note.text) :]))


def test_bytes_that_decode_alike_are_kept_outside_the_edit() -> None:
    """cp932 reads 0xEEF9 (NEC's row) and 0x81CA alike as ￢: encoding the whole text again would
    rewrite the user's bytes; only the edited span is encoded."""
    raw = (
        "サーバーの設定：".encode("cp932")
        + b"\xee\xf9"
        + "有効にしてください。\r\n古い行。\r\n".encode("cp932")
    )
    note = decode_note(raw)
    assert note.codec == "cp932" and note.newline == "\r\n"
    written = encode_note(note, find_replace(note.text, "古い行。", "新しい行。"))
    assert written == raw.replace("古い行。".encode("cp932"), "新しい行。".encode("cp932"))
    assert b"\xee\xf9" in written and encode_note(note, note.text) == raw


def test_text_an_encoding_cannot_hold_is_refused_naming_the_characters() -> None:
    note = decode_note("障害対応の手順です。ログを確認してください。\n".encode("cp932"))
    with pytest.raises(
        InvalidArgument,
        match=r"note runbook\.md is in cp932 \(Shift_JIS\), which cannot hold '😀' \(U\+1F600\).*iconv -f CP932",
    ):
        encode_note(note, append(note.text, "完了 😀"), path="runbook.md")


def test_bytes_kbseek_would_read_otherwise_are_refused() -> None:
    note = decode_note("Le café était fermé, déjà… Größe…\n".encode("cp1252"))
    assert note.label == "cp1252 (Windows Western)"
    with pytest.raises(InvalidArgument, match=r"could no longer be sure .* cp1252"):
        encode_note(note, "été")
    plain = decode_note(b"text\n")
    with pytest.raises(InvalidArgument, match="U\\+FEFF"):
        encode_note(plain, "\ufefftext\n")
    bom = decode_note(codecs.BOM_UTF8 + b"text\n")
    assert encode_note(bom, "new\n") == codecs.BOM_UTF8 + b"new\n"


def test_utf16_and_iso_2022_jp_notes_stay_as_they_were() -> None:
    raw = codecs.BOM_UTF16_LE + "# 手順\r\n\r\n本文\r\n".encode("utf-16-le")
    note = decode_note(raw)
    assert (note.codec, note.bom, note.newline) == ("utf-16-le", codecs.BOM_UTF16_LE, "\r\n")
    written = encode_note(note, append(note.text, "追記\n"))
    assert written == raw + "\r\n追記\r\n".encode("utf-16-le")
    jis = "障害対応の手順です。\nログを確認してください。\n".encode("iso2022_jp_ext")
    note = decode_note(jis)
    assert note.label == "ISO-2022-JP"
    edited = find_replace(note.text, "ログ", "記録")
    assert decode_text(encode_note(note, edited)) == edited


def test_newline_of_is_the_ending_most_lines_have() -> None:
    assert newline_of("") == "\n" and newline_of("one line") == "\n"
    assert newline_of("a\r\nb\r\nc\n") == "\r\n"
    assert newline_of("a\nb\r\n") == "\n"  # a tie: the first seen
    assert newline_of("a\rb\r") == "\r"
    assert Counter(NEWLINE.findall("a\r\n\r\n")) == Counter({"\r\n": 2})
