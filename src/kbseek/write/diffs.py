"""The unified diff a write answers with: what ``dry_run`` shows before, and every write after.

An agent checks its edit against it and a person reads it in the trail's size, so it is the
standard ``diff -u`` form, with the note's path on both sides (``a/…``, ``b/…``). A diff longer
than :data:`MAX_DIFF_CHARS` is cut in the middle of a line boundary with a line saying how much was
left out: the answer to a large replace stays within what a host shows, and the count of changed
lines stays whole.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

MAX_DIFF_CHARS = 6000
"""About 80 lines of prose: enough to see an edit whole; past it, the start and the end."""


@dataclass(frozen=True)
class Diff:
    text: str
    """The unified diff, maybe cut (``truncated``)."""
    changed: int
    """Lines added plus lines removed, counted on the whole diff."""
    truncated: bool


def unified(before: str, after: str, path: str, new_path: str | None = None) -> Diff:
    """The diff from ``before`` (``""`` for a new note) to ``after`` (``""`` for a deleted one)."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            fromfile=f"a/{path}", tofile=f"b/{new_path or path}",
        )
    )  # fmt: skip
    lines = [
        line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines
    ]
    changed = sum(1 for line in lines if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")))
    text = "".join(lines)
    if len(text) <= MAX_DIFF_CHARS:
        return Diff(text, changed, False)
    head: list[str] = []
    tail: list[str] = []
    budget = MAX_DIFF_CHARS // 2
    used = 0
    for line in lines:
        if used + len(line) > budget:
            break
        head.append(line)
        used += len(line)
    used = 0
    for line in reversed(lines[len(head) :]):
        if used + len(line) > budget:
            break
        tail.insert(0, line)
        used += len(line)
    left_out = len(lines) - len(head) - len(tail)
    return Diff("".join(head) + f"… {left_out} diff lines left out …\n" + "".join(tail), changed, True)
