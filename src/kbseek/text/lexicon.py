"""The bilingual lexicon: Japanese terms to English ones and back, as the analyzer writes them.

A question in one language reaches a page written in the other through the dense leg alone unless
the keyword leg is given the other language's words. This module knows those words; which of them
a search may use (only those the index holds, a few per word, weighed below the query's own) is the
search's business (``search.bridge``).

The data is derived from JMdict (CC BY-SA; see ``lexicon.tsv.gz``'s header and
``scripts/build_lexicon.py``), keyed by the analyzer's terms, so a lookup needs no Sudachi pass.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from kbseek.text.language import is_japanese

__all__ = ["Lexicon", "Translation", "lexicon"]

MAX_KEY_TERMS = 4
"""The longest key, in terms: ``scripts/build_lexicon.py`` keeps no longer one."""


@dataclass(frozen=True)
class Translation:
    """The query's terms ``source`` (consecutive, as the analyzer wrote them) and what they may mean in
    the other language, most likely first; each candidate is a tuple of terms."""

    source: tuple[str, ...]
    candidates: tuple[tuple[str, ...], ...]


class Lexicon:
    """Lookups in both directions; a key is a space-joined run of terms."""

    def __init__(self, ja_en: dict[str, tuple[str, ...]], en_ja: dict[str, tuple[str, ...]]) -> None:
        self._tables = {True: ja_en, False: en_ja}

    @classmethod
    def parse(cls, text: str) -> Lexicon:
        ja_en: dict[str, tuple[str, ...]] = {}
        en_ja: dict[str, tuple[str, ...]] = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            direction, key, values = line.split("\t")
            (ja_en if direction == "ja" else en_ja)[key] = tuple(values.split("|"))
        return cls(ja_en, en_ja)

    def __len__(self) -> int:
        return sum(len(t) for t in self._tables.values())

    def translate(self, terms: Sequence[str]) -> list[Translation]:
        """The translations of ``terms`` (a query's analyzed terms, in order), longest keys first.

        Greedy longest match, left to right: ``副 作用`` is looked up as one key before 副 and 作用
        alone, which mean other things. Each run's direction comes from its first term's script.
        """
        out: list[Translation] = []
        i = 0
        while i < len(terms):
            table = self._tables[is_japanese(terms[i])]
            for n in range(min(MAX_KEY_TERMS, len(terms) - i), 0, -1):
                found = table.get(" ".join(terms[i : i + n]))
                if found is not None:
                    out.append(Translation(tuple(terms[i : i + n]), tuple(tuple(c.split()) for c in found)))
                    i += n
                    break
            else:
                i += 1
        return out


_loaded: Lexicon | None = None
_lock = threading.Lock()


def lexicon() -> Lexicon:
    """The shipped lexicon, read once per process (about 320 thousand keys)."""
    global _loaded
    with _lock:
        if _loaded is None:
            data = resources.files("kbseek.text").joinpath("lexicon.tsv.gz").read_bytes()
            _loaded = Lexicon.parse(gzip.decompress(data).decode("utf-8"))
        return _loaded
