"""Excel (.xlsx): a heading per sheet, a heading per region of rows named by its cell range, each cell's
cached value (never a formula) as the cell shows it, within a cell cap, a scan budget and a slot budget.

openpyxl (read-only) reads the package: sheets, shared strings, styles, date epoch, core properties. The
rows are streamed here with lxml's pull parser (no DTD, entities or network): openpyxl's read-only rows
are dense (a formatted ``XFD1`` makes a row of 16,384 slots) and carry no merged ranges. A cell holding a
value is still decoded by openpyxl's ``WorkSheetParser.parse_cell`` (shared strings, types, dates).

- **Strict OOXML** (``purl.oclc.org/ooxml`` namespaces, unknown to openpyxl) is rewritten in memory to
  Transitional, member by member, once the package passed the zip budget; a Strict workbook that
  still cannot be read is refused as ``strict``, never as empty.
- **Values as shown**: a number goes through its cell's number format. General shows at most 15
  significant digits, as Excel does (``18.364620000000002`` is ``18.36462``); decimals, thousands
  separators, percentages, scientific notation, literal text, currency and the negative and zero
  sections are applied, rounding half away from zero; fractions, conditions and other rare codes
  fall back to General. Booleans show ``TRUE``/``FALSE``; a date its ISO day, and its time when the
  format shows one.
- **Caps that tell the truth**: ``max_cells`` counts cells holding a value, never empty ones, and the
  cut (``stopped = "cells"``, noted) is made only when a row holding a value is left out. The rest is
  bounded apart: an empty cell or row with its own reference (``<row r="9" s="1"/>``: a sheet formatted
  down to row 1,048,576) is cut from the bytes by a regular expression before parsing, so such a sheet
  is read to its end in a second; a scan budget (``SCAN_FACTOR`` times ``max_cells``) is charged per
  ``<row>`` and ``<c>`` parsed and per merged cell filled, a slot budget as large per table slot
  written. Past the scan budget a sheet stops at the next chunk, the rest of the workbook is searched
  for a value (a non-empty ``<v>`` or ``<t>``) in one byte-level pass, and only if one is found is the
  cut noted. Hostile 230 MB sheets stop within 6 s on 2 cores (the child has 30 s).
- **Merged cells** are read from each sheet's ``<mergeCell ref=…>`` in a byte-level pass before its
  rows (at most ``MAX_MERGES``). A merged range's value is repeated in each of its cells, so a header
  merged over two columns heads both and a label merged down a block is on each of its rows (see
  ``_Region`` for the two exceptions). A row whose only values are such repeats is not written again,
  but does not end its region either.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from collections.abc import Callable, Iterator
from typing import IO, Any

from .common import Out, Refused, Stop, core_meta, transitional
from .numbers import NumberFormat, number_format

SCAN_FACTOR = 8
"""The scan and slot budgets are this many times ``max_cells``: 2.4 million by default, seconds of work."""
MAX_MERGES = 100_000
"""Merged ranges used per sheet; ranges past it are left as Excel stores them (value in the first cell)."""
MAX_ROWS = 1_048_576
MAX_COLUMNS = 16_384
CHUNK = 1 << 16
"""Bytes fed to the pull parser at a time; the scan budget is checked between chunks."""

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_ROW = f"{{{_MAIN}}}row"
_CELL = f"{{{_MAIN}}}c"
_V = f"{{{_MAIN}}}v"
_IS = f"{{{_MAIN}}}is"

# ------------------------------------------------------------------ regions


class _Budget:
    """What is left: cells holding a value; elements scanned (rows, cells, merged cells filled); table
    slots written (a region's rows times its width, empty cells included)."""

    def __init__(self, max_cells: int) -> None:
        self.cells = max_cells
        self.scan = self.slots = SCAN_FACTOR * max_cells


class _Region:
    """A run of rows of one sheet, named by the cell range it spans; rows are sparse until written.

    A row keeps its values and the merged ranges over it, whose values fill their cells when written,
    except in a region of one row (nothing to line up with) and for a range as wide as its region (a
    title over a table, shown once)."""

    def __init__(self) -> None:
        self.rows: list[tuple[dict[int, str], list[tuple[int, int, str]]]] = []
        self.first = self.last = self.bottom = self.left = self.right = 0

    def continues(self, number: int) -> bool:
        return bool(self.rows) and self.last < number <= max(self.last, self.bottom) + 1

    def add(self, number: int, cells: dict[int, str], merged: list[tuple[int, int, str]]) -> None:
        left, right = min([*cells, *(m[0] for m in merged)]), max([*cells, *(m[1] for m in merged)])
        if not self.rows:
            self.first, self.left, self.right = number, left, right
        self.left, self.right = min(self.left, left), max(self.right, right)
        self.last, self.bottom = number, max(self.bottom, number)
        self.rows.append((cells, merged))

    def flush(self, out: Out, budget: _Budget, column: Callable[[int], str]) -> None:
        """Write the region as a table; one wider than the slot budget allows is cut there, with a note."""
        if not self.rows:
            return
        rows, self.rows = self.rows, []
        bottom, self.bottom = self.bottom, 0
        width = self.right - self.left + 1
        affordable = budget.slots // width
        cut = affordable < len(rows)
        rows = rows[:affordable]
        budget.slots -= width * len(rows)
        if rows:
            last = bottom if not cut else self.first + len(rows) - 1
            out.add("h", 2, f"{column(self.left)}{self.first}:{column(self.right)}{last}")
            span = range(self.left, self.right + 1)
            table = []
            for cells, merged in rows:
                line = [cells.get(c, "") for c in span]
                for left, right, value in merged:
                    if len(rows) == 1 or (left <= self.left and right >= self.right):
                        continue
                    for c in range(left, right + 1):
                        if c not in cells:
                            line[c - self.left] = value
                table.append(line)
            out.add("table", table)
        if cut:
            out.stopped = "cells"
            raise Stop


# ------------------------------------------------------------------ reading


def read(raw: bytes, out: Out, meta: dict[str, Any], max_cells: int) -> None:
    import openpyxl  # type: ignore[import-untyped]
    from openpyxl.utils import get_column_letter  # type: ignore[import-untyped]
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet  # type: ignore[import-untyped]

    # openpyxl opens each read-only sheet to find its declared size, and parses the whole sheet when
    # it declares none; the rows are streamed here, so that size is never needed (this process only).
    ReadOnlyWorksheet._get_size = lambda self: None
    package, strict = transitional(raw)
    try:
        book = openpyxl.load_workbook(io.BytesIO(package), read_only=True, data_only=True, keep_links=False)
        meta.update(core_meta(book.properties))
        try:
            _Workbook(book, out, max_cells, get_column_letter).read()
        finally:
            book.close()
    except (Stop, Refused, MemoryError, RecursionError):
        raise
    except Exception as exc:
        if not strict:
            raise
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise Refused("strict", f"{reason}, even with its Strict namespaces rewritten") from None


class _Workbook:
    def __init__(self, book: Any, out: Out, max_cells: int, column: Callable[[int], str]) -> None:
        from openpyxl.styles.numbers import BUILTIN_FORMATS  # type: ignore[import-untyped]
        from openpyxl.worksheet._reader import WorkSheetParser  # type: ignore[import-untyped]

        self.book, self.out, self.column = book, out, column
        self.budget = _Budget(max_cells)
        self.archive: zipfile.ZipFile = book._archive
        strings = book.worksheets[0]._shared_strings if book.worksheets else []
        self.cells = WorkSheetParser(
            None, strings, data_only=True, epoch=book.epoch,
            date_formats=book._date_formats, timedelta_formats=book._timedelta_formats,
        )  # fmt: skip
        self.builtin: dict[int, str] = BUILTIN_FORMATS
        self.formats: dict[int, NumberFormat] = {}
        self.merges: list[tuple[int, int, int, int]] = []
        self.merge_at = 0
        self.active: list[tuple[int, int, int, str]] = []  # live ranges: (last row, left, right, value)

    def read(self) -> None:
        sheets = list(self.book.worksheets)
        for index, sheet in enumerate(sheets):
            self.out.add("h", 1, sheet.title)
            if (rest_holds_value := self._sheet(sheet._worksheet_path)) is None:
                continue
            later = sheets[index + 1 :]  # the scan budget ran out: a cut is noted if a value is left out
            if rest_holds_value or any(self._holds_value(s._worksheet_path) for s in later):
                self.out.stopped = "cells"
                raise Stop
            for empty in later:
                self.out.add("h", 1, empty.title)
            return

    def _holds_value(self, path: str) -> bool:
        with self.archive.open(path) as stream:
            return next(_scan(stream, _VALUE, _VALUE_NEEDLES), None) is not None

    def _sheet(self, path: str) -> bool | None:
        """Read one sheet into regions: ``None`` once read to its end, else (the scan budget ran out)
        whether the part not read holds a value."""
        from lxml import etree  # type: ignore[import-untyped]

        self.merges, self.merge_at, self.active = self._merges(path), 0, []
        region = _Region()
        parser = etree.XMLPullParser(tag=_ROW, resolve_entities=False, no_network=True, load_dtd=False)
        sheet_data: Any = None
        row: Any = None
        number = 0
        with self.archive.open(path) as stream:
            feed = _Feed(stream)
            for piece in feed:
                parser.feed(piece)
                for _, row in parser.read_events():
                    if sheet_data is None:
                        sheet_data = row.getparent()
                    number = _row_number(row.get("r"), number)
                    self._row(row, number, region)
                if sheet_data is not None and len(sheet_data) > 1:
                    del sheet_data[:-1]  # rows read (and cleared) leave the tree; the last may be open
                if self.budget.scan < 0:
                    region.flush(self.out, self.budget, self.column)
                    open_row = sheet_data[-1] if sheet_data is not None and len(sheet_data) else None
                    if open_row is not None and open_row is not row and any(map(_holds, open_row)):
                        return True
                    return next(_scan(stream, _VALUE, _VALUE_NEEDLES, feed.carry), None) is not None
        parser.close()  # a sheet cut short, or malformed, is an error here, never a quiet end
        region.flush(self.out, self.budget, self.column)
        return None

    def _row(self, row: Any, number: int, region: _Region) -> None:
        """One row: its values counted against the cell cap, merged ranges applied, added to its region."""
        budget, out = self.budget, self.out
        budget.scan -= 1 + len(row)
        own = self._cells(row) if len(row) else {}
        row.clear()  # its cells are read; the row itself leaves the tree after the chunk
        if not own:
            return
        if budget.cells < len(own):  # a row holding values is left out: the cut is real
            region.flush(out, budget, self.column)
            out.stopped = "cells"
            raise Stop
        budget.cells -= len(own)
        if not region.continues(number):
            region.flush(out, budget, self.column)
        merges, active = self.merges, self.active
        while self.merge_at < len(merges) and merges[self.merge_at][0] <= number:
            top, left, bottom, right = merges[self.merge_at]
            self.merge_at += 1
            if top == number and (anchor := own.get(left)):  # a range starts with its value
                active.append((bottom, left, right, anchor))
                region.bottom = max(region.bottom, bottom)
        if active:
            active[:] = [m for m in active if m[0] >= number]
            cost = len(active) + sum(m[2] - m[1] + 1 for m in active)
            if cost > budget.scan:
                region.flush(out, budget, self.column)
                out.stopped = "cells"
                raise Stop
            budget.scan -= cost
        region.add(number, own, [m[1:] for m in active])

    def _cells(self, row: Any) -> dict[int, str]:
        """The cells of a row that hold a value, by column, as they show."""
        found: dict[int, str] = {}
        column = 0
        for cell in row:  # empty cells with a reference were cut from the bytes: few reach here
            column = _column(ref, column) if (ref := cell.get("r")) else column + 1
            if not len(cell) or cell.tag != _CELL or not _holds(cell):
                continue  # no <v> or <is>: empty (perhaps formatted), or a formula with no cached value
            cell.set("r", "")  # placed here; parse_cell would parse the reference again
            decoded = self.cells.parse_cell(cell)
            text = self._text(decoded["value"], decoded["style_id"])
            if text.strip():
                found[column] = text
        return found

    def _text(self, value: object, style_id: int) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, (int, float)):
            return self._format(style_id)(value)
        if isinstance(value, dt.datetime):
            shown = self._format(style_id)
            timeless = (shown.shows_date and not shown.shows_time) or value.time() == dt.time()
            return value.date().isoformat() if timeless else value.isoformat()
        if isinstance(value, dt.timedelta):
            seconds = round(value.total_seconds())
            sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
            return f"{sign}{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if isinstance(value, (dt.date, dt.time)):
            return value.isoformat()
        return str(value)

    def _format(self, style_id: int) -> NumberFormat:
        if (known := self.formats.get(style_id)) is None:
            try:  # as openpyxl's ReadOnlyCell.number_format: custom formats are numbered from 164
                number_id = int(self.book._cell_styles[style_id].numFmtId)
                code = self.builtin.get(number_id, "General") if number_id < 164 else None
                code = code or self.book._number_formats[number_id - 164]
            except (IndexError, TypeError, ValueError, AttributeError):
                code = "General"
            known = self.formats[style_id] = number_format(str(code))
        return known

    def _merges(self, path: str) -> list[tuple[int, int, int, int]]:
        """The sheet's merged ranges of more than one cell, by first row: (top, left, bottom, right)."""
        merges: list[tuple[int, int, int, int]] = []
        with self.archive.open(path) as stream:
            for match in _scan(stream, _MERGE, (b"mergeCell",)):
                one, two = _reference(match[1]), _reference(match[2])
                if one and two and one != two:
                    merges.append(
                        (min(one[0], two[0]), min(one[1], two[1]), max(one[0], two[0]), max(one[1], two[1]))
                    )
                    if len(merges) >= MAX_MERGES:
                        break
        merges.sort()
        return merges


