"""Hostile Office, HTML and notebook files: each is refused or read within bounds, and a pass goes on.

Every archive is built here, with the reading libraries or with ``zipfile``; nothing binary is committed.
"""

from __future__ import annotations

import io
import struct
import sys
import time
import zipfile
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.ingest.parsers.extracted import DocxParser, HtmlParser, PptxParser, XlsxParser
from tests.office_files import rewrite, saved

docx = pytest.importorskip("docx")
openpyxl = pytest.importorskip("openpyxl")


def small_docx(text: str = "An ordinary paragraph.") -> bytes:
    document = docx.Document()
    document.add_paragraph(text)
    return saved(document)


def zeros_member(package: bytes, name: str, size: int) -> bytes:
    """The package plus a member of ``size`` zero bytes, written in pieces (the test never holds it whole)."""
    out = io.BytesIO(package)
    with (
        zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as target,
        target.open(name, "w", force_zip64=True) as member,
    ):
        piece = bytes(1 << 20)
        for _ in range(size >> 20):
            member.write(piece)
    return out.getvalue()


# --------------------------------------------------------------- zip bombs


def test_a_zip_bomb_is_refused_by_the_sizes_its_members_declare() -> None:
    bomb = zeros_member(small_docx(), "word/media/image1.png", 300 << 20)
    assert len(bomb) < 1 << 20  # 300 MiB of zeros in well under a megabyte
    with pytest.raises(ValueError, match=r"^zip bomb: its members declare \d+ bytes"):
        DocxParser().decode(bomb)


def _lie_about_size(package: bytes, name: str, declared: int) -> bytes:
    """Patch the local and central headers of ``name`` to declare ``declared`` uncompressed bytes."""
    data = bytearray(package)
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        info = archive.getinfo(name)
    data[info.header_offset + 22 : info.header_offset + 26] = struct.pack("<I", declared)
    central = data.find(b"PK\x01\x02")
    while central >= 0:
        name_length = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46 : central + 46 + name_length] == name.encode():
            data[central + 24 : central + 28] = struct.pack("<I", declared)
            break
        central = data.find(b"PK\x01\x02", central + 4)
    return bytes(data)


def test_a_member_inflating_past_its_declared_size_is_refused_not_inflated() -> None:
    honest = rewrite(small_docx(), {"word/media/big.bin": bytes(8 << 20)})
    lying = _lie_about_size(honest, "word/media/big.bin", 1024)
    with zipfile.ZipFile(io.BytesIO(lying)) as archive:
        assert sum(i.file_size for i in archive.infolist()) < 1 << 20  # the declared sizes pass the budget
    with pytest.raises(ValueError, match=r"^damaged: its part word/media/big\.bin is broken \(Bad CRC"):
        DocxParser().decode(lying)


def test_the_actual_inflated_size_counts_against_the_budget_too() -> None:
    package = zeros_member(small_docx(), "word/media/big.bin", 4 << 20)
    with pytest.raises(ValueError, match=r"^zip bomb: "):
        DocxParser(zip_budget=2 << 20).decode(package)


# ------------------------------------------------------- truncated, corrupt


@pytest.mark.parametrize(
    ("parser", "raw"),
    [
        (DocxParser(), small_docx()[:400]),
        (DocxParser(), b"PK\x03\x04 not really a zip"),
        (XlsxParser(), b"\xd0\xcf\x11\xe0 an encrypted or 97-2003 compound file"),
        (DocxParser(), rewrite(small_docx(), {"word/document.xml": b"<w:document><unclosed"})),
        (XlsxParser(), rewrite(small_docx(), {})),  # a Word package named .xlsx
    ],
    ids=["truncated", "bad-zip", "ole", "broken-xml", "wrong-package"],
)
def test_a_truncated_or_corrupt_file_is_refused_with_the_reason(parser: DocxParser, raw: bytes) -> None:
    with pytest.raises(
        ValueError, match=r"^(damaged|unreadable|wrong extension): \S.*; .*(open it in|rename|give it)"
    ):
        parser.decode(raw)


