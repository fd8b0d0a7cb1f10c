"""Word equations (OMML) as the linear text a person would type: see :func:`math_text`.

Part of the Word reader (``word.py``), kept apart because OMML is a language of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .word_text import _M, _W, _on, visible


def math_text(element: Any) -> str:
    """An OMML equation (``m:oMath``, ``m:oMathPara``) as the linear text a person would type.

    The form follows Word's own linear format (UnicodeMath) where that reads plainly:

    - fractions ``a/b``, ``(a+b)/(2c)``; sub- and superscripts ``x_i``, ``x^2``, ``x_(i+1)``,
      ``x_i^2``; an operand longer than one number, one character or one bracketed group is put in
      parentheses;
    - radicals ``√2``, ``√(b^2-4ac)``, ``∛x``, ``√[n](x)``;
    - n-ary operators with their limits, then the operand: ``∑_(i=1)^n a_i``, ``∫_0^1 f(x)dx``;
    - delimiters as written, ``(x+1)``, ``|x|``, their separators kept: ``(a|b)``;
    - matrices and stacks as rows, cells split by ``, `` and rows by ``; ``: ``[a, b; c, d]``, or
      ``(a, b; c, d)`` inside delimiters; a fraction without a bar (a binomial) is a stack, ``(n; k)``;
    - functions ``sin x``, ``sin(x)``; limits below or above ``lim_(n→∞)``; accents and bars as
      combining marks ``x̂``; boxes, group characters and phantoms as their content.

    Lines of an equation array, and equations of one paragraph, are separate lines.
    """
    return visible(_math(element))


_ATOM = re.compile(r"[0-9]+(?:[.,][0-9]+)?|\S")
_OPEN, _CLOSE = "([{|⌊⌈⟨‖", ")]}|⌋⌉⟩‖"


def _group(text: str) -> str:
    """``text`` as one operand: bare when it is a number, one character or one bracketed group."""
    text = text.strip()
    if not text or _ATOM.fullmatch(text) or _enclosed(text):
        return text
    return f"({text})"


def _enclosed(text: str) -> bool:
    """Whether the bracket opening ``text`` is the one closing it."""
    if len(text) < 2 or text[0] not in "([{" or text[-1] != _CLOSE[_OPEN.index(text[0])]:
        return False
    level = 0
    for at, char in enumerate(text):
        if char in "([{":
            level += 1
        elif char in ")]}":
            level -= 1
            if level == 0 and at < len(text) - 1:
                return False
    return level == 0


def _children(element: Any) -> Iterator[Any]:
    """Math content children: property elements (``…Pr``) and non-elements left out."""
    for child in element:
        if isinstance(child.tag, str) and not child.tag.endswith("Pr"):
            yield child


def _arg(element: Any, name: str) -> str:
    child = element.find(_M + name)
    return "" if child is None else "".join(_math(c) for c in _children(child))


def _prop(element: Any, holder: str, name: str) -> Any | None:
    properties = element.find(_M + holder)
    return None if properties is None else properties.find(_M + name)


def _char(element: Any, holder: str, name: str, default: str) -> str:
    found = _prop(element, holder, name)
    return default if found is None else str(found.get(_M + "val", ""))


def _stack(element: Any) -> list[list[str]] | None:
    """The rows of a matrix or of a fraction without a bar, else ``None``."""
    if element.tag == _M + "m":
        rows = element.iterchildren(_M + "mr")
        return [[_arg_of(cell) for cell in row.iterchildren(_M + "e")] for row in rows]
    if element.tag == _M + "f" and _char(element, "fPr", "type", "bar") == "noBar":
        return [[_arg(element, "num")], [_arg(element, "den")]]
    return None


def _arg_of(element: Any) -> str:
    return "".join(_math(c) for c in _children(element))


def _rows_text(rows: list[list[str]]) -> str:
    return "; ".join(", ".join(cell.strip() for cell in row) for row in rows)


def _marked(base: str, mark: str) -> str:
    if not mark:
        return base
    return base + mark if len(base) == 1 else f"({base}){mark}"


def _math(element: Any) -> str:  # one branch per OMML construct
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    if tag == _M + "r":
        return "".join(c.text or "" for c in element if c.tag in (_M + "t", _W + "t"))
    if tag == _M + "oMathPara":
        return "\n".join(_math(c) for c in element if c.tag == _M + "oMath")
    if tag == _M + "f":
        if (rows := _stack(element)) is not None:
            return f"[{_rows_text(rows)}]"
        return f"{_group(_arg(element, 'num'))}/{_group(_arg(element, 'den'))}"
    if tag == _M + "m":
        return f"[{_rows_text(_stack(element) or [])}]"
    if tag == _M + "sSub":
        return f"{_arg(element, 'e')}_{_group(_arg(element, 'sub'))}"
    if tag == _M + "sSup":
        return f"{_arg(element, 'e')}^{_group(_arg(element, 'sup'))}"
    if tag == _M + "sSubSup":
        return f"{_arg(element, 'e')}_{_group(_arg(element, 'sub'))}^{_group(_arg(element, 'sup'))}"
    if tag == _M + "sPre":
        return f"_{_group(_arg(element, 'sub'))}^{_group(_arg(element, 'sup'))} {_arg(element, 'e')}"
    if tag == _M + "rad":
        degree = "" if _on(_prop(element, "radPr", "degHide"), False) else _arg(element, "deg").strip()
        base = _group(_arg(element, "e"))
        if not degree or degree == "2":
            return f"√{base}"
        if degree in ("3", "4"):
            return f"{'∛' if degree == '3' else '∜'}{base}"
        return f"√[{degree}]({_arg(element, 'e').strip()})"
    if tag == _M + "nary":
        operator = _char(element, "naryPr", "chr", "∫") or "∫"
        sub = "" if _on(_prop(element, "naryPr", "subHide"), False) else _arg(element, "sub").strip()
        sup = "" if _on(_prop(element, "naryPr", "supHide"), False) else _arg(element, "sup").strip()
        limits = (f"_{_group(sub)}" if sub else "") + (f"^{_group(sup)}" if sup else "")
        return f"{operator}{limits} {_arg(element, 'e').strip()}"
    if tag == _M + "d":
        begin = _char(element, "dPr", "begChr", "(")
        end = _char(element, "dPr", "endChr", ")")
        separator = _char(element, "dPr", "sepChr", "|")
        items = []
        for part in element.iterchildren(_M + "e"):
            content = list(_children(part))
            rows = _stack(content[0]) if len(content) == 1 else None
            items.append(_rows_text(rows) if rows is not None else _arg_of(part))
        return f"{begin}{separator.join(items)}{end}"
    if tag == _M + "eqArr":
        return "\n".join(_arg_of(row) for row in element.iterchildren(_M + "e"))
    if tag == _M + "func":
        name, argument = _arg(element, "fName").strip(), _arg(element, "e").strip()
        return f"{name}{'' if argument[:1] in _OPEN else ' '}{argument}"
    if tag == _M + "limLow":
        return f"{_arg(element, 'e')}_{_group(_arg(element, 'lim'))}"
    if tag == _M + "limUpp":
        return f"{_arg(element, 'e')}^{_group(_arg(element, 'lim'))}"
    if tag == _M + "acc":
        return _marked(_arg(element, "e"), _char(element, "accPr", "chr", "\u0302"))
    if tag == _M + "bar":
        top = _char(element, "barPr", "pos", "bot") == "top"
        return _marked(_arg(element, "e"), "\u0305" if top else "\u0332")
    if tag == _M + "phant":
        return _arg(element, "e") if _on(_prop(element, "phantPr", "show")) else ""
    if tag in (_W + "del", _W + "moveFrom"):
        return ""
    # m:oMath, m:box, m:borderBox, m:groupChr, an argument, or anything newer: its content in order
    return "".join(_math(c) for c in _children(element))