_MERGE = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?mergeCell\s[^>]*?\bref\s*=\s*[\"']\s*"
    rb"([A-Za-z]{1,3}[0-9]{1,7})(?::([A-Za-z]{1,3}[0-9]{1,7}))?\s*[\"']"
)
_VALUE = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(?:v|t)(?:\s[^>]*)?>[^<]")  # a cell's value, an inline string
_VALUE_NEEDLES = (b"v>", b"t>", b"t ")


_EMPTY_CELL = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?c\s[^<>]*?\br\s*=\s*[\"'][^\"'<>]*[\"'][^<>]*?"
    rb"(?:/>|>\s*</(?:[A-Za-z_][\w.-]*:)?c\s*>)"
)
_EMPTY_ROW = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?row\s[^<>]*?\br\s*=\s*[\"'][^\"'<>]*[\"'][^<>]*?"
    rb"(?:/>|>\s*</(?:[A-Za-z_][\w.-]*:)?row\s*>)"
)
"""An empty cell or row with its own reference, cut from the bytes before parsing. One without a
reference is never cut: its place counts from the one before (in a sheet mixing the two, which no writer
we know of does, a cell without a reference after a cut one would move left)."""


class _Feed:
    """A stream's bytes in pieces of about ``size``, each cut before its last ``<`` (what follows is
    carried into the next) so that no tag is split; ``strip`` takes empty cells and rows out."""

    def __init__(self, stream: IO[bytes], size: int = CHUNK, carry: bytes = b"", strip: bool = True) -> None:
        self.stream, self.size, self.carry, self.strip = stream, size, carry, strip

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self.stream.read(self.size):
            buffer = self.carry + chunk
            cut = buffer.rfind(b"<")
            if cut <= 0 or len(buffer) - cut > CHUNK * 64:  # no tag starts here, or one enormous tag
                cut = len(buffer)
            head, self.carry = buffer[:cut], buffer[cut:]
            yield _EMPTY_ROW.sub(b"", _EMPTY_CELL.sub(b"", head)) if self.strip else head
        if self.carry:
            tail, self.carry = self.carry, b""
            yield tail


