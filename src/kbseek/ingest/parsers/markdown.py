"""Markdown files (and MDX): YAML frontmatter for metadata, markdown-it for structure.

markdown-it is used only to *find* blocks (its tokens carry source line
ranges); the chunks themselves are slices of the original text, so what an
agent reads is what the author wrote, byte for byte. Titles and heading paths
are display text (``kbseek.text.display``): ``KeepAlive {#keepalive}`` is
titled ``KeepAlive``. Frontmatter problems become warnings, never failures:
one typo in a header should not hide the whole note from search.

MDX is read as Markdown: its ``import``/``export`` lines and JSX component
tags are markup to display text, and markdown-it takes them for paragraphs
and HTML blocks, which is all the chunker needs to know.

Only block structure is parsed: markdown-it's inline pass is off, and a table
becomes one ``table_open``/``table_close`` pair with its line range instead of
three tokens per cell. A 4 MB table of 60 columns is 1.3 million cell tokens
otherwise, hundreds of megabytes for spans nobody reads.
"""

from __future__ import annotations

import base64
import datetime as dt
import importlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.common import utils as _md_utils
from markdown_it.rules_block.state_block import StateBlock
from markdown_it.rules_block.table import getLine
from markdown_it.rules_block.table import table as gfm_table

from kbseek.documents import Link, ParsedDocument
from kbseek.ingest.chunker import Block, BlockKind, ChunkOptions, LineIndex, build_chunks
from kbseek.ingest.links import markdown_links
from kbseek.ingest.parsers.text import decode_text, decode_warnings, title_from_path
from kbseek.text.display import display_line

_TOP_LEVEL_KINDS: dict[str, BlockKind] = {
    "heading_open": BlockKind.HEADING,
    "paragraph_open": BlockKind.PARAGRAPH,
    "bullet_list_open": BlockKind.LIST,
    "ordered_list_open": BlockKind.LIST,
    "blockquote_open": BlockKind.QUOTE,
    "table_open": BlockKind.TABLE,
    "fence": BlockKind.FENCE,
    "code_block": BlockKind.FENCE,
}
_NESTED_WHOLE = frozenset({"fence", "code_block", "table_open"})
"""Nested tokens that must survive a line split of their container intact."""

_ATX = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
"""A line that may be an ATX heading; markdown-it decides."""
_TAG_LINE = re.compile(r" {0,3}</?(?!(?:pre|script|style|textarea)\b)[A-Za-z]", re.IGNORECASE)
"""An HTML block opened by a tag whose content MDX writes as Markdown: not a comment, a processing
instruction, or ``<pre>``, ``<script>``, ``<style>``, ``<textarea>``, whose lines are never headings."""

_MAX_NODES = 10_000
_MAX_DEPTH = 50


