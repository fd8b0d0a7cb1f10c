"""Display text: what a reader sees of Markdown source, with a map back to the source.

Real documentation is written for a site generator, not for a reader of the raw file:
headings carry anchors (``KeepAlive {#keepalive}``, ``{/*anchor*/}``), paragraphs carry
HTML comments, badges, ``<sup>`` tags and link URLs, and MDX or VitePress pages add
component lines (``<Sandpack>``, ``<script setup>``, ``:::tip``) and ``import`` lines.
Shown to an agent or a person, that markup is noise, and indexed it is worse: every page
"matches" ``https`` and ``class``.

This module is the one place that knows what is markup. :func:`display_text` returns the
text a page would show, whitespace collapsed, together with the source offsets of every
display character, so a snippet cut from display text still points at the original file
(chunk offsets and line numbers are never rewritten: T6). Titles and heading paths,
snippets and the lexical index all read display text from here, so they agree on what a
word is (docs/decisions/0009-display-text-from-markup.md).

The rules are deliberately conservative: code (fenced blocks and code spans) is kept
byte for byte, and a construct that does not match exactly is left as it is, because
showing a little markup is better than hiding text.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial

__all__ = ["DisplayText", "display_line", "display_text"]


@dataclass(frozen=True, slots=True)
class DisplayText:
    """Display text and, for each of its characters, the source range it stands for.

    ``text[i]`` comes from ``source[starts[i]:ends[i]]``: the same character for text
    kept as written, a longer range for an entity (``&amp;``) or a space that replaced
    removed markup or a run of whitespace. Both lists are non-decreasing.
    """

    text: str
    starts: Sequence[int]
    ends: Sequence[int]
    source_length: int

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The source range covered by display characters ``start:end``."""
        if start >= end:
            at = self.starts[start] if start < len(self.starts) else self.source_length
            return at, at
        return self.starts[start], self.ends[end - 1]


def display_text(source: str, *, markup: bool = True) -> DisplayText:
    """``source`` as a reader sees it: markup dropped (when ``markup``), whitespace collapsed, trimmed.

    With ``markup=False`` (plain text, extracted PDF text) only whitespace is collapsed:
    a ``<b>`` in a text file is something its author typed.
    """
    edits = _Edits()
    if markup:
        _find_markup(source, edits)
    text, starts, ends = _render(source, edits)
    return _collapse(text, starts, ends, len(source))


def display_line(source: str) -> str:
    """One line of display text, for a title or a heading: ``KeepAlive {#keepalive}`` -> ``KeepAlive``."""
    return display_text(source).text


# ------------------------------------------------------------------ edits