# ------------------------------------------------------- a million cells


def test_a_sheet_of_a_million_cells_stops_at_the_cell_cap_with_a_note() -> None:
    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("big")
    for row in range(100_000):
        sheet.append([row, *range(9)])
    raw = saved(book)
    parser = XlsxParser(max_cells=50_000)
    text = parser.decode(raw)
    assert text.endswith(
        "[truncated: kbseek reads at most 50000 spreadsheet cells of a file; the rest is left out]\n"
    )
    assert "\n4999\t0\t1" in text and "\n5000\t" not in text
    assert parser.parse("big.xlsx", text, parser_options()).warnings[-1].startswith("truncated: kbseek reads")


def test_a_sparse_sheet_spanning_the_whole_grid_is_streamed_not_allocated() -> None:
    book = openpyxl.Workbook()
    book.active["A1"] = "corner"
    book.active["XFD1048576"] = "far corner"  # a dense reader allocates 17 billion cells for this
    began = time.monotonic()
    text = XlsxParser().decode(saved(book))
    # Empty rows count for nothing against the cap, so both corners come through and nothing is
    # said to be left out.
    assert "## A1:A1\n\n```tsv\ncorner\n```" in text
    assert "## XFD1048576:XFD1048576" in text and "far corner" in text
    assert "[truncated:" not in text
    assert time.monotonic() - began < 25


def parser_options() -> object:
    from kbseek.ingest.chunker import ChunkOptions

    return ChunkOptions()


# ------------------------------------------------------------ deep nesting


def test_deeply_nested_word_tables_are_read_to_a_depth_and_never_crash() -> None:
    document = docx.Document()
    cell = document.add_table(rows=1, cols=1).cell(0, 0)
    for depth in range(1, 40):
        cell.paragraphs[0].text = f"level-{depth}"
        cell = cell.add_table(rows=1, cols=1).cell(0, 0)
    text = DocxParser().decode(saved(document))
    assert "level-1\n" in text and "level-8\n" in text and "level-9" not in text  # MAX_DEPTH


def test_tables_nested_past_the_xml_depth_limit_are_refused_not_recursed() -> None:
    inner = "<w:p><w:r><w:t>deep</w:t></w:r></w:p>"
    for _ in range(300):
        inner = f"<w:tbl><w:tr><w:tc>{inner}</w:tc></w:tr></w:tbl><w:p/>"
    package = small_docx()
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        xml = archive.read("word/document.xml").decode()
    body = xml.index("<w:body>") + len("<w:body>")
    with pytest.raises(ValueError, match=r"^unreadable: .*(depth|deep)"):
        DocxParser().decode(
            rewrite(package, {"word/document.xml": (xml[:body] + inner + xml[body:]).encode()})
        )


def test_deeply_nested_html_is_read_in_one_pass_without_recursion() -> None:
    page = (
        b"<main>" + b"<table><tr><td>" * 50_000 + b"innermost" + b"</td></tr></table>" * 50_000 + b"</main>"
    )
    assert "innermost" in HtmlParser().decode(page)


# --------------------------------------------------------------------- XXE


def _xxe_doctype(secret: Path) -> str:
    return f'<!DOCTYPE x [<!ENTITY xxe SYSTEM "file://{secret}"><!ENTITY inner "expanded-internal">]>'


def test_external_entities_in_a_word_file_are_not_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-XXE", encoding="utf-8")
    package = small_docx("before &xxe; after")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        xml = archive.read("word/document.xml").decode()
    xml = xml.replace("before &amp;xxe; after", "before &xxe; after")
    xml = xml.replace("?>", "?>" + _xxe_doctype(secret), 1)
    try:
        text = DocxParser().decode(rewrite(package, {"word/document.xml": xml.encode()}))
    except ValueError as refused:
        text = str(refused)
    assert "TOP-SECRET-XXE" not in text


