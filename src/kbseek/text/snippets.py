"""Snippets centred on where the query matched, not on the head of the chunk.

An agent decides from the snippet whether to open a document, so the snippet must
show the matching passage. Matches are found with the same analyzer as the index,
so ``tastes`` highlights ``taste`` and ``ネコ`` highlights ``猫``.

A snippet is cut from *display text* (``kbseek.text.display``): for Markdown, the
text without anchors, comments, tags and link URLs, which is also what the lexical
index holds. Highlights come from the analyzer's tokens of that text, never from a
substring search, and only mark what reads as a match to a person: not a stop word
or a single letter, and not a bigram of a longer unknown Japanese word (``タブ``
inside ``イミュータブル``) unless the query asked for every bigram of that word.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass

from kbseek.text.analyzer import Token, tokens
from kbseek.text.display import display_text
from kbseek.text.stopwords import stop_terms

__all__ = ["Snippet", "make_snippet"]

ELLIPSIS = "…"
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
    focus: int | None = None
    """Where in the original text the best group of matches begins (``None``: no match), so a hit
    can name the section it shows when one chunk holds several (``search.pipeline.heading_at``)."""


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


def make_snippet(text: str, query_terms: Collection[str], max_chars: int, *, markup: bool = False) -> Snippet:
    """The window of at most ``max_chars`` characters that best shows the matches.

    ``query_terms`` are analyzed again, so raw words work too; pass the query as the
    user wrote it rather than its compiled terms, because only the analyzer's view of
    the whole query tells a word (``タブ``) from a bigram of an unknown word.
    ``markup`` says ``text`` is Markdown, whose markup the snippet leaves out. Without
    a match the head of the text is returned. ``len(result.text) <= max_chars``
    whenever ``max_chars >= 1``.
    """
    if max_chars < 1:
        return Snippet("", 0, 0, (), 0)
    shown = display_text(text, markup=markup)
    if markup and not shown.text and text.strip():
        shown = display_text(text, markup=False)  # nothing but markup: show it rather than nothing
    disp = shown.text
    words: set[str] = set()
    pieces: set[str] = set()
    for query_term in query_terms:
        for tok in tokens(query_term):
            (words if tok.word is None else pieces).add(tok.term)
    found = tokens(disp)
    spans = sorted((tok.start, tok.end, tok.term) for tok in found)
    matches = _matches(found, words, pieces)
    length = len(disp)
    best = _best_cluster(matches, max(max_chars - 2, 1)) if matches else None
    if length <= max_chars:
        start, end = 0, length
    elif max_chars < 3:  # no room for an ellipsis and text
        start, end = 0, max_chars
    else:
        cluster = best or (0, 0)
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
    orig_start, orig_end = shown.source_span(start, end)
    focus = shown.source_span(best[0], best[0])[0] if best is not None else None
    return Snippet(lead + disp[start:end] + trail, orig_start, orig_end, highlights, matched, focus)


def _worth_marking(term: str) -> bool:
    """Not a stop word, and not one letter or digit (a lone Han or kana character is a word)."""
    if len(term) == 1:
        return _is_cjk(term)
    return term not in stop_terms()


def _matches(found: list[Token], words: set[str], pieces: set[str]) -> list[tuple[int, int, str]]:
    """(start, end, term) of the tokens that read as matches, sorted by position.

    ``words`` are the terms the query produced as whole words, ``pieces`` those it
    produced as bigrams of an unknown word. A word of the text matches a word of the
    query. An unknown word of the text matches only when the query holds every one of
    its bigrams, and then it is marked whole: the query ``タブ`` shares one bigram with
    ``イミュータブル`` (enough for recall, not a match to a reader), and the bigram
    ``タブ`` of the query ``イミュータブル`` does not make the word タブ a match.
    """
    wanted = words | pieces
    out: list[tuple[int, int, str]] = []
    unknown_words: dict[tuple[int, int], list[str]] = {}
    for tok in found:
        if tok.word is not None:
            unknown_words.setdefault(tok.word, []).append(tok.term)
        elif tok.term in words and _worth_marking(tok.term):
            out.append((tok.start, tok.end, tok.term))
    for (start, end), terms in unknown_words.items():
        if all(term in wanted for term in terms):
            out.extend((start, end, term) for term in dict.fromkeys(terms))
    out.sort()
    return out


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
