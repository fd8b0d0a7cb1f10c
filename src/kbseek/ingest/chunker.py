"""Cut a document into retrievable chunks along its own structure.

Parsers know formats; this module knows none. A parser hands over the
document text and a list of :class:`Block` spans (headings, paragraphs,
lists, tables, code) and gets back :class:`~kbseek.documents.Chunk` values.
Keeping the sizing rules here means every format is chunked the same way and
the offset invariant (``chunk.text == text[chunk.start:chunk.end]``) is
enforced in one place.

The rules, in order:

1. Blocks are trimmed to their non-whitespace extent, and any non-whitespace
   text the parser left out (a link reference definition, say) becomes a
   paragraph block, so every visible character of the body lands in a chunk.
2. A heading opens a section; a section's heading path is the document
   title followed by the open headings.
3. A section shorter than ``min_chars`` is merged into the following section
   if that one is of the same or a deeper level, otherwise into the previous
   one if that is of the same or a shallower level; the merged chunk keeps
   the heading path of whatever comes first in it, and records where each
   later section begins (``Chunk.sections``), so a hit inside one can name
   its heading (docs/decisions/0026).
4. A section that is too long is split on block boundaries near
   ``target_chars``, never above ``max_chars``; a longer block is split on
   lines, then sentences, then characters. A code block or table is kept
   whole when it fits, else split on lines (a table's rows), and a line over
   ``max_chars`` on characters, after a space if one is near, never inside
   one glyph (a combining mark, a surrogate pair, an emoji joined by ZWJ).
   Consecutive pieces of one section overlap by about ``overlap_chars``.
5. No chunk is longer than ``max_chars``. The pieces of a split table without
   its header row carry that row (at most ``max_chars // 2`` characters) as
   one more heading-path entry, the context a heading gives a section: it is
   indexed and embedded with the rows while the span covers the rows only,
   and the text plus that entry stays within ``max_chars``.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from itertools import pairwise
from typing import NamedTuple

from kbseek.documents import HEADING_SEPARATOR, Chunk, SectionStart
from kbseek.ingest.splitting import hard_cut, split_lines, trim


@dataclass(frozen=True)
class ChunkOptions:
    """Chunk sizes in characters (not tokens), so they mean the same in English and Japanese.

    The index records the sizes its documents were cut with (:attr:`key`); other sizes have the next
    pass read every file again, so a change applies to the whole index, not only to files edited after.
    """

    target_chars: int = 1000
    """The size a long section is split towards: it is cut at the block (then line, sentence or
    character) boundaries that leave pieces nearest this many characters."""
    max_chars: int = 1600
    """No chunk is longer than this; a code block or table that fits is kept whole. At least
    ``target_chars``."""
    overlap_chars: int = 150
    """About this much of the end of one piece of a split section starts the next one too (cut only at a
    block or line boundary), so text near a cut is found with what leads up to it; ``0``: no overlap."""
    min_chars: int = 200
    """A section shorter than this is merged into a neighbouring one, and a scrap left at the end of
    a split section into the chunk before it, so a heading over one line is no chunk of its own;
    ``0``: never."""

    @property
    def key(self) -> str:
        """The sizes as the index records them: equal keys cut a document into the same chunks."""
        return f"{self.target_chars}/{self.max_chars}/{self.overlap_chars}/{self.min_chars}"

    def __post_init__(self) -> None:
        for name in ("target_chars", "max_chars", "overlap_chars", "min_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"chunk option {name} must be an integer, got {value!r}")
        if self.target_chars <= 0 or self.max_chars <= 0:
            raise ValueError(
                f"chunk options target_chars ({self.target_chars}) and max_chars ({self.max_chars}) "
                "must be positive"
            )
        if self.overlap_chars < 0 or self.min_chars < 0:
            raise ValueError(
                f"chunk options overlap_chars ({self.overlap_chars}) and min_chars ({self.min_chars}) "
                "must not be negative"
            )
        if self.target_chars > self.max_chars:
            raise ValueError(
                f"chunk option target_chars ({self.target_chars}) must not exceed "
                f"max_chars ({self.max_chars})"
            )
        if self.overlap_chars >= self.target_chars:
            raise ValueError(
                f"chunk option overlap_chars ({self.overlap_chars}) must be smaller than "
                f"target_chars ({self.target_chars})"
            )
        if self.min_chars >= self.target_chars:
            raise ValueError(
                f"chunk option min_chars ({self.min_chars}) must be smaller than "
                f"target_chars ({self.target_chars})"
            )


class BlockKind(StrEnum):
    """What a block is, as far as splitting is concerned."""

    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST = "list"
    QUOTE = "quote"
    TABLE = "table"
    FENCE = "fence"
    """Fenced or indented code."""
    OTHER = "other"


INDIVISIBLE: frozenset[BlockKind] = frozenset({BlockKind.TABLE, BlockKind.FENCE})
"""Kinds kept whole whenever they fit in ``max_chars`` (half a listing answers less); a longer one
is split on lines all the same: one chunk of megabytes makes every search that touches it slow."""


@dataclass(frozen=True)
class Block:
    """A structural span of the document, as absolute character offsets.

    ``level`` and ``heading`` only matter for :attr:`BlockKind.HEADING`.
    ``keep_together`` lists spans inside a splittable block (a code fence
    nested in a list item) that stay whole if the block is cut up, as long as
    they fit in ``max_chars``.
    """

    start: int
    end: int
    kind: BlockKind = BlockKind.PARAGRAPH
    level: int = 0
    heading: str = ""
    keep_together: tuple[tuple[int, int], ...] = ()


_NEWLINE = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """Line/offset arithmetic that agrees with markdown-it on what a line is.

    markdown-it treats ``\\r\\n``, a lone ``\\r`` and ``\\n`` as line ends, so
    this does too; otherwise token line numbers and character offsets would
    drift apart in files with Windows or classic Mac line endings.
    """

    __slots__ = ("_length", "_starts")

    def __init__(self, text: str) -> None:
        self._starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
        self._length = len(text)

    @property
    def count(self) -> int:
        """Number of lines; a trailing line ending opens one last, empty line."""
        return len(self._starts)

    def start_of(self, line: int) -> int:
        """Offset where 0-based ``line`` begins; past the last line, the text length."""
        return self._starts[line] if line < len(self._starts) else self._length

    def line_of(self, offset: int) -> int:
        """1-based number of the line holding ``offset``."""
        return bisect_right(self._starts, offset)

    def starts_inside(self, start: int, end: int) -> list[int]:
        """Line starts strictly between ``start`` and ``end``."""
        return self._starts[bisect_right(self._starts, start) : bisect_left(self._starts, end)]

    def bounds(self, start: int, end: int) -> list[int]:
        """``start``, the line starts inside the span, ``end``: the pieces a span splits into by line."""
        return [start, *self.starts_inside(start, end), end]


def chunk_id_for(path: str, text: str, occurrence: int) -> str:
    """The id of the ``occurrence``-th (0-based) chunk with exactly ``text`` in document ``path``.

    Derived from content rather than position so an id can never silently
    point at different text after an edit, and stays put when unrelated parts
    of the document change; the occurrence number tells apart identical
    passages in one document.
    """
    digest = hashlib.sha256(f"{path}\0{text}\0{occurrence}".encode("utf-8", "surrogatepass"))
    return "c_" + digest.hexdigest()[:16]


def content_hash_for(heading_path: Sequence[str], text: str) -> str:
    """The key of a chunk's embedding: it covers exactly what gets embedded (path and text)."""
    payload = HEADING_SEPARATOR.join(heading_path) + "\n" + text
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def build_chunks(
    path: str,
    text: str,
    blocks: Sequence[Block],
    *,
    title: str,
    options: ChunkOptions,
    body_start: int = 0,
) -> tuple[Chunk, ...]:
    """Chunk ``text[body_start:]`` along ``blocks``; offsets stay absolute into ``text``.

    ``blocks`` may come in any order and may miss text: anything outside them
    that is not whitespace is chunked as plain paragraphs. Text before
    ``body_start`` (frontmatter) is never chunked.
    """
    lines = LineIndex(text)
    clean = _normalise(text, blocks, body_start)
    if not clean:
        return ()
    groups = _merge_small(_sections(clean, title), options.min_chars)
    spans: list[_Span] = []
    for group in groups:
        spans.extend(_pack(text, lines, _units(text, lines, group, options), options))
    return _to_chunks(path, text, lines, spans)


