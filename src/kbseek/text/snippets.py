"""Snippets centred on where the query matched, not on the head of the chunk.

An agent decides from the snippet whether to open a document, so the snippet must
show the matching passage. Matches are found with the same analyzer as the index,
so ``tastes`` highlights ``taste`` and ``ネコ`` highlights ``猫``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass

from kbseek.text.analyzer import terms as analyze
from kbseek.text.analyzer import tokens

__all__ = ["Snippet", "make_snippet"]

ELLIPSIS = "…"
_WHITESPACE = re.compile(r"\s+")
# Japanese/Chinese sentence punctuation: a natural place to cut text without spaces.
_CJK_BREAKS = frozenset("。、，．！？」』）")
# How far (in characters) an edge may move inwards to avoid cutting a word.
_MAX_REACH = 30


@dataclass(frozen=True)
class Snippet:
    """A window of the text, whitespace collapsed, ``…`` where it was cut.

    ``start``/``end`` locate the window in the original text; ``highlights`` are
    (start, end) pairs into ``text`` for a UI to emphasise; ``matched_terms``
    counts the distinct query terms inside the window.
    """

    text: str
    start: int
    end: int
    highlights: tuple[tuple[int, int], ...]
    matched_terms: int


def _collapse(text: str) -> tuple[str, list[int], list[int]]:
    """Collapse whitespace runs to one space, keeping maps in both directions.

    Returns the display text, display -> original offsets (one extra entry for the
    end) and original -> display offsets (likewise).
    """
    parts: list[str] = []
    to_orig: list[int] = []
    to_disp: list[int] = []
    pos = disp = 0
    for m in _WHITESPACE.finditer(text):
        ws_start, ws_end = m.span()
        parts.append(text[pos:ws_start])
        to_orig.extend(range(pos, ws_start))
        to_disp.extend(range(disp, disp + ws_start - pos))
        disp += ws_start - pos
        parts.append(" ")
        to_orig.append(ws_start)
        to_disp.extend([disp] * (ws_end - ws_start))
        disp += 1
        pos = ws_end
    parts.append(text[pos:])
    to_orig.extend(range(pos, len(text) + 1))
    to_disp.extend(range(disp, disp + len(text) - pos + 1))
    return "".join(parts), to_orig, to_disp


def _is_cjk(char: str) -> bool:
    return "\u3005" <= char <= "\u30ff" or "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"


def _best_cluster(matches: list[tuple[int, int, str]], budget: int) -> tuple[int, int]:
    """Display span of the densest group of matches fitting in ``budget`` chars.

    More distinct terms wins, then more occurrences, then the earliest group.
    Matches are sorted by start; a two-pointer sweep keeps this linear.
    """
    best: tuple[int, int] | None = None
    best_score = (-1, -1)
    seen: Counter[str] = Counter()
    j = 0
    for i, (start, _, _) in enumerate(matches):
        j = max(j, i)
        while j < len(matches) and matches[j][1] - start <= budget:
            seen[matches[j][2]] += 1
            j += 1
        if j > i:
            score = (len(seen), j - i)
            if score > best_score:
                best_score = score
                best = (start, max(end for _, end, _ in matches[i:j]))
            term = matches[i][2]
            seen[term] -= 1
            if not seen[term]:
                del seen[term]
    if best is None:  # every match is longer than the budget: show the start of the first
        start = matches[0][0]
        return start, start + budget
    return best


def _good_cut(disp: str, pos: int, interior: set[int]) -> bool:
    """Whether cutting before ``disp[pos]`` keeps every word whole."""
    if pos <= 0 or pos >= len(disp):
        return True
    left, right = disp[pos - 1], disp[pos]
    if not (left.isalnum() and right.isalnum()):
        return True
    if _is_cjk(left) or _is_cjk(right):
        return pos not in interior
    return False


def _snap(disp: str, pos: int, limit: int, interior: set[int], *, forward: bool) -> int:
    """Move an edge towards ``limit`` (never past it) to the nearest good cut.

    Prefers a space, then Japanese sentence punctuation, then any word boundary;
    keeps ``pos`` when none is within reach (one enormous word, say).
    """
    if _good_cut(disp, pos, interior):
        return pos
    step = 1 if forward else -1
    reach = min(_MAX_REACH, abs(limit - pos))
    candidates = [pos + step * k for k in range(1, reach + 1)]
    for cut in candidates:
        if disp[cut - 1] == " " or (cut < len(disp) and disp[cut] == " "):
            return cut
    for cut in candidates:
        if disp[cut - 1] in _CJK_BREAKS:
            return cut
    return next((cut for cut in candidates if _good_cut(disp, cut, interior)), pos)


def _window(length: int, cluster: tuple[int, int], max_chars: int) -> tuple[int, int]:
    """Centre a window on the cluster, using the room an uncut edge frees up."""
    budget = max_chars - 2
    start, end = cluster
    left = start - (budget - (end - start)) // 2
    if left <= 0:
        return 0, max_chars - 1
    if left + budget >= length:
        return length - (max_chars - 1), length
    return left, left + budget


def make_snippet(text: str, query_terms: Collection[str], max_chars: int) -> Snippet:
    """The window of at most ``max_chars`` characters that best shows the matches.

    ``query_terms`` are analyzed again (a no-op for terms from the query
    compiler), so raw words work too. Without a match the head of the text is
    returned. ``len(result.text) <= max_chars`` whenever ``max_chars >= 1``.
    """
    if max_chars < 1:
        return Snippet("", 0, 0, (), 0)
    disp, to_orig, to_disp = _collapse(text)
    wanted = {term for query_term in query_terms for term in analyze(query_term)}
    spans = sorted((to_disp[tok.start], to_disp[tok.end - 1] + 1, tok.term) for tok in tokens(text))
    matches = [span for span in spans if span[2] in wanted]
    length = len(disp)
    if length <= max_chars:
        start, end = 0, length
    elif max_chars < 3:  # no room for an ellipsis and text
        start, end = 0, max_chars
    else:
        cluster = _best_cluster(matches, max_chars - 2) if matches else (0, 0)
        start, end = _window(length, cluster, max_chars)
        interior = {p for s, e, _ in spans if e > start - 1 and s < end + 1 for p in range(s + 1, e)}
        start = _snap(disp, start, min(cluster[0], end), interior, forward=True) if start else 0
        if end < length:
            end = _snap(disp, end, max(cluster[1], start), interior, forward=False)
    while start < end and disp[start] == " ":
        start += 1
    while end > start and disp[end - 1] == " ":
        end -= 1
    lead = ELLIPSIS if max_chars >= 3 and disp[:start].strip() else ""
    trail = ELLIPSIS if max_chars >= 3 and disp[end:].strip() else ""
    highlights = _highlights(matches, start, end, len(lead))
    matched = len({term for s, e, term in matches if s >= start and e <= end})
    orig_start = to_orig[start]
    orig_end = to_orig[end - 1] + 1 if end > start else orig_start
    return Snippet(lead + disp[start:end] + trail, orig_start, orig_end, highlights, matched)


def _highlights(
    matches: list[tuple[int, int, str]], start: int, end: int, shift: int
) -> tuple[tuple[int, int], ...]:
    """Match spans clipped to the window, moved into snippet coordinates, merged.

    Overlapping matches (the bigrams of an unknown word) become one highlight so a
    UI does not nest emphasis.
    """
    merged: list[tuple[int, int]] = []
    for s, e, _ in matches:
        if e <= start or s >= end:
            continue
        hs, he = max(s, start) - start + shift, min(e, end) - start + shift
        if merged and hs <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(he, merged[-1][1]))
        else:
            merged.append((hs, he))
    return tuple(merged)
