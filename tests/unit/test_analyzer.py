"""The analyzer: one set of terms for indexing and querying, English and Japanese."""

from __future__ import annotations

import sqlite3
import threading
import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.text.analyzer import Token, index_text, normalize, terms, tokens

# Characters that exercise every path: ASCII, Japanese, full/half width, ligatures,
# combining marks, ignorables, FTS5 separator letters, emoji, controls, whitespace.
_TRICKY = (
    "aZ09_-:\"()*^+.'  \t\n\r"
    "猫ネコねこ東京都庁引っ越し越日本語の。、「」ー・々〆ヶ"
    "ｶﾞﾊﾟｰＡＢＣ１２３（）！…㍻①ﬁßİΣς"
    "\u0301\u0308\u3099\u309a\u00ad\u200b\u200d\ufe0f\U000e0100\ufeff"
    "\u19b0\u1cf2\U00020b9f\uf900\u2028\x00\x1f😀👍🏽"
)
texts = st.text(alphabet=st.sampled_from(_TRICKY), max_size=60) | st.text(max_size=60)
fast = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 0')")
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    yield con
    con.close()


def fts5_tokens(con: sqlite3.Connection, text: str) -> list[str]:
    """How SQLite's unicode61 tokenizer splits ``text``."""
    con.execute("DELETE FROM t")
    con.execute("INSERT INTO t(rowid, body) VALUES (1, ?)", (text,))
    return [row[0] for row in con.execute("SELECT term FROM v ORDER BY offset")]


def test_plural_and_verb_forms_share_a_term() -> None:
    assert terms("tastes") == terms("taste")
    assert terms("tasted") == terms("tasting") == terms("taste")
    assert terms("running") == terms("runs") == terms("run") == ["run"]
    assert terms("policies") == terms("policy") == ["policy"]
    assert terms("classes") == terms("class") == ["class"]
    assert terms("boxes") == terms("box")


def test_short_words_and_words_ending_in_s_sounds_are_left_alone() -> None:
    assert terms("status analysis bus is") == ["status", "analysis", "bus", "is"]
    assert terms("string bring") == ["string", "bring"]


def test_identifiers_split_on_non_alphanumerics() -> None:
    assert terms("max_chars") == ["max", "char"]
    assert terms("ERR-4012") == ["err", "4012"]
    assert terms("my_pkg.text:analyzer") == ["my", "pkg", "text", "analyzer"]


def test_full_width_letters_and_digits_equal_ascii() -> None:
    assert terms("ＡＢＣ１２３") == terms("ABC123") == ["abc123"]


def test_case_is_folded() -> None:
    assert terms("Straße STRASSE") == ["strass", "strass"]


def test_katakana_spelling_matches_the_kanji_word() -> None:
    assert terms("ネコ") == terms("猫") == ["猫"]


def test_okurigana_variants_unify() -> None:
    assert terms("引っ越し") == terms("引越し")


def test_punctuation_and_particles_are_dropped() -> None:
    result = terms("猫が好きです。")
    assert "。" not in result
    assert "が" not in result
    assert "猫" in result


def test_light_verbs_and_adjectives_are_dropped_but_content_verbs_stay() -> None:
    """する, いる, ある, なる, ない appear in nearly every sentence: as terms they rank nothing and
    their highlights speckle a snippet; 起きる carries meaning and stays."""
    assert terms("障害が起きたら最初に何をする") == ["障害", "起きる", "最初"]
    assert terms("集中していることがある") == ["集中", "こと"]
    assert terms("できるようになった") == []
    assert terms("よくない") == []


def test_inflected_japanese_verbs_use_their_normalised_form() -> None:
    assert terms("行った") == terms("行く")


def test_unknown_japanese_words_fall_back_to_bigrams() -> None:
    # A bigram that is itself a particle or auxiliary (ン) is dropped like one,
    # so not every bigram survives; enough do to match the word.
    word = "ザグリュンベルク"
    result = terms(word)
    assert len(result) >= len(word) - 3
    assert all(len(term) <= 2 for term in result)


