"""The child process that extracts text from .docx, .xlsx, .pptx and .html files: bytes on stdin, JSON on stdout.

Like ``_pdf_child.py`` it runs apart from kbseek so the parent can kill it,
and a crash or a memory blow-up takes down only this process; it imports
nothing from kbseek. The libraries do the reading (python-docx, openpyxl,
python-pptx, the standard library's ``html.parser``); this script only walks
what they return into blocks (``converted.py`` describes them).

Before a library sees an Office file, the zip package is checked against a
budget: the sizes its members declare, then the bytes they really inflate to
(``zipfile`` stops a member at its declared size and then fails its CRC, so
a member lying about its size is refused as corrupt, never inflated further).

Arguments: ``format max_chars max_cells zip_budget cpu_seconds memory_bytes``.
The answer is ``{"blocks": [...], "meta": {...}, "stopped": null | "chars" | "cells"}``
or ``{"error": code, "detail": text}``.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import re
import sys
import warnings
import zipfile
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

MAX_MEMBERS = 10_000
MAX_DEPTH = 8
"""Tables inside tables (and shape groups) followed at most this deep; deeper text is left out."""


class Stop(Exception):
    """A cap was reached; what was extracted so far is the answer."""


class Refused(Exception):
    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def _limit_resources(cpu_seconds: int, memory_bytes: int) -> None:
    try:
        import resource
    except ImportError:
        return
    for kind, soft in ((resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_AS, memory_bytes)):
        try:
            _, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(kind, (soft, hard))
        except (ValueError, OSError):
            continue


class Out:
    """Blocks, counted against the character cap."""

    def __init__(self, max_chars: int) -> None:
        self.blocks: list[list[Any]] = []
        self.left = max_chars
        self.stopped: str | None = None

    def _take(self, text: str) -> str:
        if len(text) > self.left:
            text = text[: self.left]
            self.left = 0
            self.stopped = "chars"
            return text
        self.left -= len(text)
        return text

    def add(self, kind: str, *args: Any) -> None:
        if kind == "table":
            rows: list[list[str]] = []
            for row in args[0]:
                cells = [self._take(c) for c in row]
                rows.append(cells)
                if self.stopped:
                    break
            self.blocks.append(["table", rows])
        else:
            *head, text = args
            self.blocks.append([kind, *head, self._take(text)])
        if self.stopped:
            raise Stop


def check_zip(raw: bytes, budget: int) -> None:
    """Refuse a package that is not a zip, or inflates past ``budget`` bytes, before any library reads it."""
    try:
        package = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise Refused(
            "corrupt", f"not a zip package ({exc}); encrypted, damaged or an older binary format?"
        ) from None
    with package:
        members = package.infolist()
        if len(members) > MAX_MEMBERS:
            raise Refused("bomb", f"{len(members)} members in the package, over the limit of {MAX_MEMBERS}")
        declared = sum(m.file_size for m in members)
        if declared > budget:
            raise Refused(
                "bomb", f"its members declare {declared} bytes uncompressed, over the budget of {budget}"
            )
        inflated = 0
        for member in members:
            try:
                with package.open(member) as stream:
                    while chunk := stream.read(1 << 20):
                        inflated += len(chunk)
                        if inflated > budget:
                            raise Refused("bomb", f"its members inflate past the budget of {budget} bytes")
            except Refused:
                raise
            except RuntimeError as exc:  # zipfile: "File ... is encrypted"
                raise Refused("corrupt", f"{member.filename}: {exc}") from None
            except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
                raise Refused("corrupt", f"{member.filename}: {exc}") from None
            except Exception as exc:  # zlib.error and the like
                raise Refused("corrupt", f"{member.filename}: {type(exc).__name__}: {exc}") from None


def _when(value: object) -> str | None:
    return value.isoformat() if isinstance(value, (dt.datetime, dt.date)) else None


def _core_meta(props: Any) -> dict[str, Any]:
    """Title, keywords and dates from an OPC package's core properties (docx, xlsx, pptx alike)."""
    return {
        "title": getattr(props, "title", None),
        "keywords": getattr(props, "keywords", None),
        "date": _when(getattr(props, "created", None)),
        "modified": _when(getattr(props, "modified", None)),
    }


