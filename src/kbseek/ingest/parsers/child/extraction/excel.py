"""Excel (.xlsx) through openpyxl: a heading per sheet, a heading per region of non-empty rows named by
its cell range, cached values (never formulas), within a cell budget."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

from .common import Out, Stop, core_meta


class _Region:
    """A run of non-empty rows of one sheet, named by the cell range it spans."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = []
        self.first = self.last = self.left = self.right = 0

    def add(self, number: int, row: list[str], filled: list[int]) -> None:
        if not self.rows:
            self.first, self.left, self.right = number, filled[0], filled[-1]
        self.left, self.right = min(self.left, filled[0]), max(self.right, filled[-1])
        self.last = number
        self.rows.append(row)

    def flush(self, out: Out, column: Any) -> None:
        if self.rows:
            rows = [row[self.left - 1 : self.right] for row in self.rows]
            self.rows = []
            out.add("h", 2, f"{column(self.left)}{self.first}:{column(self.right)}{self.last}")
            out.add("table", rows)


def read(raw: bytes, out: Out, meta: dict[str, Any], max_cells: int) -> None:
    import openpyxl  # type: ignore[import-untyped]
    from openpyxl.utils import get_column_letter  # type: ignore[import-untyped]

    book = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True, keep_links=False)
    meta.update(core_meta(book.properties))
    cells_left = max_cells
    try:
        for sheet in book.worksheets:
            out.add("h", 1, sheet.title)
            sheet.reset_dimensions()  # never trust the declared size: a sparse sheet stays sparse
            region = _Region()
            for number, values in enumerate(sheet.iter_rows(values_only=True), 1):
                cells_left -= max(1, len(values))
                if cells_left < 0:
                    region.flush(out, get_column_letter)
                    out.stopped = "cells"
                    raise Stop
                row = [_cell_text(v) for v in values]
                filled = [i for i, v in enumerate(row, 1) if v]
                if filled:
                    region.add(number, row, filled)
                else:
                    region.flush(out, get_column_letter)
            region.flush(out, get_column_letter)
    finally:
        book.close()


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    return str(value)
