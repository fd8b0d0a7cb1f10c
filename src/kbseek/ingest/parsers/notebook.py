"""Jupyter notebooks (``.ipynb``), served as Markdown: the Markdown cells as written, code cells fenced.

One reader knows the three layouts that are in use (:func:`read_cells`):

- nbformat 4: ``cells`` at the top; every cell's text under ``source``, a string or a list of
  lines joined as written (``""``), as the format description says.
- nbformat 3: ``worksheets``, each with ``cells``; code under ``input``, prose under ``source``,
  heading cells with a ``level``. Lists of lines were written by ``splitlines(True)`` or, by older
  writers, ``splitlines()``: joined as nbformat joins them, with ``"\\n"`` when the first line does
  not end with one.
- nbformat 2: the same worksheets and ``input``, always written by ``splitlines()``, so a list of
  lines is joined with ``"\\n"`` (the rule above gives that). Joined with ``""`` instead, every
  line ran into the next ("modesof", "atthe") and a whole cell became one 1,000-character title.

A heading cell becomes a Markdown heading of its level (its lines joined into one), as nbformat's
own upgrade to version 4 writes it. nbformat itself is not a dependency: its readers validate with
jsonschema, and its upgrade builds the whole notebook, outputs and all, to throw the outputs away;
the three layouts are the few lines of :func:`read_cells`.

Kept: Markdown and heading cells, code cells (fenced, in the cell's or the kernel's language), the
notebook's ``metadata.title`` and ``metadata.keywords`` as frontmatter. Left out: outputs (results,
often large: images as base64, tracebacks, tables of data, and they repeat what the code and prose
say), attachments (images), raw cells (build directives more often than text), nbformat 2's HTML
and reStructuredText cells, and cell types a later version may add. The title is
``metadata.title``, else the first heading, else the file name; a heading longer than
:data:`MAX_TITLE_CHARS` is a paragraph written as a heading, not a title, and the file name is used.

Size (:meth:`NotebookParser.raw_size_limit`): what counts against ``max_file_bytes`` is the text
kept, not the file: a 12 MB notebook of plots with 400 characters of prose is a small document.
The file itself may be :data:`RAW_SIZE_FACTOR` times ``max_file_bytes``, at most
:data:`RAW_SIZE_CEILING` (or ``max_file_bytes`` when that is larger).

Reading is ``json.loads`` in process, bounded by that size. For a file of ``N`` bytes it holds the
bytes (``N``, the caller's), the JSON text decoded from them (``N`` while the file is ASCII, as
base64 outputs and ``\\uXXXX``-escaped text are; ``2N``, or ``4N``, once one character past Latin-1,
or one emoji, is written raw), and the parsed values. Outputs are dropped as the parser finishes each
one (``object_hook``), so of the values only the cells' text and the largest single output are alive
at once: a 120 MB notebook of plots peaks at 120 MB over its bytes, about 250 MB in all at the default
ceiling (measured), 650 MB at worst with raw emoji in it. What would cost far more is a flood of tiny
values (``[[], [], ...]`` is about 20 bytes of objects per byte of file), so a file with more than
:data:`MAX_JSON_VALUES` commas and brackets is refused before it is parsed. The standard library's
parser is linear, and a document nested too deeply for it raises ``RecursionError``, reported as
unreadable.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from kbseek.documents import ParsedDocument
from kbseek.ingest.chunker import ChunkOptions, LineIndex, build_chunks
from kbseek.ingest.parsers.converted import ConvertedParser, clean, render
from kbseek.ingest.parsers.markdown import read_frontmatter
from kbseek.ingest.parsers.text import decode_utf8, title_from_path
from kbseek.ingest.parsers.unreadable import Reason, Unreadable

MAX_CELLS = 20_000
"""Cells read at most; a notebook past it ends with a note saying so (D7)."""
MAX_TITLE_CHARS = 200
"""A first heading longer than this does not title the notebook; the file name does."""

_MiB = 1024 * 1024
RAW_SIZE_FACTOR = 32
"""How many times ``max_file_bytes`` a notebook file may be. Outputs are most of a notebook that
has run: a plot is 50-200 kB of base64, so a notebook of a few dozen plots is 10-30 MB around a few
kB of text. 32 times the default 4 MiB lets such a notebook in."""
RAW_SIZE_CEILING = 128 * _MiB
"""The most any ``max_file_bytes`` lets a notebook file be by :data:`RAW_SIZE_FACTOR` (a larger
``max_file_bytes`` is itself the limit): the bound on what one ``json.loads`` holds in memory."""
MAX_JSON_VALUES = 3_000_000
"""Commas and brackets a notebook may hold, an upper bound on its JSON values (commas and brackets
inside strings count too, so it only overestimates). A notebook of prose and plots has tens of
thousands; three million tiny values are a few hundred MB of Python objects."""


def raw_size_limit_for(max_file_bytes: int) -> int:
    """The largest notebook file read when documents may be ``max_file_bytes`` (see the module doc)."""
    return max(max_file_bytes, min(RAW_SIZE_FACTOR * max_file_bytes, RAW_SIZE_CEILING))


def _lines(value: Any, *, old: bool) -> str:
    """A multi-line field as text: a string, or a list of lines joined as its version wrote them."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return ""
    lines = [line for line in value if isinstance(line, str)]
    if old and lines and not lines[0].endswith(("\n", "\r")):
        return "\n".join(lines)  # written by splitlines(): nbformat 2, and 3 from old writers
    return "".join(lines)