# ---------------------------------------------------------------- blocks


def _normalise(text: str, blocks: Sequence[Block], body_start: int) -> list[Block]:
    """Trimmed, ordered, non-overlapping blocks that together cover all visible body text."""
    body_start = max(0, min(body_start, len(text)))
    trimmed: list[Block] = []
    for block in sorted(blocks, key=lambda b: (b.start, b.end)):
        start, end = trim(text, max(block.start, body_start), min(block.end, len(text)))
        if trimmed and start < trimmed[-1].end:
            start, end = trim(text, trimmed[-1].end, end)
        if start >= end:
            continue
        keep = tuple(
            span
            for ks, ke in block.keep_together
            if (span := trim(text, max(ks, start), min(ke, end)))[0] < span[1]
        )
        trimmed.append(replace(block, start=start, end=end, keep_together=keep))

    filled: list[Block] = []
    position = body_start
    for following in [*trimmed, None]:
        gap_end = len(text) if following is None else following.start
        start, end = trim(text, position, gap_end)
        if start < end:
            filled.append(Block(start, end, BlockKind.PARAGRAPH))
        if following is not None:
            filled.append(following)
            position = following.end
    return filled


# --------------------------------------------------------------- sections


@dataclass
class _Section:
    level: int
    path: tuple[str, ...]
    blocks: list[Block] = field(default_factory=list)


