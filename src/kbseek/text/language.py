"""Which of the knowledge base's two languages a text is written in: Japanese or not.

Why a search needs to know: the multilingual e5 model scores any passage in the
query's own language well above every passage in the other language, so its
similarities can only be compared within one language (docs/decisions/0013).
The universal sentence encoder has no such bias. The fusion therefore lets e5
speak only for chunks in the query's language.

The test is deliberately crude and cheap: the share of kana and kanji among all
characters. Japanese prose is dense in them (one character is about one English
word), while English text with a Japanese name in it, or a Japanese page that is
mostly a code block, stays on its own side of the line. No language model is
involved, so a mixed chunk is decided by what most of it is written in.
"""

from __future__ import annotations

import re

JAPANESE_SHARE = 0.1
"""A text whose characters are at least this share kana or kanji counts as Japanese.

Japanese prose runs at 0.5-0.9 and an English sentence holding a Japanese term at
0.02-0.05; a Japanese page's chunk that is mostly code sits between, and is
decided by its prose."""

# Hiragana, katakana (and their iteration and prolonged-sound marks), CJK ideographs.
_KANA_KANJI = re.compile(
    "[\u3005-\u3007\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
)


def is_japanese(text: str) -> bool:
    """Whether ``text`` is mostly Japanese (see :data:`JAPANESE_SHARE`); empty text is not."""
    if not text:
        return False
    return len(_KANA_KANJI.findall(text)) >= JAPANESE_SHARE * len(text)
