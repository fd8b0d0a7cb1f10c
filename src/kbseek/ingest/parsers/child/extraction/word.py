"""Word (.docx) through python-docx: headings by paragraph style, list items, tables (merged cells once,
nested tables after their row), core properties."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

from .common import MAX_DEPTH, Out, core_meta


def read(raw: bytes, out: Out, meta: dict[str, Any]) -> None:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(raw))
    meta.update(core_meta(document.core_properties))

    def table_rows(table: Table, depth: int) -> Iterator[list[str]]:
        for row in table.rows:
            cells: list[str] = []
            seen: set[int] = set()
            nested: list[Table] = []
            for cell in row.cells:
                if id(cell._tc) in seen:  # a merged cell repeats; its text counts once
                    continue
                seen.add(id(cell._tc))
                cells.append(" ".join(p.text for p in cell.paragraphs))
                nested.extend(cell.tables)
            yield cells
            if depth < MAX_DEPTH:
                for inner in nested:
                    yield from table_rows(inner, depth + 1)

    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            style = (item.style.name if item.style is not None else "") or ""
            heading = re.fullmatch(r"Heading ([1-9])", style)
            if style == "Title":
                out.add("h", 1, item.text)
            elif heading is not None:
                out.add("h", int(heading[1]), item.text)
            elif style.startswith("List"):
                out.add("li", item.text)
            else:
                out.add("p", item.text)
        else:
            out.add("table", list(table_rows(item, 1)))
