"""Plain text parsing: file-name titles, blank-line paragraphs, exact offsets."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.parsers import Registry
from kbseek.ingest.parsers.text import TextParser, decode_utf8, title_from_path

PARSER = TextParser()
SMALL = ChunkOptions(target_chars=60, max_chars=90, overlap_chars=20, min_chars=0)


def test_the_parser_declares_its_name_suffix_and_media_type() -> None:
    assert (PARSER.name, PARSER.extensions, PARSER.media_type) == ("txt", (".txt",), "text/plain")
    assert isinstance(Registry(["txt"]).for_path("notes/A.TXT"), TextParser)


@pytest.mark.parametrize(
    ("path", "title"),
    [("notes/meeting-2024.txt", "meeting-2024"), ("todo.txt", "todo"), ("議事録/定例 会議.txt", "定例 会議")],
)
def test_the_title_is_the_file_stem(path: str, title: str) -> None:
    assert title_from_path(path) == title
    assert PARSER.parse(path, "body", SMALL).title == title


def test_decoding_strips_one_bom_and_leaves_line_endings_alone() -> None:
    assert decode_utf8(b"\xef\xbb\xbfone\r\ntwo\r") == "one\r\ntwo\r"
    assert PARSER.decode("障害\n".encode()) == "障害\n"


def test_decoding_rejects_bytes_that_are_not_utf8() -> None:
    """A word with one plain letter is too little to tell an encoding by: refused, never guessed; a
    word of Western prose is read (café), as in Markdown."""
    with pytest.raises(ValueError, match=r"^not text in a known encoding: "):
        PARSER.decode("été".encode("cp1252"))
    assert PARSER.decode(b"caf\xe9") == "café"


def test_paragraphs_separated_by_blank_lines_are_the_blocks() -> None:
    text = "first paragraph\nstill first\n\n   \nsecond paragraph\n"
    options = ChunkOptions(target_chars=20, max_chars=30, overlap_chars=0, min_chars=0)
    doc = PARSER.parse("a.txt", text, options)
    assert [c.text for c in doc.chunks] == ["first paragraph\nstill first", "second paragraph"]
    assert [(c.line_start, c.line_end) for c in doc.chunks] == [(1, 2), (5, 5)]


def test_text_files_have_no_headings_so_every_path_is_just_the_title() -> None:
    text = "# not a heading\n\n## nor this\n\nbody\n"
    doc = PARSER.parse("notes/plain.txt", text, SMALL)
    assert {c.heading_path for c in doc.chunks} == {("plain",)}
    assert doc.frontmatter == {} and doc.tags == () and doc.warnings == ()


@pytest.mark.parametrize("text", ["", "\n\n", " \t\r\n\u3000"])
def test_empty_or_blank_files_have_no_chunks(text: str) -> None:
    assert PARSER.parse("a.txt", text, SMALL).chunks == ()


def test_a_long_japanese_line_is_split_at_sentence_ends_within_max_chars() -> None:
    text = "キャッシュの TTL にゆらぎを入れて同時失効を防ぐ。" * 20
    doc = PARSER.parse("メモ.txt", text, SMALL)
    assert len(doc.chunks) > 1
    assert all(len(c.text) <= SMALL.max_chars and c.text.endswith("。") for c in doc.chunks)
    assert any(a.end > b.start for a, b in zip(doc.chunks, doc.chunks[1:], strict=False))


def test_duplicated_paragraphs_get_distinct_stable_ids() -> None:
    text = "same line here\n\n" * 4
    options = ChunkOptions(target_chars=14, max_chars=14, overlap_chars=0, min_chars=0)
    first = PARSER.parse("a.txt", text, options).chunks
    assert [c.text for c in first] == ["same line here"] * 4
    assert len({c.chunk_id for c in first}) == 4
    assert first == PARSER.parse("a.txt", text, options).chunks


def test_crlf_text_keeps_exact_offsets() -> None:
    text = "one\r\ntwo\r\n\r\nthree\r\n"
    doc = PARSER.parse("a.txt", text, SMALL)
    assert [c.text for c in doc.chunks] == ["one\r\ntwo\r\n\r\nthree"]
    assert (doc.chunks[0].line_start, doc.chunks[0].line_end) == (1, 4)


_TEXT = st.lists(
    st.sampled_from(["word", "障害", "。", ". ", " ", "\t", "\n", "\n\n", "\r\n", "\r\n\r\n", "x" * 40]),
    max_size=120,
).map("".join)


@st.composite
def options(draw: st.DrawFn) -> ChunkOptions:
    target = draw(st.integers(5, 200))
    return ChunkOptions(
        target_chars=target,
        max_chars=draw(st.integers(target, target * 2)),
        overlap_chars=draw(st.integers(0, target - 1)),
        min_chars=draw(st.integers(0, target - 1)),
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT, options())
def test_generated_text_gives_ordered_chunks_within_max_that_cover_every_visible_character(
    text: str, opts: ChunkOptions
) -> None:
    chunks = PARSER.parse("gen.txt", text, opts).chunks
    covered = bytearray(len(text))
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal
        assert text[chunk.start : chunk.end] == chunk.text
        assert 0 < len(chunk.text) <= opts.max_chars
        covered[chunk.start : chunk.end] = b"\1" * len(chunk.text)
    for before, after in itertools.pairwise(chunks):
        assert before.start < after.start and before.end < after.end
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())
    assert chunks == PARSER.parse("gen.txt", text, opts).chunks
