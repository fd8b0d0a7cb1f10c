"""Whole numbers as a caller writes them: ASCII digits, an optional leading ``-``, at most
:data:`MAX_DIGITS` (decision 0048).

Python's ``int`` also reads ``+5``, ``1_0``, `` 5 `` and the digits of every script (``٥``,
``５``), and click's ``INT`` is that ``int``; every surface documents whole decimal numbers, so each
reads its numbers here and words the refusal its own way (the web API names the parameter, the
CLI leaves that to click).
"""

from __future__ import annotations

import re

MAX_DIGITS = 100
"""The most digits a number may have: a number past its range is moved to the nearest limit
(with a note), so a longer one says nothing more; it would only be echoed back."""

_WHOLE = re.compile(r"-?[0-9]+")


class NotAWholeNumber(ValueError):
    """``raw`` is not a whole number as documented. ``meant`` is the number Python's lenient
    ``int`` reads in it (to suggest), ``digits`` how many it has when it is one but too long."""

    def __init__(self, raw: str, *, meant: int | None = None, digits: int | None = None) -> None:
        super().__init__(raw)
        self.raw, self.meant, self.digits = raw, meant, digits


def read_whole_number(raw: str) -> int:
    """``raw`` as a whole number in ASCII digits, or :class:`NotAWholeNumber`."""
    if _WHOLE.fullmatch(raw) is None:
        raise NotAWholeNumber(raw, meant=_meant(raw))
    digits = len(raw.lstrip("-"))
    if digits > MAX_DIGITS:
        raise NotAWholeNumber(raw, digits=digits)
    return int(raw)


def _meant(raw: str) -> int | None:
    if len(raw) > 2 * MAX_DIGITS:
        return None
    try:
        return int(raw)
    except ValueError:
        return None
