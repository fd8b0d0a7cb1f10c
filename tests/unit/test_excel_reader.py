"""What an Excel workbook says and kbseek keeps: Strict OOXML packages, numbers as their cells show them,
caps that count only cells holding a value, and merged header cells lined up with their columns.

Every workbook goes through ``XlsxParser().decode``, so the extraction child reads it. Real files come
from other projects' test suites in ``../shared/realfiles`` (beside the checkout; its README names
sources and licences); a test of one skips when the folder is absent. The cases they lack are written
here with openpyxl, or with ``zipfile`` where a sheet's XML is what the test is about.
"""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from kbseek.ingest.parsers.extracted import XlsxParser
from tests.fixture_copies import real_file
from tests.office_files import rewrite, saved

openpyxl = pytest.importorskip("openpyxl")
from openpyxl.styles import NamedStyle  # noqa: E402 - after the importorskip that guards it

NOTE = "[truncated: kbseek reads at most"
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def with_sheet(rows: bytes, *more: bytes) -> bytes:
    """A workbook (written by openpyxl, one styled cell so ``s="1"`` is a real style) whose sheets'
    ``<sheetData>`` are the given bytes: the first replaces Sheet1's, each of ``more`` a further sheet's."""
    book = openpyxl.Workbook()
    book.active["A1"] = 1.5
    book.active["A1"].number_format = "0.00"
    for number in range(len(more)):
        book.create_sheet(f"More{number + 1}")["A1"] = "x"
    package = saved(book)
    changes = {}
    for number, data in enumerate((rows, *more), 1):
        changes[f"xl/worksheets/sheet{number}.xml"] = (
            f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN}"><sheetData>'.encode()
            + data
            + b"</sheetData></worksheet>"
        )
    return rewrite(package, changes)


def tsv(text: str, heading: str) -> list[str]:
    """The rows of the table under a ``##`` heading."""
    block = re.search(re.escape(f"## {heading}\n\n```tsv\n") + r"(.*?)\n```", text, re.S)
    assert block is not None, f"no table under {heading!r} in:\n{text[:2000]}"
    return block[1].split("\n")


# ------------------------------------------------------------------ Strict OOXML


