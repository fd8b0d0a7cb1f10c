"""ASCII letters in lower case, every other character as it is: how kbseek compares paths, tags,
front-matter names and host names.

SQLite's ``lower()`` and ``LIKE`` fold ASCII letters only, and both stores must keep the same
documents (the PostgreSQL store's SQL ``translate`` folds the same letters); host names are
case-insensitive in ASCII. ``str.lower`` would fold every script, so it is never used for these.
A comparison rule, not text processing: the stores use it too, and they hold no analysis of their
own (``kbseek.text`` is the analyzer's, which no store imports).
"""

from __future__ import annotations

import string

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_lower(text: str) -> str:
    """``text`` with ``A``–``Z`` as ``a``–``z`` and nothing else changed."""
    return text.translate(_ASCII_LOWER)
