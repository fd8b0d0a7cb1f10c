"""What the Word reader's parts share: the OOXML namespaces, on/off properties, and visible text.

The child imports nothing from kbseek, so the zero-width rule of ``converted.readable`` is repeated
in :func:`visible`.
"""

from __future__ import annotations

import re
from typing import Any

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"

_VAL = _W + "val"
_INVISIBLE = re.compile("[\u200b\u2060\ufeff]")
_LETTER = "[^\\x00-\\x7f\\s\u200b-\u200d\u2060\ufeff]"
_JOINER = re.compile(f"(?<!{_LETTER})[\u200c\u200d]|[\u200c\u200d](?!{_LETTER})")


def _on(element: Any, default: bool = True) -> bool:
    """An OOXML on/off property: absent is ``default``; present without a value is on."""
    if element is None:
        return default
    value = element.get(_VAL, element.get(_M + "val", "1"))
    return str(value).lower() not in ("0", "off", "false")


def visible(text: str) -> str:
    """``text`` without zero-width characters that are debris, the rule ``converted.readable`` follows.

    U+200B, U+2060 and U+FEFF go everywhere; U+200C and U+200D too, unless both neighbours are
    non-ASCII characters, where they carry meaning (an emoji sequence, Persian, an Indic conjunct).
    Repeated here because the child imports nothing from kbseek.
    """
    return _JOINER.sub("", _INVISIBLE.sub("", text))