def _same_name(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _heading_path(title: str, stack: list[tuple[int, str]]) -> tuple[str, ...]:
    names = [name for _, name in stack]
    if names and _same_name(names[0], title):
        # The title usually *is* the top heading; repeating it adds nothing.
        names = names[1:]
    return (title, *(name for name in names if name))


def _sections(blocks: list[Block], title: str) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    current = _Section(level=0, path=(title,))
    for block in blocks:
        if block.kind is BlockKind.HEADING and block.level > 0:
            if current.blocks:
                sections.append(current)
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, " ".join(block.heading.split())))
            current = _Section(level=block.level, path=_heading_path(title, stack))
        current.blocks.append(block)
    if current.blocks:
        sections.append(current)
    return sections


def _size(group: list[_Section]) -> int:
    return group[-1].blocks[-1].end - group[0].blocks[0].start


def _merge_small(sections: list[_Section], min_chars: int) -> list[list[_Section]]:
    """Group sections so that none is shorter than ``min_chars`` where a sensible neighbour exists.

    Tiny chunks embed poorly (a heading and one line say little), but
    merging across a section boundary mislabels text, so a small section only
    joins a neighbour whose heading path still makes sense for it: forward
    into its own subsections or siblings, else backward into its parent or a
    sibling.
    """
    groups: list[list[_Section]] = []
    for section in sections:
        if groups and _size(groups[-1]) < min_chars and section.level >= groups[-1][0].level:
            groups[-1].append(section)
        else:
            groups.append([section])
    merged: list[list[_Section]] = []
    for group in groups:
        if merged and _size(group) < min_chars and merged[-1][0].level <= group[0].level:
            merged[-1].extend(group)
        else:
            merged.append(group)
    return merged


# ------------------------------------------------------------------ units