def test_a_strict_ooxml_workbook_is_read_and_one_that_cannot_be_is_refused_as_strict() -> None:
    package = real_file("calamine/strict_iso_paths.xlsx")
    text = XlsxParser().decode(package)
    rows = tsv(text, "A1:R76")
    assert text.startswith("---\ndate: '2021-05-04'\nmodified: '2021-05-05'\n---\n\n# ml_out\n")
    assert len(rows) == 76
    assert rows[0].startswith("Item\tThickness\tNumber Off Bends\t")
    assert rows[1].startswith("150-031260-001_B\t1.50\t7\t4\t5\t2\t78.46\t2153.93\t")  # "0.00" formats
    assert NOTE not in text
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        sheet = archive.read("xl/worksheets/sheet1.xml")
    broken = rewrite(package, {"xl/worksheets/sheet1.xml": sheet[: len(sheet) // 2]})
    with pytest.raises(ValueError, match="Strict") as refused:
        XlsxParser().decode(broken)
    assert "holds no text" not in str(refused.value)


# ------------------------------------------------------------------ values as shown


def test_general_numbers_show_at_most_15_significant_digits_as_excel_does() -> None:
    text = XlsxParser().decode(real_file("calamine/pivots.xlsx"))
    assert "Grand Total\t11.067\t7.29762\t18.36462\n" in text
    assert "18.364620000000002" not in text and "6.255519999999999" not in text
    assert "1\ta\tblue\t10\t1.78\t2024-11-01\t5.61797752808989\tTRUE\t" in text  # a date shows its day


def test_numbers_dates_and_booleans_show_as_their_cell_formats_show_them() -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    cells = [
        (1234.5, "0.00", "1234.50"),
        (1234567.891, "#,##0.00", "1,234,567.89"),
        (2.675, "0.00", "2.68"),  # Excel rounds the shown digits half away from zero
        (0.125, "0.0%", "12.5%"),
        (0.5, "0%", "50%"),
        (-1234.5, "#,##0.00_);(#,##0.00)", "(1,234.50)"),
        (-1234.5, '"$"#,##0.00', "-$1,234.50"),
        (0, '_("$"* #,##0.00_);_("$"* \\(#,##0.00\\);_("$"* "-"??_);_(@_)', "$-"),
        (12345.678, "0.00E+00", "1.23E+04"),
        (7, "00000", "00007"),
        (1234567, "#,##0,", "1,235"),
        (0.1 + 0.2, "General", "0.3"),
        (1e20, "General", "1E+20"),
    ]
    for row, (value, code, _) in enumerate(cells, 1):
        sheet.cell(row, 1, value).number_format = code
    sheet.cell(1, 2, True)
    sheet.cell(2, 2, False)
    import datetime as dt

    sheet.cell(3, 2, dt.datetime(2024, 3, 5, 14, 30)).number_format = "yyyy-mm-dd"
    sheet.cell(4, 2, dt.datetime(2024, 3, 5, 14, 30)).number_format = "yyyy-mm-dd hh:mm"
    rows = tsv(XlsxParser().decode(saved(book)), f"A1:B{len(cells)}")
    assert [row.split("\t")[0] for row in rows] == [shown for _, _, shown in cells]
    assert [row.split("\t")[1] for row in rows[:4]] == ["TRUE", "FALSE", "2024-03-05", "2024-03-05T14:30:00"]


# ------------------------------------------------------------------ honest caps


def test_empty_formatted_rows_down_to_the_last_row_count_for_nothing_and_cut_nothing() -> None:
    text = XlsxParser().decode(real_file("calamine/issue_174.xlsx"))  # 22 values, rows styled to 1,048,576
    assert tsv(text, "A1:K2")[1].startswith("123\tTest Contact Name\tTest Contact Number\t")
    assert NOTE not in text


def test_a_million_formatted_empty_rows_are_read_to_the_value_in_the_last_row() -> None:
    empty = b"".join(b'<row r="%d" s="1" customFormat="1" ht="15"/>' % n for n in range(3, 1_048_576))
    raw = with_sheet(
        b'<row r="1"><c r="A1" t="inlineStr"><is><t>header</t></is></c>'
        b'<c r="B1" s="1"><v>2.5</v></c></row>'
        b'<row r="2"><c r="A2" s="1"/><c r="B2" s="1"/></row>'
        + empty
        + b'<row r="1048576"><c r="A1048576" t="inlineStr"><is><t>the very last row</t></is></c></row>'
    )
    for parser in (XlsxParser(), XlsxParser(max_cells=3)):
        text = parser.decode(raw)
        assert tsv(text, "A1:B1") == ["header\t2.50"]
        assert tsv(text, "A1048576:A1048576") == ["the very last row"]
        assert NOTE not in text


def test_only_cells_holding_a_value_count_toward_the_cap_and_a_cut_is_noted_only_then() -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    style = NamedStyle("boxed", number_format="0.00")
    for row in range(1, 60):
        for column in range(1, 200):
            sheet.cell(row, column).style = style  # a formatted cell holding nothing
    sheet["A1"], sheet["B30"], sheet["GQ59"] = "first", "middle", "last"
    text = XlsxParser(max_cells=3).decode(saved(book))
    assert "first" in text and "middle" in text and "last" in text
    assert NOTE not in text
    sheet["A60"] = "one too many"
    cut = XlsxParser(max_cells=3).decode(saved(book))
    assert "last" in cut and "one too many" not in cut
    assert cut.endswith(f"{NOTE} 3 spreadsheet cells of a file; the rest is left out]\n")


def test_past_the_scan_budget_the_rest_is_searched_and_noted_only_if_it_holds_a_value() -> None:
    # Rows without a reference cannot be cut from the bytes: each costs a unit of the scan budget
    # (8 x max_cells), and 40,000 of them run past it, then the rest of the workbook is searched.
    first = b'<row><c t="inlineStr"><is><t>first</t></is></c></row>' + b"<row/>" * 40_000
    value = b'<row><c t="inlineStr"><is><t>after the budget</t></is></c></row>'
    quiet = XlsxParser(max_cells=10).decode(with_sheet(first + b"<row/>" * 10, b""))
    assert tsv(quiet, "A1:A1") == ["first"]
    assert "# More1" in quiet and NOTE not in quiet  # nothing was left out: no note, and the next sheet
    for raw in (with_sheet(first + value), with_sheet(first, value)):
        cut = XlsxParser(max_cells=10).decode(raw)
        assert tsv(cut, "A1:A1") == ["first"] and "after the budget" not in cut
        assert cut.endswith(f"{NOTE} 10 spreadsheet cells of a file; the rest is left out]\n")


def test_a_sparse_sheet_spanning_the_whole_grid_reads_both_corners_without_a_note() -> None:
    book = openpyxl.Workbook()
    book.active["A1"] = "corner"
    book.active["XFD1048576"] = "far corner"
    text = XlsxParser().decode(saved(book))
    assert tsv(text, "A1:A1") == ["corner"]
    assert tsv(text, "XFD1048576:XFD1048576") == ["far corner"]
    assert NOTE not in text


# ------------------------------------------------------------------ merged cells


def test_merged_header_cells_are_repeated_over_the_columns_they_span() -> None:
    text = XlsxParser().decode(real_file("calamine/merged_range.xlsx"))
    # Sheet1: A1:A2, B1:B2, C1:D2 … merged two rows high over a body whose C3:D3, C4:D4 are merged too
    assert tsv(text, "A1:H4") == [
        "A1\tB1\tC1\tC1\tE1\tF1\tG1\tH1",
        "A3\tB3\tC3\tC3\tE3\tF3\tG3\tH3",
        "A4\tB4\tC4\tC4\tE4\tF4\tG4\tH4",
    ]


def test_a_two_row_header_lines_up_with_its_body_and_a_title_over_all_columns_shows_once() -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "Sales 2024"
    sheet.merge_cells("A1:C1")
    sheet["A2"], sheet["B2"] = "Region", "Q1"
    sheet.merge_cells("A2:A3")
    sheet.merge_cells("B2:C2")
    sheet["B3"], sheet["C3"] = "Jan", "Feb"
    sheet.append(["north", 1, 2])
    sheet.append(["south", 3, 4])
    sheet["A7"] = "Fruit"
    sheet.merge_cells("A7:A9")
    for row, name in enumerate(("apple", "pear", "plum"), 7):
        sheet.cell(row, 2, name)
    text = XlsxParser().decode(saved(book))
    assert tsv(text, "A1:C5") == [
        "Sales 2024\t\t",
        "Region\tQ1\tQ1",
        "Region\tJan\tFeb",
        "north\t1\t2",
        "south\t3\t4",
    ]
    assert tsv(text, "A7:B9") == ["Fruit\tapple", "Fruit\tpear", "Fruit\tplum"]


def test_a_merged_block_alone_in_its_region_is_not_repeated() -> None:
    text = XlsxParser().decode(real_file("calamine/richtext-namespaced.xlsx"))  # A1:G3 and H1:M3 merged
    assert tsv(text, "A1:M3") == [
        "inline string Line 2 Line 3" + "\t" * 7 + "shared string Line 2 Line 3" + "\t" * 5
    ]