class _Edits:
    """Non-overlapping source ranges, each kept verbatim (code) or replaced.

    A construct is recognised only if all of its pieces are still free, so markup found
    inside code, or inside something already removed, is left alone; the passes run from
    the most binding construct (a code fence) to the least (an emphasis marker).
    """

    __slots__ = ("_items", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._items: list[tuple[int, int, str | None]] = []

    def _free(self, start: int, end: int) -> bool:
        i = bisect_right(self._starts, start)
        if i and self._items[i - 1][1] > start:
            return False
        return not (i < len(self._items) and self._items[i][0] < end)

    def add(self, *pieces: tuple[int, int, str | None]) -> bool:
        """Take all ``(start, end, replacement)`` pieces or none; ``None`` keeps the range verbatim."""
        real = [p for p in pieces if p[0] < p[1]]
        if not all(self._free(s, e) for s, e, _ in real):
            return False
        for piece in real:
            i = bisect_right(self._starts, piece[0])
            self._starts.insert(i, piece[0])
            self._items.insert(i, piece)
        return True

    def __iter__(self) -> Iterator[tuple[int, int, str | None]]:
        return iter(self._items)


def _render(source: str, edits: _Edits) -> tuple[str, list[int], list[int]]:
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for start, end, replacement in [*edits, (len(source), len(source), "")]:
        parts.append(source[pos:start])
        starts.extend(range(pos, start))
        ends.extend(range(pos + 1, start + 1))
        if replacement is None:
            parts.append(source[start:end])
            starts.extend(range(start, end))
            ends.extend(range(start + 1, end + 1))
        elif replacement:
            parts.append(replacement)
            starts.extend([start] * len(replacement))
            ends.extend([end] * len(replacement))
        pos = end
    return "".join(parts), starts, ends


_WHITESPACE = re.compile(r"\s+")


def _collapse(text: str, starts: list[int], ends: list[int], length: int) -> DisplayText:
    """Runs of whitespace become one space (spanning the whole run); the ends are trimmed."""
    parts: list[str] = []
    out_starts: list[int] = []
    out_ends: list[int] = []
    pos = 0
    for m in _WHITESPACE.finditer(text):
        a, b = m.span()
        parts.append(text[pos:a])
        out_starts.extend(starts[pos:a])
        out_ends.extend(ends[pos:a])
        if a > 0 and b < len(text):
            parts.append(" ")
            out_starts.append(starts[a])
            out_ends.append(ends[b - 1])
        pos = b
    parts.append(text[pos:])
    out_starts.extend(starts[pos:])
    out_ends.extend(ends[pos:])
    return DisplayText("".join(parts), out_starts, out_ends, length)


# ----------------------------------------------------------------- passes

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})([^\r\n]*)")
# MDX module syntax: only statement shapes, so a sentence starting with "import" stays.
_ESM = re.compile(
    r"import[ \t]+(?:type[ \t]+)?(?:[\"'{*]|[\w$]+[ \t]*(?:,|from[ \t]*[\"']))"
    r"|export[ \t]+(?:default|const|let|var|function|async|class|type|interface)\b|export[ \t]*[{*]"
)

_CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_REMOVED_BLOCKS: tuple[tuple[re.Pattern[str], str], ...] = (  # after a backslash, each is text (CommonMark)
    (re.compile(r"(?<!\\)<!--.*?-->", re.S), ""),
    (re.compile(r"(?<!\\)\{/\*.*?\*/\}", re.S), ""),  # an MDX comment: React's {/*anchor*/}
    (re.compile(r"(?<!\\)\{%.*?%\}", re.S), " "),  # a Liquid tag
    (re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>", re.S | re.I), " "),
)

_QUOTE = re.compile(r"[ \t]{0,3}(?:>[ \t]?)+")
_HEADING = re.compile(r"#{1,6}(?:[ \t]+|(?=[\r\n]|$))")
_HEADING_CLOSE = re.compile(r"[ \t]+#+[ \t]*(?=[\r\n]|$)")
_CONTAINER = re.compile(r"[ \t]*:{3,}[ \t]*[\w-]*")  # VitePress/Docusaurus ::: tip Title
_RULE_LINE = re.compile(
    r"[ \t]*(?:([-*_=])[ \t]*(?:\1[ \t]*){2,}|\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?)(?=[\r\n]|$)"
)  # thematic breaks, setext underlines and table delimiter rows
_LINK_DEFINITION = re.compile(r"[ \t]{0,3}\[(?!\^)[^\]\r\n]+\]:[ \t]*\S[^\r\n]*")

_URL = (
    r"(?:<[^>\r\n]*>|(?:[^()\s]|\([^()\s]*\))*)(?:[ \t]+(?:\"[^\"\r\n]*\"|'[^'\r\n]*'|\([^()\r\n]*\)))?[ \t]*"
)
_TEXT = r"(?:[^\[\]]|\[[^\[\]]*\])*"
_BADGES = (
    re.compile(rf"\[[ \t]*!\[[^\]\r\n]*\](?:\({_URL}\)|\[[^\]\r\n]*\])[ \t]*\](?:\({_URL}\)|\[[^\]\r\n]*\])"),
    re.compile(rf"!\[[^\]\r\n]*\]\((?=[^)\r\n]*(?:shields\.io|/badge))({_URL})\)"),
)
_IMAGE = re.compile(rf"(!\[)([^\]\r\n]*)(\]\({_URL}\)|\]\[[^\]\r\n]*\])")
_LINK = re.compile(rf"(\[)({_TEXT})(\]\({_URL}\)|\]\[[^\[\]\r\n]*\])")

_INLINE_TAGS = frozenset(
    ("a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "del", "dfn", "em", "font", "i", "ins", "kbd",
     "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var", "wbr")
)  # fmt: skip
"""HTML elements that sit inside a word or sentence: removing them must not split a word."""
_BRACES = r"\{(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*\}"
_ATTRIBUTE = rf"(?:[^\s\"'<>/={{}}]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|{_BRACES}|[^\s\"'=<>`{{}}]+))?|{_BRACES})"
_TAG = re.compile(rf"(?<!\\)(?:</?([A-Za-z][\w.:-]*)(?:\s+{_ATTRIBUTE})*\s*/?>|</?>)")
"""An HTML element or a JSX fragment; ``\\<`` is a literal ``<`` (CommonMark), as the emphasis
patterns below leave an escaped delimiter alone."""
_OTHER_INLINE: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"[ \t]*\{:?[ \t]*[#.][\w-][^{}\r\n]*\}"), lambda m: ""),  # {#id .class}, {: .x}
    (
        re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"),
        lambda m: html.unescape(m[0]),
    ),
    (re.compile(r"\\([!-/:-@\[-`{-~])"), lambda m: m[1]),
)
# Emphasis spans at most 500 characters: an opener without a closer would otherwise be
# searched to the end of the text, once per opener (quadratic in a long table full of asterisks).
_EMPHASIS = (
    re.compile(r"(?<![\\*])(\*{1,3})(?![\s*])(.{1,500}?)(?<![\s\\*])\1(?!\*)", re.S),
    re.compile(r"(?<![\w\\])(_{1,3})(?![\s_])(.{1,500}?)(?<![\s\\_])\1(?!\w)", re.S),
    re.compile(r"(?<![\\~])(~~)(?![\s~])(.{1,500}?)(?<![\s\\~])\1(?!~)", re.S),
)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\r?\n|\r[ \t]*\r")


