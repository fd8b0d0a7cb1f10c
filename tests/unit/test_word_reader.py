"""What a Word file says and kbseek keeps: notes, comments, text boxes, equations, Strict packages,
merged table cells, tracked changes, content controls, fields and zero-width debris, and parts whose XML
declares an encoding Office never writes.

Every file goes through ``DocxParser().decode``, so the extraction child reads it. Real files come from
other projects' test suites in ``../shared/realfiles`` (beside the checkout; its README names sources
and licences); a test of one skips when the folder is absent. The cases those files lack are written
here with python-docx, with the XML python-docx cannot write added to its element tree or its zip.
"""

from __future__ import annotations

import io
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.errors import NotText
from kbseek.ingest.parsers.extracted import DocxParser
from tests.fixture_copies import REALFILES, real_file
from tests.office_files import rewrite, saved

docx = pytest.importorskip("docx")
from docx.oxml import parse_xml  # noqa: E402 - after the importorskip that guards it

NS = (
    'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
    'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:v="urn:schemas-microsoft-com:vml" '
    'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"'
)
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
WML = "application/vnd.openxmlformats-officedocument.wordprocessingml."


def read(raw: bytes, **limits: int) -> str:
    """The served Markdown with its escapes undone: the words a reader sees."""
    return re.sub(r"\\(.)", r"\1", DocxParser(**limits).decode(raw))


def elements(xml: str) -> list[object]:
    """The elements of XML written with the w:, m:, v:, mc: and DrawingML prefixes."""
    return list(parse_xml(f"<w:wrapper {NS}>{xml}</w:wrapper>"))


def add_block(document: object, xml: str) -> None:
    """Block XML (a paragraph, a content control) at the end of the body, before its section."""
    section = document.element.body.sectPr  # type: ignore[attr-defined]
    for block in elements(xml):
        section.addprevious(block)


def paragraph_with(document: object, text: str, inline_xml: str) -> None:
    """A paragraph of ``text`` followed by inline XML (a run, a field, an equation)."""
    paragraph = document.add_paragraph(text)  # type: ignore[attr-defined]
    paragraph._p.extend(elements(inline_xml))


