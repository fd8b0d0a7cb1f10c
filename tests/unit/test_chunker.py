"""The format-independent chunk builder: sizes, merges, overlap, ids."""

from __future__ import annotations

import hashlib
import itertools
import re
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.documents import Chunk, SectionStart
from kbseek.ingest.chunker import (
    Block,
    BlockKind,
    ChunkOptions,
    LineIndex,
    build_chunks,
    chunk_id_for,
    content_hash_for,
    table_context,
)

SMALL = ChunkOptions(target_chars=100, max_chars=160, overlap_chars=30, min_chars=20)
NO_MERGE = ChunkOptions(target_chars=100, max_chars=160, overlap_chars=0, min_chars=0)


class Doc:
    """Builds a text and its blocks together, so tests state structure instead of offsets."""

    def __init__(self, newline: str = "\n") -> None:
        self.text = ""
        self.blocks: list[Block] = []
        self.newline = newline

    def add(
        self, source: str, kind: BlockKind = BlockKind.PARAGRAPH, level: int = 0, heading: str = ""
    ) -> Doc:
        if self.text:
            self.text += self.newline * 2
        start = len(self.text)
        self.text += source
        self.blocks.append(Block(start, len(self.text), kind, level, heading))
        return self

    def heading(self, level: int, name: str) -> Doc:
        return self.add("#" * level + " " + name, BlockKind.HEADING, level, name)

    def chunks(
        self, options: ChunkOptions = SMALL, title: str = "Doc", body_start: int = 0
    ) -> tuple[Chunk, ...]:
        return build_chunks(
            "notes/doc.md", self.text, self.blocks, title=title, options=options, body_start=body_start
        )


def words(n: int, seed: str = "w") -> str:
    return " ".join(f"{seed}{i}" for i in range(n))


def assert_invariants(text: str, chunks: tuple[Chunk, ...], body_start: int = 0) -> None:
    previous: Chunk | None = None
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal
        assert chunk.start < chunk.end
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text == chunk.text.strip()
        assert chunk.start >= body_start
        assert chunk.line_start == len(re.findall(r"\r\n|\r|\n", text[: chunk.start])) + 1
        assert chunk.line_end == len(re.findall(r"\r\n|\r|\n", text[: chunk.end - 1])) + 1
        assert chunk.content_hash == content_hash_for(chunk.heading_path, chunk.text)
        if previous is not None:
            assert previous.start < chunk.start
            assert previous.end < chunk.end
        previous = chunk
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    covered = bytearray(len(text))
    for chunk in chunks:
        covered[chunk.start : chunk.end] = b"\1" * (chunk.end - chunk.start)
    missed = [i for i in range(body_start, len(text)) if not text[i].isspace() and not covered[i]]
    assert not missed, f"characters outside every chunk at {missed[:5]}"


# ------------------------------------------------------------------ options