def _scan(
    stream: IO[bytes], pattern: re.Pattern[bytes], needles: tuple[bytes, ...], carry: bytes = b""
) -> Iterator[re.Match[bytes]]:
    """Matches of ``pattern`` (a tag) in a stream; a piece holding none of the ``needles`` (found at the
    speed of a byte search) is not searched at all."""
    for piece in _Feed(stream, CHUNK * 16, carry, strip=False):
        if any(needle in piece for needle in needles):
            yield from pattern.finditer(piece)


def _holds(cell: Any) -> bool:
    """Whether a cell has a value element (``<v>`` or ``<is>``), not only a formula."""
    return any(child.tag == _V or child.tag == _IS for child in cell)


def _reference(ref: bytes | None) -> tuple[int, int] | None:
    """``(row, column)`` of an ``A1`` reference, or ``None`` outside the grid."""
    text = (ref or b"").decode("ascii")
    column = _column(text, -1)
    digits = text.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    row = _row_number(digits, -1) if digits.isdigit() else 0
    return (row, column) if row > 0 and column > 0 else None


def _column(ref: str, previous: int) -> int:
    """The column of a cell reference (``B7`` is 2); one past ``previous`` when it names none."""
    column = 0
    for ch in ref:
        code = ord(ch) | 32  # lower case
        if not 97 <= code <= 122:
            break
        column = column * 26 + code - 96
    return column if 1 <= column <= MAX_COLUMNS else previous + 1


def _row_number(ref: str | None, previous: int) -> int:
    """A row's number from its ``r``, or one past ``previous`` when it gives none inside the grid."""
    number = int(ref) if ref is not None and ref.isdigit() and len(ref) < 9 else 0
    return number if 1 <= number <= MAX_ROWS else previous + 1