def test_external_entities_in_a_workbook_are_not_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-XXE", encoding="utf-8")
    book = openpyxl.Workbook()
    book.active["A1"] = "MARKER"
    package = saved(book)
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        name = (
            "xl/sharedStrings.xml"
            if "xl/sharedStrings.xml" in archive.namelist()
            else "xl/worksheets/sheet1.xml"
        )
        xml = archive.read(name).decode()
    xml = xml.replace("MARKER", "&xxe;").replace("?>", "?>" + _xxe_doctype(secret), 1)
    if "?>" not in xml:
        xml = _xxe_doctype(secret) + xml
    try:
        text = XlsxParser().decode(rewrite(package, {name: xml.encode()}))
    except ValueError as refused:
        text = str(refused)
    assert "TOP-SECRET-XXE" not in text


def test_external_entities_in_a_slide_are_not_resolved(tmp_path: Path) -> None:
    pptx = pytest.importorskip("pptx")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-XXE", encoding="utf-8")
    deck = pptx.Presentation()
    deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "MARKER"
    package = saved(deck)
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        xml = archive.read("ppt/slides/slide1.xml").decode()
    xml = xml.replace("MARKER", "&xxe;").replace("?>", "?>" + _xxe_doctype(secret), 1)
    try:
        text = PptxParser().decode(rewrite(package, {"ppt/slides/slide1.xml": xml.encode()}))
    except ValueError as refused:
        text = str(refused)
    assert "TOP-SECRET-XXE" not in text


def test_an_entity_expansion_bomb_is_refused_or_left_unexpanded() -> None:
    laughs = (
        '<!DOCTYPE x [<!ENTITY a "lol">'
        + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
        + "]>"
    )
    package = small_docx("&j;")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        xml = archive.read("word/document.xml").decode()
    xml = xml.replace("&amp;j;", "&j;").replace("?>", "?>" + laughs, 1)
    began = time.monotonic()
    try:
        text = DocxParser().decode(rewrite(package, {"word/document.xml": xml.encode()}))
    except ValueError as refused:
        text = str(refused)
    assert len(text) < 100_000 and time.monotonic() - began < 25


# ------------------------------------------------------------------ macros


def test_a_macro_inside_an_ordinary_workbook_is_data_never_read_or_run() -> None:
    book = openpyxl.Workbook()
    book.active["A1"] = "quarterly figures"
    package = rewrite(
        saved(book), {"xl/vbaProject.bin": b'Attribute VB_Name = "AutoOpen"\nShell "touch pwned"'}
    )
    text = XlsxParser().decode(package)
    assert "quarterly figures" in text and "AutoOpen" not in text and "Shell" not in text


# ------------------------------------------------------- bounded, and a pass goes on


class _Stalling(DocxParser):
    def child_command(self, input_bytes: int) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_child_over_the_time_limit_is_killed_and_the_file_refused() -> None:
    began = time.monotonic()
    with pytest.raises(
        ValueError, match=r"^took too long: reading it took longer than 1 s, the time one file may take; "
    ):
        _Stalling(time_limit_s=1.0).decode(small_docx())
    assert time.monotonic() - began < 10


def test_hostile_files_are_skipped_with_reasons_status_shows_and_the_pass_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "bomb.docx").write_bytes(zeros_member(small_docx(), "word/media/x.bin", 300 << 20))
    (root / "cut.xlsx").write_bytes(b"PK\x03\x04")
    (root / "loop.ipynb").write_bytes(b"[" * 100_000)
    (root / "good.docx").write_bytes(small_docx("The failover drill runs on Tuesdays."))
    core = KnowledgeBase(settings=Settings(root=root, semantic=False))
    report = core.index()
    assert report.added == ["good.docx"]
    reasons = {s.path: s.reason for s in core.status().skipped}
    assert reasons["bomb.docx"].startswith("zip bomb: ")
    assert reasons["cut.xlsx"].startswith("damaged: its zip package ends early")
    assert "not a readable notebook" in reasons["loop.ipynb"]
    assert core.search("failover drill").hits[0].path == "good.docx"
    core.close()