# ------------------------------------------------------------------ docx


def _docx(raw: bytes, out: Out, meta: dict[str, Any]) -> None:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(raw))
    meta.update(_core_meta(document.core_properties))

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


# ------------------------------------------------------------------ xlsx


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


def _xlsx(raw: bytes, out: Out, meta: dict[str, Any], max_cells: int) -> None:
    import openpyxl  # type: ignore[import-untyped]
    from openpyxl.utils import get_column_letter  # type: ignore[import-untyped]

    book = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True, keep_links=False)
    meta.update(_core_meta(book.properties))
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


# ------------------------------------------------------------------ pptx


def _pptx(raw: bytes, out: Out, meta: dict[str, Any]) -> None:
    import pptx

    deck = pptx.Presentation(io.BytesIO(raw))
    meta.update(_core_meta(deck.core_properties))

    def shapes(group: Any, depth: int) -> Iterator[Any]:
        for shape in group:
            if getattr(shape, "shape_type", None) == 6 and depth < MAX_DEPTH:  # MSO_SHAPE_TYPE.GROUP
                yield from shapes(shape.shapes, depth + 1)
            else:
                yield shape

    for number, slide in enumerate(deck.slides, 1):
        title_shape = slide.shapes.title
        title = title_shape.text_frame.text if title_shape is not None else ""
        out.add("h", 1, f"Slide {number}: {' '.join(title.split())}" if title.strip() else f"Slide {number}")
        for shape in shapes(slide.shapes, 1):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False):
                out.add("table", [[c.text for c in row.cells] for row in shape.table.rows])
            elif getattr(shape, "has_text_frame", False):
                for paragraph in shape.text_frame.paragraphs:
                    out.add("li" if paragraph.level > 0 else "p", paragraph.text)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                out.add("h", 2, "Speaker notes")
                out.add("p", notes.text)


# ------------------------------------------------------------------ html

_DROPPED = frozenset(
    {"script", "style", "nav", "header", "footer", "aside", "noscript", "template", "svg", "form",
     "button", "iframe", "object", "select", "dialog", "menu"}
)  # fmt: skip
_BREAKS = frozenset(
    {"p", "div", "section", "li", "dd", "dt", "blockquote", "br", "hr", "figcaption", "address",
     "tr", "table", "ul", "ol", "dl", "pre", "article", "main", "body", "details", "summary", "caption"}
)  # fmt: skip
_MAIN = frozenset({"main", "article"})
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr", "area", "base", "col", "source"})