class MarkdownParser:
    """``.md`` / ``.markdown`` / ``.mdx`` files (CommonMark plus tables)."""

    name = "md"
    extensions: tuple[str, ...] = (".md", ".markdown", ".mdx")
    media_type = "text/markdown"

    def raw_size_limit(self, max_file_bytes: int) -> int:
        """What this format keeps is its whole file, so the file is held to ``max_file_bytes``."""
        return max_file_bytes

    def __init__(self) -> None:
        self._md = MarkdownIt("commonmark").enable("table").disable("inline")
        self._md.block.ruler.at("table", _table_outline, {"alt": ["paragraph", "reference"]})

    def decode(self, raw: bytes) -> str:
        return decode_text(raw)  # UTF-8, else a legacy encoding it is sure of, else refused

    def parse(self, path: str, text: str, options: ChunkOptions) -> ParsedDocument:
        decoded = decode_warnings(text)  # "decoded from cp932 (Shift_JIS)" for a legacy file
        text = str(text)
        lines = LineIndex(text)
        meta = read_frontmatter(text, lines)
        blocks = self.blocks(text, lines, meta.body_line)
        title = meta.title or first_heading(blocks) or title_from_path(path)
        body_start = lines.start_of(meta.body_line)
        chunks = build_chunks(path, text, blocks, title=title, options=options, body_start=body_start)
        return ParsedDocument(
            text=text,
            title=title,
            frontmatter=meta.fields,
            tags=meta.tags,
            date=meta.date,
            chunks=chunks,
            warnings=(*decoded, *meta.warnings),
            links=markdown_links(path, text[body_start:]),
        )

    @staticmethod
    def links(path: str, text: str) -> tuple[Link, ...]:
        """The links of a stored Markdown document, as :meth:`parse` reads them (an index copy
        carries them this way: the store keeps links as keys, not as the parser's records)."""
        lines = LineIndex(text)
        return markdown_links(path, text[lines.start_of(read_frontmatter(text, lines).body_line) :])

    def blocks(self, text: str, lines: LineIndex, body_line: int = 0) -> list[Block]:
        """Top-level blocks of the Markdown that begins at 0-based line ``body_line``.

        Nested lists and quotes stay inside their top-level block; only nested
        code and tables are remembered, so a split of their container never
        cuts them.
        """
        tokens = self._md.parse(text[lines.start_of(body_line) :])
        tops: list[Block] = []
        nested: list[list[tuple[int, int]]] = []
        for index, token in enumerate(tokens):
            if token.map is None or token.nesting == -1:
                continue
            start = lines.start_of(body_line + token.map[0])
            end = lines.start_of(body_line + token.map[1])
            if token.level == 0:
                kind = _TOP_LEVEL_KINDS.get(token.type, BlockKind.OTHER)
                if kind is BlockKind.HEADING:
                    inline = tokens[index + 1] if index + 1 < len(tokens) else None
                    heading = display_line(inline.content) if inline and inline.type == "inline" else ""
                    tops.append(Block(start, end, kind, int(token.tag[1:]), heading))
                    nested.append([])
                elif token.type == "html_block":
                    for block in self._tag_block(text, lines, start, end):
                        tops.append(block)
                        nested.append([])
                else:
                    tops.append(Block(start, end, kind))
                    nested.append([])
            elif token.type in _NESTED_WHOLE and tops and start < tops[-1].end:
                nested[-1].append((start, min(end, tops[-1].end)))
        return [
            replace(block, keep_together=tuple(spans)) if spans else block
            for block, spans in zip(tops, nested, strict=True)
        ]

    def _tag_block(self, text: str, lines: LineIndex, start: int, end: int) -> list[Block]:
        """An HTML block, with a heading written on the line right after a tag line kept a heading.

        CommonMark reads ``<DeepDive>`` on a line of its own as the start of an HTML block that
        runs to the next blank line, so in MDX the heading under it vanished into the block and no
        chunk was named after it. A line inside the block that parses as a heading on its own
        becomes a heading block; the lines around it stay one block each.
        """
        if not _TAG_LINE.match(text, start):  # a comment, <pre>, <script>: what is inside is not Markdown
            return [Block(start, end, BlockKind.OTHER)]
        blocks: list[Block] = []
        rest = start
        for line_start, line_end in pairwise(lines.bounds(start, end)[1:]):
            line = text[line_start:line_end]
            if not _ATX.match(line):
                continue
            parsed = self._md.parse(line)
            if len(parsed) < 2 or parsed[0].type != "heading_open" or parsed[1].type != "inline":
                continue
            if rest < line_start:
                blocks.append(Block(rest, line_start, BlockKind.OTHER))
            heading = display_line(parsed[1].content)
            blocks.append(Block(line_start, line_end, BlockKind.HEADING, int(parsed[0].tag[1:]), heading))
            rest = line_end
        if rest < end:
            blocks.append(Block(rest, end, BlockKind.OTHER))
        return blocks


_md_trim: Callable[[str], str] = getattr(_md_utils, "mdTrim", str.strip)
_MAX_AUTOCOMPLETED_CELLS: int | None = getattr(
    importlib.import_module("markdown_it.rules_block.table"), "MAX_AUTOCOMPLETED_CELLS", None
)