def _find_markup(source: str, edits: _Edits) -> None:
    for segment in _code_blocks(source, edits):
        _search(_CODE_SPAN, source, segment, lambda m: _one_paragraph(m) and edits.add(
            (m.start(1), m.end(1), ""), (m.start(2), m.end(2), None), (m.end(2), m.end(), "")
        ))  # fmt: skip
        for pattern, replacement in _REMOVED_BLOCKS:
            _search(pattern, source, segment, partial(_replace_whole, edits, replacement))
        for badge in _BADGES:
            _search(badge, source, segment, lambda m: edits.add((m.start(), m.end(), "")))
        for pattern in (_IMAGE, _LINK):
            _search(pattern, source, segment, lambda m: _one_paragraph(m) and edits.add(
                (m.start(1), m.end(1), ""), (m.start(3), m.end(3), "")
            ), inside=True)  # fmt: skip
        _search(_TAG, source, segment, lambda m: _one_paragraph(m) and edits.add(
            (m.start(), m.end(), _tag_replacement(m))
        ))  # fmt: skip
        _line_markup(source, segment, edits)
        for pattern, replace in _OTHER_INLINE:
            _search(pattern, source, segment, partial(_replace_by, edits, replace))
        for pattern in _EMPHASIS:
            _search(pattern, source, segment, lambda m: _one_paragraph(m) and edits.add(
                (m.start(1), m.end(1), ""), (m.end(2), m.end(), "")
            ), inside=True)  # fmt: skip


def _replace(edits: _Edits, m: re.Match[str], replacement: str) -> bool:
    """Replace a match, unless the replacement is the match itself (an unknown ``&entity;``)."""
    return replacement != m[0] and edits.add((m.start(), m.end(), replacement))


def _replace_whole(edits: _Edits, replacement: str, m: re.Match[str]) -> bool:
    """Replace a whole match by a fixed text (a removed block)."""
    return edits.add((m.start(), m.end(), replacement))


def _replace_by(edits: _Edits, rule: Callable[[re.Match[str]], str], m: re.Match[str]) -> bool:
    """Replace a match by what ``rule`` makes of it (see :func:`_replace`)."""
    return _replace(edits, m, rule(m))