class _Page(HTMLParser):
    """The main text of a page as blocks: streaming, so nesting depth costs nothing.

    What sits inside ``<main>`` or ``<article>`` is kept when the page has
    such an element, everything outside the dropped elements otherwise.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[bool, list[Any]]] = []
        self.stack: list[str] = []
        self.dropping = 0
        self.main = 0
        self.text: list[str] = []
        self.kind: list[Any] = ["p"]
        self.table: list[list[str]] | None = None
        self.tables = 0
        self.cell: list[str] | None = None
        self.pre = 0
        self.title: list[str] | None = None
        self.title_text = ""
        self.meta: dict[str, Any] = {}

    def _flush(self) -> None:
        text = "".join(self.text)
        self.text = []
        if text.strip() if self.pre == 0 else text.strip("\n"):
            self.blocks.append((self.main > 0, [*self.kind, text]))
        self.kind = ["p"]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.title = []
            return
        if tag == "meta":
            values = dict(attrs)
            if (values.get("name") or "").lower() == "keywords" and values.get("content"):
                self.meta["keywords"] = values["content"]
            return
        if tag in _VOID:
            if tag in ("br", "hr") and not self.dropping:
                (self.cell if self.cell is not None else self.text).append("\n")
            return
        self.stack.append(tag)
        if self.dropping or tag in _DROPPED:
            self.dropping += 1
            return
        if tag in _MAIN or dict(attrs).get("role") == "main":
            self.main += 1
        if tag == "table":
            self.tables += 1
            if self.tables == 1:
                self._flush()
                self.table = []
        elif tag == "tr" and self.table is not None and self.tables == 1:
            self.table.append([])
        elif tag in ("td", "th") and self.table is not None and self.tables == 1:
            self.cell = []
        elif self.table is None:
            if re.fullmatch(r"h[1-6]", tag):
                self._flush()
                self.kind = ["h", int(tag[1])]
            elif tag == "pre":
                self._flush()
                self.pre += 1
                self.kind = ["code", ""]
            elif tag == "li":
                self._flush()
                self.kind = ["li"]
            elif tag in _BREAKS:
                self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            if self.title is not None:
                self.title_text = "".join(self.title)
            self.title = None
            return
        if tag not in self.stack:
            return  # a stray end tag closes nothing
        while self.stack:
            open_tag = self.stack.pop()
            self._close(open_tag)
            if open_tag == tag:
                break

    def _close(self, tag: str) -> None:
        if self.dropping:
            self.dropping -= 1
            return
        if tag in ("td", "th") and self.cell is not None and self.tables == 1 and self.table:
            self.table[-1].append("".join(self.cell))
            self.cell = None
        elif tag == "table":
            self.tables -= 1
            if self.tables == 0 and self.table is not None:
                self.blocks.append((self.main > 0, ["table", self.table]))
                self.table = None
        elif self.table is None and (tag in _BREAKS or re.fullmatch(r"h[1-6]", tag)):
            self._flush()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)
        if tag in _MAIN:
            self.main = max(0, self.main - 1)

    def handle_data(self, data: str) -> None:
        if self.title is not None:
            self.title.append(data)
        elif not self.dropping:
            if self.cell is not None:
                self.cell.append(" " + data)
            elif self.table is not None:
                return  # text between cells
            else:
                self.text.append(data)


def _decode_html(raw: bytes) -> str:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        declared = re.search(rb"""charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", raw[:2048])
        try:
            return raw.decode(declared[1].decode("ascii") if declared else "cp1252", "replace")
        except LookupError:
            return raw.decode("cp1252", "replace")


def _html(raw: bytes, out: Out, meta: dict[str, Any]) -> None:
    page = _Page()
    page.feed(_decode_html(raw))
    page.close()
    page._flush()
    meta.update(page.meta)
    meta["title"] = " ".join(page.title_text.split()) or None
    in_main = any(main for main, _ in page.blocks)
    for main, block in page.blocks:
        if main or not in_main:
            out.add(*block)


# ------------------------------------------------------------------ main


def extract(fmt: str, raw: bytes, max_chars: int, max_cells: int, zip_budget: int) -> dict[str, Any]:
    out = Out(max_chars)
    meta: dict[str, Any] = {}
    try:
        if fmt != "html":
            check_zip(raw, zip_budget)
        if fmt == "docx":
            _docx(raw, out, meta)
        elif fmt == "xlsx":
            _xlsx(raw, out, meta, max_cells)
        elif fmt == "pptx":
            _pptx(raw, out, meta)
        elif fmt == "html":
            _html(raw, out, meta)
        else:
            return {"error": "unreadable", "detail": f"unknown format {fmt}"}
    except Stop:
        pass
    except Refused as exc:
        return {"error": exc.code, "detail": exc.detail}
    except ImportError as exc:
        return {"error": "missing-library", "detail": str(exc)}
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:
        return {"error": "unreadable", "detail": f"{type(exc).__name__}: {exc}"}
    safe_meta = {k: v for k, v in meta.items() if isinstance(v, str) and v.strip()}
    return {"blocks": out.blocks, "meta": safe_meta, "stopped": out.stopped}


def main() -> None:
    fmt = sys.argv[1]
    max_chars, max_cells, zip_budget, cpu_seconds, memory_bytes = (int(a) for a in sys.argv[2:7])
    out = sys.stdout
    sys.stdout = sys.stderr
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    _limit_resources(cpu_seconds, memory_bytes)
    try:
        answer = extract(fmt, sys.stdin.buffer.read(), max_chars, max_cells, zip_budget)
    except MemoryError:
        answer = {"error": "memory", "detail": ""}
    except RecursionError:
        answer = {"error": "unreadable", "detail": "elements nested too deeply"}
    # ASCII JSON: no stdout encoding can mangle it; the parent replaces any lone surrogate.
    out.write(json.dumps(answer, ensure_ascii=True))
    out.flush()


if __name__ == "__main__":
    main()
