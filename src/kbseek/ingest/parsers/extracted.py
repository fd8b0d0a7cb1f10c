"""Word, Excel, PowerPoint and HTML files, served as the Markdown kbseek writes from their text (decision 0034).

Each parser is a name, its extensions and the library that reads the format;
the reading happens in ``_extract_child.py``, a child process killed after a
wall-clock limit that caps its own CPU time and address space (as for PDF),
and the blocks it returns become Markdown in ``converted.render``.

- ``docx`` (python-docx, a dependency of kbseek, on by default): paragraph
  styles ``Title`` and ``Heading N`` become headings, ``List …`` styles list
  items, tables tab-joined rows (a merged cell's text in every column it spans, nested tables after their
  row); title, keywords and dates come from the core properties.
- ``xlsx`` (openpyxl, a dependency, on by default): a ``#`` heading per sheet
  and a ``##`` heading per region (a run of non-empty rows, named by its cell
  range, ``A1:F40``) over its rows, tab-joined, each value as its number format
  shows it and a merged header repeated over its columns. Cached values are read,
  never formulas; a macro (``vbaProject.bin``) is never read, let alone run.
- ``pptx`` (python-pptx, the extra ``kbseek[pptx]``: it brings Pillow): a
  heading per slide, ``Slide N: title``, its text and tables, each chart's title
  and values as a table, SmartArt text and pictures' alt text, then its speaker
  notes under ``Speaker notes``.
- Word, Excel and PowerPoint in Strict Open XML are read after their names are
  translated to Transitional ones in memory (``child/extraction``).
- ``html`` (the standard library's ``html.parser``, off by default: a
  folder's ``.html`` is more often a built site duplicating its sources than
  a note): the text of ``<main>`` or ``<article>`` when the page has one, with
  scripts, styles, navigation, headers, footers and forms dropped.

Macro-enabled files (``.docm``, ``.xlsm``, ``.pptm``) are not opened at all. A file that cannot be
read raises :class:`~kbseek.ingest.parsers.unreadable.Unreadable`: the child names the reason by its
code, and the one table in ``unreadable.py`` words it.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

from kbseek.ingest.parsers.child_process import child_argv, run_child
from kbseek.ingest.parsers.converted import ConvertedParser, render
from kbseek.ingest.parsers.text import DecodedText
from kbseek.ingest.parsers.unreadable import Reason, Unreadable

TIME_LIMIT_S = 30.0
"""Wall-clock seconds one file may take, child start-up included."""
MAX_CHARS = 2_000_000
"""Characters of text extracted at most; the text then ends with a note saying so (D7)."""
MAX_CELLS = 300_000
"""Spreadsheet cells holding a value read at most; past it the text ends with a note, which appears only
when a value was really left out (empty and formatted-but-empty cells count for nothing)."""
ZIP_BUDGET = 256 * 1024 * 1024
"""Bytes an Office package may inflate to, declared and actual; past it the file is a zip bomb."""
MEMORY_LIMIT_BYTES = 1 << 30
"""Address space the child may use, plus 16 bytes per input byte."""

_CHILD = Path(__file__).with_name("_extract_child.py")


class ExtractedParser(ConvertedParser):
    """A format read in the extraction child."""

    label: str
    """How a message names the format (``Word``)."""
    module: str | None
    """The module the child imports, checked before a child is started; ``None`` for the standard library."""
    install_hint: str
    empty_reason = "the file holds no text"
    """Says, for :attr:`Reason.NO_TEXT`, what was left out when nothing was found."""

    def __init__(
        self,
        *,
        time_limit_s: float = TIME_LIMIT_S,
        max_chars: int = MAX_CHARS,
        max_cells: int = MAX_CELLS,
        zip_budget: int = ZIP_BUDGET,
    ) -> None:
        super().__init__()
        if (
            not (math.isfinite(time_limit_s) and time_limit_s > 0)
            or min(max_chars, max_cells, zip_budget) <= 0
        ):
            raise ValueError(
                f"{self.label} limits must be positive (time_limit_s={time_limit_s}, max_chars={max_chars}, "
                f"max_cells={max_cells}, zip_budget={zip_budget})"
            )
        self.time_limit_s = time_limit_s
        self.max_chars = max_chars
        self.max_cells = max_cells
        self.zip_budget = zip_budget

    def library_available(self) -> bool:
        """Whether the reading library is installed, found without importing it (the child's job)."""
        return self.module is None or importlib.util.find_spec(self.module) is not None

    def child_command(self, input_bytes: int) -> list[str]:
        """The child's argv; a method so a test can put a hanging child in its place."""
        return child_argv(
            _CHILD, self.name, self.max_chars, self.max_cells, self.zip_budget,
            math.ceil(self.time_limit_s) + 2, MEMORY_LIMIT_BYTES + 16 * input_bytes,
        )  # fmt: skip

    def decode(self, raw: bytes) -> str:
        """Extract and render, or raise :class:`Unreadable` with the reason ``kbseek status`` shows."""
        if not self.library_available():
            raise self._missing_library()
        try:
            command = self.child_command(len(raw))
            answer = run_child(command, raw, self.time_limit_s, self.label)
        except Unreadable as exc:
            raise exc.about(self.name, self.label) from None
        if answer.get("error") is not None:
            reason = Unreadable.from_child(answer, expected=self.name, what=self.label)
            raise self._missing_library() if reason.code is Reason.MISSING_LIBRARY else reason
        blocks, meta = answer.get("blocks"), answer.get("meta")
        if not isinstance(blocks, list) or not isinstance(meta, dict):
            raise Unreadable(
                Reason.CRASHED,
                "a malformed answer from the reading process",
                expected=self.name,
                what=self.label,
            )
        if not any(_has_text(block) for block in blocks) and not (meta.get("title") or meta.get("keywords")):
            if answer.get("strict"):
                raise Unreadable(Reason.STRICT, "no text came out of it", expected=self.name, what=self.label)
            raise Unreadable(Reason.NO_TEXT, self.empty_reason, expected=self.name, what=self.label)
        text = render(blocks, meta, self._truncation_note(answer.get("stopped")))
        encoding = meta.get("encoding")  # an HTML page the child decoded from a legacy encoding
        return DecodedText(text, encoding) if isinstance(encoding, str) and encoding else text

    def _truncation_note(self, stopped: Any) -> str | None:
        if stopped == "chars":
            return f"kbseek extracts at most {self.max_chars} characters of a file; the rest is left out"
        if stopped == "cells":
            return f"kbseek reads at most {self.max_cells} spreadsheet cells of a file; the rest is left out"
        return None

    def _missing_library(self) -> Unreadable:
        return Unreadable(
            Reason.MISSING_LIBRARY, f"the {self.module} package: {self.install_hint}", expected=self.name,
            what=self.label,
        )  # fmt: skip


def _has_text(block: Any) -> bool:
    """Whether a block (``converted.render``'s form) holds any text that is not blank.

    A file whose blocks are all blank (empty paragraphs, pictures, empty tables) and whose properties
    name no title or keywords has nothing a search could find: it is skipped as having no text rather
    than indexed empty."""
    if not isinstance(block, list) or not block:
        return False
    if block[0] == "table":
        rows = block[1] if len(block) > 1 and isinstance(block[1], list) else []
        return any(isinstance(c, str) and c.strip() for row in rows if isinstance(row, list) for c in row)
    return isinstance(block[-1], str) and bool(block[-1].strip())


class DocxParser(ExtractedParser):
    name = "docx"
    appendix_headings = frozenset({"Footnotes", "Endnotes", "Comments"})
    extensions: tuple[str, ...] = (".docx",)
    label = "Word (.docx)"
    module = "docx"
    install_hint = "it comes with kbseek; reinstall kbseek"


class XlsxParser(ExtractedParser):
    name = "xlsx"
    extensions: tuple[str, ...] = (".xlsx",)
    label = "Excel (.xlsx)"
    module = "openpyxl"
    install_hint = "it comes with kbseek; reinstall kbseek"
    heading_title = False  # the first heading is a sheet name; the file name says more


class PptxParser(ExtractedParser):
    name = "pptx"
    extensions: tuple[str, ...] = (".pptx",)
    label = "PowerPoint (.pptx)"
    module = "pptx"
    install_hint = "pip install 'kbseek[pptx]'"
    heading_title = False  # "Slide 1: …" names a slide, not the deck


class HtmlParser(ExtractedParser):
    name = "html"
    extensions: tuple[str, ...] = (".html", ".htm")
    label = "HTML"
    module = None
    install_hint = ""
    empty_reason = "nothing outside scripts, styles and navigation"