def with_part(package: bytes, name: str, xml: str, reltype: str, content_type: str) -> bytes:
    """The package plus a part the main document relates to (notes, comments)."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(package)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "[Content_Types].xml":
                data = data.replace(
                    b"</Types>",
                    f'<Override PartName="/word/{name}" ContentType="{content_type}"/></Types>'.encode(),
                )
            elif info.filename == "word/_rels/document.xml.rels":
                data = data.replace(
                    b"</Relationships>",
                    f'<Relationship Id="rIdTest{len(name)}" Type="{REL}{reltype}" Target="{name}"/>'
                    "</Relationships>".encode(),
                )
            target.writestr(info.filename, data)
        target.writestr(f"word/{name}", f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n{xml}')
    return out.getvalue()


def tsv_rows(text: str) -> list[list[str]]:
    body = text.split("```tsv\n", 1)[1].split("\n```", 1)[0]
    return [row.split("\t") for row in body.split("\n")]


# ------------------------------------------------------------ notes and comments


def test_footnotes_follow_the_body_under_their_heading_with_numbered_markers() -> None:
    text = read(real_file("mammoth/footnotes.docx"))
    assert "\nOuch[1].[2]\n" in text
    assert text.endswith("\n# Footnotes\n\n[1] A tachyon walks into a bar.\n\n[2] Fin.\n")


def test_endnotes_are_kept_in_the_file_s_roman_numbering() -> None:
    text = read(real_file("mammoth/endnotes.docx"))
    assert "\nOuch[i].[ii]\n" in text  # the file says lowerRoman, as Word's own default does
    assert text.endswith("\n# Endnotes\n\n[i] A tachyon walks into a bar.\n\n[ii] Fin.\n")


def test_a_file_with_a_footnote_and_an_endnote_keeps_both_sections() -> None:
    text = read(real_file("pandoc/docx/notes.docx"))
    assert "Test footnote.[1] Test endnote.[i]" in text
    assert (
        "\n# Footnotes\n\n[1] My note.\n\n# Endnotes\n\n[i] This is an endnote at the end of the document.\n"
        in text
    )


def test_comments_are_kept_with_their_author_date_and_word_s_mark() -> None:
    text = read(real_file("mammoth/comments.docx"))
    assert "\nOuch[MW1].[MW2]\n" in text
    assert text.endswith(
        "\n# Comments\n\n[MW1] Michael Williamson (2016-07-03): A tachyon walks into a bar.\n\n"
        "[MW2] Michael Williamson (2016-07-03): Fin.\n"
    )
    rich = read(real_file("python-docx/comments-rich-para.docx"))
    assert "[SJC1] Steve Canny (2025-06-07): Text with hyperlink https://google.com embedded." in rich
    assert "[C2] (2025-06-07): Text with inline image in the middle." in rich  # no author, no initials


def test_searching_a_comment_s_words_finds_the_file_under_its_comments_heading(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "review.docx").write_bytes(real_file("mammoth/comments.docx"))
    core = KnowledgeBase(settings=Settings(root=root, semantic=False))
    assert core.index().added == ["review.docx"]
    hit = core.search("tachyon walks into a bar").hits[0]
    assert hit.path == "review.docx" and hit.heading_path[-1] == "Comments"
    core.close()


def test_notes_are_numbered_in_order_of_reference_and_a_custom_mark_is_kept() -> None:
    document = docx.Document()
    paragraph_with(document, "Second id first", '<w:r><w:footnoteReference w:id="7"/></w:r>')
    paragraph_with(document, "Then the first id", '<w:r><w:footnoteReference w:id="3"/></w:r>')
    paragraph_with(
        document, "A dagger", '<w:r><w:footnoteReference w:customMarkFollows="1" w:id="9"/><w:t>†</w:t></w:r>'
    )
    paragraph_with(document, "Seven again", '<w:r><w:footnoteReference w:id="7"/></w:r>')
    notes = (
        f"<w:footnotes {NS}>"
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
        '<w:footnote w:id="3"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t>Id three.</w:t></w:r></w:p></w:footnote>'
        '<w:footnote w:id="7"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t>Id seven,</w:t></w:r></w:p>'
        "<w:p><w:r><w:t>on two paragraphs.</w:t></w:r></w:p></w:footnote>"
        '<w:footnote w:id="9"><w:p><w:r><w:t>The dagger note.</w:t></w:r></w:p></w:footnote>'
        '<w:footnote w:id="11"><w:p><w:r><w:t>Never referenced.</w:t></w:r></w:p></w:footnote>'
        "</w:footnotes>"
    )
    text = read(with_part(saved(document), "footnotes.xml", notes, "footnotes", WML + "footnotes+xml"))
    assert "\nSecond id first[1]\n\nThen the first id[2]\n\nA dagger†\n\nSeven again[1]\n" in text
    assert text.endswith(
        "\n# Footnotes\n\n[1] Id seven,\non two paragraphs.\n\n[2] Id three.\n\n[†] The dagger note.\n"
    )
    assert "Never referenced" not in text


def test_a_long_footnote_stops_at_the_character_cap_with_the_note() -> None:
    document = docx.Document()
    paragraph_with(document, "Short body", '<w:r><w:footnoteReference w:id="1"/></w:r>')
    notes = (
        f'<w:footnotes {NS}><w:footnote w:id="1"><w:p><w:r><w:t>FOOTNOTE-START {"word " * 200}</w:t>'
        "</w:r></w:p></w:footnote></w:footnotes>"
    )
    text = read(
        with_part(saved(document), "footnotes.xml", notes, "footnotes", WML + "footnotes+xml"), max_chars=200
    )
    assert "[1] FOOTNOTE-START word" in text
    assert "[truncated:" in text and "200 characters" in text


# ------------------------------------------------------------ text boxes


def test_a_text_box_is_read_once_though_word_writes_it_twice() -> None:
    text = read(real_file("mammoth/text-box.docx"))
    assert text.count("Datum plane") == 1  # DrawingML choice and VML fallback hold the same box


def _vml_box(inner: str) -> str:
    return (
        '<w:r><w:pict><v:shape id="box"><v:textbox><w:txbxContent>'
        f"{inner}</w:txbxContent></v:textbox></v:shape></w:pict></w:r>"
    )


def test_text_boxes_follow_the_paragraph_anchoring_them_and_join_a_cell_s_text() -> None:
    document = docx.Document()
    document.add_paragraph("Before the box")
    paragraph_with(
        document,
        "Anchor",
        '<mc:AlternateContent><mc:Choice Requires="wps"><w:r><w:drawing><wp:anchor><a:graphic>'
        "<a:graphicData><wps:wsp><wps:txbx><w:txbxContent>"
        '<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Boxed heading</w:t></w:r></w:p>'
        "<w:p><w:r><w:t>Inside the box</w:t></w:r></w:p>"
        "</w:txbxContent></wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing></w:r>"
        f"</mc:Choice><mc:Fallback>{_vml_box('<w:p><w:r><w:t>Inside the box</w:t></w:r></w:p>')}"
        "</mc:Fallback></mc:AlternateContent>",
    )
    document.add_paragraph("After the box")
    cell = document.add_table(rows=1, cols=2).cell(0, 1)
    cell.paragraphs[0].text = "Cell text"
    cell.paragraphs[0]._p.extend(elements(_vml_box("<w:p><w:r><w:t>cell box</w:t></w:r></w:p>")))
    text = read(saved(document))
    assert "\nBefore the box\n\nAnchor\n\n## Boxed heading\n\nInside the box\n\nAfter the box\n" in text
    assert text.count("Inside the box") == 1
    assert tsv_rows(text) == [["", "Cell text cell box"]]


def test_text_boxes_inside_text_boxes_are_followed_to_the_depth_limit() -> None:
    inner = ""
    for level in range(12, 0, -1):
        inner = f"<w:p><w:r><w:t>box-{level}</w:t></w:r>{_vml_box(inner) if inner else ''}</w:p>"
    document = docx.Document()
    paragraph_with(document, "Outside", _vml_box(inner))
    text = read(saved(document))
    assert "\nbox-1\n" in text and "\nbox-8\n" in text and "box-9" not in text  # MAX_DEPTH


# ------------------------------------------------------------ equations


def _math(omml: str) -> str:
    return f"<m:oMath>{omml}</m:oMath>"


def _r(text: str) -> str:
    return f"<m:r><m:t>{text}</m:t></m:r>"


def _sub(base: str, sub: str) -> str:
    return f"<m:sSub><m:e>{base}</m:e><m:sub>{sub}</m:sub></m:sSub>"


def _sup(base: str, sup: str) -> str:
    return f"<m:sSup><m:e>{base}</m:e><m:sup>{sup}</m:sup></m:sSup>"


def _matrix(*rows: tuple[str, ...]) -> str:
    cells = "".join("<m:mr>" + "".join(f"<m:e>{_r(c)}</m:e>" for c in row) + "</m:mr>" for row in rows)
    return f"<m:m>{cells}</m:m>"


EQUATIONS = {
    "quadratic": (
        _r("x=")
        + "<m:f><m:num>"
        + _r("-b±")
        + '<m:rad><m:radPr><m:degHide m:val="1"/></m:radPr><m:deg/><m:e>'
        + _sup(_r("b"), _r("2"))
        + _r("-4ac")
        + "</m:e></m:rad></m:num><m:den>"
        + _r("2a")
        + "</m:den></m:f>",
        "x=(-b±√(b^2-4ac))/(2a)",
    ),
    "sum": (
        '<m:nary><m:naryPr><m:chr m:val="∑"/></m:naryPr><m:sub>'
        + _r("i=1")
        + "</m:sub><m:sup>"
        + _r("n")
        + "</m:sup><m:e>"
        + _sub(_r("a"), _r("i"))
        + "</m:e></m:nary>",
        "∑_(i=1)^n a_i",
    ),
    "integral": (  # no m:chr: the integral sign is the default
        "<m:nary><m:sub>"
        + _r("0")
        + "</m:sub><m:sup>"
        + _r("1")
        + "</m:sup><m:e>"
        + _r("f(x)dx")
        + "</m:e></m:nary>",
        "∫_0^1 f(x)dx",
    ),
    "subsup": (
        "<m:sSubSup><m:e>"
        + _r("x")
        + "</m:e><m:sub>"
        + _r("i")
        + "</m:sub><m:sup>"
        + _r("2")
        + "</m:sup></m:sSubSup>",
        "x_i^2",
    ),
    "grouped": (_sup(_r("e"), _r("iπ")) + _r("+1=0"), "e^(iπ)+1=0"),
    "matrix": ("<m:d><m:e>" + _matrix(("a", "b"), ("c", "d")) + "</m:e></m:d>", "(a, b; c, d)"),
    "bare-matrix": (_matrix(("1", "0"), ("0", "1")), "[1, 0; 0, 1]"),
    "binomial": (
        '<m:d><m:e><m:f><m:fPr><m:type m:val="noBar"/></m:fPr><m:num>'
        + _r("n")
        + "</m:num><m:den>"
        + _r("k")
        + "</m:den></m:f></m:e></m:d>",
        "(n; k)",
    ),
    "absolute": (
        '<m:d><m:dPr><m:begChr m:val="|"/><m:endChr m:val="|"/></m:dPr><m:e>' + _r("x") + "</m:e></m:d>",
        "|x|",
    ),
    "roots": (
        "<m:rad><m:deg>"
        + _r("3")
        + "</m:deg><m:e>"
        + _r("x")
        + "</m:e></m:rad>"
        + _r("+")
        + "<m:rad><m:deg>"
        + _r("n")
        + "</m:deg><m:e>"
        + _r("y+1")
        + "</m:e></m:rad>",
        "∛x+√[n](y+1)",
    ),
    "function": (
        "<m:func><m:fName>"
        + _r("sin")
        + "</m:fName><m:e>"
        + _r("θ")
        + "</m:e></m:func>"
        + _r("+")
        + "<m:func><m:fName>"
        + _r("cos")
        + "</m:fName><m:e><m:d><m:e>"
        + _r("x")
        + "</m:e></m:d></m:e></m:func>",
        "sin θ+cos(x)",
    ),
    "limit": (
        "<m:func><m:fName><m:limLow><m:e>"
        + _r("lim")
        + "</m:e><m:lim>"
        + _r("n→∞")
        + "</m:lim></m:limLow></m:fName><m:e>"
        + _sub(_r("a"), _r("n"))
        + "</m:e></m:func>",
        "lim_(n→∞) a_n",
    ),
}


def test_equations_read_as_linear_text_a_person_would_type() -> None:
    document = docx.Document()
    for name, (omml, _) in EQUATIONS.items():
        paragraph_with(document, f"{name}: ", _math(omml))
    paragraph_with(document, "For ", _math(_sup(_r("x"), _r("2"))))
    paragraph_with(
        document,
        "The angle is ",
        _math("<m:f><m:num>" + _r("π") + "</m:num><m:den>" + _r("2") + "</m:den></m:f>")
        + "<w:r><w:t>.</w:t></w:r>",
    )
    lines = read(saved(document)).splitlines()
    for name, (_, linear) in EQUATIONS.items():
        assert f"{name}: {linear}" in lines
    assert "For x^2" in lines and "The angle is π/2." in lines


def test_a_display_equation_and_an_equation_array_keep_one_line_each() -> None:
    document = docx.Document()
    array = "<m:eqArr><m:e>" + _r("a=b+c") + "</m:e><m:e>" + _r("=d") + "</m:e></m:eqArr>"
    paragraph_with(document, "", f"<m:oMathPara>{_math(_r('E=m'))}{_math(array)}</m:oMathPara>")
    text = read(saved(document))
    assert "\nE=m\na=b+c\n=d\n" in text


def test_pandoc_s_equations_no_longer_leave_holes_in_the_sentence() -> None:
    text = read(real_file("pandoc/docx/equations.docx"))
    assert "For ," not in text and "The angle is ." not in text


# ------------------------------------------------------------ Strict Open XML


def test_a_strict_open_xml_file_is_read_like_any_other() -> None:
    raw = real_file("mammoth/strict-format.docx")
    text = read(raw)
    assert "\nTest\n" in text and "date: '2018-01-22'" in text


def test_a_strict_file_whose_document_cannot_be_read_is_refused_as_strict_not_a_key_error() -> None:
    raw = real_file("mammoth/strict-format.docx")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            if info.filename != "word/document.xml":  # named by the relationships, but not there
                target.writestr(info.filename, source.read(info.filename))
    with pytest.raises(ValueError) as refused:
        DocxParser().decode(out.getvalue())
    message = str(refused.value)
    assert "KeyError" not in message and "no relationship" not in message
    assert "document.xml" in message


# ------------------------------------------------------------ tables


def test_merged_header_cells_keep_the_columns_of_the_rows_below() -> None:
    text = read(real_file("pandoc/docx/table_header_rowspan.docx"))
    rows = tsv_rows(text)
    assert rows[0] == ["A", "B", "C", "D", "E", "E", "E", "F"]  # E spans three columns
    assert rows[1] == ["A", "B", "C", "D", "G", "H", "I", "F"]  # A–D and F continue from above
    assert all(row == ["1", "2", "3", "4", "5", "6", "7", "8"] for row in rows[2:])


def test_horizontal_and_vertical_merges_repeat_their_text_on_the_grid() -> None:
    document = docx.Document()
    table = document.add_table(rows=3, cols=4)
    table.cell(0, 1).merge(table.cell(0, 2)).text = "First half"
    table.cell(1, 0).merge(table.cell(2, 0)).text = "Ann"
    for (r, c), value in {
        (0, 0): "Name", (0, 3): "Total", (1, 1): "3", (1, 2): "4", (1, 3): "7", (2, 1): "5", (2, 2): "6", (2, 3): "11",
    }.items():  # fmt: skip
        table.cell(r, c).text = value
    rows = tsv_rows(read(saved(document)))
    assert rows == [
        ["Name", "First half", "First half", "Total"],
        ["Ann", "3", "4", "7"],
        ["Ann", "5", "6", "11"],
    ]


def test_a_row_only_continuing_the_cells_above_is_not_written_again() -> None:
    document = docx.Document()
    table = document.add_table(rows=3, cols=2)
    table.cell(0, 0).merge(table.cell(1, 0)).text = "Region"
    table.cell(0, 1).merge(table.cell(1, 1)).text = "Sales"
    table.cell(2, 0).text, table.cell(2, 1).text = "North", "12"
    assert tsv_rows(read(saved(document))) == [["Region", "Sales"], ["North", "12"]]


def test_skipped_grid_columns_and_legacy_merges_keep_the_grid() -> None:
    document = docx.Document()
    add_block(
        document,
        "<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/><w:gridCol/></w:tblGrid>"
        "<w:tr><w:tc><w:p><w:r><w:t>k</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>v</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>w</w:t></w:r></w:p></w:tc></w:tr>"
        '<w:tr><w:trPr><w:gridBefore w:val="1"/></w:trPr><w:tc><w:tcPr><w:hMerge w:val="restart"/></w:tcPr>'
        "<w:p><w:r><w:t>legacy</w:t></w:r></w:p></w:tc><w:tc><w:tcPr><w:hMerge/></w:tcPr><w:p/></w:tc></w:tr>"
        '<w:tr><w:trPr><w:gridAfter w:val="2"/></w:trPr><w:tc><w:p><w:r><w:t>first</w:t></w:r></w:p></w:tc></w:tr>'
        "</w:tbl>",
    )
    assert tsv_rows(read(saved(document))) == [["k", "v", "w"], ["", "legacy", "legacy"], ["first", "", ""]]


# ------------------------------------------------------------ what python-docx's text leaves out


def test_tracked_insertions_content_controls_and_field_results_are_kept_deletions_and_codes_not() -> None:
    document = docx.Document()
    paragraph_with(
        document,
        "Kept ",
        '<w:ins w:id="1" w:author="A"><w:r><w:t>inserted</w:t></w:r></w:ins>',
    )
    body = document.paragraphs[-1]._p
    for xml in (
        '<w:del w:id="2" w:author="A"><w:r><w:delText>DELETED</w:delText></w:r></w:del>',
        '<w:r><w:t xml:space="preserve"> and </w:t></w:r>',
        '<w:sdt><w:sdtPr><w:alias w:val="ALIAS"/></w:sdtPr><w:sdtContent><w:r><w:t>controlled</w:t></w:r>'
        "</w:sdtContent></w:sdt>",
        '<w:r><w:t xml:space="preserve"> page </w:t></w:r><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText xml:space="preserve"> PAGE \\* MERGEFORMAT </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>7</w:t></w:r>'
        '<w:r><w:fldChar w:fldCharType="end"/></w:r>',
        '<w:r><w:t xml:space="preserve"> on </w:t></w:r><w:fldSimple w:instr=" DATE "><w:r><w:t>the shown date</w:t>'
        "</w:r></w:fldSimple>",
        "<w:r><w:ruby><w:rubyPr/><w:rt><w:r><w:t>かんじ</w:t></w:r></w:rt><w:rubyBase><w:r><w:t>漢字</w:t></w:r>"
        "</w:rubyBase></w:ruby></w:r>",
    ):
        body.extend(elements(xml))
    add_block(
        document,
        "<w:sdt><w:sdtPr/><w:sdtContent><w:p><w:r><w:t>Block control text</w:t></w:r></w:p></w:sdtContent></w:sdt>",
    )
    text = read(saved(document))
    assert "\nKept inserted and controlled page 7 on the shown date漢字\n\nBlock control text\n" in text
    for left_out in ("DELETED", "ALIAS", "PAGE", "MERGEFORMAT", "DATE", "かんじ"):
        assert left_out not in text


def test_zero_width_characters_never_reach_headings_text_or_the_title() -> None:
    document = docx.Document()
    document.core_properties.title = "\ufeffPlan\u200b"
    document.add_heading("Experiment Setup\u200b", 1)
    document.add_paragraph("zero\u200bwidth \u2060joined\ufeff end\u200d. Persian می\u200cخواهم stays joined")
    text = read(saved(document))
    assert text.startswith("---\ntitle: Plan\n")
    assert "\n# Experiment Setup\n" in text
    assert "\nzerowidth joined end. Persian می\u200cخواهم stays joined\n" in text
    assert not re.search("[\u200b\u2060\ufeff]", text)


def test_a_copy_of_the_real_files_indexes_with_their_notes_boxes_and_strict_text(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    for name in ("footnotes.docx", "text-box.docx", "strict-format.docx"):
        source = REALFILES / "mammoth" / name
        if not source.is_file():
            pytest.skip(
                f"{source} is absent: the real test files live beside the checkout in ../shared/realfiles"
            )
        shutil.copy(source, root / name)
    core = KnowledgeBase(settings=Settings(root=root, semantic=False))
    report = core.index()
    assert sorted(report.added) == ["footnotes.docx", "strict-format.docx", "text-box.docx"]
    assert core.search("Datum plane").hits[0].path == "text-box.docx"
    hit = core.search("tachyon").hits[0]
    # Titled by its name (a notes section never names the file): "footnotes", its section "Footnotes".
    assert hit.path == "footnotes.docx" and hit.heading_path[-1].lower() == "footnotes"
    core.close()


# ------------------------------------------------------------ parts in an encoding Office never writes

JAPANESE = "障害対応の手順: まずログを確認してください。担当は髙橋です。"


def declaring(package: bytes, part: str, encoding: str, codec: str) -> bytes:
    """The package with ``part`` declaring ``encoding`` in its XML declaration and written in ``codec``."""
    with zipfile.ZipFile(io.BytesIO(package)) as source:
        xml = source.read(part).decode("utf-8")
    head, declared = re.subn(
        r"""encoding=(["'])UTF-8\1""", f'encoding="{encoding}"', xml, count=1, flags=re.I
    )
    assert declared == 1, xml[:100]
    return rewrite(package, {part: head.encode(codec)})


def japanese_docx() -> bytes:
    """A real Word file (a table and its text) with a Japanese paragraph added; python-docx where absent."""
    if (REALFILES / "mammoth" / "tables.docx").is_file():
        document = docx.Document(io.BytesIO(real_file("mammoth/tables.docx")))
    else:
        document = docx.Document()
    document.add_paragraph(JAPANESE)
    return saved(document)


@pytest.mark.parametrize(
    ("encoding", "codec"), [("Shift_JIS", "cp932"), ("UTF-7", "utf-7"), ("ISO-8859-1", "latin-1")]
)
def test_a_part_declaring_an_encoding_office_never_writes_is_refused_naming_it(
    tmp_path: Path, encoding: str, codec: str
) -> None:
    """Refused even where the XML library would decode it: Office Open XML is UTF-8 or UTF-16, and a
    lenient reading would depend on how that library was built. Before, this read as damaged."""
    raw = japanese_docx()
    part = "word/styles.xml" if codec == "latin-1" else "word/document.xml"
    root = tmp_path / "kb"
    root.mkdir()
    (root / "runbook.docx").write_bytes(declaring(raw, part, encoding, codec))
    core = KnowledgeBase(settings=Settings(root=root, semantic=False))
    skipped = dict(core.index().skipped)
    expected = (
        f"XML in a foreign encoding: {part} declares the encoding {encoding}; Office files hold their XML "
        "in UTF-8 or UTF-16, and no other is read: open it in Word and save it again"
    )
    assert skipped == {"runbook.docx": expected}
    with pytest.raises(NotText) as refused:
        core.read_document("runbook.docx")
    assert expected in str(refused.value)
    core.close()


def test_a_part_in_utf16_or_declaring_utf8_in_small_letters_is_read() -> None:
    raw = japanese_docx()
    for package in (
        declaring(raw, "word/document.xml", "UTF-16", "utf-16"),
        declaring(raw, "word/document.xml", "utf-8", "utf-8"),
    ):
        assert JAPANESE in read(package)


def test_a_custom_xml_part_in_its_own_encoding_leaves_the_document_readable() -> None:
    """Custom XML parts hold another program's data, which no reader here parses."""
    custom = '<?xml version="1.0" encoding="ISO-8859-1"?><data>café</data>'.encode("latin-1")
    package = rewrite(japanese_docx(), {"customXml/item1.xml": custom})
    assert JAPANESE in read(package)