@dataclass(frozen=True)
class _Unit:
    """The smallest span packing may put a chunk boundary after."""

    start: int
    end: int
    path: tuple[str, ...]
    divisible: bool
    """Whether an overlap may begin at a line start inside this unit."""
    heading: bool
    keep: tuple[tuple[int, int], ...] = ()
    context: int = 0
    """Characters of context the unit adds to its path (a split table's header row): a chunk that
    begins with this unit has that much less room for text."""
    opens: bool = False
    """The first unit of its section: where a chunk holding it after its own start changes section."""


def _units(text: str, lines: LineIndex, group: list[_Section], options: ChunkOptions) -> list[_Unit]:
    units: list[_Unit] = []
    for section in group:
        first = len(units)
        for block in section.blocks:
            heading = block.kind is BlockKind.HEADING
            whole = block.kind in INDIVISIBLE
            if block.end - block.start <= options.max_chars:
                keep = block.keep_together
                units.append(_Unit(block.start, block.end, section.path, not whole, heading, keep))
            elif block.kind is BlockKind.TABLE:
                units.extend(_table_units(text, lines, block, section.path, options))
            elif block.kind is BlockKind.FENCE:
                for start, end in _by_lines(text, lines, block.start, block.end, options, code=True):
                    units.append(_Unit(start, end, section.path, False, heading))
            else:
                for start, end in _split_block(text, lines, block, options):
                    units.append(_Unit(start, end, section.path, False, heading))
        if first < len(units):
            units[first] = replace(units[first], opens=True)
    return units


def _by_lines(
    text: str, lines: LineIndex, start: int, end: int, options: ChunkOptions, *, code: bool = False
) -> Iterator[tuple[int, int]]:
    """``splitting.split_lines`` over the lines of ``text[start:end]``, at these options' sizes."""
    return split_lines(text, lines.bounds(start, end), options.max_chars, options.target_chars, code=code)


def _split_block(
    text: str, lines: LineIndex, block: Block, options: ChunkOptions
) -> Iterator[tuple[int, int]]:
    """Cut an over-long splittable block into lines, keeping nested code or tables whole if they fit."""
    position = block.start
    for keep_start, keep_end in sorted(block.keep_together):
        if keep_end <= position:
            continue
        keep_start = max(position, keep_start)
        yield from _by_lines(text, lines, position, keep_start, options)
        if keep_end - keep_start <= options.max_chars:
            yield keep_start, keep_end
        else:
            yield from _by_lines(text, lines, keep_start, keep_end, options, code=True)
        position = keep_end
    yield from _by_lines(text, lines, position, block.end, options)