def read_cells(notebook: dict[str, Any]) -> list[tuple[str, str, Any]] | None:
    """The cells of any nbformat as ``(kind, text, extra)``, in order; ``None`` without a list of cells.

    ``kind`` is ``"markdown"``, ``"heading"`` (``extra`` is its level), ``"code"`` (``extra`` is the
    cell's own language, nbformat 2 and 3, or ``None``) or the type of a cell that is left out.
    """
    cells: Any = notebook.get("cells")
    old = cells is None  # nbformat 2 and 3: worksheets, code under "input"
    if old and isinstance(notebook.get("worksheets"), list):
        cells = [
            cell
            for sheet in notebook["worksheets"]
            if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list)
            for cell in sheet["cells"]
        ]
    if not isinstance(cells, list):
        return None
    read: list[tuple[str, str, Any]] = []
    for cell in cells:
        if not isinstance(cell, dict) or not isinstance(kind := cell.get("cell_type"), str):
            continue
        if kind == "code":
            text = _lines(cell.get("input") if old else cell.get("source"), old=old)
            language = cell.get("language")
            read.append((kind, text, language if isinstance(language, str) else None))
        else:
            level = cell.get("level")
            read.append((kind, _lines(cell.get("source"), old=old), level))
    return read


def _drop_outputs(value: dict[str, Any]) -> dict[str, Any] | None:
    """``object_hook``: an output (every version's has ``output_type``) is dropped as soon as it is
    parsed, and a cell's attachments with it, so they are never all in memory at once."""
    if "output_type" in value:
        return None
    value.pop("attachments", None)
    return value


class NotebookParser(ConvertedParser):
    """``.ipynb`` files: nbformat 4, and 2 and 3 with their worksheets."""

    name = "ipynb"
    extensions: tuple[str, ...] = (".ipynb",)

    def __init__(self) -> None:
        super().__init__()
        self._max_file_bytes: int | None = None

    def raw_size_limit(self, max_file_bytes: int) -> int:
        """The size a notebook file may be, larger than ``max_file_bytes`` (see the module doc).

        The scan and the guard ask this before a notebook is read, so :meth:`decode` then holds the
        text it keeps to that ``max_file_bytes``.
        """
        self._max_file_bytes = max_file_bytes
        return raw_size_limit_for(max_file_bytes)

    def decode(self, raw: bytes) -> str:
        """The served Markdown; ``ValueError`` for a file that is no notebook, and
        :class:`~kbseek.ingest.parsers.unreadable.Unreadable` (``TOO_LARGE``) for one whose kept text is
        over the ``max_file_bytes`` it was read under (its outputs do not count)."""
        if (values := raw.count(b",") + raw.count(b"[") + raw.count(b"{")) > MAX_JSON_VALUES:
            raise ValueError(
                f"not a readable notebook: about {values} JSON values, over the {MAX_JSON_VALUES} kbseek "
                "reads (a data dump, not a notebook?)"
            )
        try:
            notebook = json.loads(decode_utf8(raw), object_hook=_drop_outputs)
        except RecursionError:
            raise ValueError("not a readable notebook: JSON nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a readable notebook: {exc}") from None
        if not isinstance(notebook, dict):
            raise ValueError("not a readable notebook: the file is not a JSON object")
        cells = read_cells(notebook)
        if cells is None:
            raise ValueError("not a readable notebook: it has no list of cells")
        text = self._markdown_of(notebook, cells)
        limit = self._max_file_bytes
        if limit is not None and (size := len(text.encode("utf-8"))) > limit:
            raise Unreadable(Reason.TOO_LARGE, f"its text is {size} bytes, over max_file_bytes ({limit})")
        return text

    @staticmethod
    def _markdown_of(notebook: dict[str, Any], cells: list[tuple[str, str, Any]]) -> str:
        metadata = notebook.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        language = _language(metadata)
        markdown: list[str] = []
        for kind, source, extra in cells[:MAX_CELLS]:
            if not source.strip():
                continue
            if kind == "markdown":
                markdown.append(source)
            elif kind == "heading":
                level = min(6, max(1, extra)) if isinstance(extra, int) and not isinstance(extra, bool) else 1
                markdown.append(render([["h", level, " ".join(source.split())]]))
            elif kind == "code":
                markdown.append(render([["code", extra or language, source]]))
        if len(cells) > MAX_CELLS:
            note = f"kbseek reads at most {MAX_CELLS} cells of a notebook; the rest is left out"
            markdown.append(render([], note=note))
        head = render([], {"title": metadata.get("title"), "keywords": metadata.get("keywords")})
        parts = [part.strip("\n") for part in (head, *markdown) if part.strip()]
        return clean("\n\n".join(parts) + "\n") if parts else ""

    def parse(self, path: str, text: str, options: ChunkOptions) -> ParsedDocument:
        parsed = super().parse(path, text, options)
        if len(parsed.title) <= MAX_TITLE_CHARS:
            return parsed
        title = title_from_path(path)  # a paragraph written as a heading names nothing
        lines = LineIndex(text)
        body_line = read_frontmatter(text, lines).body_line
        blocks = self._markdown.blocks(text, lines, body_line)
        chunks = build_chunks(
            path, text, blocks, title=title, options=options, body_start=lines.start_of(body_line)
        )
        return replace(parsed, title=title, chunks=chunks)


def _language(metadata: dict[str, Any]) -> str:
    for key in ("language_info", "kernelspec"):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(
            value.get("name" if key == "language_info" else "language"), str
        ):
            return str(value["name" if key == "language_info" else "language"])
    return ""
