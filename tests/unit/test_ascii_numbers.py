"""Properties of the number and date readers every surface uses: ASCII digits are read back exactly,
and a digit of any other script is refused, never read as the number it stands for.

Python's ``int`` and a regex's ``\\d`` accept the decimal digits of every script (Unicode category
Nd: ``٥``, ``５``, ``५`` …). The readers here are the web API's and MCP's
(``numbers.whole_number_argument``), the command line's (``ascii_whole``, the click types) and the
filters' dates (``parse_bound``); front-matter dates (``day_of``) stay lenient on purpose, which is
pinned here too.
"""

from __future__ import annotations

import unicodedata
from datetime import date, timedelta

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbseek.cli.options import WHOLE_NUMBER, WholeNumberRange, ascii_whole
from kbseek.dates import day_of, parse_bound
from kbseek.errors import InvalidArgument
from kbseek.numbers import whole_number_argument as whole_number

TODAY = date(2026, 3, 31)
BOUND = 10**100 - 1
"""The largest number of the 100 digits the readers take."""

non_ascii_digits = st.characters(categories=["Nd"]).filter(lambda c: not c.isascii())
"""A decimal digit of any script but ASCII."""
ascii_numbers = st.integers(min_value=-BOUND, max_value=BOUND)


def in_script(text: str, digit: str) -> str:
    """``text`` with each ASCII digit written in ``digit``'s script (its ten digits are consecutive)."""
    zero = ord(digit) - unicodedata.decimal(digit)
    return "".join(chr(zero + int(c)) if c in "0123456789" else c for c in text)


@st.composite
def with_a_foreign_digit(draw: st.DrawFn, numbers: st.SearchStrategy[str]) -> str:
    """One of ``numbers`` with at least one of its ASCII digits written in another script."""
    text = draw(numbers)
    places = [i for i, c in enumerate(text) if c in "0123456789"]
    chosen = draw(st.sets(st.sampled_from(places), min_size=1))
    foreign = in_script(text, draw(non_ascii_digits))
    return "".join(foreign[i] if i in chosen else c for i, c in enumerate(text))


# -- whole numbers -------------------------------------------------------------------------------


@given(ascii_numbers)
def test_ascii_numbers_read_back_as_themselves(n: int) -> None:
    assert whole_number("limit", str(n)) == n
    assert ascii_whole(str(n)) == n
    assert WHOLE_NUMBER.convert(str(n), None, None) == n


@given(with_a_foreign_digit(ascii_numbers.map(str)))
def test_a_number_with_any_non_ascii_digit_is_refused(text: str) -> None:
    with pytest.raises(
        InvalidArgument, match=r"^limit must be a whole number written in ASCII digits \(0-9\)"
    ):
        whole_number("limit", text)
    refusal = ascii_whole(text)
    assert isinstance(refusal, str) and "is not a whole number written in ASCII digits (0-9)" in refusal
    with pytest.raises(click.BadParameter, match=r"ASCII digits \(0-9\)"):
        WHOLE_NUMBER.convert(text, None, None)
    with pytest.raises(click.BadParameter, match=r"ASCII digits \(0-9\)"):
        WholeNumberRange(min=-BOUND).convert(text, None, None)


@given(
    st.integers(min_value=0, max_value=BOUND), st.sampled_from(["+{}", "{} ", " {}", "{}.0", "0x{}", "--{}"])
)
def test_what_int_reads_beyond_the_documented_form_is_refused(n: int, form: str) -> None:
    text = form.format(n)
    with pytest.raises(InvalidArgument, match="ASCII digits"):
        whole_number("limit", text)
    assert isinstance(ascii_whole(text), str)


@given(st.text(min_size=1))
def test_any_text_is_read_exactly_when_it_is_an_ascii_whole_number(text: str) -> None:
    plain = text.removeprefix("-")
    expected = int(text) if plain and len(plain) <= 100 and all(c in "0123456789" for c in plain) else None
    try:
        read: int | None = whole_number("n", text)
    except InvalidArgument:
        read = None
    assert read == expected
    cli = ascii_whole(text)
    assert (cli if isinstance(cli, int) else None) == expected


def test_a_number_past_100_digits_is_refused_saying_so() -> None:
    with pytest.raises(InvalidArgument, match=r"^limit has 101 digits, more than the 100 read"):
        whole_number("limit", "1" + "0" * 100)
    assert (
        ascii_whole("-" + "9" * 101) == "the number has 101 digits, more than the 100 read: pass one in range"
    )


# -- dates ---------------------------------------------------------------------------------------------

days = st.dates(min_value=date(1000, 1, 1), max_value=date(9999, 12, 31))
ages = st.builds(
    "{}{}".format,
    st.integers(min_value=0, max_value=99_999),
    st.sampled_from(["d", "w", "m", "y", " days ago"]),
)


@given(days)
def test_an_ascii_day_reads_back_as_itself(day: date) -> None:
    assert parse_bound("after", day.isoformat(), today=TODAY) == day.isoformat()
    assert parse_bound("before", f"{day.isoformat()}T12:30:00+09:00", today=TODAY) == day.isoformat()


@given(ages)
def test_an_ascii_age_is_read(age: str) -> None:
    assert parse_bound("after", age, today=TODAY) is not None


@given(with_a_foreign_digit(days.map(date.isoformat) | ages))
def test_a_bound_with_any_non_ascii_digit_is_refused_saying_to_write_it_in_ascii(text: str) -> None:
    with pytest.raises(
        InvalidArgument, match=r"is not a date: its digits must be ASCII \(0-9\); write after="
    ):
        parse_bound("after", text, today=TODAY)


@given(days, non_ascii_digits)
def test_a_front_matter_day_in_any_script_is_that_day(day: date, digit: str) -> None:
    """The lenient side, on purpose: front matter is other people's files (``day_of``'s docstring)."""
    assert day_of(in_script(day.isoformat(), digit)) == day.isoformat()


def test_an_age_counts_back_from_today() -> None:
    assert parse_bound("after", "7d", today=TODAY) == (TODAY - timedelta(days=7)).isoformat()
