"""Numbers as a spreadsheet cell (or a chart) shows them: the common Excel number formats.

General shows at most 15 significant digits; fixed decimals, ``#``/``?`` placeholders, zero padding,
thousands separators, scaling by a trailing comma, percentages, scientific notation, quoted
literals, currency and the negative and zero sections are applied; anything else falls back to
General, so a value is never lost. Rounding is half away from zero, as Excel's. Shared by the
Excel reader (``excel.py``) and the PowerPoint reader's charts (``powerpoint.py``).
"""

from __future__ import annotations

import dataclasses
import decimal
import functools
import math
import re

_TOKEN = re.compile(r'"[^"]*"|\\.|[_*].|\[[^\]]*\]|[Ee][+-]|.', re.S)
_DATE_CODE = re.compile(r"[yYdDhHsSmMgGbB@/]")
_LITERALS = re.compile(r'"[^"]*"|\\.|\[[^\]]*\]')


@dataclasses.dataclass
class _Pattern:
    """One section of a number format: literal text around a numeric part."""

    prefix: str = ""
    suffix: str = ""
    integer: str = ""  # placeholders before the point
    decimals: str = ""  # placeholders after it
    grouped: bool = False
    scale: int = 0  # powers of ten: +2 per %, -3 per trailing comma
    exponent: str | None = None  # "+00" for E+00
    numeric: bool = False  # a section of text alone shows only that text ("zero")


def _pattern(section: str) -> _Pattern | None:
    """A section parsed, or ``None`` when it holds codes not applied here (dates, fractions, conditions)."""
    pattern, state, point, commas = _Pattern(), "before", False, 0  # state: then "number", then "after"
    tokens = _TOKEN.findall(section)
    i = 0
    while i < len(tokens):
        token, i = tokens[i], i + 1
        literal = token
        if token[0] == '"' or token[0] == "\\":
            literal = token[1:-1] if token[0] == '"' else token[1:]
        elif token[0] in "_*" and len(token) == 2:
            continue  # padding and fill: no text
        elif token[0] == "[" and token[-1] == "]":
            if token[1:2] != "$":  # a colour goes; a condition or elapsed time is not applied here
                if token[1:2] in ("<", ">", "=") or not token[1:-1].lower().strip("hms"):
                    return None
                continue
            literal = token[2:-1].split("-", 1)[0]  # [$€-407]: a currency symbol and a locale
        elif token in ("0", "#", "?") or (token == "." and state != "after"):
            if state == "after" or (token == "." and point):
                return None  # digits in two places: a phone number, a fraction
            state, point = "number", point or token == "."
            if token != "." and point:
                pattern.decimals += token
            elif token != ".":
                pattern.grouped, pattern.integer = pattern.grouped or commas > 0, pattern.integer + token
            commas = 0
            continue
        elif token == "," and state == "number":
            commas += 1
            continue
        elif token[0] in "Ee" and len(token) == 2 and state == "number":
            digits = 0
            while i < len(tokens) and tokens[i] in ("0", "#", "?"):
                digits, i = digits + 1, i + 1
            if not digits:
                return None
            pattern.exponent, state = token[1] + "0" * digits, "after"
            continue
        elif _DATE_CODE.fullmatch(token):
            return None
        elif token == "%":
            pattern.scale += 2
        state = "after" if state == "number" else state
        if state == "after":
            pattern.suffix += literal
        else:
            pattern.prefix += literal
    pattern.scale -= 3 * commas  # "#,##0," shows thousands
    pattern.numeric = state != "before"
    return pattern if pattern.numeric or pattern.prefix.strip() else None


def _sections(code: str) -> list[str]:
    """A number format's sections, split at each ``;`` that is not quoted, escaped or bracketed."""
    parts = [""]
    for token in _TOKEN.findall(code):
        if token == ";":
            parts.append("")
        else:
            parts[-1] += token
    return parts


def general(value: float) -> str:
    """A number as Excel's General format shows it: at most 15 significant digits, no trailing zeros."""
    if (isinstance(value, int) and abs(value) < 10**15) or not math.isfinite(value):
        return str(value)
    mantissa, e, exponent = f"{value:.15g}".upper().partition("E")
    if e:
        return f"{mantissa}E{exponent[0]}{int(exponent[1:]):02d}"
    return "0" if mantissa == "-0" else mantissa


_DECIMAL = decimal.Context(prec=400, rounding=decimal.ROUND_HALF_UP, Emax=999, Emin=-999)
"""Room for any double with its decimals; ties round away from zero, as Excel rounds what it shows."""


def _render(value: float, pattern: _Pattern) -> str:
    number = decimal.Decimal(f"{value:.15g}").scaleb(pattern.scale, _DECIMAL)
    step = decimal.Decimal(1).scaleb(-len(pattern.decimals))
    if pattern.exponent is not None:
        digits = max(1, pattern.integer.count("0"))
        exponent = 0 if number == 0 else number.adjusted() - (digits - 1)
        mantissa = number.scaleb(-exponent, _DECIMAL).quantize(step, context=_DECIMAL)
        if mantissa != 0 and mantissa.adjusted() >= digits:  # 9.99 rounded up to 10.0
            exponent += 1
            mantissa = number.scaleb(-exponent, _DECIMAL).quantize(step, context=_DECIMAL)
        sign = "-" if exponent < 0 else ("+" if pattern.exponent[0] == "+" else "")
        return f"{mantissa:f}E{sign}{abs(exponent):0{len(pattern.exponent) - 1}d}"
    whole, _, fraction = f"{number.quantize(step, context=_DECIMAL):f}".partition(".")
    whole = whole.zfill(pattern.integer.count("0"))  # "00000" shows 7 as 00007
    if whole == "0" and "0" not in pattern.integer:
        whole = ""  # "#.00" shows 0.5 as .50
    if pattern.grouped:
        head = len(whole) % 3 or 3
        whole = ",".join([whole[:head], *(whole[i : i + 3] for i in range(head, len(whole), 3))])
    keep = len(pattern.decimals.rstrip("#?"))
    fraction = fraction[:keep] + fraction[keep:].rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


class NumberFormat:
    """A cell's number format, applied to a number (a date has been decoded by openpyxl already)."""

    def __init__(self, code: str) -> None:
        codes = _LITERALS.sub("", code)
        self.shows_time = bool(re.search(r"[hHsS]|AM/PM|A/P", codes, re.I))
        self.shows_date = bool(re.search(r"[yYdD]", codes))
        general_code = code.strip().lower() in ("general", "@", "")
        self.sections = None if general_code else [_pattern(s) for s in _sections(code)[:3]]

    def __call__(self, value: float) -> str:
        sections = self.sections
        if sections is None or not math.isfinite(value):
            return general(value)
        index, sign, shown = 0, "", abs(value)
        if value < 0 and len(sections) >= 2:
            index = 1
        elif value == 0 and len(sections) >= 3:
            index = 2
        elif value < 0:
            sign = "-"
        pattern = sections[index]
        if pattern is None:
            return general(value)
        number = _render(shown, pattern) if pattern.numeric else ""
        if sign and not number.strip("0.,"):
            sign = ""  # -0.001 shown as 0.00, not -0.00
        return f"{sign}{pattern.prefix}{number}{pattern.suffix}"


number_format = functools.lru_cache(maxsize=256)(NumberFormat)
"""A format's code parsed once (a workbook or a chart names a few formats many times)."""


def format_number(value: float, code: str) -> str:
    """``value`` as a cell with number format ``code`` shows it (General for codes not applied)."""
    return number_format(code)(value)
