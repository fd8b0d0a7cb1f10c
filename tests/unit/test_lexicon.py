"""The shipped bilingual lexicon (``text.lexicon``) and the bridge's pure parts.

The lexicon is keyed by the analyzer's terms, so a change to the analyzer (its Sudachi dictionary,
split mode or stemmer) silently breaks every lookup: the sample check here fails first, and
``scripts/build_lexicon.py`` is the fix.
"""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from kbseek.text.analyzer import terms
from kbseek.text.lexicon import MAX_KEY_TERMS, Lexicon, lexicon


def _candidates(query: str) -> dict[str, list[tuple[str, ...]]]:
    return {" ".join(t.source): list(t.candidates) for t in lexicon().translate(terms(query))}


def test_loanwords_and_plain_words_translate_both_ways() -> None:
    assert ("コンポーネント",) in _candidates("component")["component"]
    assert ("component",) in _candidates("コンポーネント")["コンポーネント"]
    assert ("error",) in _candidates("エラー")["エラー"]
    assert ("エラー",) in _candidates("error")["error"]


def test_a_word_the_analyzer_splits_is_looked_up_whole_before_its_parts() -> None:
    found = _candidates("副作用を避ける")
    assert "副 作用" in found  # 副作用 is cut into 副 + 作用 by the analyzer; the key is the run
    assert tuple(terms("side effect")) in found["副 作用"]
    english = _candidates("avoid side effects")
    assert " ".join(terms("side effect")) in english
    assert ("副", "作用") in english[" ".join(terms("side effect"))]


def test_japanese_keys_are_the_analyzers_terms() -> None:
    """Re-analysing a sample of the Japanese keys gives the keys back: the file and the analyzer agree."""
    keys = sorted(k for k in lexicon().keys(japanese=True) if len(k.split()) <= MAX_KEY_TERMS)
    sample = random.Random(7).sample(keys, 400)
    agree = sum(terms("".join(k.split())) == k.split() for k in sample)
    assert agree >= 0.9 * len(sample), f"only {agree} of {len(sample)}: rebuild with scripts/build_lexicon.py"


def test_english_keys_are_the_analyzers_terms() -> None:
    for word in ("rendering", "components", "errors", "increases", "sharing"):
        assert lexicon().lookup(" ".join(terms(word)), japanese=False) is not None, word


def test_parse_reads_both_directions_and_skips_comments() -> None:
    lex = Lexicon.parse("# header\nja\t猫\tcat|kitti\nen\tcat\t猫|ネコ\n")
    assert [t.candidates for t in lex.translate(["猫"])] == [(("cat",), ("kitti",))]
    assert [t.candidates for t in lex.translate(["cat"])] == [(("猫",), ("ネコ",))]
    assert len(lex) == 2


@given(st.lists(st.sampled_from(["副", "作用", "猫", "cat", "the", "x", "sid", "effect"]), max_size=12))
def test_translations_cover_distinct_consecutive_runs_in_order(words: list[str]) -> None:
    lex = Lexicon.parse("ja\t副 作用\tsid effect\nja\t猫\tcat\nen\tcat\t猫\nen\tsid effect\t副 作用\n")
    found = lex.translate(words)
    position = 0
    for t in found:  # each source is a run of the input, after the previous one
        n = len(t.source)
        while tuple(words[position : position + n]) != t.source:
            position += 1
            assert position + n <= len(words)
        position += n