def _search(
    pattern: re.Pattern[str],
    source: str,
    segment: tuple[int, int],
    take: Callable[[re.Match[str]], bool],
    *,
    inside: bool = False,
) -> None:
    """Offer each match in ``segment`` to ``take``.

    A refused match is retried one character later, so a false start (a ``<script>``
    inside a code span) cannot hide a real construct after it; with ``inside`` the
    search resumes after the opening delimiter, for constructs that nest (emphasis in a
    link text).
    """
    pos, end = segment
    while pos < end and (m := pattern.search(source, pos, end)) is not None:
        taken = take(m)
        pos = (m.end(1) if inside else m.end()) if taken else m.start() + 1


def _one_paragraph(m: re.Match[str]) -> bool:
    """Inline markup never spans a blank line."""
    return _PARAGRAPH_BREAK.search(m[0]) is None


def _tag_replacement(m: re.Match[str]) -> str:
    """Inline elements vanish in place; block elements and components separate what surrounds them."""
    name = (m[1] or "").lower()
    return "" if name in _INLINE_TAGS else " "


def _lines(source: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, int]]:
    """(start, end of content, end with line ending) of every line in ``source[start:end]``."""
    end = len(source) if end is None else end
    pos = start
    while pos < end:
        m = _LINE.match(source, pos, end)
        assert m is not None  # the pattern matches the empty string
        content_end = m.end()
        while content_end > m.start() and source[content_end - 1] in "\r\n":
            content_end -= 1
        yield m.start(), content_end, m.end()
        if m.end() == pos:
            break
        pos = m.end()


def _code_blocks(source: str, edits: _Edits) -> list[tuple[int, int]]:
    """Keep fenced code verbatim (its fence lines dropped) and drop MDX import/export blocks.

    Returns the segments between them, where everything else is looked for: markup
    inside code is code.
    """
    segments: list[tuple[int, int]] = []
    segment_start = 0
    fence: tuple[str, int] | None = None
    esm = False
    for start, content_end, end in _lines(source):
        line = source[start:content_end]
        if fence is not None:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= fence[1]:
                edits.add((start, content_end, ""))
                fence = None
                segment_start = end
            else:
                edits.add((start, content_end, None))
            continue
        blank = not line.strip()
        opened = _FENCE_OPEN.fullmatch(line)
        if opened and not (opened[1][0] == "`" and "`" in opened[2]):
            if not esm:
                segments.append((segment_start, start))
            edits.add((start, content_end, ""))
            fence, esm = (opened[1][0], len(opened[1])), False
        elif (esm and not blank) or _ESM.match(line):
            # An MDX import/export block runs to the next blank line (multi-line imports).
            if not esm:
                segments.append((segment_start, start))
            edits.add((start, content_end, ""))
            esm = True
            segment_start = end
        else:
            esm = False
    if fence is None:
        segments.append((segment_start, len(source)))
    return [(a, b) for a, b in segments if a < b]


def _line_markup(source: str, segment: tuple[int, int], edits: _Edits) -> None:
    """Markers that only mean something at the start of a line: quotes, headings, containers, rules."""
    for start, content_end, _ in _lines(source, *segment):
        pos = start
        if quote := _QUOTE.match(source, pos, content_end):
            edits.add((quote.start(), quote.end(), ""))
            pos = quote.end()
        if (rule := _RULE_LINE.match(source, pos, content_end)) and rule.end() == content_end:
            edits.add((pos, content_end, ""))
        elif definition := _LINK_DEFINITION.fullmatch(source, pos, content_end):
            edits.add((definition.start(), definition.end(), ""))
        elif heading := _HEADING.match(source, pos + _indent(source, pos, content_end), content_end):
            edits.add((pos, heading.end(), ""))
            if close := _HEADING_CLOSE.search(source, heading.end(), content_end):
                edits.add((close.start(), close.end(), ""))
        elif container := _CONTAINER.match(source, pos, content_end):
            edits.add((container.start(), container.end(), ""))


def _indent(source: str, start: int, end: int) -> int:
    n = 0
    while n < 3 and start + n < end and source[start + n] == " ":
        n += 1
    return n
