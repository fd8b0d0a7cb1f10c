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

Before any of that, extracted text is cleaned (:func:`clean`, :func:`readable`):
zero-width characters, which Word and web pages leave in headings and words
("Experiment Setup\\u200b"), are removed, and the private-use code points a
Symbol or Wingdings font yields (U+F020–U+F0FF: bullets, arrows, check marks,
Greek letters) become the Unicode characters they show, the rest of
U+F000–U+F0FF being dropped. PDF text gets the same cleaning (``pdf.py``).
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
from kbseek.ingest.parsers.text import decode_warnings, title_from_path

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

_INVISIBLE = re.compile("[\u200b\u2060\ufeff]")
"""ZERO WIDTH SPACE, WORD JOINER and a byte-order mark inside text: never part of a word."""
_LETTER = "[^\\x00-\\x7f\\s\u200b-\u200d\u2060\ufeff]"
_JOINER = re.compile(f"(?<!{_LETTER})[\u200c\u200d]|[\u200c\u200d](?!{_LETTER})")
"""ZERO WIDTH (NON-)JOINER that is not between two non-ASCII characters. Between two, it may be
meaning (an emoji sequence, Persian, an Indic conjunct) and stays; anywhere else (a heading's
end, a Latin word) it is debris."""
_SYMBOL_FONT = re.compile("[\uf000-\uf0ff]")
_LINE_START = "(?:^|(?<=[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]))[ \t]*"
"""Where a line starts, for any of the separators ``str.splitlines`` knows: a line is cleaned
the same whether it is cleaned alone or with the text around it."""

_SYMBOL_ROWS: dict[int, str] = {
    0x20: " !∀#∃%&∋()∗+,−./",
    0x30: "0123456789:;<=>?",
    0x40: "≅ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟ",
    0x50: "ΠΘΡΣΤΥςΩΞΨΖ[∴]⊥_",
    0x60: " αβχδεφγηιϕκλμνο",
    0x70: "πθρστυϖωξψζ{|}∼ ",
    0x90: "              ·•",
    0xA0: "€ϒ′≤⁄∞ƒ▪♦♥♠↔←↑→↓",
    0xB0: "°±″≥×∝∂•÷≠≡≈…  ↵",
    0xC0: "ℵℑℜ℘⊗⊕∅∩∪⊃⊇⊄⊂⊆∈∉",
    0xD0: "∠∇®©™∏√⋅➢∧∨⇔⇐⇑⇒←",
    0xE0: "→⟨®©™∑ ⬅➔      ⇦",
    0xF0: "⇨⟩∫⬄       ✗✓☒☑ ",
}  # fmt: skip
"""What U+F0xx shows, sixteen code points a row, a space where nothing is kept (Greek capitals are
Greek, not Latin).

The text does not say which font drew a code point, so where Symbol and Wingdings differ the commoner
reading wins. Symbol (Adobe's Symbol encoding, the Windows font's Euro at 0xA0) for letters, digits,
Greek and mathematics; Wingdings where Office puts it in running text: Word's list bullets (0xA7 ▪
and 0xD8 ➢ over ♣ and ¬; 0x9E · and 0x9F •, where Symbol has nothing) and AutoCorrect's arrows
(``-->`` is Wingdings 0xE0 →, ``<--`` 0xDF ←, ``==>`` 0xE8 ➔, ``<==`` 0xE7 ⬅, ``<=>`` 0xF3 ⬄, over
◊, ⇓ and pieces of tall brackets), white arrows (0xEF ⇦, 0xF0 ⇨) and ballot marks (0xFB–0xFE
✗ ✓ ☒ ☑). The pieces of tall brackets and integrals, which mean something only stacked, and
Symbol's arrow and radical extenders are dropped. AutoCorrect's smileys (``:)`` is Wingdings 0x4A)
read as Symbol's Greek (ϑ): letters stay letters."""


def _symbol_table() -> dict[int, str]:
    table = {0xF000 + base + i: ch for base, row in _SYMBOL_ROWS.items() for i, ch in enumerate(row)}
    return {code: ch for code, ch in table.items() if ch != " " or code == 0xF020}


