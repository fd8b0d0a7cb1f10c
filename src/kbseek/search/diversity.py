"""Which fused chunks become hits: distinct documents first, a second chunk only when it earns it.

An agent triages a result list by document: five chunks of one page tell it less than the best
chunk of five pages, and a page that answers the question needs only one chunk in the list for the
agent to ``fetch`` the rest. So each document's best chunk takes its place in the ranking, and a
further chunk of the same document keeps its place only when that document is far ahead of every
document not yet shown; otherwise it waits until every other candidate document has been shown
once (docs/decisions/0012-distinct-documents-first.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar


class Ranked(Protocol):
    @property
    def rowid(self) -> int: ...

    @property
    def score(self) -> float: ...


R = TypeVar("R", bound=Ranked)


class Placed(Protocol):
    @property
    def document_id(self) -> int: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


def distinct_first(
    ranked: Sequence[R],
    rows: Mapping[int, Placed],
    *,
    limit: int,
    per_document: int,
    far_ahead: float,
) -> tuple[list[R], bool]:
    """The hits in order, and whether more de-duplicated hits existed than ``limit`` allowed.

    ``ranked`` is best first. A chunk overlapping a kept chunk of its document is never kept (a
    fetch would show the same text twice), and no document gets more than ``per_document`` while
    other candidate documents are waiting; once every one is shown, room left in the list goes to
    further chunks of them (the way to read more of one document: narrow the search to it). A
    second or later chunk keeps its rank when its score is at least ``1 + far_ahead`` times the best
    score of the next document not yet shown; ``far_ahead = inf`` never lets it.
    """
    live = [f for f in ranked if f.rowid in rows]  # a chunk deleted between the two queries is skipped
    opens = _opening_positions(live, rows)  # where each document first appears, i.e. its best chunk
    next_opening: list[float | None] = [None] * len(live)
    nxt: float | None = None
    for i in range(len(live) - 1, -1, -1):
        next_opening[i] = nxt
        if i in opens:
            nxt = live[i].score

    kept: list[R] = []
    deferred: list[R] = []
    capped: list[R] = []
    spans: dict[int, list[tuple[int, int]]] = {}
    shown: set[int] = set()
    for i, f in enumerate(live):
        row = rows[f.rowid]
        taken = spans.setdefault(row.document_id, [])
        if not _fits(row, taken, per_document):
            capped.append(f)
            continue
        if row.document_id in shown and not _far_ahead(f.score, next_opening[i], far_ahead):
            deferred.append(f)
            continue
        if len(kept) == limit:
            return kept, True
        taken.append((row.start, row.end))
        shown.add(row.document_id)
        kept.append(f)
    for f in deferred:
        row = rows[f.rowid]
        taken = spans[row.document_id]
        if not _fits(row, taken, per_document):  # chunks kept since it was deferred may now exclude it
            capped.append(f)
            continue
        if len(kept) == limit:
            return kept, True
        taken.append((row.start, row.end))
        kept.append(f)
    # Every candidate document is shown and room is left (a path_prefix naming one file, a tag few
    # documents carry): the cap made room for other documents, and none is waiting, so further
    # chunks of the ones shown fill the list, best first.
    for f in sorted(capped, key=lambda c: -c.score):
        row = rows[f.rowid]
        taken = spans[row.document_id]
        if not _fits(row, taken, math.inf):
            continue
        if len(kept) == limit:
            return kept, True
        taken.append((row.start, row.end))
        kept.append(f)
    return kept, False


def _fits(row: Placed, taken: Sequence[tuple[int, int]], per_document: float) -> bool:
    """Room left for this document, and no overlap with a kept chunk of it."""
    return len(taken) < per_document and not any(row.start < e and s < row.end for s, e in taken)


def _opening_positions(live: Sequence[Ranked], rows: Mapping[int, Placed]) -> set[int]:
    """Positions of each document's best chunk (its first appearance in the ranking)."""
    seen: set[int] = set()
    out: set[int] = set()
    for i, f in enumerate(live):
        doc = rows[f.rowid].document_id
        if doc not in seen:
            seen.add(doc)
            out.add(i)
    return out


def _far_ahead(score: float, next_document: float | None, margin: float) -> bool:
    if next_document is None:
        return True  # no other document is waiting: nothing to make room for
    if math.isinf(margin):
        return False  # checked first: inf × 0 is NaN, and a zero-score document must still wait its turn
    if next_document <= 0:
        return score > 0
    return score >= next_document * (1.0 + margin)
