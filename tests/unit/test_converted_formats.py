"""Word, Excel, PowerPoint, HTML and notebooks, served as Markdown kbseek writes (decision 0034).

Every file is written here with the library that reads it (python-docx, openpyxl, python-pptx) or by hand
(HTML, notebooks), English and Japanese alike.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.parsers import AVAILABLE_PARSERS, DEFAULT_ENABLED, Registry, has_markup, media_type_of
from kbseek.ingest.parsers.converted import clean, escape_line, render
from kbseek.ingest.parsers.extracted import DocxParser, HtmlParser, PptxParser, XlsxParser
from kbseek.ingest.parsers.notebook import NotebookParser
from kbseek.text.display import display_text

docx = pytest.importorskip("docx")
openpyxl = pytest.importorskip("openpyxl")

SMALL = ChunkOptions(target_chars=60, max_chars=120, overlap_chars=10, min_chars=5)


def make_docx() -> bytes:
    document = docx.Document()
    document.core_properties.title = "Capacity review"
    document.core_properties.keywords = "ops, capacity; 障害"
    document.add_paragraph("Quarterly review", style="Title")
    document.add_heading("Overview", 1)
    document.add_paragraph("The cluster needs four more nodes before March.")
    document.add_paragraph("# this line is text, not a heading", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "host", (0, 1): "role", (1, 0): "node-7", (1, 1): "quorum"}.items():
        table.cell(r, c).text = text
    document.add_heading("振り返り", 2)
    document.add_paragraph("キャッシュの期限切れが原因だった。")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def make_xlsx() -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["host", "cores", "memory"])
    sheet.append(["node-1", 4, 1.5])
    sheet.append([])
    sheet.append([None, "owner", "チーム"])
    book.create_sheet("予算").append(["heartbeat", 30])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def make_pptx() -> bytes:
    pptx = pytest.importorskip("pptx")
    deck = pptx.Presentation()
    for title, body, notes in [("Plan", "Add four nodes", "Mention the budget."), ("障害", "キャッシュ", "")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


PAGE = (
    b"<!doctype html><html><head><title>Runbook</title><meta name=keywords content='ops, dns'>"
    b"<style>p{color:red}</style><script>var leakedScriptWord = 1;</script></head><body>"
    b"<nav><a href=/>Navigation entry</a></nav><header>Site header</header>"
    b"<main><h1>Restart DNS</h1><p>Flush the <b>resolver</b> cache &amp; restart.</p>"
    b"<table><tr><th>host</th><th>role</th></tr><tr><td>ns1</td><td>primary</td></tr></table>"
    b"<pre>systemctl restart\n  unbound</pre><ul><li>one</li><li>two</li></ul></main>"
    b"<footer>Footer words</footer></body></html>"
)


def notebook(cells: list[dict[str, object]]) -> bytes:
    body = {"cells": cells, "metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4}
    return json.dumps(body).encode()


# --------------------------------------------------------------- registry


def test_the_new_parsers_declare_markdown_and_which_are_on_by_default() -> None:
    parsers = [DocxParser(), XlsxParser(), PptxParser(), HtmlParser(), NotebookParser()]
    assert [(p.name, p.extensions, p.media_type) for p in parsers] == [
        ("docx", (".docx",), "text/markdown"),
        ("xlsx", (".xlsx",), "text/markdown"),
        ("pptx", (".pptx",), "text/markdown"),
        ("html", (".html", ".htm"), "text/markdown"),
        ("ipynb", (".ipynb",), "text/markdown"),
    ]
    assert all(p.name in AVAILABLE_PARSERS and has_markup(p.name) for p in parsers)
    assert all(media_type_of(p.name) == "text/markdown" for p in parsers)
    assert {"docx", "xlsx", "ipynb"} <= set(DEFAULT_ENABLED)
    assert "pptx" not in DEFAULT_ENABLED and "html" not in DEFAULT_ENABLED and "pdf" not in DEFAULT_ENABLED


def test_html_is_off_by_default_and_unlisted_while_pptx_says_how_to_enable_it() -> None:
    registry = Registry()
    assert registry.for_path("site/index.html") is None
    assert registry.unopened_reason("site/index.html") is None  # a built site would flood the listing
    assert "add the 'pptx' parser" in (registry.unopened_reason("deck.pptx") or "")
    assert isinstance(Registry([*DEFAULT_ENABLED, "html"]).for_path("a.HTM"), HtmlParser)


@pytest.mark.parametrize("name", ["macro.docm", "macro.xlsm", "macro.pptm"])
def test_macro_enabled_files_are_never_opened_and_say_so(name: str) -> None:
    registry = Registry(AVAILABLE_PARSERS)
    assert registry.for_path(name) is None
    assert "macro-enabled" in (registry.unopened_reason(name) or "")


# ------------------------------------------------------------------- docx


def test_docx_headings_tables_and_core_properties_become_markdown() -> None:
    parser = DocxParser()
    text = parser.decode(make_docx())
    assert text.startswith("---\ntitle: Capacity review\ntags:\n- ops\n- capacity\n- 障害\ndate: ")
    assert "\n# Quarterly review\n\n# Overview\n\nThe cluster needs four more nodes before March.\n" in text
    assert "- \\# this line is text, not a heading" in text
    assert "```tsv\nhost\trole\nnode-7\tquorum\n```" in text
    doc = parser.parse("reports/capacity.docx", text, SMALL)
    assert doc.title == "Capacity review" and doc.tags == ("ops", "capacity", "障害")
    assert doc.date is not None and len(doc.date) == 10
    paths = {c.heading_path for c in doc.chunks}
    assert {("Capacity review", "Overview"), ("Capacity review", "Overview", "振り返り")} <= paths
    for chunk in doc.chunks:
        assert text[chunk.start : chunk.end] == chunk.text


def test_an_indexed_docx_is_found_and_served_as_the_markdown_cited_by_offsets(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "capacity.docx").write_bytes(make_docx())
    (root / "broken.docx").write_bytes(make_docx()[:500])
    core = KnowledgeBase(settings=Settings(root=root, semantic=False))
    report = core.index()
    assert report.added == ["capacity.docx"]
    reasons = dict(report.skipped)
    assert reasons["broken.docx"].startswith("damaged: its zip package ends early")
    assert {s.path: s.reason for s in core.status().skipped}["broken.docx"] == reasons["broken.docx"]
    hit = core.search("four more nodes").hits[0]
    assert hit.path == "capacity.docx" and hit.heading_path[-1] == "Overview"
    served = core.read_resource_document("capacity.docx")
    assert served.media_type == "text/markdown"
    assert "four more nodes" in served.text[hit.start : hit.end]
    hit = core.search("キャッシュ").hits[0]
    assert hit.path == "capacity.docx" and hit.heading_path[-1] == "振り返り"
    core.close()


# ------------------------------------------------------------------- xlsx


def test_each_sheet_is_a_heading_and_each_region_a_range_of_tab_joined_rows() -> None:
    parser = XlsxParser()
    text = parser.decode(make_xlsx())
    assert "# Budget\n\n## A1:C2\n\n```tsv\nhost\tcores\tmemory\nnode-1\t4\t1.5\n```" in text
    assert "## B4:C4\n\n```tsv\nowner\tチーム\n```" in text
    assert "# 予算\n\n## A1:B1\n\n```tsv\nheartbeat\t30\n```" in text
    doc = parser.parse("plans/hosts.xlsx", text, SMALL)
    assert doc.title == "hosts"  # a sheet name is no title for the file
    assert ("hosts", "Budget", "A1:C2") in {c.heading_path for c in doc.chunks}
    assert any(c.heading_path[:2] == ("hosts", "予算") and "heartbeat" in c.text for c in doc.chunks)


def test_formulas_are_read_as_their_cached_values_never_as_code() -> None:
    book = openpyxl.Workbook()
    book.active.append(['=HYPERLINK("http://example.invalid","x")', "plain"])
    buffer = io.BytesIO()
    book.save(buffer)
    text = XlsxParser().decode(buffer.getvalue())
    assert "HYPERLINK" not in text and "plain" in text  # openpyxl saved no cached value; nothing evaluated


# ------------------------------------------------------------------- pptx


def test_each_slide_is_a_section_titled_by_its_title_with_its_speaker_notes() -> None:
    pytest.importorskip("pptx")
    parser = PptxParser()
    text = parser.decode(make_pptx())
    assert "# Slide 1: Plan\n\nAdd four nodes\n\n## Speaker notes\n\nMention the budget." in text
    assert "# Slide 2: 障害\n\nキャッシュ" in text
    doc = parser.parse("talks/plan.pptx", text, SMALL)
    assert doc.title == "plan"
    assert ("plan", "Slide 1: Plan", "Speaker notes") in {c.heading_path for c in doc.chunks}


def test_without_python_pptx_decode_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PptxParser, "library_available", lambda self: False)
    with pytest.raises(ValueError, match=r"needs the pptx package: pip install 'kbseek\[pptx\]'"):
        PptxParser().decode(b"PK")


# ------------------------------------------------------------------- html


def test_html_keeps_the_main_text_and_headings_and_drops_scripts_styles_and_navigation() -> None:
    text = HtmlParser().decode(PAGE)
    assert text.startswith("---\ntitle: Runbook\ntags:\n- ops\n- dns\n---\n\n# Restart DNS\n")
    assert "Flush the resolver cache & restart." in text
    assert "```tsv\nhost\trole\nns1\tprimary\n```" in text
    assert "```\nsystemctl restart\n  unbound\n```" in text and "- one\n\n- two" in text
    for dropped in ("leakedScriptWord", "color:red", "Navigation entry", "Site header", "Footer words"):
        assert dropped not in text


def test_a_page_without_main_keeps_everything_outside_the_dropped_elements() -> None:
    text = HtmlParser().decode(b"<nav>menu</nav><h2>Notes</h2><p>Body text<div>More</div>")
    assert "## Notes" in text and "Body text" in text and "More" in text and "menu" not in text


# ------------------------------------------------------------------ ipynb


def test_notebook_markdown_and_code_cells_are_kept_in_order_and_outputs_dropped() -> None:
    raw = notebook([
        {"cell_type": "markdown", "source": ["# Load test\n", "Run it against staging."]},
        {"cell_type": "code", "source": "print('```')\n", "outputs": [{"text": "SECRET-OUTPUT"}]},
        {"cell_type": "raw", "source": "raw directive"},
        {"cell_type": "markdown", "source": "## 結果\n遅延は半分になった。"},
    ])  # fmt: skip
    parser = NotebookParser()
    text = parser.decode(raw)
    assert text == (
        "# Load test\nRun it against staging.\n\n````python\nprint('```')\n````\n\n## 結果\n遅延は半分になった。\n"
    )
    doc = parser.parse("nb/load.ipynb", text, SMALL)
    assert doc.title == "Load test"
    assert ("Load test", "結果") in {c.heading_path for c in doc.chunks}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [(b"{not json", "not a readable notebook"), (b"[1, 2]", "not a JSON object"), (b"{}", "no list of cells"),
     (b"[" * 100_000 + b"]" * 100_000, "not a readable notebook")],
    ids=["broken", "list", "no-cells", "deep"],
)  # fmt: skip
def test_a_broken_notebook_is_refused_with_the_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        NotebookParser().decode(raw)


# -------------------------------------------------------------- rendering

_TEXT = st.text(
    st.sampled_from(list("ab 語。#>-+=|:~*_`<>[]{}&;!\\/1.)x\t")) | st.characters(codec="utf-8"), max_size=60
)


@given(_TEXT)
@example("<>")  # shown as nothing: the escaped bracket was taken for a JSX fragment
@example("\x08>")  # served as a quote: the control character hid the marker from the escaping
def test_escaped_text_displays_as_exactly_the_words_that_were_extracted(text: str) -> None:
    rendered = render([["p", text]])
    assert display_text(rendered).text == " ".join(clean(text).split())
    assert "\n" not in escape_line(text)


@given(st.lists(st.tuples(st.sampled_from(["h", "p", "li", "table", "code"]), _TEXT), max_size=12))
def test_any_blocks_render_to_markdown_whose_chunks_slice_it(blocks: list[tuple[str, str]]) -> None:
    encoded = [
        ["h", 2, t] if k == "h" else ["table", [t.split("\t")]] if k == "table" else ["code", "", t]
        if k == "code" else [k, t]
        for k, t in blocks
    ]  # fmt: skip
    text = render(encoded, {"title": "T"})
    doc = DocxParser().parse("any.docx", text, SMALL)
    assert doc.title == "T"
    for chunk in doc.chunks:
        assert text[chunk.start : chunk.end] == chunk.text and len(chunk.text) <= SMALL.max_chars
