"""Where an over-long span of text is cut: at lines, then sentence ends, then characters.

The chunker decides *that* a block is too long for one chunk; this module decides *where* it
is cut, so that no cut lands inside a word when a space or a sentence end is near, and none
ever splits what renders as one character (a surrogate pair, a combining mark, an emoji
joined by ZWJ, a flag).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise

_SENTENCE_END = re.compile(r"[。！？]+[」』）)]*|[.!?]+[\"')\]]*(?=\s)")
_SOFT_BREAK = frozenset("、，,;；：:")


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """``text[start:end]`` without its leading and trailing whitespace, as a span."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_lines(
    text: str, bounds: Sequence[int], max_chars: int, target_chars: int, *, code: bool = False
) -> Iterator[tuple[int, int]]:
    """Lines of an over-long span (``bounds``: its start, the line starts inside it, its end); a line
    over ``max_chars`` is cut at sentence ends, or on characters in code."""
    if code:
        return _pieces(text, bounds, max_chars, lambda a, b: hard_cut(text, a, b, target_chars))
    return _pieces(text, bounds, max_chars, lambda a, b: split_sentences(text, a, b, max_chars, target_chars))


def split_sentences(
    text: str, start: int, end: int, max_chars: int, target_chars: int
) -> Iterator[tuple[int, int]]:
    """Cut one over-long line at sentence ends (a Japanese paragraph is often one line)."""
    bounds = [start, *(m.end() for m in _SENTENCE_END.finditer(text, start, end)), end]
    return _pieces(text, bounds, max_chars, lambda a, b: hard_cut(text, a, b, target_chars))


def _pieces(
    text: str, bounds: Sequence[int], max_chars: int, cut: Callable[[int, int], Iterator[tuple[int, int]]]
) -> Iterator[tuple[int, int]]:
    """The trimmed, non-empty pieces between consecutive ``bounds``; a piece over ``max_chars`` is
    handed to ``cut``."""
    for piece_start, piece_end in pairwise(bounds):
        a, b = trim(text, piece_start, piece_end)
        if a >= b:
            continue
        if b - a <= max_chars:
            yield a, b
        else:
            yield from cut(a, b)


def hard_cut(text: str, start: int, end: int, size: int) -> Iterator[tuple[int, int]]:
    """Last resort: pieces of at most ``size`` characters, cut after a space or comma if one is near.

    Without one (Japanese, a minified line), the cut is moved back off any
    point that would split what renders as one character.
    """
    while end - start > size:
        limit = start + size
        cut = limit
        for i in range(limit - 1, start + size // 2 - 1, -1):
            if text[i].isspace() or text[i] in _SOFT_BREAK:
                cut = i + 1
                break
        else:
            cut = _cluster_boundary(text, start, limit)
        piece = trim(text, start, cut)
        if piece[0] < piece[1]:
            yield piece
        start = trim(text, cut, end)[0]
    if start < end:
        yield start, end


_JOINERS = frozenset("\u200c\u200d\u034f\u180b\u180c\u180d\u180e")
_MAX_CLUSTER = 32


def _joined(text: str, i: int) -> bool:
    """Whether ``text[i - 1]`` and ``text[i]`` belong to one user-perceived character."""
    a, b = text[i - 1], text[i]
    return (
        ("\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff")  # a surrogate pair (surrogatepass)
        or (a == "\r" and b == "\n")
        or a in _JOINERS
        or b in _JOINERS
        or "\ufe00" <= b <= "\ufe0f"  # variation selectors
        or "\U000e0020" <= b <= "\U000e01ef"  # tag characters (flags), more variation selectors
        or "\U0001f3fb" <= b <= "\U0001f3ff"  # emoji skin tones
        or ("\U0001f1e6" <= a <= "\U0001f1ff" and "\U0001f1e6" <= b <= "\U0001f1ff")  # flag pairs
        or unicodedata.category(b) in ("Mn", "Mc", "Me")  # combining marks
    )


def _cluster_boundary(text: str, start: int, cut: int) -> int:
    """``cut``, or the nearest point before it that does not split a character sequence."""
    i = cut
    while i > start + 1 and cut - i < _MAX_CLUSTER and _joined(text, i):
        i -= 1
    return cut if _joined(text, i) else i
