"""Markdown parsing: frontmatter, titles, headings, and chunk invariants over generated documents."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.documents import Chunk, ParsedDocument
from kbseek.ingest.chunker import ChunkOptions, LineIndex
from kbseek.ingest.parsers import Registry
from kbseek.ingest.parsers.markdown import MarkdownParser
from kbseek.ingest.parsers.text import decode_warnings

PARSER = MarkdownParser()
ROOMY = ChunkOptions(target_chars=1000, max_chars=1600, overlap_chars=150, min_chars=0)


def parse(text: str, path: str = "notes/sample-note.md", options: ChunkOptions = ROOMY) -> ParsedDocument:
    return PARSER.parse(path, text, options)


# ------------------------------------------------------------------ format


def test_the_parser_declares_its_name_suffixes_and_media_type() -> None:
    assert (PARSER.name, PARSER.extensions, PARSER.media_type) == (
        "md",
        (".md", ".markdown", ".mdx"),
        "text/markdown",
    )
    registry = Registry(["md"])
    assert isinstance(registry.for_path("a/b.MARKDOWN"), MarkdownParser)
    assert isinstance(registry.for_path("docs/intro.mdx"), MarkdownParser)


def test_decoding_strips_a_bom_and_keeps_line_endings() -> None:
    assert PARSER.decode("\ufeff# Title\r\nbody\r\n".encode()) == "# Title\r\nbody\r\n"


def test_text_that_is_not_utf8_is_decoded_only_when_the_encoding_is_sure() -> None:
    """Shift_JIS kanji whose only clean reading is cp932 are read so, and say so; a word with one plain
    letter is too little to tell an encoding by, and is refused rather than guessed (café is read)."""
    decoded = PARSER.decode("障害".encode("shift_jis"))
    assert decoded == "障害" and decode_warnings(decoded) == (
        "decoded from cp932 (Shift_JIS); served as UTF-8",
    )
    with pytest.raises(ValueError, match=r"^not text in a known encoding: "):
        PARSER.decode("été".encode("cp1252"))
    assert PARSER.decode(b"caf\xe9") == "café"


# ------------------------------------------------------------- frontmatter

RUNBOOK = """---
title: Rolling back a deployment
date: 2024-11-18
tags: [deploy, rollback]
topic: operations
owner: {team: platform, since: 2023-01-05}
---

# Rollback