def test_default_options_are_valid() -> None:
    options = ChunkOptions()
    assert (options.target_chars, options.max_chars, options.overlap_chars, options.min_chars) == (
        1000,
        1600,
        150,
        200,
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target_chars": 0}, "positive"),
        ({"max_chars": -5, "target_chars": 10, "overlap_chars": 1, "min_chars": 1}, "positive"),
        ({"overlap_chars": -1}, "negative"),
        ({"min_chars": -1}, "negative"),
        ({"target_chars": 2000}, "must not exceed max_chars"),
        ({"overlap_chars": 1000}, "overlap_chars"),
        ({"min_chars": 1000}, "min_chars"),
        ({"target_chars": 10.5}, "integer"),
        ({"max_chars": True}, "integer"),
    ],
)
def test_options_that_contradict_each_other_are_rejected_with_a_clear_message(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ChunkOptions(**kwargs)  # type: ignore[arg-type]


def test_zero_overlap_and_zero_minimum_are_allowed_to_switch_those_features_off() -> None:
    ChunkOptions(target_chars=10, max_chars=10, overlap_chars=0, min_chars=0)


# ------------------------------------------------------------------ basics


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\r\n  \u3000\n"])
def test_empty_or_whitespace_only_documents_give_no_chunks(text: str) -> None:
    assert build_chunks("a.md", text, [Block(0, len(text))], title="a", options=SMALL) == ()


def test_a_section_that_fits_becomes_one_chunk_with_its_heading_path() -> None:
    doc = Doc().heading(1, "Runbook").add(words(5)).heading(2, "Rollback").add(words(8, "r"))
    options = ChunkOptions(target_chars=1000, max_chars=1600, overlap_chars=100, min_chars=0)
    chunks = doc.chunks(options, title="Deploy runbook")
    assert [c.heading_path for c in chunks] == [
        ("Deploy runbook", "Runbook"),
        ("Deploy runbook", "Runbook", "Rollback"),
    ]
    assert chunks[1].text == "## Rollback\n\n" + words(8, "r")


def test_a_top_heading_equal_to_the_title_is_not_repeated_in_the_path() -> None:
    doc = Doc().heading(1, "Deploy  Runbook").add(words(5)).heading(2, "Rollback").add(words(30))
    chunks = doc.chunks(NO_MERGE, title="Deploy runbook")
    assert chunks[0].heading_path == ("Deploy runbook",)
    assert chunks[-1].heading_path == ("Deploy runbook", "Rollback")


def test_deeper_headings_nest_and_siblings_replace_each_other() -> None:
    doc = Doc()
    for level, name in [(1, "A"), (2, "B"), (3, "C"), (2, "D"), (1, "E")]:
        doc.heading(level, name).add(words(20, name.lower()))
    paths = [c.heading_path for c in doc.chunks(ChunkOptions(400, 600, 0, 0), title="T")]
    assert paths == [("T", "A"), ("T", "A", "B"), ("T", "A", "B", "C"), ("T", "A", "D"), ("T", "E")]


def test_text_before_the_first_heading_has_only_the_title_as_its_path() -> None:
    doc = Doc().add(words(30)).heading(2, "Later").add(words(30))
    chunks = doc.chunks(ChunkOptions(400, 600, 0, 0), title="Notes")
    assert chunks[0].heading_path == ("Notes",)


def test_text_the_blocks_leave_out_is_still_chunked() -> None:
    text = "[ref]: https://example.com\n\nparagraph one\n\n<!-- trailing -->"
    start = text.index("paragraph")
    chunks = build_chunks("a.md", text, [Block(start, start + 13)], title="a", options=SMALL)
    assert_invariants(text, chunks)


def test_nothing_before_body_start_is_chunked_but_offsets_stay_absolute() -> None:
    text = "---\ntitle: x\n---\nbody text here"
    body = text.index("body")
    chunks = build_chunks("a.md", text, [Block(0, len(text))], title="a", options=SMALL, body_start=body)
    assert [(c.start, c.text) for c in chunks] == [(body, "body text here")]
    assert chunks[0].line_start == 4


def test_chunk_offsets_trim_whitespace_instead_of_editing_the_text() -> None:
    text = "\n\n   indented start\nlast line   \n\n"
    chunks = build_chunks("a.txt", text, [Block(0, len(text))], title="a", options=SMALL)
    assert chunks[0].text == "indented start\nlast line"
    assert text[chunks[0].start : chunks[0].end] == chunks[0].text
    assert (chunks[0].line_start, chunks[0].line_end) == (3, 4)


def test_line_numbers_count_crlf_and_lone_cr_as_one_line_end_each() -> None:
    text = "one\r\ntwo\rthree\nfour"
    lines = LineIndex(text)
    assert [lines.line_of(text.index(w)) for w in ("one", "two", "three", "four")] == [1, 2, 3, 4]
    assert lines.start_of(1) == text.index("two")
    assert lines.start_of(99) == len(text)


# --------------------------------------------------------------- splitting


def test_a_long_section_splits_on_block_boundaries_near_the_target() -> None:
    doc = Doc().heading(2, "Long")
    for i in range(30):
        doc.add(words(6, f"p{i}_"))  # about 30 characters each
    options = ChunkOptions(target_chars=200, max_chars=300, overlap_chars=0, min_chars=0)
    chunks = doc.chunks(options)
    assert len(chunks) > 2
    block_starts = {b.start for b in doc.blocks}
    block_ends = {b.end for b in doc.blocks}
    for chunk in chunks:
        assert chunk.start in block_starts and chunk.end in block_ends
        assert len(chunk.text) <= options.max_chars
    assert all(140 <= len(c.text) <= 260 for c in chunks[:-1])
    assert all(c.heading_path == ("Doc", "Long") for c in chunks)
    assert_invariants(doc.text, chunks)


def test_consecutive_pieces_of_a_section_overlap_by_about_the_overlap_size() -> None:
    doc = Doc().heading(2, "Long")
    for i in range(40):
        doc.add(words(3, f"p{i}_"))  # about 15 characters each
    options = ChunkOptions(target_chars=200, max_chars=300, overlap_chars=50, min_chars=0)
    chunks = doc.chunks(options)
    assert len(chunks) > 2
    starts = {b.start for b in doc.blocks}
    for before, after in itertools.pairwise(chunks):
        assert after.start in starts
        assert 25 <= before.end - after.start <= 100
    assert_invariants(doc.text, chunks)


def test_chunks_of_different_sections_never_overlap() -> None:
    doc = Doc().heading(2, "A").add(words(30)).heading(2, "B").add(words(30, "b"))
    chunks = doc.chunks(ChunkOptions(target_chars=500, max_chars=600, overlap_chars=100, min_chars=0))
    assert len(chunks) == 2
    assert chunks[0].end < chunks[1].start


def test_a_code_fence_that_fits_is_never_cut_even_when_its_section_is_split() -> None:
    fence = "```\n" + "\n".join(f"line {i}" for i in range(15)) + "\n```"
    doc = Doc().heading(2, "Code").add(words(20)).add(fence, BlockKind.FENCE).add(words(20, "z"))
    chunks = doc.chunks(SMALL)
    assert len(fence) <= SMALL.max_chars
    assert any(fence in c.text for c in chunks)
    start = doc.text.index(fence)
    assert not any(start < c.start < start + len(fence) for c in chunks)
    assert_invariants(doc.text, chunks)


def test_an_oversized_code_fence_splits_on_line_boundaries_and_no_chunk_exceeds_the_cap() -> None:
    fence = "```\n" + "\n".join(f"line {i} of code" for i in range(40)) + "\n```"
    doc = Doc().heading(2, "Code").add(words(10)).add(fence, BlockKind.FENCE).add(words(10, "z"))
    chunks = doc.chunks(SMALL)
    start = doc.text.index(fence)
    line_starts = {start} | {start + m.end() for m in re.finditer("\n", fence)}
    inside = [c for c in chunks if start < c.start < start + len(fence)]
    assert len(inside) >= 2
    assert all(c.start in line_starts for c in inside)
    assert all(len(c.text) <= SMALL.max_chars for c in chunks)
    assert all(c.heading_path == ("Doc", "Code") for c in chunks)  # code pieces carry no extra context
    assert_invariants(doc.text, chunks)


def test_an_over_long_code_line_is_cut_after_a_space_near_the_cap() -> None:
    line = " ".join(f"arg{i}=value{i}" for i in range(60))  # about 900 characters, spaces every 13
    doc = Doc().add("```\n" + line + "\n```", BlockKind.FENCE)
    chunks = doc.chunks(SMALL)
    assert all(len(c.text) <= SMALL.max_chars for c in chunks)
    for before in chunks[:-1]:
        assert doc.text[before.end] == " "  # every cut is at a space, none inside a word
    assert_invariants(doc.text, chunks)


def test_a_long_line_without_spaces_is_cut_on_characters_but_never_inside_one_glyph() -> None:
    glyphs = ["e\u0301", "\U0001f469\u200d\U0001f4bb", "\u2764\ufe0f", "\ud83d\ude00", "か\u3099", "漢"]
    line = "".join(glyphs[i % len(glyphs)] for i in range(400))
    doc = Doc().add("```\n" + line + "\n```", BlockKind.FENCE)
    options = ChunkOptions(target_chars=37, max_chars=50, overlap_chars=0, min_chars=0)
    chunks = doc.chunks(options)
    assert len(chunks) > 10
    start = doc.text.index(line)
    glyph_starts = set(
        itertools.accumulate((len(glyphs[i % len(glyphs)]) for i in range(400)), initial=start)
    )
    cuts = [c.start for c in chunks[1:]] + [c.end for c in chunks[:-1]]
    assert all(cut in glyph_starts for cut in cuts if start < cut < start + len(line))
    assert all(len(c.text) <= options.max_chars for c in chunks)
    assert_invariants(doc.text, chunks)


def _table(columns: int, rows: int, cell: str = "v") -> str:
    header = "| " + " | ".join(f"col{c}" for c in range(columns)) + " |"
    rule = "|" + "|".join("---" for _ in range(columns)) + "|"
    body = ["| " + " | ".join(f"{cell}{r}x{c}" for c in range(columns)) + " |" for r in range(rows)]
    return "\n".join([header, rule, *body])


def test_a_table_that_fits_stays_whole_with_no_extra_context() -> None:
    table = _table(2, 4)
    doc = Doc().add(table, BlockKind.TABLE)
    chunks = doc.chunks(SMALL)
    assert [(c.text, c.heading_path) for c in chunks] == [(table, ("Doc",))]


def test_an_oversized_table_splits_by_rows_and_each_later_piece_carries_the_header_row() -> None:
    table = _table(2, 30)
    doc = Doc().heading(2, "Prices").add(table, BlockKind.TABLE)
    chunks = doc.chunks(SMALL)
    context = "col0 | col1"
    assert len(chunks) > 2
    assert chunks[0].text.startswith("## Prices\n\n| col0 | col1 |\n|---|---|\n| v0x0 |")
    assert chunks[0].heading_path == ("Doc", "Prices")
    start = doc.text.index(table)
    row_starts = {start} | {start + m.end() for m in re.finditer("\n", table)}
    for chunk in chunks[1:]:
        assert chunk.start in row_starts and chunk.end + 1 in row_starts | {len(doc.text) + 1}
        assert chunk.text.startswith("| v") and "col0" not in chunk.text
        # The span is the rows alone; the header rides along as context, and the two fit the cap.
        assert chunk.heading_path == ("Doc", "Prices", context)
        assert len(chunk.text) + len(context) <= SMALL.max_chars
    assert all(len(c.text) <= SMALL.max_chars for c in chunks)
    assert_invariants(doc.text, chunks)


def test_a_table_header_longer_than_the_cap_is_cut_in_the_span_and_shortened_as_context() -> None:
    table = _table(40, 6)  # a header row of about 280 characters, a cap of 160
    doc = Doc().add(table, BlockKind.TABLE)
    chunks = doc.chunks(SMALL)
    contexts = {c.heading_path[1] for c in chunks if len(c.heading_path) > 1}
    assert len(contexts) == 1
    (context,) = contexts
    assert context.startswith("col0 | col1 | ") and context.endswith("…")
    assert len(context) <= SMALL.max_chars // 2
    for chunk in chunks:
        extra = len(chunk.heading_path[1]) if len(chunk.heading_path) > 1 else 0
        assert len(chunk.text) + extra <= SMALL.max_chars
    assert_invariants(doc.text, chunks)


def test_a_table_row_longer_than_the_room_beside_its_header_is_cut_to_fit() -> None:
    table = "| key | note |\n|---|---|\n| k1 | " + words(60) + " |\n| k2 | short |"
    doc = Doc().add(table, BlockKind.TABLE)
    chunks = doc.chunks(SMALL)
    assert len(chunks) > 2
    for chunk in chunks:
        extra = len(chunk.heading_path[1]) if len(chunk.heading_path) > 1 else 0
        assert len(chunk.text) + extra <= SMALL.max_chars
    assert_invariants(doc.text, chunks)


@pytest.mark.parametrize(
    ("header", "limit", "expected"),
    [
        ("| a | b |", 20, "a | b"),
        ("|  a  |\tb|", 20, "a | b"),
        ("a | b", 20, "a | b"),
        ("| alpha | beta | gamma | delta |", 20, "alpha | beta…"),
        ("| " + "x" * 50 + " |", 10, "x" * 9 + "…"),
        ("| a | b |", 1, ""),
        ("| |", 20, ""),
    ],
)
def test_table_context_is_the_header_row_without_outer_pipes_and_within_its_limit(
    header: str, limit: int, expected: str
) -> None:
    context = table_context(header, limit)
    assert context == expected
    assert len(context) <= limit


def test_an_oversized_paragraph_splits_on_line_boundaries() -> None:
    paragraph = "\n".join(words(5, f"l{i}_") for i in range(30))
    doc = Doc().add(paragraph)
    chunks = doc.chunks(SMALL)
    assert len(chunks) > 1
    line_starts = {0} | {m.end() for m in re.finditer("\n", paragraph)}
    assert all(c.start in line_starts for c in chunks)
    assert all(len(c.text) <= SMALL.max_chars for c in chunks)
    assert_invariants(doc.text, chunks)


def test_a_single_over_long_line_splits_at_sentence_ends_first() -> None:
    sentence = "キャッシュが切れると全リクエストがデータベースに殺到する。"
    doc = Doc().add(sentence * 20)
    chunks = doc.chunks(SMALL)
    assert len(chunks) > 1
    assert all(c.text.endswith("。") for c in chunks)
    assert all(len(c.text) <= SMALL.max_chars for c in chunks)
    assert_invariants(doc.text, chunks)


def test_text_without_any_boundary_splits_on_characters_as_a_last_resort() -> None:
    doc = Doc().add("x" * 1000)
    chunks = doc.chunks(SMALL)
    assert "".join(c.text for c in chunks) == "x" * 1000
    assert all(len(c.text) <= SMALL.max_chars for c in chunks)


def test_a_fence_nested_in_a_long_list_survives_the_split_of_the_list() -> None:
    items = [f"- item {i} " + words(4) for i in range(8)]
    fence = "  ```\n" + "\n".join(f"  code {i}" for i in range(12)) + "\n  ```"
    source = "\n".join([*items[:4], fence, *items[4:]])
    start = source.index("```")
    end = source.rindex("```") + 3
    assert end - start <= SMALL.max_chars
    block = Block(0, len(source), BlockKind.LIST, keep_together=((start, end),))
    chunks = build_chunks("a.md", source, [block], title="a", options=SMALL)
    assert any(c.start <= start and c.end >= end for c in chunks)
    assert not any(start < c.start < end or start < c.end < end for c in chunks)
    assert_invariants(source, chunks)


def test_a_fence_nested_in_a_list_that_is_longer_than_the_cap_is_split_on_its_lines() -> None:
    fence = "  ```\n" + "\n".join(f"  code line {i}" for i in range(40)) + "\n  ```"
    source = "\n".join(["- first item", fence, "- last item"])
    start, end = source.index("```"), source.rindex("```") + 3
    block = Block(0, len(source), BlockKind.LIST, keep_together=((start, end),))
    chunks = build_chunks("a.md", source, [block], title="a", options=SMALL)
    inside = [c for c in chunks if start < c.start < end]
    assert inside
    assert all(source[: c.start].endswith("\n  ") for c in inside)  # at a line start, past the indent
    assert all(len(c.text) <= SMALL.max_chars for c in chunks)
    assert_invariants(source, chunks)


def test_a_heading_is_not_left_dangling_at_the_end_of_a_chunk() -> None:
    doc = Doc().heading(2, "A").add(words(13))
    doc.heading(3, "Tiny")  # merged into A because it is tiny and deeper
    doc.add(words(13, "t"))
    options = ChunkOptions(target_chars=100, max_chars=120, overlap_chars=0, min_chars=0)
    for chunk in doc.chunks(options):
        assert not chunk.text.endswith("### Tiny")


# ----------------------------------------------------------------- merging


def test_a_tiny_section_merges_into_the_following_deeper_one_and_keeps_its_own_path() -> None:
    doc = Doc().heading(2, "Parent").heading(3, "Child").add(words(20))
    chunks = doc.chunks(ChunkOptions(target_chars=400, max_chars=600, overlap_chars=0, min_chars=50))
    assert len(chunks) == 1
    assert chunks[0].heading_path == ("Doc", "Parent")
    assert chunks[0].text.startswith("## Parent\n\n### Child")


def test_a_tiny_section_merges_into_a_following_sibling() -> None:
    doc = Doc().heading(2, "A").add("short").heading(2, "B").add(words(20))
    chunks = doc.chunks(ChunkOptions(target_chars=400, max_chars=600, overlap_chars=0, min_chars=50))
    assert [c.heading_path for c in chunks] == [("Doc", "A")]


def test_a_tiny_last_section_merges_into_the_previous_one() -> None:
    doc = Doc().heading(2, "A").add(words(20)).heading(2, "See also").add("links")
    chunks = doc.chunks(ChunkOptions(target_chars=400, max_chars=600, overlap_chars=0, min_chars=50))
    assert len(chunks) == 1
    assert chunks[0].heading_path == ("Doc", "A")
    assert chunks[0].text.endswith("## See also\n\nlinks")


def test_a_tiny_section_does_not_merge_upward_into_a_shallower_following_section() -> None:
    doc = Doc().heading(1, "A").add(words(20)).heading(3, "Deep").add(words(20, "d"))
    doc.heading(3, "Tiny").add("x").heading(1, "B").add(words(20, "b"))
    chunks = doc.chunks(ChunkOptions(target_chars=400, max_chars=600, overlap_chars=0, min_chars=50))
    b = [c for c in chunks if c.heading_path[-1] == "B"]
    assert b and not b[0].text.startswith("### Tiny")
    assert any(c.text.endswith("### Tiny\n\nx") for c in chunks)


def test_a_chunk_records_where_each_section_merged_into_it_begins() -> None:
    doc = Doc().heading(2, "A").add("short").heading(2, "B").add("also short").heading(3, "C")
    doc.add(words(20))
    chunks = doc.chunks(ChunkOptions(target_chars=400, max_chars=600, overlap_chars=0, min_chars=50))
    assert len(chunks) == 1 and chunks[0].heading_path == ("Doc", "A")
    text = chunks[0].text
    assert chunks[0].sections == (
        SectionStart(text.index("## B"), ("Doc", "B")),
        SectionStart(text.index("### C"), ("Doc", "B", "C")),
    )


def test_a_chunk_within_one_section_records_no_sections() -> None:
    doc = Doc().heading(2, "A").add(words(60))
    chunks = doc.chunks(ChunkOptions(target_chars=100, max_chars=160, overlap_chars=30, min_chars=20))
    assert len(chunks) > 1 and all(c.sections == () for c in chunks)


def test_min_chars_zero_never_merges() -> None:
    doc = Doc().heading(2, "A").heading(2, "B").heading(2, "C")
    assert len(doc.chunks(NO_MERGE)) == 3


# --------------------------------------------------------------------- ids


def test_chunk_ids_are_short_prefixed_content_digests() -> None:
    expected = hashlib.sha256(b"a.md\0hello\x000").hexdigest()[:16]
    assert chunk_id_for("a.md", "hello", 0) == "c_" + expected


def test_chunk_ids_change_with_path_text_and_occurrence() -> None:
    base = chunk_id_for("a.md", "hello", 0)
    assert base == chunk_id_for("a.md", "hello", 0)
    assert len({base, chunk_id_for("b.md", "hello", 0), chunk_id_for("a.md", "hullo", 0)}) == 3
    assert base != chunk_id_for("a.md", "hello", 1)


def test_identical_paragraphs_in_one_document_get_distinct_stable_ids() -> None:
    doc = Doc()
    for _ in range(3):
        doc.add("the same paragraph " * 6)
    first, second = doc.chunks(NO_MERGE), doc.chunks(NO_MERGE)
    assert len({c.text for c in first}) == 1
    assert len({c.chunk_id for c in first}) == 3
    assert [c.chunk_id for c in first] == [c.chunk_id for c in second]


def test_the_content_hash_covers_the_heading_path_but_the_id_only_the_text() -> None:
    one = Doc().heading(2, "A").add(words(30))
    two = Doc().heading(2, "A").add(words(30))
    a = one.chunks(NO_MERGE, title="One")[-1]
    b = two.chunks(NO_MERGE, title="Two")[-1]
    assert a.text == b.text and a.chunk_id == b.chunk_id
    assert a.content_hash != b.content_hash
    assert len(a.content_hash) == 32


def test_ids_do_not_depend_on_where_the_chunk_sits_in_the_document() -> None:
    tail = Doc().heading(2, "B").add(words(30, "b"))
    longer = Doc().heading(2, "A").add(words(30)).heading(2, "B").add(words(30, "b"))
    assert tail.chunks(NO_MERGE)[-1].chunk_id == longer.chunks(NO_MERGE)[-1].chunk_id


# ---------------------------------------------------------------- property

_ALPHABET = st.sampled_from([*list("abcxyz あい漢字。.!? ,、\t"), "\n", "\n", "\n\n", "\r\n", "\r"])


@st.composite
def options_strategy(draw: st.DrawFn) -> ChunkOptions:
    target = draw(st.integers(8, 300))
    return ChunkOptions(
        target_chars=target,
        max_chars=draw(st.integers(target, target * 2)),
        overlap_chars=draw(st.integers(0, target - 1)),
        min_chars=draw(st.integers(0, target - 1)),
    )


@st.composite
def text_and_blocks(draw: st.DrawFn) -> tuple[str, list[Block], int]:
    text = "".join(draw(st.lists(_ALPHABET, max_size=600)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=30)))
    blocks: list[Block] = []
    for start, end in zip(cuts[::2], cuts[1::2], strict=False):
        kind = draw(st.sampled_from(list(BlockKind)))
        level = draw(st.integers(1, 6)) if kind is BlockKind.HEADING else 0
        blocks.append(Block(start, end, kind, level, text[start:end][:10]))
    if blocks and draw(st.booleans()):  # overlapping or out-of-order input must not break anything
        blocks.append(Block(blocks[0].start, blocks[-1].end))
    body_start = draw(st.integers(0, len(text))) if draw(st.booleans()) else 0
    return text, blocks, body_start


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text_and_blocks(), options_strategy())
def test_any_blocks_and_options_give_chunks_that_slice_order_and_cover_the_body(
    case: tuple[str, list[Block], int], options: ChunkOptions
) -> None:
    text, blocks, body_start = case
    chunks = build_chunks("p.md", text, blocks, title="P", options=options, body_start=body_start)
    assert_invariants(text, chunks, body_start)
    for chunk in chunks:
        assert len(chunk.text) <= options.max_chars, "no chunk exceeds max_chars, code and tables included"
        offsets = [s.offset for s in chunk.sections]
        assert offsets == sorted(set(offsets)) and all(0 < o < len(chunk.text) for o in offsets)
        assert all(not chunk.text[s.offset].isspace() and s.heading_path[0] == "P" for s in chunk.sections)
    assert chunks == build_chunks("p.md", text, blocks, title="P", options=options, body_start=body_start)


