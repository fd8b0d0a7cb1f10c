"""Fitting a response under the response cap (T3), with a note that says what was left out.

A response is measured as it is sent: the serialised structured result by default, and a surface
that sends a text rendering beside it passes a measure that counts both. Each cut keeps the
response useful: a search keeps its best hits, a fetch its earlier passages, and each says how to
get the rest.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from kbseek.responses import FetchResponse, Passage, SearchResponse
from kbseek.text.plurals import counted


def json_size(response: BaseModel) -> int:
    """A response's size as its structured result alone is sent: the serialised model."""
    return len(response.model_dump_json())


Measure = Callable[[SearchResponse], int]
"""How a search response is sized against the cap: as its sender sends it (``json_size`` for the
structured result alone; a surface that sends a text rendering beside it counts both)."""


def fit_search(response: SearchResponse, max_chars: int, measure: Measure = json_size) -> SearchResponse:
    """Drop hits from the end until the response measures at most ``max_chars``, its cut note included (T3).

    The note saying the response was cut is part of the response, so each candidate is measured with
    it: fitting the hits first and adding the note after would overshoot the cap by the note's length.
    ``measure`` is the serialised structured result by default; a surface that sends a text
    rendering beside it measures both. A response is fitted once, by whoever sends it; fitted
    again, its cut note is replaced, not repeated.
    """
    if measure(response) <= max_chars:
        return response
    kept = len(response.hits) - 1
    cut = _cut_to(response, max(kept, 0), max_chars)
    while kept > 0 and measure(cut) > max_chars:
        kept -= 1
        cut = _cut_to(response, kept, max_chars)
    return cut


def _cut_to(response: SearchResponse, kept: int, max_chars: int) -> SearchResponse:
    """``response`` with only its first ``kept`` hits and the note that says so."""
    earlier = [i for i, code in enumerate(response.note_codes) if code == "cut_to_fit"]
    notes = [
        *(n for i, n in enumerate(response.notes) if i not in earlier),
        f"the response was cut to {counted(kept, 'hit')} to stay under {counted(max_chars, 'character')}; "
        "lower snippet_chars",
    ]
    codes = [*(c for c in response.note_codes if c != "cut_to_fit"), "cut_to_fit"]
    return response.model_copy(
        update={"hits": list(response.hits[:kept]), "truncated": True, "notes": notes, "note_codes": codes}
    )


def passage_cut_note(path: str, why: str, offset: int) -> str:
    """The note on a passage cut short, by the per-fetch budget or to fit the response: one wording,
    so a passage cut twice is noted once (``_passages_within`` replaces the earlier note)."""
    return f"{_cut_prefix(path)}{why}; read on with get_document(path={path!r}, offset={offset})"


def _cut_prefix(path: str) -> str:
    return f"the passage from {path} was cut "


def fit_fetch(
    response: FetchResponse, max_chars: int, measure: Callable[[FetchResponse], int] = json_size
) -> FetchResponse:
    """Shorten the passages' text, the last first, to the most that measures at most ``max_chars`` (T3).

    The per-fetch character budget counts text as written, but a response is sent as JSON, where a
    quote or a backslash takes two characters and a control character six, and a surface may send a
    text rendering beside the structured result. A passage cut here says where to read on, as one
    cut by the budget does; a passage left with no text still names its path and ids. The length
    kept is found by bisection: what a character costs depends on the character.
    """
    if measure(response) <= max_chars:
        return response
    fits, over = 0, sum(len(p.text) for p in response.passages)  # kept characters: fitting, too many
    while over - fits > 1:
        mid = (fits + over) // 2
        if measure(_passages_within(response, mid, max_chars)) <= max_chars:
            fits = mid
        else:
            over = mid
    return _passages_within(response, fits, max_chars)


def _passages_within(response: FetchResponse, keep: int, max_chars: int) -> FetchResponse:
    """``response`` with ``keep`` characters of passage text in all, earlier passages first."""
    passages: list[Passage] = []
    notes = list(response.notes)
    for p in response.passages:
        if len(p.text) <= keep:
            passages.append(p)
            keep -= len(p.text)
            continue
        text = p.text[:keep]
        keep = 0
        notes = [n for n in notes if not n.startswith(_cut_prefix(p.path))]
        passages.append(p.model_copy(update={"text": text, "end": p.start + len(text), "truncated": True}))
        why = f"to keep the response under {counted(max_chars, 'character')}"
        notes.append(passage_cut_note(p.path, why, p.start + len(text)))
    return response.model_copy(update={"passages": passages, "truncated": True, "notes": notes})