Put the last good build back first, investigate afterwards.
"""


def test_frontmatter_fields_become_document_metadata() -> None:
    doc = parse(RUNBOOK)
    assert doc.title == "Rolling back a deployment"
    assert doc.date == "2024-11-18"
    assert doc.tags == ("deploy", "rollback")
    assert doc.frontmatter["topic"] == "operations"
    assert doc.frontmatter["owner"] == {"team": "platform", "since": "2023-01-05"}
    assert doc.warnings == ()
    json.dumps(doc.frontmatter)


def test_the_frontmatter_block_is_not_chunked_but_offsets_stay_absolute() -> None:
    doc = parse(RUNBOOK)
    body = RUNBOOK.index("# Rollback")
    assert doc.chunks[0].start == body
    assert doc.chunks[0].line_start == 9
    assert all(RUNBOOK[c.start : c.end] == c.text for c in doc.chunks)
    assert "title:" not in "".join(c.text for c in doc.chunks)


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ("tags: deploy, rollback plan, deploy", ("deploy", "rollback plan")),
        ("tags: deploy rollback", ("deploy", "rollback")),
        ("tags: [deploy, 2024, true, 障害]", ("deploy", "2024", "true", "障害")),
        ("tags:\n  - one\n  - two", ("one", "two")),
        ("tags: ''", ()),
        ("tags:", ()),
    ],
)
def test_tags_may_be_a_list_or_a_comma_or_space_separated_string(
    tags: str, expected: tuple[str, ...]
) -> None:
    assert parse(f"---\n{tags}\n---\nbody\n").tags == expected


def test_tags_of_the_wrong_shape_are_a_warning() -> None:
    doc = parse("---\ntags: {a: 1}\n---\nbody\n")
    assert doc.tags == ()
    assert any("tags" in w for w in doc.warnings)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-11-18", "2024-11-18"),
        ("2024-11-18 10:30:00", "2024-11-18T10:30:00"),
        ("'18 Nov 2024'", "18 Nov 2024"),
        ("2024", "2024"),
    ],
)
def test_dates_are_strings_in_iso_form_when_yaml_reads_a_date(value: str, expected: str) -> None:
    doc = parse(f"---\ndate: {value}\n---\nbody\n")
    assert doc.date == expected
    json.dumps(doc.frontmatter)


def test_a_document_without_a_date_has_none() -> None:
    assert parse("# Title\n\nbody\n").date is None


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ("title: [unclosed\nother: x", "not valid YAML (line 3)"),
        ("title: 'quote\n", "not valid YAML"),
        ("- just\n- a list", "a list, not a mapping"),
        ("plain words", "a single str value, not a mapping"),
        ("date: 2024-13-45", "invalid value"),
        ("a: &x [*x]", "too large or too deeply nested"),
    ],
)
def test_malformed_frontmatter_is_a_warning_and_the_body_is_still_chunked(header: str, problem: str) -> None:
    text = f"---\n{header}\n---\n# Heading\n\nThe body survives.\n"
    doc = parse(text)
    assert any(problem in w for w in doc.warnings), doc.warnings
    assert doc.frontmatter == {}
    assert doc.title == "Heading"
    assert [c.text for c in doc.chunks] == ["# Heading\n\nThe body survives."]


def test_an_unclosed_frontmatter_block_is_read_as_markdown_with_a_warning() -> None:
    doc = parse("---\ntitle: x\n\nbody\n")
    assert any("never closed" in w for w in doc.warnings)
    assert "body" in doc.chunks[-1].text


def test_frontmatter_may_close_with_three_dots_and_may_be_empty() -> None:
    assert parse("---\ntitle: Dots\n...\nbody\n").title == "Dots"
    doc = parse("---\n---\nbody\n")
    assert (doc.frontmatter, doc.warnings, doc.chunks[0].text) == ({}, (), "body")


def test_a_document_that_is_only_frontmatter_has_no_chunks() -> None:
    assert parse("---\ntitle: Empty\n---\n\n  \n").chunks == ()


# ------------------------------------------------------------ titles, paths


def test_the_frontmatter_title_wins_over_the_first_h1_and_the_file_name() -> None:
    assert parse("---\ntitle: From YAML\n---\n# From H1\n").title == "From YAML"


def test_the_first_h1_is_the_title_when_frontmatter_has_none() -> None:
    assert parse("Intro\n\n# First H1\n\n# Second H1\n").title == "First H1"
    assert parse("Setext Title\n============\n\nbody\n").title == "Setext Title"


def test_the_first_heading_of_any_level_is_the_title_when_there_is_no_h1() -> None:
    # A book chapter split into files opens each file at H2; its file name is no title.
    text = "## Shared-State Concurrency\n\nMessage passing is one way.\n\n### Mutexes\n\nLocks.\n"
    doc = parse(text, path="src/ch16-03-shared-state.md")
    assert doc.title == "Shared-State Concurrency"
    assert doc.chunks[-1].heading_path == ("Shared-State Concurrency", "Mutexes")


def test_the_file_stem_is_the_title_when_nothing_else_names_the_document() -> None:
    assert parse("Only a paragraph.\n\nbody\n", path="notes/meeting-2024.md").title == "meeting-2024"
    assert parse("## {#only-an-anchor}\n\nbody\n", path="notes/meeting-2024.md").title == "meeting-2024"


@pytest.mark.parametrize(
    ("heading", "shown"),
    [
        ("KeepAlive {#keepalive}", "KeepAlive"),
        ("Events {#events .api-heading}", "Events"),
        ("When a regular variable isn’t enough {/*when-a-regular-variable-isnt-enough*/}",
         "When a regular variable isn’t enough"),
        ("`<script>` {/*script*/}", "<script>"),
        ('defineModel() <sup class="vt-badge" data-text="3.4+" />', "defineModel()"),
        ('Suspense <Badge type="warning" text="experimental" />', "Suspense"),
        ("Install <!-- TODO: screenshots --> the CLI", "Install the CLI"),
        ("See [the guide](https://example.com/guide \"Guide\") first", "See the guide first"),
        ("Status [![CI](https://img.shields.io/ci.svg)](https://ci.example.com)", "Status"),
        ("Use <kbd>Ctrl</kbd>+<kbd>C</kbd> &amp; retry", "Use Ctrl+C & retry"),
        ("ネストされたオブジェクト {#nested-objects}", "ネストされたオブジェクト"),
    ],
)  # fmt: skip
def test_titles_and_heading_paths_are_display_text_without_markup(heading: str, shown: str) -> None:
    doc = parse(f"# {heading}\n\nIntro.\n\n## Next {{#next}}\n\nBody.\n")
    assert doc.title == shown
    assert doc.chunks[-1].heading_path == (shown, "Next")


def test_a_frontmatter_title_is_text_and_kept_as_written() -> None:
    # React's reference pages are titled "<Suspense>": the title names the component.
    assert parse("---\ntitle: <Suspense>\n---\n\nBody.\n").title == "<Suspense>"


def test_the_title_is_not_repeated_when_the_first_h1_equals_it() -> None:
    text = "# Deploy runbook\n\nIntro.\n\n## Rollback\n\nSteps.\n\n### Database\n\nRestore it.\n"
    paths = [c.heading_path for c in parse(text).chunks]
    assert paths == [
        ("Deploy runbook",),
        ("Deploy runbook", "Rollback"),
        ("Deploy runbook", "Rollback", "Database"),
    ]


def test_an_h1_that_differs_from_the_title_stays_in_the_path() -> None:
    doc = parse("---\ntitle: Deploy runbook\n---\n# Rollback\n\n## Database\n\nRestore it.\n")
    assert doc.chunks[-1].heading_path == ("Deploy runbook", "Rollback", "Database")


def test_japanese_headings_form_the_heading_path() -> None:
    text = (
        "# 障害対応メモ\n\n## 概要\n\nキャッシュが切れて全面障害になった。\n\n"
        "## 再発防止策\n\n- TTL にゆらぎを入れる\n"
    )
    doc = parse(text)
    assert doc.title == "障害対応メモ"
    assert [c.heading_path for c in doc.chunks] == [
        ("障害対応メモ",),
        ("障害対応メモ", "概要"),
        ("障害対応メモ", "再発防止策"),
    ]


def test_heading_text_drops_inline_markup() -> None:
    doc = parse("# Title\n\n## Use `kubectl` *carefully* [here](http://x) ![the *logo*](l.png)\n\nbody\n")
    assert doc.chunks[-1].heading_path == ("Title", "Use kubectl carefully here the logo")


def test_setext_headings_open_sections() -> None:
    doc = parse("Title\n=====\n\nintro\n\nPart two\n--------\n\nmore\n")
    assert doc.chunks[-1].heading_path == ("Title", "Part two")


def test_a_hash_inside_a_code_fence_is_not_a_heading() -> None:
    text = "# Title\n\n## Setup\n\n```bash\n# install the tools\nmake\n```\n\nafter\n"
    doc = parse(text)
    assert [c.heading_path for c in doc.chunks] == [("Title",), ("Title", "Setup")]
    assert "# install the tools" in doc.chunks[-1].text


# ------------------------------------------------------------------ blocks


def test_a_nested_list_is_one_block() -> None:
    text = "# T\n\n- one\n  - one a\n  - one b\n- two\n\n  continued\n"
    options = ChunkOptions(target_chars=20, max_chars=200, overlap_chars=0, min_chars=0)
    doc = parse(text, options=options)
    assert [c.text for c in doc.chunks] == ["# T", "- one\n  - one a\n  - one b\n- two\n\n  continued"]


def test_a_table_that_fits_is_one_block() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |"
    options = ChunkOptions(target_chars=10, max_chars=40, overlap_chars=0, min_chars=0)
    assert table in [c.text for c in parse(f"intro\n\n{table}\n\noutro\n", options=options).chunks]


def test_link_reference_definitions_are_still_chunked() -> None:
    doc = parse("# T\n\nSee [the docs][d].\n\n[d]: https://example.com/docs\n")
    assert "https://example.com/docs" in doc.chunks[-1].text


def test_crlf_files_keep_exact_offsets_and_line_numbers() -> None:
    text = "---\r\ntitle: Win\r\n---\r\n# Head\r\n\r\nline one\r\nline two\r\n\r\n## Next\r\n\r\nmore\r\n"
    doc = parse(text)
    assert [(c.text, c.line_start, c.line_end) for c in doc.chunks] == [
        ("# Head\r\n\r\nline one\r\nline two", 4, 7),
        ("## Next\r\n\r\nmore", 9, 11),
    ]


def test_duplicated_paragraphs_get_distinct_ids() -> None:
    text = "# T\n\n" + "Same words again and again.\n\n" * 3
    options = ChunkOptions(target_chars=27, max_chars=27, overlap_chars=0, min_chars=0)
    chunks = [c for c in parse(text, options=options).chunks if c.text == "Same words again and again."]
    assert len(chunks) == 3
    assert len({c.chunk_id for c in chunks}) == 3


# ---------------------------------------------------------- generated docs

# Fixed vocabularies keep generation cheap; the structure is what varies.
_LATIN = st.sampled_from(
    [
        "deploy",
        "rollback",
        "cache",
        "primary",
        "replica",
        "queue",
        "worker",
        "token",
        "lease",
        "a",
        "bb",
        "ccc",
    ]
)
_KANA = st.sampled_from(
    ["障害", "対応", "設計", "手順", "概要", "キャッシュ", "あいう", "復旧", "確認", "データベース"]
)
_WORD = st.one_of(_LATIN, _KANA)


def _line(max_words: int = 12) -> st.SearchStrategy[str]:
    return st.lists(_WORD, min_size=1, max_size=max_words).map(" ".join)


@dataclass
class Generated:
    """A generated document and what it was built from, to check the parser against."""

    text: str
    body_start: int
    fences: list[tuple[int, int]] = field(default_factory=list)
    tables: list[tuple[int, int]] = field(default_factory=list)
    paragraphs: list[tuple[int, int]] = field(default_factory=list)


@st.composite
def _part(draw: st.DrawFn, nl: str) -> tuple[str, str]:
    kind = draw(
        st.sampled_from(
            [
                "heading",
                "heading",
                "setext",
                "para",
                "para",
                "long",
                "japanese",
                "fence",
                "list",
                "table",
                "quote",
            ]
        )
    )
    if kind == "heading":
        return kind, "#" * draw(st.integers(1, 4)) + " " + draw(_line(4))
    if kind == "setext":
        return kind, draw(_line(4)) + nl + draw(st.sampled_from(["===", "---"]))
    if kind == "para":
        return kind, nl.join(draw(st.lists(_line(), min_size=1, max_size=4)))
    if kind == "long":
        return "para", nl.join(draw(st.lists(_line(), min_size=8, max_size=30)))
    if kind == "japanese":
        sentences = draw(st.lists(_KANA.map(lambda s: s + "。"), min_size=1, max_size=60))
        return "para", "".join(sentences)
    if kind == "fence":
        body = draw(st.lists(st.one_of(_line(), _line(3).map(lambda s: "# fencehead " + s)), max_size=25))
        return kind, nl.join(["```", *body, "```"])
    if kind == "list":
        items = draw(st.lists(st.tuples(st.booleans(), _line()), min_size=1, max_size=12))
        return kind, nl.join(("  - " if nested else "- ") + words for nested, words in items)
    if kind == "table":
        rows = draw(st.lists(st.tuples(_WORD, _WORD), min_size=1, max_size=20))
        return kind, nl.join(["| a | b |", "|---|---|", *(f"| {x} | {y} |" for x, y in rows)])
    return kind, nl.join("> " + line for line in draw(st.lists(_line(), min_size=1, max_size=5)))


_FRONTMATTER = [
    "",
    "---{nl}title: Generated note{nl}tags: alpha, beta{nl}date: 2024-05-06{nl}---{nl}",
    "---{nl}title: [broken{nl}---{nl}",
    "---{nl}- not{nl}- a mapping{nl}---{nl}",
]


@st.composite
def documents(draw: st.DrawFn) -> Generated:
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    front = draw(st.sampled_from(_FRONTMATTER)).format(nl=nl)
    parts = draw(st.lists(_part(nl), max_size=18))
    doc = Generated(text=front, body_start=len(front))
    for kind, source in parts:
        if doc.text != front:
            doc.text += nl * draw(st.integers(2, 3))
        start = len(doc.text)
        doc.text += source
        span = (start, len(doc.text))
        {"fence": doc.fences, "table": doc.tables, "para": doc.paragraphs}.get(kind, []).append(span)
    doc.text += draw(st.sampled_from(["", nl]))
    return doc


@st.composite
def options(draw: st.DrawFn) -> ChunkOptions:
    target = draw(st.integers(40, 800))
    return ChunkOptions(
        target_chars=target,
        max_chars=draw(st.integers(target, target * 2)),
        overlap_chars=draw(st.integers(0, target // 2)),
        min_chars=draw(st.integers(0, target - 1)),
    )


FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_offsets_order_and_coverage(doc: Generated, chunks: tuple[Chunk, ...]) -> None:
    covered = bytearray(len(doc.text))
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal
        assert chunk.start < chunk.end
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.line_start == len(re.findall(r"\r\n|\n", doc.text[: chunk.start])) + 1
        assert chunk.line_end >= chunk.line_start
        covered[chunk.start : chunk.end] = b"\1" * (chunk.end - chunk.start)
    for before, after in itertools.pairwise(chunks):
        assert before.start < after.start and before.end < after.end
    missing = [
        i for i in range(doc.body_start, len(doc.text)) if not doc.text[i].isspace() and not covered[i]
    ]
    assert not missing
    assert all(c.start >= doc.body_start for c in chunks)


@FAST
@given(documents(), options())
def test_generated_documents_give_chunks_that_slice_the_source_in_order_and_cover_the_body(
    doc: Generated, opts: ChunkOptions
) -> None:
    _check_offsets_order_and_coverage(doc, parse(doc.text, options=opts).chunks)


@FAST
@given(documents(), options())
def test_no_chunk_exceeds_max_chars_unless_it_is_a_single_fence_or_table(
    doc: Generated, opts: ChunkOptions
) -> None:
    whole = set(doc.fences) | set(doc.tables)
    for chunk in parse(doc.text, options=opts).chunks:
        assert len(chunk.text) <= opts.max_chars or (chunk.start, chunk.end) in whole


@FAST
@given(documents(), options())
def test_a_fence_that_fits_is_never_split_and_its_hash_lines_never_become_headings(
    doc: Generated, opts: ChunkOptions
) -> None:
    chunks = parse(doc.text, options=opts).chunks
    for start, end in doc.fences:
        if end - start > opts.max_chars:
            continue  # a longer fence is split on lines: no chunk may exceed max_chars
        for chunk in chunks:
            assert chunk.end <= start or chunk.start >= end or (chunk.start <= start and chunk.end >= end)
    assert not any("fencehead" in name for chunk in chunks for name in chunk.heading_path)


@FAST
@given(documents(), options())
def test_reparsing_unchanged_text_gives_the_same_ids(doc: Generated, opts: ChunkOptions) -> None:
    assert parse(doc.text, options=opts) == parse(doc.text, options=opts)


@FAST
@given(documents(), options(), st.data())
def test_a_same_length_edit_changes_only_the_ids_of_chunks_that_contain_it(
    doc: Generated, opts: ChunkOptions, data: st.DataObject
) -> None:
    if not doc.paragraphs:
        return
    start, end = data.draw(st.sampled_from(doc.paragraphs))
    letters = [i for i in range(start, end) if "a" <= doc.text[i] <= "z"]
    if not letters:
        return
    at = data.draw(st.sampled_from(letters))
    edited = doc.text[:at] + ("q" if doc.text[at] != "q" else "z") + doc.text[at + 1 :]
    before, after = parse(doc.text, options=opts).chunks, parse(edited, options=opts).chunks
    assert [(c.start, c.end) for c in before] == [(c.start, c.end) for c in after]
    texts = [c.text for c in before] + [c.text for c in after]
    for old, new in zip(before, after, strict=True):
        if old.start <= at < old.end:
            assert old.chunk_id != new.chunk_id
        elif texts.count(old.text) == 2:  # unique in each version, so its occurrence number is stable
            assert old.chunk_id == new.chunk_id


_SECTION = st.lists(_line(6), min_size=1, max_size=3)


@settings(max_examples=100, deadline=None)
@given(st.lists(_SECTION, min_size=2, max_size=8), st.data())
def test_growing_one_section_leaves_the_ids_of_the_other_sections_unchanged(
    sections: list[list[str]], data: st.DataObject
) -> None:
    def render(secs: list[list[str]]) -> str:
        return "\n\n".join(f"## Section {i}\n\n" + "\n\n".join(paras) for i, paras in enumerate(secs))

    opts = ChunkOptions(target_chars=800, max_chars=1000, overlap_chars=50, min_chars=10)
    victim = data.draw(st.integers(0, len(sections) - 1))
    grown = [list(paras) for paras in sections]
    grown[victim][-1] += " extra words"
    before, after = parse(render(sections), options=opts).chunks, parse(render(grown), options=opts).chunks
    assert len(before) == len(after) == len(sections)
    for i, (old, new) in enumerate(zip(before, after, strict=True)):
        assert (old.chunk_id == new.chunk_id) == (i != victim)


# ------------------------------------------------------------- MDX, markup

MDX = """---
title: State
---
import { Sandpack } from './components';
import Diagram from "./Diagram"

