"""Counted nouns for the text people and agents read.

"1 documents" reads as a bug and makes a reader doubt the number next to it, so every count that
is put into words goes through :func:`counted` rather than a bare f-string.
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the right number: ``counted(1, "topic")`` is "1 topic", 0 or 2 take the plural.

    ``plural`` is for nouns that do not just add an "s" (``counted(n, "chunk id")`` works as is).
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
