"""The bilingual bridge: the other language's words for a query, for the keyword leg.

A question asked in English about a page written only in Japanese shares no term with it, so the
keyword leg ranks nothing useful and the dense leg carries the question alone. The bridge looks the
query's words up in the shipped lexicon (``text.lexicon``) and keeps, for each word, the first few
translations that the index holds: a sense the knowledge base never uses (株 for "share" in a
framework's docs) is never searched for, so ambiguity is settled by the collection itself. The kept
words are ranked as a keyword search of their own, and its scores are added to the query's own
ranking at a lower weight (``fusion.add_bridge``, docs/decisions/0027).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from kbseek.search.lexical import term_weight
from kbseek.store.base import KeywordIndex, Store
from kbseek.text.analyzer import terms as analyze
from kbseek.text.language import is_japanese
from kbseek.text.lexicon import lexicon
from kbseek.text.names import names
from kbseek.text.stopwords import stop_terms

__all__ = ["Bridge", "bridge_coverage", "bridge_query"]

PER_WORD = 2
"""Translations kept per query word: the likeliest ones the index holds."""

MAX_TERMS = 24
"""At most this many bridged terms per query; a long query's tail adds little and costs a wider OR."""


@dataclass(frozen=True)
class Bridge:
    """The other language's terms for a query, grouped by the query word they translate."""

    groups: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]
    """(the query's word, its kept translations, each a tuple of terms)."""
    frequencies: Mapping[str, int] = field(default_factory=dict)
    """How many chunks hold each kept term, as the store said when the bridge was made: the
    coverage reads them again instead of asking the store twice in one search."""

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for _, kept in self.groups for c in kept for t in c))


def _worth_translating(source: Sequence[str], named: Collection[str]) -> bool:
    """Not a function word (an English stop word, or a Japanese word written in hiragana alone:
    どう, ある, こと translate into "thank", "possibly"), not a lone kanji (中 is "inside" and
    "among" and a part of countless words), and not a name (``text.names``): React is a library,
    not 反応, and Vite has no translation."""
    if all(t in stop_terms() for t in source) or any(t in named for t in source):
        return False
    text = "".join(source)
    if is_japanese(text):
        return len(text) > 1 and not all("\u3041" <= ch <= "\u309f" for ch in text)
    return True


def _worth_adding(candidate: tuple[str, ...]) -> bool:
    """Not a lone character (中 for "through", 列 for "file", 一 for "one") nor a number: a one-kanji
    translation is usually a sense of a longer word, and matches everywhere."""
    text = "".join(candidate)
    return len(text) > 1 and not text.isdigit()


def bridge_query(
    store: KeywordIndex, query: str, *, per_word: int = PER_WORD, max_terms: int = MAX_TERMS
) -> Bridge:
    """The bridge for ``query`` over what ``store`` holds; empty when nothing translates into it."""
    own = analyze(query)
    named = {n.term for n in names(query)}
    translations = list(
        {t.source: t for t in lexicon().translate(own) if _worth_translating(t.source, named)}.values()
    )  # a word the query repeats is translated once
    if not translations:
        return Bridge(())
    stops = stop_terms()
    own_set = set(own)

    def content(candidate: tuple[str, ...]) -> tuple[str, ...]:
        words = tuple(t for t in candidate if t not in stops)
        return words if _worth_adding(words) else ()

    wanted = {t for tr in translations for c in tr.candidates for t in content(c)} - own_set
    held = store.document_frequencies(sorted(wanted)) if wanted else {}
    groups: list[tuple[str, tuple[tuple[str, ...], ...]]] = []
    used = 0
    for tr in translations:
        kept: list[tuple[str, ...]] = []
        for candidate in tr.candidates:
            words = content(candidate)
            if words and all(t in held for t in words) and not set(words) <= own_set:
                kept.append(words)
                if len(kept) == per_word:
                    break
        size = len({t for c in kept for t in c})
        if kept and used + size <= max_terms:
            groups.append((" ".join(tr.source), tuple(kept)))
            used += size
    kept_terms = {t for _, kept in groups for c in kept for t in c}
    return Bridge(tuple(groups), {t: n for t, n in held.items() if t in kept_terms})


def bridge_coverage(store: Store, bridge: Bridge, rowids: Sequence[int]) -> dict[int, float]:
    """For each chunk, the share of the bridged query words it holds a translation of (0 to 1), each
    word weighed by the rarity of its translation's terms.

    The lexical leg's own coverage counts terms, but two translations of one word are alternatives:
    a page holds 避ける or 防ぐ, rarely both, and must not be judged half-matched for that.
    """
    if not rowids or not bridge.groups:
        return {}
    _, total = store.counts()
    df = bridge.frequencies
    weights = [max(term_weight(total, df.get(t, 0)) for c in kept for t in c) for _, kept in bridge.groups]
    weight = sum(weights)
    if weight <= 0:
        return {}
    matched = store.rows_matching_each_term(list(bridge.terms), rowids)
    out: dict[int, float] = {}
    for rowid, held in matched.items():
        got = sum(
            w
            for w, (_, kept) in zip(weights, bridge.groups, strict=True)
            if any(set(c) <= held for c in kept)
        )
        out[rowid] = got / weight
    return out