<Intro>

Components need to *remember* things.

</Intro>

## Adding a state variable {/*adding-a-state-variable*/}

<Sandpack>

```js
import { useState } from 'react';
export default function Counter() { return <b>{count}</b>; }
```

</Sandpack>

<Note>Call Hooks at the top level.</Note>
"""


def test_an_mdx_document_is_chunked_as_markdown_with_clean_heading_paths() -> None:
    doc = parse(MDX, path="learn/state.mdx")
    assert doc.title == "State"
    assert [c.heading_path for c in doc.chunks] == [("State",), ("State", "Adding a state variable")]
    for chunk in doc.chunks:  # chunks stay slices of the file: markup is dropped only from display text
        assert MDX[chunk.start : chunk.end] == chunk.text
        assert chunk.line_start == MDX[: chunk.start].count("\n") + 1
    assert doc.chunks[0].text.startswith("import { Sandpack }")


_MARKUP_LINE = st.sampled_from(
    [
        "import X from './x'", "export const meta = {}", "<Intro>", "</Intro>", "<!-- note -->", "::: tip Note",
        ":::", "<Badge text=\"new\" />", "[link](https://example.com/a)", "![img](i.png)", "`<b>code</b>`",
        "<script setup>\nconst a = 1\n</script>", "{/*anchor*/}", "&amp;", "<sup>3.3+</sup>",
    ]
)  # fmt: skip
_HEADING_MARKUP = st.sampled_from(["", " {#anchor}", " {/*anchor*/}", ' <Badge text="x" />', " <!-- c -->"])


@st.composite
def marked_up(draw: st.DrawFn) -> str:
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["heading", "markup", "para"]))
        if kind == "heading":
            parts.append("#" * draw(st.integers(1, 3)) + " " + draw(_line(3)) + draw(_HEADING_MARKUP))
        elif kind == "markup":
            parts.append(draw(_MARKUP_LINE).replace("\n", nl))
        else:
            parts.append(draw(_line()) + " " + draw(_MARKUP_LINE).replace("\n", nl) + " " + draw(_line(3)))
    return (nl * 2).join(parts) + nl


@FAST
@given(marked_up(), options())
def test_markup_heavy_documents_keep_offsets_and_lines_and_get_clean_heading_paths(
    text: str, opts: ChunkOptions
) -> None:
    doc = parse(text, path="docs/page.mdx", options=opts)
    for chunk in doc.chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.line_start == len(re.findall(r"\r\n|\n", text[: chunk.start])) + 1
        for name in chunk.heading_path:
            assert not re.search(r"\{[#/]|<!--|</?[A-Za-z]|\]\(", name), name


def test_a_heading_right_after_an_mdx_tag_line_stays_a_heading() -> None:
    # CommonMark reads "<DeepDive>" as the start of an HTML block running to the next blank line
    text = (
        "# Page\n\nIntro.\n\n<DeepDive>\n#### What kind of memoization? {/*what*/}\n\n"
        + "Body of the deep dive. " * 20
        + "\n\n</DeepDive>\n"
    )
    doc = Registry().for_path("a.mdx").parse("a.mdx", text, ChunkOptions())
    named = {c.heading_path for c in doc.chunks} | {s.heading_path for c in doc.chunks for s in c.sections}
    assert ("Page", "What kind of memoization?") in named
    assert "".join(c.text for c in doc.chunks).count("Body of the deep dive.") >= 20


@pytest.mark.parametrize(
    "block", ["<pre>\n# a shell comment\n</pre>", "<!--\n# commented out\n-->", "<script>\n# x\n</script>"]
)
def test_a_hash_line_inside_pre_script_or_a_comment_is_not_a_heading(block: str) -> None:
    text = f"# Page\n\n{block}\n\nAfter.\n"
    blocks = MarkdownParser().blocks(text, LineIndex(text))
    assert [b.heading for b in blocks if b.heading] == ["Page"]