# ------------------------------------------------- property: giant blocks

_CELL = st.text(st.sampled_from(list("abcxyz019 あい漢字-_.")), max_size=12)
_GLYPHS = st.sampled_from(
    [
        *list("abcxyz あい漢字。.,、"),
        "e\u0301",
        "か\u3099",
        "\U0001f469\u200d\U0001f4bb",
        "\u2764\ufe0f",
        "\ud83d\ude00",
    ]
)


@st.composite
def giant_documents(draw: st.DrawFn) -> tuple[Doc, set[str], set[str]]:
    """Documents of headings, prose, tables, code and single long lines, many far over the cap.

    Returns the document, its heading names and the header rows of its tables.
    """
    doc = Doc(newline=draw(st.sampled_from(["\n", "\r\n"])))
    headings: set[str] = set()
    headers: set[str] = set()
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["heading", "prose", "table", "code", "line"]))
        if kind == "heading":
            name = f"H{draw(st.integers(0, 99))}"
            headings.add(name)
            doc.heading(draw(st.integers(1, 4)), name)
        elif kind == "prose":
            doc.add("".join(draw(st.lists(_ALPHABET, min_size=1, max_size=300))).strip() or "p")
        elif kind == "table":
            columns = draw(st.integers(1, 8))
            wide = draw(st.booleans())  # a header that may not fit the cap by itself
            header = (
                "| "
                + " | ".join(
                    f"col{c}" + ("w" * draw(st.integers(0, 120)) if wide else "") for c in range(columns)
                )
                + " |"
            )
            rows = [
                "| " + " | ".join(draw(_CELL) for _ in range(columns)) + " |"
                for _ in range(draw(st.integers(0, 60)))
            ]
            headers.add(header)
            doc.add(doc.newline.join([header, "|" + "---|" * columns, *rows]), BlockKind.TABLE)
        elif kind == "code":
            code_lines = draw(
                st.lists(st.text(st.sampled_from(list("ab c=(){}; 漢")), max_size=150), max_size=40)
            )
            doc.add(doc.newline.join(["```", *code_lines, "```"]), BlockKind.FENCE)
        else:
            line = "".join(draw(st.lists(_GLYPHS, min_size=1, max_size=1500))).strip() or "x"
            doc.add(line, draw(st.sampled_from([BlockKind.PARAGRAPH, BlockKind.FENCE])))
    return doc, headings, headers


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(giant_documents(), options_strategy())
def test_no_chunk_of_any_document_is_longer_than_max_chars_counting_a_tables_header_context(
    case: tuple[Doc, set[str], set[str]], options: ChunkOptions
) -> None:
    """Measured: ``len(chunk.text)`` (the span) <= ``max_chars`` for every chunk, and for a piece of
    a split table that carries the table's header row in its heading path, the span plus that entry
    <= ``max_chars``. The title and section headings in the path are not counted (they never were)."""
    doc, headings, headers = case
    chunks = doc.chunks(options, title="P")
    assert_invariants(doc.text, chunks)
    contexts = {table_context(h, options.max_chars // 2) for h in headers}
    for chunk in chunks:
        extra = [entry for entry in chunk.heading_path[1:] if entry not in headings]
        assert len(extra) <= 1 and set(extra) <= contexts
        assert len(chunk.text) + sum(map(len, extra)) <= options.max_chars
        for cut in (chunk.start, chunk.end):
            assert not _splits_a_glyph(doc.text, cut), f"cut inside one glyph at {cut}"


def _splits_a_glyph(text: str, i: int) -> bool:
    """Whether offset ``i`` falls inside one of the multi-code-point glyphs the documents above use."""
    if not 0 < i < len(text):
        return False
    before, after = text[i - 1], text[i]
    return (
        unicodedata.category(after) in ("Mn", "Mc", "Me")
        or "\u200d" in (before, after)
        or after == "\ufe0f"
        or ("\ud800" <= before <= "\udbff" and "\udc00" <= after <= "\udfff")
    )