SYMBOL_FONT: dict[int, str] = _symbol_table()
"""U+F0xx to the character a Symbol-font document shows there; what is missing is dropped."""
WINGDINGS_BULLETS: dict[str, str] = {
    "\uf06c": "●", "\uf06e": "■", "\uf06f": "□", "\uf071": "❑", "\uf075": "◆", "\uf076": "❖", "\uf077": "⬥",
}  # fmt: skip
"""Where Symbol has a Greek letter (λ ν ο θ υ ϖ ω) and Wingdings one of Word's list bullets: standing
alone at the start of a line, the code point is the bullet; anywhere else, the letter."""
_SYMBOL_BULLET = re.compile(f"{_LINE_START}([{''.join(WINGDINGS_BULLETS)}])(?=\\s|$)")

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
    return " ".join(clean(value).split())


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
        elif kind == "code" and (body := _fence(clean(str(block[2])), _cell(str(block[1])).replace("`", ""))):
            parts.append(body)
    if note:
        parts.append(f"{TRUNCATION_PREFIX} {' '.join(note.split())}]")
    return clean("\n\n".join(parts) + "\n") if parts else ""


def clean(text: str) -> str:
    """Storable, readable text: a lone surrogate (a broken file's) becomes U+FFFD, control characters a
    space, and what :func:`readable` removes or maps is removed or mapped."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _CONTROL.sub(" ", readable(text.replace("\r\n", "\n").replace("\r", "\n")))


def readable(text: str) -> str:
    """``text`` without zero-width characters and with symbol-font code points as what they show.

    - U+200B, U+2060 and U+FEFF are removed; U+200C and U+200D too, unless both neighbours are
      non-ASCII characters (an emoji sequence, Persian, Devanagari keep theirs).
    - U+F000–U+F0FF, what text extraction yields for a Symbol or Wingdings font, becomes the
      character the font draws (:data:`SYMBOL_FONT`, :data:`WINGDINGS_BULLETS`); a code point with
      no such character (pictographs, pieces of tall brackets) is dropped.

    Idempotent, and a line is cleaned the same alone as inside its text.
    """
    text = _INVISIBLE.sub("", text)
    if _SYMBOL_FONT.search(text) is not None:
        text = _SYMBOL_BULLET.sub(lambda m: m[0][:-1] + WINGDINGS_BULLETS[m[1]], text)
        text = _SYMBOL_FONT.sub(lambda m: SYMBOL_FONT.get(ord(m[0]), ""), text)
    return _JOINER.sub("", text)


def _frontmatter_fields(meta: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if isinstance(title := meta.get("title"), str) and (title := _cell(title)):
        fields["title"] = title
    keywords = meta.get("keywords")
    if isinstance(keywords, str):
        keywords = re.split(r"[,;、，]", keywords)
    if isinstance(keywords, list):
        tags = [tag for k in keywords if (tag := _cell(str(k)))]
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
    appendix_headings: frozenset[str] = frozenset()
    """Headings of the sections a converter appends after the body (Word's footnotes, endnotes and
    comments): never the title, which a document without headings of its own takes from its name."""

    def raw_size_limit(self, max_file_bytes: int) -> int:
        """What this format keeps is its whole file, so the file is held to ``max_file_bytes``."""
        return max_file_bytes

    def __init__(self) -> None:
        self._markdown = MarkdownParser()

    def parse(self, path: str, text: str, options: ChunkOptions) -> ParsedDocument:
        decoded = decode_warnings(text)  # an HTML page read from a legacy encoding says which
        text = str(text)
        lines = LineIndex(text)
        meta = read_frontmatter(text, lines)
        blocks = self._markdown.blocks(text, lines, meta.body_line)
        own = (
            [b for b in blocks if b.heading not in self.appendix_headings]
            if self.appendix_headings
            else blocks
        )
        title = meta.title or (first_heading(own) if self.heading_title else "") or title_from_path(path)
        chunks = build_chunks(
            path, text, blocks, title=title, options=options, body_start=lines.start_of(meta.body_line)
        )
        warnings = [*decoded, *meta.warnings]
        if (cut := _TRUNCATION.search(text)) is not None:
            warnings.append(f"truncated: {cut[1]}")
        return ParsedDocument(
            text=text, title=title, frontmatter=meta.fields, tags=meta.tags, date=meta.date,
            chunks=chunks, warnings=tuple(warnings),
        )  # fmt: skip


# ------------------------------------------------------------- isolation
