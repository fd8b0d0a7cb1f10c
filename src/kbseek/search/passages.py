"""Joining neighbouring chunks into passages, with overlap removed by position (T6).

Chunks overlap on purpose (so a sentence on a boundary is whole in one of
them). Joining them by string matching would fail on repeated text; their
absolute offsets say exactly how much of the next chunk is already present.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbseek.store.records import ChunkRow

GAP = "\n\n"
"""Chunks never include the blank lines between blocks; a gap is re-joined as one paragraph break."""


@dataclass(frozen=True)
class JoinedText:
    start: int
    end: int
    text: str
    chunks: tuple[ChunkRow, ...]


def join_by_offsets(chunks: Sequence[ChunkRow]) -> list[JoinedText]:
    """Join chunks of one document into runs; only the part beyond the previous end is appended."""
    ordered = sorted(chunks, key=lambda c: (c.start, c.end))
    runs: list[JoinedText] = []
    for c in ordered:
        if runs and c.ordinal <= runs[-1].chunks[-1].ordinal + 1:
            last = runs[-1]
            if c.end <= last.end:
                runs[-1] = JoinedText(last.start, last.end, last.text, (*last.chunks, c))
                continue
            addition = c.text[last.end - c.start :] if c.start < last.end else GAP + c.text
            runs[-1] = JoinedText(last.start, c.end, last.text + addition, (*last.chunks, c))
        else:
            runs.append(JoinedText(c.start, c.end, c.text, (c,)))
    return runs
