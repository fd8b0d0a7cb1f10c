"""PDF files, served as the text kbseek extracts from them (opt-in: add ``"pdf"`` to ``[parsers].enabled``).

kbseek never serves the PDF bytes: ``decode`` extracts the text with pypdf
and that text is what gets indexed, chunked and read back, so the media type
is ``text/plain``.

**Served text.** Each page becomes a segment that opens with a marker line
``[p.N]`` (1-based), and segments are joined by two blank lines
(:data:`PAGE_SEPARATOR`, three newlines)::

    [p.1]\\n\\n<page 1 text>\\n\\n\\n[p.2]\\n\\n<page 2 text>\\n\\n\\n[p.3]\\n

which reads as it is everywhere the text is shown (``get_document``, a
resource, the web page)::

    [p.1]

    <page 1 text>


    [p.2]
    ...

Page text never holds two blank lines in a row (a longer run of blank lines
is shortened to one), so ``text.split(PAGE_SEPARATOR)`` gives the pages back
exactly, however odd the page text is, a line reading ``[p.7]`` included; the
marker lines let a reader of the served text cite pages. A page without text
keeps its marker, so page numbers stay true. If a cap stopped extraction, a
last segment starting with ``[truncated:`` says so. The separator used to be
a form feed, which every printed form of the text showed escaped
(``\\u000c[p.2]``); :meth:`PdfParser.parse` still splits on one, so text
served by an older kbseek is read the same.

**Page text** is the extracted text with newline line ends, control
characters as spaces, zero-width characters removed and Symbol or Wingdings
code points (U+F0xx) as the characters they show (``converted.readable``,
the cleaning the converted formats get).

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
from kbseek.ingest.parsers.converted import readable
from kbseek.ingest.parsers.text import paragraph_blocks, title_from_path
from kbseek.ingest.parsers.unreadable import Reason, Unreadable

TIME_LIMIT_S = 20.0
"""Wall-clock seconds one PDF may take, child start-up included."""
MAX_PAGES = 2000
"""Pages extracted at most; later pages are left out and the text says so."""
MAX_CHARS = 2_000_000
"""Characters of page text extracted at most (about 700 dense pages)."""
MEMORY_LIMIT_BYTES = 1 << 30
"""Address space the child may use, plus 16 bytes per input byte: a real PDF needs far
less, a decompression bomb hits the limit and is reported instead of swapping the host."""

PAGE_SEPARATOR = "\n\n\n"
"""Between two pages' segments: two blank lines, which page text never holds."""
TRUNCATION_PREFIX = "[truncated:"
INSTALL_HINT = "pip install 'kbseek[pdf]'"

_CHILD = Path(__file__).with_name("_pdf_child.py")
_HEADER = b"%PDF-"
_MARKER = re.compile(r"\[p\.([1-9][0-9]*)\](?:\n|\Z)")
_SEPARATORS = re.compile("\n\n\n|\f")
"""Where ``parse`` cuts pages: the separator, or the form feed of text served before it."""
_BLANK_LINES = re.compile(r"\n{3,}")


def pypdf_available() -> bool:
    """Whether pypdf can be imported, found without importing it (the import is the child's job)."""
    return importlib.util.find_spec("pypdf") is not None


def page_marker(number: int) -> str:
    """The line that opens page ``number`` (1-based) in the served text."""
    return f"[p.{number}]"


def page_text(extracted: str) -> str:
    """A page's text as served, from what the child extracted (newlines, no control characters):
    zero-width and symbol-font characters cleaned, runs of blank lines shortened to one, trimmed."""
    return _BLANK_LINES.sub("\n\n", readable(extracted)).strip()


def join_pages(pages: list[str], note: str | None = None) -> str:
    """The served text for page texts (:func:`page_text`), in the convention the module docstring describes."""
    segments = [page_marker(number) for number in range(1, len(pages) + 1)]
    for i, body in enumerate(pages):
        if body:  # the separator must stay the only run of two blank lines
            segments[i] += "\n\n" + _BLANK_LINES.sub("\n\n", body)
    if note:
        segments.append(f"{TRUNCATION_PREFIX} {note}]")
    return PAGE_SEPARATOR.join(segments) + "\n"


class PdfParser:
    """``.pdf`` files, titled by their file name and chunked page by page.

    The title is the file stem, as for plain text: the PDF ``/Title`` field
    is as often a leftover ("Microsoft Word - Document1") as a real title,
    and no rule for spotting a title on page 1 is reliable across layouts.
    """

    name = "pdf"
    extensions: tuple[str, ...] = (".pdf",)
    media_type = "text/plain"  # what is served is the extracted text, never the PDF bytes

    def raw_size_limit(self, max_file_bytes: int) -> int:
        """What this format keeps is its whole file, so the file is held to ``max_file_bytes``."""
        return max_file_bytes

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
            raise Unreadable(Reason.MISSING_LIBRARY, f"the pypdf package: {INSTALL_HINT}", what="PDF")
        if not raw:
            raise Unreadable(Reason.EMPTY, expected="pdf", what="PDF")
        if _HEADER not in raw[:1024]:
            # Spare a child start for the commonest junk: readers accept the
            # header anywhere in the first kilobyte, and so does this check.
            raise Unreadable(Reason.DAMAGED, "it has no %PDF- header in its first 1024 bytes", expected="pdf")
        try:
            answer = self._extract(raw)
        except Unreadable as exc:
            raise exc.about("pdf", "PDF") from None
        error = answer.get("error")
        if error is not None:
            raise Unreadable.from_child(_child_answer(answer), expected="pdf", what="PDF")
        pages = answer.get("pages")
        if not isinstance(pages, list) or not all(isinstance(p, str) for p in pages):
            raise Unreadable(Reason.CRASHED, "a malformed answer from the extraction process", what="PDF")
        pages = [page_text(p) for p in pages]
        total = answer.get("total_pages")
        if not isinstance(total, int):
            total = len(pages)
        if total == 0:
            raise Unreadable(Reason.NO_TEXT, "the PDF has no pages", expected="pdf")
        if not any(pages):
            raise Unreadable(
                Reason.NO_TEXT, "a scanned or image-only PDF holds no text layer", expected="pdf"
            )
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
        for segment, segment_start in _segments(text):
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


def _segments(text: str) -> list[tuple[str, int]]:
    """Each page's segment of ``text`` and where it starts."""
    out: list[tuple[str, int]] = []
    start = 0
    for cut in _SEPARATORS.finditer(text):
        out.append((text[start : cut.start()], start))
        start = cut.end()
    out.append((text[start:], start))
    return out


def _child_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """The PDF child's error in the codes of the one table of reasons (``unreadable``)."""
    code, detail = str(answer.get("error")), str(answer.get("detail") or "")
    if code == "missing-pypdf":
        return {"error": Reason.MISSING_LIBRARY.value, "detail": f"the pypdf package: {INSTALL_HINT}"}
    if code == "encrypted":
        return {"error": code, "detail": detail or "it is password-protected or forbids copying its text"}
    if code == "unreadable":  # pypdf could not parse it: the file is damaged, not of another kind
        return {"error": Reason.DAMAGED.value, "detail": detail}
    return answer