def _table_units(
    text: str, lines: LineIndex, block: Block, path: tuple[str, ...], options: ChunkOptions
) -> Iterator[_Unit]:
    """An over-long table as one unit per row. The header row keeps the section's path; every later
    line (the delimiter row, the body rows) takes the header as one more entry, and is cut to fit it.
    """
    bounds = lines.bounds(block.start, block.end)
    header_start, header_end = trim(text, bounds[0], bounds[1])
    context = table_context(text[header_start:header_end], options.max_chars // 2)
    row_path = (*path, context) if context else path
    room = options.max_chars - len(context)
    for index, (line_start, line_end) in enumerate(pairwise(bounds)):
        a, b = trim(text, line_start, line_end)
        if a >= b:
            continue
        head = index == 0
        fits = options.max_chars if head else room
        pieces = [(a, b)] if b - a <= fits else hard_cut(text, a, b, min(options.target_chars, fits))
        for start, end in pieces:
            if head:
                yield _Unit(start, end, path, False, False)
            else:
                yield _Unit(start, end, row_path, False, False, context=len(context))


def table_context(header: str, limit: int) -> str:
    """A table's header row as a heading-path entry: whitespace collapsed, at most ``limit`` characters.

    The outer pipes go (``| a | b |`` becomes ``a | b``); a longer header is
    cut at a cell boundary when one is in its second half, and ends with ``…``.
    """
    row = " ".join(header.split()).strip("|").strip()
    if len(row) <= limit:
        return row
    if limit <= 1:
        return ""
    cut = row.rfind(" | ", limit // 2, limit - 1)
    return row[: cut if cut > 0 else limit - 1].rstrip() + "…"


# ---------------------------------------------------------------- packing


class _Span(NamedTuple):
    start: int
    end: int
    path: tuple[str, ...]
    sections: tuple[SectionStart, ...]


def _pack(text: str, lines: LineIndex, units: list[_Unit], options: ChunkOptions) -> list[_Span]:
    """Greedily pack a section group's units into chunks near the target size."""
    spans: list[_Span] = []
    first, start = 0, units[0].start
    while True:
        limit = options.max_chars - units[first].context
        target = min(options.target_chars, limit)
        last = first
        while last + 1 < len(units):
            shorter = units[last].end - start
            longer = units[last + 1].end - start
            if longer <= target or (longer <= limit and longer - target < target - shorter):
                last += 1
            else:
                break
        tail = units[-1].end - units[last + 1].start if last + 1 < len(units) else None
        if tail is not None and tail < options.min_chars and units[-1].end - start <= limit:
            last = len(units) - 1  # rather one fuller chunk than a scrap at the end
        while last > first and last + 1 < len(units) and units[last].heading:
            last -= 1  # a heading belongs with what follows it, not at the end of a chunk
        inner = tuple(SectionStart(u.start - start, u.path) for u in units[first + 1 : last + 1] if u.opens)
        spans.append(_Span(start, units[last].end, units[first].path, inner))
        if last + 1 >= len(units):
            return spans
        overlap = _overlap_start(text, lines, units, first, last, start, options)
        first = last + 1
        start = units[first].start if overlap is None else overlap


def _overlap_start(
    text: str,
    lines: LineIndex,
    units: list[_Unit],
    first: int,
    last: int,
    chunk_start: int,
    options: ChunkOptions,
) -> int | None:
    """Where the next chunk starts so that it repeats about ``overlap_chars`` of this one.

    Only block or line boundaries qualify, never a point inside a code block or
    table, and only if the next chunk can still take its first new unit
    without going over ``max_chars`` (less the context that unit brings).
    """
    want = options.overlap_chars
    if want == 0:
        return None
    end = units[last].end
    following = units[last + 1]
    earliest = max(chunk_start + 1, end - 2 * want, following.end - (options.max_chars - following.context))
    best: int | None = None
    for k in range(last, first - 1, -1):
        unit = units[k]
        if unit.end <= earliest:
            break
        candidates = [unit.start]
        if unit.divisible:
            inside = lines.starts_inside(unit.start, unit.end)
            candidates += [p for p in inside if not any(a < p < b for a, b in unit.keep)]
        for candidate in candidates:
            position = trim(text, candidate, end)[0]
            if earliest <= position < end and (
                best is None or abs(end - position - want) < abs(end - best - want)
            ):
                best = position
    return best


# ----------------------------------------------------------------- chunks


def _to_chunks(path: str, text: str, lines: LineIndex, spans: list[_Span]) -> tuple[Chunk, ...]:
    seen: dict[str, int] = {}
    chunks: list[Chunk] = []
    for ordinal, (start, end, heading_path, sections) in enumerate(spans):
        body = text[start:end]
        occurrence = seen.get(body, 0)
        seen[body] = occurrence + 1
        chunks.append(
            Chunk(
                chunk_id=chunk_id_for(path, body, occurrence),
                ordinal=ordinal,
                start=start,
                end=end,
                heading_path=heading_path,
                text=body,
                content_hash=content_hash_for(heading_path, body),
                line_start=lines.line_of(start),
                line_end=lines.line_of(end - 1),
                sections=sections,
            )
        )
    return tuple(chunks)
