"""Clean text from converted formats and PDFs: no zero-width characters, symbol-font code points as the
characters they show, and PDF page breaks as marker lines every surface shows as they are."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbseek import KnowledgeBase
from kbseek.cli import cli
from kbseek.config import Settings
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.parsers.converted import SYMBOL_FONT, clean, readable, render
from kbseek.ingest.parsers.extracted import DocxParser, HtmlParser, PptxParser, XlsxParser
from kbseek.ingest.parsers.notebook import NotebookParser
from kbseek.ingest.parsers.pdf import PAGE_SEPARATOR, PdfParser, join_pages, page_text
from kbseek.text.display import display_text

SMALL = ChunkOptions(target_chars=60, max_chars=120, overlap_chars=10, min_chars=5)
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
UNWANTED = re.compile(f"[{ZERO_WIDTH}\uf000-\uf0ff]")

# -------------------------------------------------------------- zero-width characters


@pytest.mark.parametrize("char", list(ZERO_WIDTH), ids=[f"U+{ord(c):04X}" for c in ZERO_WIDTH])
def test_zero_width_characters_are_removed_from_latin_text(char: str) -> None:
    assert readable(f"Experiment Setup{char}") == "Experiment Setup"
    assert readable(f"co{char}operation") == "cooperation"
    assert clean(f"{char}Setup") == "Setup"


@pytest.mark.parametrize(
    "text",
    ["👨\u200d👩\u200d👧", "می\u200cخواهم", "क्\u200dष"],  # an emoji family, Persian, a Devanagari conjunct
    ids=["emoji", "persian", "devanagari"],
)
def test_a_joiner_between_two_non_ascii_characters_is_meaning_and_stays(text: str) -> None:
    assert readable(text) == text
    assert readable(f"{text}\u200b") == text


def test_cleaning_twice_changes_nothing_more() -> None:
    text = "a\u200d\u200d\u200dé \uf06c x\n\uf071 y é\u200b\u200dé"
    assert readable(readable(text)) == readable(text)
    assert clean(clean(text)) == clean(text)


# -------------------------------------------------------------- symbol-font code points


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        (0xF0B7, "•"), (0xF0A7, "▪"), (0xF0D8, "➢"), (0xF09F, "•"),  # bullets (Symbol, Wingdings)
        (0xF0E0, "→"), (0xF0DF, "←"), (0xF0E8, "➔"), (0xF0AE, "→"), (0xF0DE, "⇒"),  # arrows
        (0xF0FC, "✓"), (0xF0FB, "✗"), (0xF0FE, "☑"), (0xF0FD, "☒"),  # check marks and boxes
        (0xF061, "α"), (0xF062, "β"), (0xF06D, "μ"), (0xF070, "π"), (0xF044, "Δ"), (0xF057, "Ω"),  # Greek
        (0xF0B0, "°"), (0xF0B1, "±"), (0xF0B4, "×"), (0xF0A3, "≤"), (0xF0A5, "∞"), (0xF0C6, "∅"),
        (0xF031, "1"), (0xF020, " "),
    ],
)  # fmt: skip
def test_symbol_font_code_points_become_the_characters_the_font_shows(code: int, shown: str) -> None:
    assert SYMBOL_FONT[code] == shown
    assert readable(f"x{chr(code)}y") == f"x{shown}y"


@pytest.mark.parametrize("code", [0xF000, 0xF01F, 0xF060, 0xF07F, 0xF080, 0xF0E6, 0xF0F4, 0xF0FF])
def test_the_rest_of_the_symbol_font_range_is_dropped(code: int) -> None:
    assert readable(f"a{chr(code)}b") == "ab"


def test_a_lone_symbol_letter_opening_a_line_is_a_wingdings_bullet_elsewhere_a_greek_letter() -> None:
    assert readable("\uf06c Scale out\n  \uf076\tFail over") == "● Scale out\n  ❖\tFail over"
    assert readable("where \uf06c is the wavelength") == "where λ is the wavelength"
    assert readable("\uf06c\uf03d 500 nm") == "λ= 500 nm"  # not alone: a letter
    assert "\ue000" in readable("\ue000 a private character of another font")  # only U+F000–U+F0FF


# -------------------------------------------------------------- every converted format


def _docx() -> bytes:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.core_properties.title = "Lab\u200b notes"
    document.add_heading("Experiment Setup\u200b", 1)
    document.add_paragraph("\uf0b7 co\u200bop\u2060eration of \uf061 and \uf062\ufeff")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _xlsx() -> bytes:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Experiment Setup\u200b"
    sheet.append(["\uf0b7 co\u200bop\u2060eration", "\uf061 and \uf062\ufeff"])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _pptx() -> bytes:
    pptx = pytest.importorskip("pptx")
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Experiment Setup\u200b"
    slide.placeholders[1].text_frame.text = "\uf0b7 co\u200bop\u2060eration of \uf061 and \uf062\ufeff"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def _html() -> bytes:
    return (
        "<html><head><title>Lab&#8203; notes</title></head><body><h1>Experiment Setup&#x200b;</h1>"
        "<p>&#xf0b7; co\u200bop&#8288;eration of &#xf061; and \uf062&#xfeff;</p></body></html>"
    ).encode()


def _ipynb() -> bytes:
    cells = [
        {
            "cell_type": "markdown",
            "source": ["# Experiment Setup\u200b\n", "\n", "\uf0b7 co\u200bop\u2060eration"],
        },
        {"cell_type": "code", "source": "print('\uf061 and \uf062\ufeff')", "outputs": []},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


@pytest.mark.parametrize(
    ("parser", "make"),
    [(DocxParser(), _docx), (XlsxParser(), _xlsx), (PptxParser(), _pptx), (HtmlParser(), _html),
     (NotebookParser(), _ipynb)],
    ids=["docx", "xlsx", "pptx", "html", "ipynb"],
)  # fmt: skip
def test_every_converted_format_serves_its_text_without_zero_width_or_symbol_font_characters(
    parser: DocxParser, make: object
) -> None:
    text = parser.decode(make())  # type: ignore[operator]
    assert UNWANTED.search(text) is None, repr(text)
    assert re.search(r"^#+ (Slide 1: )?Experiment Setup$", text, re.M), text  # a slide's heading numbers it
    assert "• cooperation" in text and "α and β" in text
    doc = parser.parse("lab/notes", text, SMALL)
    headings = {part for chunk in doc.chunks for part in chunk.heading_path} | {doc.title}
    assert any(h.endswith("Experiment Setup") for h in headings), headings
    assert UNWANTED.search("".join(headings)) is None


def test_the_frontmatter_title_and_tags_are_cleaned_too() -> None:
    text = render(
        [["p", "body"]], {"title": "Lab\u200b notes\ufeff", "keywords": "ops\u200b, \uf0fc done, \u200b"}
    )
    assert text.startswith("---\ntitle: Lab notes\ntags:\n- ops\n- ✓ done\n---\n"), text
    assert UNWANTED.search(text) is None


def test_a_code_block_whose_backticks_meet_once_a_zero_width_space_is_gone_stays_one_block() -> None:
    text = render([["code", "", "`\u200b``\nprint('still code')"], ["p", "after"]])
    assert text == "````\n```\nprint('still code')\n````\n\nafter\n", text  # fenced past the run it holds


def test_an_escaped_comment_in_extracted_text_is_shown_not_dropped() -> None:
    """Extracted text reading ``<!-- x -->`` is escaped (``\\<!--``); display text dropped it as a comment."""
    for words in ("<!-- keep me -->", "{% keep me %}", "{/* keep me */}"):
        assert display_text(render([["p", words]])).text == words


# -------------------------------------------------------------- PDF text and page breaks


def _make_pdf(pages: list[list[str]]) -> bytes:
    pytest.importorskip("pypdf", reason="PDF support is the optional extra kbseek[pdf]")
    from tests.unit.test_pdf_parser import make_pdf

    return make_pdf(pages)


PDF_PAGES = [
    ["Experiment Setup\u200b", "\uf0b7 First point", "\uf06c Second point", "where \uf06c is the wavelength"],
    ["co\u200bop\u2060eration done", "\uf0fc checked \uf0e0 next"],
]


def test_pdf_text_is_cleaned_as_converted_text_is() -> None:
    text = PdfParser().decode(_make_pdf(PDF_PAGES))
    assert text == (
        "[p.1]\n\nExperiment Setup\n• First point\n● Second point\nwhere λ is the wavelength\n\n\n"
        "[p.2]\n\ncooperation done\n✓ checked → next\n"
    )


def test_a_page_break_is_a_marker_line_without_a_form_feed() -> None:
    text = PdfParser().decode(_make_pdf(PDF_PAGES))
    assert "\f" not in text and "\n\n\n[p.2]\n\n" in text
    assert [s.splitlines()[0] for s in text.split(PAGE_SEPARATOR)] == ["[p.1]", "[p.2]"]


def test_page_text_with_blank_lines_and_a_marker_like_line_stays_on_its_page() -> None:
    text = join_pages([page_text("Intro\n\n\n\n\n[p.2]\n\n\n\nstill page one"), page_text("Page two")])
    assert len(text.split(PAGE_SEPARATOR)) == 2
    doc = PdfParser().parse("odd.pdf", text, ChunkOptions(min_chars=500))
    assert [(c.heading_path[-1], c.text) for c in doc.chunks] == [
        ("p.1", "Intro\n\n[p.2]\n\nstill page one"),
        ("p.2", "Page two"),
    ]
    for chunk in doc.chunks:
        assert text[chunk.start : chunk.end] == chunk.text


def test_text_served_with_form_feeds_before_still_parses_page_by_page() -> None:
    old = "[p.1]\n\nOne.\n\f[p.2]\n\f[p.3]\n\nThree.\n"
    doc = PdfParser().parse("old.pdf", old, SMALL)
    assert [(c.heading_path[-1], c.text) for c in doc.chunks] == [("p.1", "One."), ("p.3", "Three.")]


@pytest.fixture
def pdf_kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    pages = [
        ["Quarterly capacity review", "The cluster needs four more nodes before March."],
        ["Appendix", "Contact the platform team for access."],
        ["Glossary", "A node is one machine of the cluster."],
    ]
    (root / "capacity.pdf").write_bytes(_make_pdf(pages))
    (tmp_path / "kbseek.toml").write_text('[parsers]\nenabled = ["md", "pdf"]\n', encoding="utf-8")
    return root


def test_get_document_fetch_and_snippets_show_page_breaks_as_marker_lines(pdf_kb: Path) -> None:
    kb = KnowledgeBase(settings=Settings(root=pdf_kb, semantic=False, parsers=("md", "pdf")))
    try:
        kb.index()
        document = kb.read_document("capacity.pdf")
        assert "\f" not in document.text
        assert "before March.\n\n\n[p.2]\n\nAppendix\n" in document.text
        hits = kb.search("platform team access").hits
        assert hits and hits[0].heading_path[-1] == "p.2"
        assert "[p." not in hits[0].snippet and "\f" not in hits[0].snippet
        assert document.text[hits[0].start : hits[0].end].startswith("Appendix")
        passages = kb.fetch([hits[0].chunk_id], context=1).passages
        assert passages and all("\f" not in p.text for p in passages)
    finally:
        kb.close()


def test_kbseek_get_prints_page_markers_on_their_own_lines_not_escaped(pdf_kb: Path) -> None:
    config = str(pdf_kb.parent / "kbseek.toml")
    runner = CliRunner()
    base = ["--kb", str(pdf_kb), "--config", config, "--lexical-only"]
    assert runner.invoke(cli, ["index", *base], catch_exceptions=False).exit_code == 0
    result = runner.invoke(cli, ["get", *base, "capacity.pdf"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "\\u000c" not in result.stdout and "\f" not in result.stdout
    lines = result.stdout.splitlines()
    assert "[p.2]" in lines and "[p.3]" in lines
    assert lines[lines.index("[p.2]") - 2 : lines.index("[p.2]")] == ["", ""]
