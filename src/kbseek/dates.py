"""Dates: the one date each document is filed under, and the dates a person writes in a filter.

A document's date is a calendar day (``YYYY-MM-DD``), because that is what people write in front
matter and what they ask about ("last month", "since March"); a time of day would make ``before:
2026-03-01`` miss a note written that afternoon. It comes from the first of the configured
front-matter fields (``[index].date_fields``) that holds a date, the converters' document properties
being front matter of the served text; failing those, from the file's modification time, so that
every document has one and a date filter never silently drops the undated. The document says which
source it used, because "written 2019" and "touched 2026" answer different questions.

Days are local to the machine that indexed the file and to the one that reads a filter: "7d" and a
file saved at 08:00 in Tokyo count in the same calendar as the people who wrote them.
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

from kbseek.errors import InvalidArgument

DATE_FIELDS: tuple[str, ...] = ("date", "updated", "modified", "created")
"""Front-matter fields read for a document's date, first present first. ``date`` leads because it is
what an author sets on purpose; ``modified``/``created`` are also what the Office converters write."""

MTIME_SOURCE = "mtime"
"""The source of a date read from the file's modification time."""

BOUND_FORMS = (
    "a date YYYY-MM-DD (e.g. 2026-03-01), an ISO 8601 datetime (its day counts), today, yesterday, "
    "or an age such as 7d, 2w, 3m or 1y (days, weeks, months, years before today)"
)
"""What ``after``/``before`` accept, said in every refusal of one."""

_DAY_FORM = r"\s*({d}{{4}})[-/.]({d}{{1,2}})[-/.]({d}{{1,2}})(?=$|[T\s]|[+-]{d}|Z)"
_LEADING_DAY = re.compile(_DAY_FORM.format(d=r"\d"))
"""A day at the start of a front-matter value, in the decimal digits of any script (see :func:`day_of`)."""
_BOUND_DAY = re.compile(_DAY_FORM.format(d="[0-9]"))
"""A day at the start of a filter's bound: ASCII digits only, as the documented ``YYYY-MM-DD`` says."""
_AGE = re.compile(r"([0-9]{1,5})\s*(d|days?|w|weeks?|m|mo|months?|y|years?)(?:\s+ago)?", re.IGNORECASE)


class DocumentDate(NamedTuple):
    """A document's day and where it came from: ``frontmatter:<field>``, ``properties:<field>`` or ``mtime``."""

    day: str
    source: str


def day_of(value: object) -> str | None:
    """The calendar day a front-matter value names, or ``None`` when it names none.

    YAML already turned an unquoted ``2026-03-01`` into an ISO string; a quoted one, a datetime with
    an offset (its day as written, not converted) and ``2026/03/01`` are read the same way.

    Front matter is read leniently: its digits may be those of any script (``２０２６-０３-０１``,
    typed with a Japanese input method, is 2026-03-01). The notes are other people's files, written
    by hand; a date their author plainly meant would otherwise be dropped for the file's
    modification time. The day is stored in ASCII digits either way. What a person types into a
    filter is read strictly instead (:func:`parse_bound`): a request is answered at once, and a
    refusal saying how to write it costs less than a reading that guessed.
    """
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if not isinstance(value, str):
        return None
    m = _LEADING_DAY.match(value)
    if m is None:
        return None
    try:
        return date(int(m[1]), int(m[2]), int(m[3])).isoformat()
    except ValueError:
        return None


def mtime_day(mtime_ns: int) -> str:
    """The local calendar day of a modification time."""
    try:
        return datetime.fromtimestamp(mtime_ns / 1e9).date().isoformat()
    except (OverflowError, OSError, ValueError):  # a timestamp the platform cannot place
        return "1970-01-01"


def document_date(
    frontmatter: Mapping[str, Any], mtime_ns: int, *, fields: Sequence[str] = DATE_FIELDS,
    origin: str = "frontmatter",
) -> DocumentDate:  # fmt: skip
    """The document's date: the first of ``fields`` (compared ignoring ASCII case) holding a date,
    else the file's modification time. ``origin`` names where the fields came from (``properties``
    for a file whose converter wrote them from its document properties)."""
    folded = {str(k).lower(): v for k, v in frontmatter.items()}
    for name in fields:
        day = day_of(folded.get(name.lower()))
        if day is not None:
            return DocumentDate(day, f"{origin}:{name.lower()}")
    return DocumentDate(mtime_day(mtime_ns), MTIME_SOURCE)


def parse_bound(name: str, value: object, *, today: date | None = None) -> str | None:
    """A filter's ``after``/``before`` as a day, or ``None`` when omitted; anything else unreadable
    is an :class:`InvalidArgument` that quotes it and lists what is accepted.

    Digits are ASCII only (``0-9``), as the forms are documented: ``２０２６-０３-０１`` or ``٧d`` is
    refused with a message saying to write the digits in ASCII, unlike a front-matter date
    (:func:`day_of`), which is read from a file nobody can be asked to rewrite."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    if not text:
        return None
    today = today or date.today()
    lowered = text.lower()
    if lowered == "today":
        return today.isoformat()
    if lowered == "yesterday":
        return (today - timedelta(days=1)).isoformat()
    if (m := _AGE.fullmatch(text)) is not None:
        return _before(today, int(m[1]), m[2][0].lower()).isoformat()
    day = day_of(text) if _BOUND_DAY.match(text) else None
    if day is None or not _iso_enough(text):
        shown = text if len(text) <= 60 else text[:57] + "..."
        if (ascii_form := _ascii_digits(text)) != text:
            try:
                parse_bound(name, ascii_form, today=today)
                fix = f"write {name}={ascii_form if len(ascii_form) <= 60 else ascii_form[:57] + '...'}"
            except InvalidArgument:
                fix = f"expected {BOUND_FORMS}"
            raise InvalidArgument(f"{name}={shown!r} is not a date: its digits must be ASCII (0-9); {fix}")
        raise InvalidArgument(f"{name}={shown!r} is not a date: expected {BOUND_FORMS}")
    return day


def _ascii_digits(text: str) -> str:
    """``text`` with the decimal digits of every script written as ASCII ones (``２０`` is ``20``)."""
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in text)


def _iso_enough(text: str) -> bool:
    """Whether text after a leading day is a time ISO 8601 allows (so ``2026-03-01 junk`` is refused)."""
    rest = _BOUND_DAY.sub("", text, count=1).strip()
    if not rest:
        return True
    try:
        datetime.fromisoformat(text.strip().replace("/", "-").replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _before(today: date, count: int, unit: str) -> date:
    if unit == "d":
        return today - timedelta(days=count)
    if unit == "w":
        return today - timedelta(weeks=count)
    months = count * (12 if unit == "y" else 1)
    year, month = divmod(today.year * 12 + today.month - 1 - months, 12)
    if year < 1:
        return date(1, 1, 1)
    month += 1
    return date(year, month, min(today.day, calendar.monthrange(year, month)[1]))