def _table_outline(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """markdown-it's GFM table rule, emitting only where the table is, not its cells.

    The header and delimiter rows are checked by the original rule; the rows
    are then followed with its own stopping conditions (a blank line, a line
    that starts another block, an indented code line, too many missing cells).
    """
    if not gfm_table(state, start_line, end_line, True):
        return False
    if silent:
        return True
    column_count = _cell_count(_md_trim(getLine(state, start_line)))
    terminators = state.md.block.ruler.getRules("blockquote")
    old_parent = state.parentType
    state.parentType = "table"
    missing_cells = 0
    next_line = start_line + 2
    while next_line < end_line:
        if state.sCount[next_line] < state.blkIndent:
            break
        if any(rule(state, next_line, end_line, True) for rule in terminators):
            break
        line = _md_trim(getLine(state, next_line))
        if not line or state.is_code_block(next_line):
            break
        missing_cells += column_count - _cell_count(line)
        if _MAX_AUTOCOMPLETED_CELLS is not None and missing_cells > _MAX_AUTOCOMPLETED_CELLS:
            break
        next_line += 1
    token = state.push("table_open", "table", 1)
    token.map = [start_line, next_line]
    state.push("table_close", "table", -1)
    state.parentType = old_parent
    state.line = next_line
    return True


def _cell_count(line: str) -> int:
    """How many cells markdown-it's ``escapedSplit`` finds in a trimmed row, without building them.

    A pipe right after a backslash is escaped; an empty cell before the first pipe or after the
    last one does not count.
    """
    count = line.count("|") - line.count("\\|") + 1
    if line.startswith("|"):
        count -= 1
    if count > 0 and line.endswith("|") and not line.endswith("\\|"):
        count -= 1
    return count


def first_heading(blocks: list[Block]) -> str:
    """The text of the first heading of any level.

    Many real pages have no H1: a book chapter split into files opens each file at
    H2, and a generated site puts the page title in the frontmatter or the layout.
    Their first heading still names the page better than the file name does.
    """
    return next((b.heading for b in blocks if b.kind is BlockKind.HEADING and b.heading), "")


# ------------------------------------------------------------ frontmatter


@dataclass(frozen=True)
class Frontmatter:
    """What the YAML header of a Markdown file says, already made JSON-safe."""

    body_line: int = 0
    """0-based line where the Markdown body begins (after the closing ``---``)."""
    fields: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    date: str | None = None
    tags: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


class _TooLarge(Exception):
    pass


def _line(text: str, lines: LineIndex, line: int) -> str:
    return text[lines.start_of(line) : lines.start_of(line + 1)].rstrip(" \t\r\n")


def read_frontmatter(text: str, lines: LineIndex) -> Frontmatter:
    """Parse a leading ``---`` … ``---``/``...`` YAML block, reporting problems as warnings."""
    if lines.count < 2 or _line(text, lines, 0) != "---":
        return Frontmatter()
    close = next((n for n in range(1, lines.count) if _line(text, lines, n) in ("---", "...")), None)
    if close is None:
        return Frontmatter(
            warnings=("frontmatter opened on line 1 is never closed by '---' or '...'; read as Markdown",)
        )
    body_line = close + 1
    source = text[lines.start_of(1) : lines.start_of(close)]
    try:
        data = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        return Frontmatter(body_line=body_line, warnings=(_yaml_problem(exc),))
    except (ValueError, OverflowError, RecursionError) as exc:
        # PyYAML's constructors raise plain errors for values it recognises
        # but cannot build, such as the date 2024-13-45.
        return Frontmatter(body_line=body_line, warnings=(f"frontmatter has an invalid value: {exc}",))
    if data is None:
        return Frontmatter(body_line=body_line)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single {type(data).__name__} value"
        return Frontmatter(
            body_line=body_line, warnings=(f"frontmatter is {kind}, not a mapping of fields; ignored",)
        )
    try:
        fields = _jsonable(data, [_MAX_NODES], 0)
    except _TooLarge:
        return Frontmatter(
            body_line=body_line, warnings=("frontmatter is too large or too deeply nested; ignored",)
        )
    return _interpret(body_line, fields)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        # The YAML starts on the file's second line; marks count from zero.
        return f"frontmatter is not valid YAML (line {mark.line + 2}): {problem}"
    return f"frontmatter is not valid YAML: {problem}"


def _interpret(body_line: int, fields: dict[str, Any]) -> Frontmatter:
    warnings: list[str] = []

    def scalar(name: str) -> str | None:
        value = fields.get(name)
        if value is None:
            return None
        if isinstance(value, (dict, list)):
            warnings.append(f"frontmatter {name!r} should be a single value; ignored")
            return None
        return _scalar_text(value).strip() or None

    title, date = scalar("title"), scalar("date")
    topic = scalar("topic")
    if topic is not None:
        fields["topic"] = topic
    return Frontmatter(
        body_line=body_line,
        fields=fields,
        title=title,
        date=date,
        tags=_tags(fields.get("tags"), warnings),
        warnings=tuple(warnings),
    )


def _tags(value: Any, warnings: list[str]) -> tuple[str, ...]:
    """Tags from a YAML list or from ``"a, b"`` / ``"a b"`` text; commas win when present."""
    if value is None:
        return ()
    if isinstance(value, str):
        items: list[Any] = value.split(",") if "," in value else value.split()
    elif isinstance(value, list):
        items = value
    else:
        warnings.append("frontmatter 'tags' should be a list or a comma-separated string; ignored")
        return ()
    tags: list[str] = []
    for item in items:
        if isinstance(item, (dict, list)):
            warnings.append("frontmatter 'tags' has a nested value; skipped")
            continue
        if item is not None and (tag := " ".join(_scalar_text(item).split())):
            tags.append(tag)
    return tuple(dict.fromkeys(tags))


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _jsonable(value: Any, budget: list[int], depth: int) -> Any:
    """A JSON-serialisable copy of YAML data.

    Dates become ISO strings and binary becomes base64. The node budget and
    depth limit matter because YAML aliases can describe exponentially large
    or self-referential structures in a few lines.
    """
    budget[0] -= 1
    if budget[0] < 0 or depth > _MAX_DEPTH:
        raise _TooLarge
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {_scalar_text(k): _jsonable(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=repr)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, budget, depth + 1) for v in value]
    return str(value)
