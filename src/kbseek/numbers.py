"""Whole numbers as a caller writes them: ASCII digits, an optional leading ``-``, at most
:data:`MAX_DIGITS` (decision 0048).

Python's ``int`` also reads ``+5``, ``1_0``, `` 5 `` and the digits of every script (``٥``,
``５``), and click's ``INT`` is that ``int``; every surface documents whole decimal numbers, so each
reads its numbers here and words the refusal its own way (the web API names the parameter, the
CLI leaves that to click).
"""

from __future__ import annotations

import re

from kbseek.errors import InvalidArgument
from kbseek.text.quoting import ECHO_CHARS, bounded_middle

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


def whole_number_argument(name: str, raw: str) -> int:
    """``raw``, the argument ``name`` as text, read by :func:`read_whole_number`; else an
    :class:`InvalidArgument` quoting it and saying how to write it (the web API's parameters and
    MCP arguments sent as strings alike)."""
    try:
        return read_whole_number(raw)
    except NotAWholeNumber as refused:
        if refused.digits is not None:
            raise InvalidArgument(
                f"{name} has {refused.digits} digits, more than the {MAX_DIGITS} read: pass a number in "
                "its range (one past it is moved to the nearest limit)"
            ) from None
        hint = f": write {name}={refused.meant}" if refused.meant is not None else ""
        raise InvalidArgument(
            f"{name} must be a whole number written in ASCII digits (0-9), not "
            f"{bounded_middle(raw, ECHO_CHARS)!r}{hint}"
        ) from None
