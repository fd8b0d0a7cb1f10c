"""PDF files, served as the text kbseek extracts from them (opt-in: add ``"pdf"`` to ``[parsers].enabled``).

kbseek never serves the PDF bytes: ``decode`` extracts the text with pypdf
and that text is what gets indexed, chunked and read back, so the media type
is ``text/plain``.

**Served text.** Each page becomes a segment that opens with a marker line
``[p.N]`` (1-based), and segments are joined by a form feed (``\\f``), the
usual page-break character of text extracted from PDFs::

    [p.1]\\n\\n<page 1 text>\\n\\f[p.2]\\n\\n<page 2 text>\\n\\f[p.3]\\n

Page text never contains a form feed (extraction turns every control
character but tab and newline into a space), so ``text.split("\\f")`` gives
the pages back exactly, however odd the page text is; the marker lines let a
reader of the served text cite pages. A page without text keeps its marker,
so page numbers stay true. If a cap stopped extraction, a last segment
starting with ``[truncated:`` says so.

**Chunks** never cross a page: each page is chunked on its own with the
shared chunker, and every chunk's heading path is ``(title, "p.N")``. The
marker lines are left out of the chunks (they would only add noise to every
embedding).

**Bounds.** pypdf is pure Python, and a hostile or broken PDF can keep it
busy for minutes or make it allocate without end. Extraction therefore runs
in a child process (``_pdf_child.py``) that is killed after a wall-clock
limit, and that caps itself by CPU time and address space in case kbseek dies
first. Output stops at a page cap and a character cap.

pypdf is an optional dependency (``kbseek[pdf]``) and is only ever imported
in the child, so kbseek starts and indexes Markdown without it.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from kbseek.documents import Chunk, ParsedDocument
from kbseek.ingest.chunker import ChunkOptions, LineIndex, build_chunks, chunk_id_for, content_hash_for
from kbseek.ingest.parsers.child_process import run_child
from kbseek.ingest.parsers.text import paragraph_blocks, title_from_path

TIME_LIMIT_S = 20.0
"""Wall-clock seconds one PDF may take, child start-up included."""
MAX_PAGES = 2000
"""Pages extracted at most; later pages are left out and the text says so."""
MAX_CHARS = 2_000_000
"""Characters of page text extracted at most (about 700 dense pages)."""
MEMORY_LIMIT_BYTES = 1 << 30
"""Address space the child may use, plus 16 bytes per input byte: a real PDF needs far
less, a decompression bomb hits the limit and is reported instead of swapping the host."""

PAGE_SEPARATOR = "\f"
TRUNCATION_PREFIX = "[truncated:"
INSTALL_HINT = "pip install 'kbseek[pdf]'"

_CHILD = Path(__file__).with_name("_pdf_child.py")
_HEADER = b"%PDF-"
_MARKER = re.compile(r"\[p\.([1-9][0-9]*)\]\n")


def pypdf_available() -> bool:
    """Whether pypdf can be imported, found without importing it (the import is the child's job)."""
    return importlib.util.find_spec("pypdf") is not None


def page_marker(number: int) -> str:
    """The line that opens page ``number`` (1-based) in the served text."""
    return f"[p.{number}]"


def join_pages(pages: list[str], note: str | None = None) -> str:
    """The served text for already-cleaned page texts, in the convention the module docstring describes."""
    segments = [
        f"{page_marker(number)}\n\n{body}\n" if body else f"{page_marker(number)}\n"
        for number, body in enumerate(pages, 1)
    ]
    if note:
        segments.append(f"{TRUNCATION_PREFIX} {note}]\n")
    return PAGE_SEPARATOR.join(segments)


class PdfParser:
    """``.pdf`` files, titled by their file name and chunked page by page.

    The title is the file stem, as for plain text: the PDF ``/Title`` field
    is as often a leftover ("Microsoft Word - Document1") as a real title,
    and no rule for spotting a title on page 1 is reliable across layouts.
    """

    name = "pdf"
    extensions: tuple[str, ...] = (".pdf",)
    media_type = "text/plain"  # what is served is the extracted text, never the PDF bytes

    def __init__(
        self,
        *,
        time_limit_s: float = TIME_LIMIT_S,
        max_pages: int = MAX_PAGES,
        max_chars: int = MAX_CHARS,
    ) -> None:
        if not (math.isfinite(time_limit_s) and time_limit_s > 0) or max_pages <= 0 or max_chars <= 0:
            raise ValueError(
                f"PDF limits must be positive (time_limit_s={time_limit_s}, "
                f"max_pages={max_pages}, max_chars={max_chars})"
            )
        self.time_limit_s = time_limit_s
        self.max_pages = max_pages
        self.max_chars = max_chars

    # ------------------------------------------------------------- decode

    def decode(self, raw: bytes) -> str:
        """Extract the text, or raise ``ValueError`` with the reason a reader of the index status needs."""
        if not pypdf_available():
            raise ValueError(f"reading PDF files needs the pypdf package: {INSTALL_HINT}")
        if _HEADER not in raw[:1024]:
            # Spare a child start for the commonest junk: readers accept the
            # header anywhere in the first kilobyte, and so does this check.
            raise ValueError("not a readable PDF: no %PDF- header in its first 1024 bytes")
        answer = self._extract(raw)
        error = answer.get("error")
        if error is not None:
            raise ValueError(_error_message(str(error), str(answer.get("detail", ""))))
        pages = answer.get("pages")
        if not isinstance(pages, list) or not all(isinstance(p, str) for p in pages):
            raise ValueError("PDF text extraction failed: malformed answer from the extraction process")
        total = answer.get("total_pages")
        if not isinstance(total, int):
            total = len(pages)
        if total == 0:
            raise ValueError("no extractable text (the PDF has no pages)")
        if not any(pages):
            raise ValueError("no extractable text (scanned or image-only PDF)")
        return join_pages(pages, self._truncation_note(answer.get("stopped"), len(pages), total))

    def _truncation_note(self, stopped: object, extracted: int, total: int) -> str | None:
        if stopped == "pages":
            return (
                f"kbseek extracts at most {self.max_pages} pages; "
                f"the text ends after page {extracted} of {total}"
            )
        if stopped == "chars":
            return (
                f"kbseek extracts at most {self.max_chars} characters; "
                f"the text stops on page {extracted} of {total}"
            )
        return None

    def child_command(self, input_bytes: int) -> list[str]:
        """The argv of the extraction child for an input of ``input_bytes`` bytes.

        A method rather than a constant so the kill path can be tested with a
        child that hangs on purpose.

        ``-P`` keeps the script's own directory (which holds modules such as
        ``markdown.py``) off the child's ``sys.path``. The CPU limit sits a
        little above the wall-clock limit so that it only fires when kbseek
        is no longer there to kill the child.
        """
        if not sys.executable:
            raise ValueError("cannot start PDF text extraction: the Python interpreter path is unknown")
        cpu_seconds = math.ceil(self.time_limit_s) + 2
        memory = MEMORY_LIMIT_BYTES + 16 * input_bytes
        return [
            sys.executable,
            "-P",
            str(_CHILD),
            str(self.max_pages),
            str(self.max_chars),
            str(cpu_seconds),
            str(memory),
        ]

    def _extract(self, raw: bytes) -> dict[str, Any]:
        """Run the child on ``raw`` and return its answer; the child is always gone when this returns."""
        return run_child(self.child_command(len(raw)), raw, self.time_limit_s, "PDF")

    # -------------------------------------------------------------- parse

    def parse(self, path: str, text: str, options: ChunkOptions) -> ParsedDocument:
        """Chunk each page on its own; heading paths name the page, offsets slice ``text``."""
        title = title_from_path(path)
        lines = LineIndex(text)
        chunks: list[Chunk] = []
        warnings: list[str] = []
        seen: dict[str, int] = {}
        page = 0
        position = 0
        for segment in text.split(PAGE_SEPARATOR):
            segment_start = position
            position += len(segment) + len(PAGE_SEPARATOR)
            marker = _MARKER.match(segment)
            if marker is not None:
                page, body_start = int(marker.group(1)), marker.end()
            elif segment.startswith(TRUNCATION_PREFIX):
                warnings.append(segment.strip().removeprefix("[").removesuffix("]"))
                continue
            else:  # not text this parser wrote; still keep every page's text findable
                page, body_start = page + 1, 0
            body = segment[body_start:]
            offset = segment_start + body_start
            heading_path = (title, f"p.{page}")
            for piece in build_chunks(
                path, body, paragraph_blocks(body, LineIndex(body)), title=title, options=options
            ):
                occurrence = seen.get(piece.text, 0)
                seen[piece.text] = occurrence + 1
                start, end = piece.start + offset, piece.end + offset
                chunks.append(
                    replace(
                        piece,
                        chunk_id=chunk_id_for(path, piece.text, occurrence),
                        ordinal=len(chunks),
                        start=start,
                        end=end,
                        heading_path=heading_path,
                        content_hash=content_hash_for(heading_path, piece.text),
                        line_start=lines.line_of(start),
                        line_end=lines.line_of(end - 1),
                    )
                )
        return ParsedDocument(text=text, title=title, chunks=tuple(chunks), warnings=tuple(warnings))


def _error_message(code: str, detail: str) -> str:
    """The sentence a skip reason or a refused read shows for the child's error code."""
    if code == "encrypted":
        return "encrypted PDF (kbseek does not index password-protected or restricted PDFs)"
    if code == "missing-pypdf":
        return f"reading PDF files needs the pypdf package: {INSTALL_HINT}"
    if code == "memory":
        return "PDF text extraction ran out of its memory limit (damaged or hostile PDF?)"
    return f"not a readable PDF: {detail[:300]}" if detail else "not a readable PDF"
