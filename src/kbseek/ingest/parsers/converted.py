"""Formats kbseek converts to Markdown: what they share (decision 0034).

A Word file, a workbook, a slide deck, an HTML page or a notebook is served as
Markdown that kbseek writes from the text a library extracts: headings as
``#`` lines, paragraphs, list items, tables and code as fenced blocks, and the
file's own title, keywords and dates as YAML frontmatter. That text is what is
indexed, chunked and read back, so the media type is ``text/markdown`` (D6),
and chunking, offsets (T6), display text, highlights and citations are the
Markdown parser's, unchanged.

The extractors hand over *blocks*, JSON-able lists, and :func:`render` alone
writes Markdown, so escaping lives in one place:

- ``["h", level, text]``: a heading; ``["p", text]`` a paragraph;
  ``["li", text]`` a list item;
- ``["table", rows]``: rows of cell strings, written tab-joined inside a
  fenced block (the chunker keeps a fence whole when it fits, and splits a
  longer one on rows);
- ``["code", language, text]``: code, fenced as written.

Extracted text is escaped so Markdown reads it as the words it is: a line
that would open a heading, list, quote or rule gets a backslash, and inline
markup (``*``, backticks, ``<tag``, ``[``, ``{``, entities) is escaped where
display text would otherwise drop it. Display text undoes the escapes, so the
words shown and indexed are the extracted ones.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

import yaml

from kbseek.documents import ParsedDocument
from kbseek.ingest.chunker import ChunkOptions, LineIndex, build_chunks
from kbseek.ingest.parsers.markdown import MarkdownParser, first_heading, read_frontmatter
from kbseek.ingest.parsers.text import title_from_path

TRUNCATION_PREFIX = "[truncated:"
_TRUNCATION = re.compile(r"\n\[truncated: ([^\n]*)\]\n?\Z")

_LINE_MARKER = re.compile(r"[#>+\-=|:~*_`]|\d{1,9}(?=[.)])")
"""What may open a block at the start of a line: heading, quote, list, rule, table row, container."""
_INLINE = re.compile(
    r"\\(?=[!-/:-@\[-`{-~])|[`*{}\[\]~]|(?<!\w)_|_(?!\w)|<(?=[A-Za-z/!?>])"
    r"|&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)"
)
_BACKTICKS = re.compile(r"`+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

Block = Sequence[Any]


def escape_line(text: str) -> str:
    """One line of extracted text as Markdown that reads, and displays, as exactly that text.

    Cleaned first: a control character would become a space only after the escaping, and one at the
    start of a line hid a marker behind it (``\\x08>`` was served as a quote, ``' >'``)."""
    line = _INLINE.sub(lambda m: "\\" + m[0], " ".join(clean(text).split()))
    marker = _LINE_MARKER.match(line)
    if marker is not None:
        at = marker.end() if marker[0][0].isdigit() else 0
        line = f"{line[:at]}\\{line[at:]}"
    return line


def _paragraph(text: str) -> str:
    return "\n".join(escaped for raw in text.splitlines() if (escaped := escape_line(raw)))


def _fence(body: str, info: str = "") -> str:
    """A fenced block one backtick longer than any run inside, so nothing in it can close it."""
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    body = body.rstrip("\n")
    return f"{fence}{info}\n{body}\n{fence}" if body else ""


def _cell(value: str) -> str:
    return " ".join(value.split())


def render(blocks: Sequence[Block], meta: dict[str, Any] | None = None, note: str | None = None) -> str:
    """The served Markdown for extracted blocks, frontmatter first and a truncation note last."""
    parts: list[str] = []
    fields = _frontmatter_fields(meta or {})
    if fields:
        parts.append("---\n" + yaml.safe_dump(fields, allow_unicode=True, sort_keys=False) + "---")
    for block in blocks:
        kind = block[0]
        if kind == "h":
            text = escape_line(str(block[2]))
            if text:
                text = re.sub(r"(#+)$", r"\\\1", text)  # a closing # run would be dropped
                parts.append(f"{'#' * min(6, max(1, int(block[1])))} {text}")
        elif kind in ("p", "li"):
            text = _paragraph(str(block[1]))
            if text:
                parts.append(f"- {text}".replace("\n", "\n  ") if kind == "li" else text)
        elif kind == "table":
            rows = ["\t".join(_cell(str(c)) for c in row) for row in block[1]]
            if body := _fence("\n".join(r for r in rows if r.strip()), "tsv"):
                parts.append(body)
        elif kind == "code" and (body := _fence(str(block[2]), _cell(str(block[1])).replace("`", ""))):
            parts.append(body)
    if note:
        parts.append(f"{TRUNCATION_PREFIX} {' '.join(note.split())}]")
    return clean("\n\n".join(parts) + "\n") if parts else ""


def clean(text: str) -> str:
    """Storable text: a lone surrogate (a broken file's) becomes U+FFFD, control characters a space."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _CONTROL.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))


def _frontmatter_fields(meta: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if isinstance(title := meta.get("title"), str) and title.strip():
        fields["title"] = " ".join(title.split())
    keywords = meta.get("keywords")
    if isinstance(keywords, str):
        keywords = re.split(r"[,;、，]", keywords)
    if isinstance(keywords, list):
        tags = [" ".join(str(k).split()) for k in keywords if str(k).strip()]
        if tags:
            fields["tags"] = list(dict.fromkeys(tags))
    for key in ("date", "modified"):
        if isinstance(value := meta.get(key), str) and (day := _iso_date(value)):
            fields[key] = day
    return fields


def _iso_date(value: str) -> str | None:
    try:
        return dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return None


class ConvertedParser:
    """The ``parse`` half every converted format shares: the served Markdown, read as Markdown.

    The title is the frontmatter's (the file's own title), else, where
    ``heading_title`` is set, the first heading, else the file name: a
    workbook's first heading is a sheet name, a poor name for the file.
    """

    name: str
    extensions: tuple[str, ...]
    media_type = "text/markdown"  # the served text is Markdown kbseek wrote (D6)
    heading_title = True

    def __init__(self) -> None:
        self._markdown = MarkdownParser()

    def parse(self, path: str, text: str, options: ChunkOptions) -> ParsedDocument:
        lines = LineIndex(text)
        meta = read_frontmatter(text, lines)
        blocks = self._markdown.blocks(text, lines, meta.body_line)
        title = meta.title or (first_heading(blocks) if self.heading_title else "") or title_from_path(path)
        chunks = build_chunks(
            path, text, blocks, title=title, options=options, body_start=lines.start_of(meta.body_line)
        )
        warnings = list(meta.warnings)
        if (cut := _TRUNCATION.search(text)) is not None:
            warnings.append(f"truncated: {cut[1]}")
        return ParsedDocument(
            text=text, title=title, frontmatter=meta.fields, tags=meta.tags, date=meta.date,
            chunks=chunks, warnings=tuple(warnings),
        )  # fmt: skip


# ------------------------------------------------------------- isolation