def test_bigrams_of_an_unknown_word_carry_the_word_and_whole_words_do_not() -> None:
    # The snippet needs this to tell the word タブ from the bigram タブ inside イミュータブル.
    text = "イミュータブルなタブ"
    result = tokens(text)
    pieces = [t for t in result if t.word is not None]
    assert pieces and all(text[t.word[0] : t.word[1]] == "イミュータブル" for t in pieces)
    assert "タブ" in {t.term for t in pieces}
    whole = [t for t in result if t.word is None]
    assert [(t.term, text[t.start : t.end]) for t in whole] == [("タブ", "タブ")]
    assert all(t.word is None for t in tokens("猫 ginger 東京都庁"))


def test_a_query_with_no_dictionary_entry_matches_via_bigrams(fts: sqlite3.Connection) -> None:
    fts.execute("DELETE FROM t")
    fts.execute("INSERT INTO t(rowid, body) VALUES (1, ?)", (index_text("新製品ザグリュンベルクを発表した"),))
    query = " OR ".join(f'"{term}"' for term in terms("グリュンベル"))
    assert fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (query,)).fetchall() == [(1,)]


def test_rare_han_outside_the_basic_plane_are_kept() -> None:
    assert terms("𩸽を食べた") == ["𩸽", "食べる"]
    assert "𠮟" in terms("𠮟る")


def test_offsets_point_into_the_original_text_when_nfkc_changes_lengths() -> None:
    text = "…ｶﾞｲﾄﾞ ﬁles ＡＢＣ"
    spans = {token.term: text[token.start : token.end] for token in tokens(text)}
    assert spans["fil"] == "ﬁles"
    assert spans["abc"] == "ＡＢＣ"
    assert "ｶﾞｲﾄﾞ" in "".join(text[t.start : t.end] for t in tokens(text))


def test_combining_marks_compose_instead_of_splitting_words() -> None:
    assert terms("e\u0301cole") == terms("école") == ["école"]


def test_invisible_characters_neither_split_nor_change_words() -> None:
    assert terms("soft\u00adware") == terms("software")
    assert terms("zero\u200bwidth") == terms("zerowidth")
    assert terms("葛\U000e0100飾区") == terms("葛飾区")


def test_emoji_and_symbols_produce_no_terms() -> None:
    assert terms("😀 👍🏽 → ★ !!! ---") == []


def test_empty_and_whitespace_text_have_no_terms() -> None:
    assert tokens("") == []
    assert terms(" \n\t ") == []


def test_index_text_is_the_space_joined_terms() -> None:
    assert index_text("Cats and ネコ") == "cat and 猫"


def test_very_long_japanese_text_without_punctuation_is_analysed() -> None:
    text = "東京都に住んでいる" * 3000 + "猫"
    result = tokens(text)
    assert result[-1].term == "猫"
    assert text[result[-1].start : result[-1].end] == "猫"


def test_huge_mixed_input_does_not_raise() -> None:
    text = ("Lorem ipsum ネコが好き ＡＢＣ…\n" * 20000) + "x" * 100_000
    result = tokens(text)
    assert result[-1].term == "x" * 100_000


def test_threads_each_get_a_working_tokenizer() -> None:
    text = "東京都庁でネコを見た。Running tests in parallel."
    expected = terms(text)
    results: list[list[str]] = []

    def work() -> None:
        results.extend(terms(text) for _ in range(20))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 80


def test_normalize_applies_nfkc_and_case_folding() -> None:
    assert normalize("ＡＢＣ１２３ Straße ｶﾞ") == "abc123 strasse ガ"


@fast
@given(texts)
def test_tokens_never_raise_and_offsets_are_ordered_non_empty_and_in_bounds(text: str) -> None:
    result = tokens(text)
    previous = 0
    for token in result:
        assert isinstance(token, Token)
        assert token.term
        assert 0 <= token.start < token.end <= len(text)
        assert token.start >= previous
        previous = token.start
        if token.word is not None:
            assert 0 <= token.word[0] <= token.start < token.end <= token.word[1] <= len(text)


@fast
@given(texts)
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once
    assert unicodedata.is_normalized("NFKC", once)


@fast
@given(texts)
def test_reanalysing_the_stored_form_gives_the_same_terms(text: str) -> None:
    assert terms(index_text(text)) == terms(text)


@fast
@given(texts)
def test_fts5_splits_the_stored_form_into_exactly_the_terms(fts: sqlite3.Connection, text: str) -> None:
    assert fts5_tokens(fts, index_text(text)) == terms(text)
