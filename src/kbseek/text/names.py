"""The names a query mentions: the words that say *what* it is about.

Why a search needs them: a question about something the knowledge base never
mentions still gets hits, because every collection of engineering notes shares
the question's ordinary words ("configure", "deploy", "state"), and an
embedding rates such a hit as a fair match. Neither signal says "this is not
covered". A name does: when an engineer asks how to configure Tailwind, set up
Terraform or encrypt a partition with LUKS, and no chunk of the knowledge base
holds that word, the notes do not cover the question, however close the rest
of it sounds (docs/decisions/0020).

What counts as a name is decided from how the word is written, because that is
all a query carries, and only Latin-script words are judged:

- a capital after the first letter (``LUKS``, ``useEffect``, ``E2E``, ``2FA``),
  or letters mixed with digits (``k8s``, ``ipv6``): identifiers and acronyms;
  a number with a short lowercase unit is a quantity (``40mg``, ``100ms``);
- a capital first letter anywhere but at the start of a sentence (``Angular``,
  ``Postgres``): a proper noun in English;
- any Latin-script word inside a Japanese sentence (``Prisma``, ``Markdown``):
  Japanese writes tools and products in Latin letters and ordinary words in its
  own script.

Three or more all-capital words in a row are a shouted phrase or a pasted error
banner (``REMOTE HOST IDENTIFICATION HAS CHANGED``), not acronyms: none of them is
a name. ``I`` and single letters are never names. A Japanese proper noun written in
kana or kanji cannot be told from an ordinary word without a dictionary of
names, so it is not judged: the rule errs on the side of saying nothing.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from kbseek.text.analyzer import tokens
from kbseek.text.language import is_japanese

_SENTENCE_ENDS = frozenset(".?!:;。？！：\n")
_OPENERS = " \t\"'([「『（"
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"[0-9]")
_QUANTITY = re.compile(r"[0-9]+[a-z]{0,3}$")
"""A number with a short lowercase unit (``40mg``, ``100ms``, ``50s``): a quantity, not a name."""
_SHOUTED = re.compile(r"\b[A-Z]{2,}(?:[ \t]+[A-Z]{2,}){2,}\b")
"""Three or more all-capital words in a row: an error banner or a shouted phrase."""


@dataclass(frozen=True)
class Name:
    surface: str
    """The word as the query wrote it (``Tailwind``)."""
    term: str
    """Its search term (``tailwind``): what the index is asked about."""


def names(text: str) -> tuple[Name, ...]:
    """The names ``text`` mentions, each once (first spelling kept), in order of appearance."""
    japanese = is_japanese(text)
    shouted = [m.span() for m in _SHOUTED.finditer(text)]
    seen: set[str] = set()
    out: list[Name] = []
    for token in tokens(text):
        surface = text[token.start : token.end]
        if token.term in seen or not _is_name(surface, token.term, text[: token.start], japanese):
            continue
        if any(start <= token.start < end for start, end in shouted):
            continue
        seen.add(token.term)
        out.append(Name(surface, token.term))
    return tuple(out)


def _is_name(surface: str, term: str, before: str, japanese: bool) -> bool:
    word = unicodedata.normalize("NFKC", surface)  # full-width Ｔａｉｌｗｉｎｄ is the same name
    if not term.isascii() or len(word) < 2 or not word.isascii() or not _LETTER.search(word):
        return False
    if _QUANTITY.match(word):
        return False
    if japanese or _DIGIT.search(word) or any(c.isupper() for c in word[1:]):
        return True
    return word[0].isupper() and not _starts_sentence(before)


def _starts_sentence(before: str) -> bool:
    """Whether a word after ``before`` opens a sentence, where English capitalises any word."""
    rest = before.rstrip(_OPENERS)
    return not rest or rest[-1] in _SENTENCE_ENDS
