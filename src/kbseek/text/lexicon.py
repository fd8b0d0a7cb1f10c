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
    """Lookups in both directions; a key is a space-joined run of terms.

    Each direction is held as one string of ``key\\ttranslations`` lines sorted by key, and a
    lookup is a binary search over its line starts. A dict of 300 thousand keys held 78 MB (110 MB
    with a tuple per translation) in a server that reads a handful per search; the sorted text
    holds about a third of that and is ready as soon as it is decoded.
    """

    def __init__(self, ja_en: str, en_ja: str) -> None:
        self._tables = {True: ja_en, False: en_ja}

    @classmethod
    def parse(cls, text: str) -> Lexicon:
        """Read the file's lines (``direction\\tkey\\ttranslations``) in any order."""
        rows: dict[str, list[str]] = {"ja": [], "en": []}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            direction, rest = line.split("\t", 1)
            rows[direction].append(rest)
        ja_en, en_ja = ("".join(f"{row}\n" for row in sorted(rows[d])) for d in ("ja", "en"))
        return cls(ja_en, en_ja)

    def __len__(self) -> int:
        return sum(table.count("\n") for table in self._tables.values())

    def keys(self, japanese: bool) -> list[str]:
        """Every key of one direction (for tests and tools: a search never lists them)."""
        return [line.split("\t", 1)[0] for line in self._tables[japanese].splitlines()]

    def lookup(self, key: str, *, japanese: bool) -> str | None:
        """The translations of ``key`` as stored (``a|b c``), or ``None``."""
        table = self._tables[japanese]
        lo, hi = 0, len(table)
        while lo < hi:
            mid = (lo + hi) // 2
            start = table.rfind("\n", 0, mid) + 1
            tab = table.find("\t", start)
            end = table.find("\n", tab)
            found = table[start:tab]
            if found == key:
                return table[tab + 1 : end]
            if found < key:
                lo = end + 1
            else:
                hi = start
        return None

    def translate(self, terms: Sequence[str]) -> list[Translation]:
        """The translations of ``terms`` (a query's analyzed terms, in order), longest keys first.

        Greedy longest match, left to right: ``副 作用`` is looked up as one key before 副 and 作用
        alone, which mean other things. Each run's direction comes from its first term's script.
        """
        out: list[Translation] = []
        i = 0
        while i < len(terms):
            japanese = is_japanese(terms[i])
            for n in range(min(MAX_KEY_TERMS, len(terms) - i), 0, -1):
                found = self.lookup(" ".join(terms[i : i + n]), japanese=japanese)
                if found is not None:
                    candidates = tuple(tuple(c.split()) for c in found.split("|"))
                    out.append(Translation(tuple(terms[i : i + n]), candidates))
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
