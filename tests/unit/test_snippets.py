"""Snippets show where the query matched, within the length the caller allows."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.text.analyzer import terms
from kbseek.text.display import display_text
from kbseek.text.snippets import ELLIPSIS, Snippet, make_snippet

FILLER_EN = "The quick brown fox jumps over the lazy dog near the riverbank. "
NEEDLE_EN = "The soup tastes of ginger and lemongrass with a hint of chili. "
LONG_EN = FILLER_EN * 50 + NEEDLE_EN + FILLER_EN * 50

FILLER_JA = "梅雨は東アジアの広い範囲で見られる特有の気象現象である。"
NEEDLE_JA = "その猫は台所で魚を盗んで逃げた。"
LONG_JA = FILLER_JA * 40 + NEEDLE_JA + FILLER_JA * 40


def highlighted(snippet: Snippet) -> list[str]:
    return [snippet.text[a:b] for a, b in snippet.highlights]


def test_a_term_deep_in_long_english_text_is_shown_not_the_head() -> None:
    snippet = make_snippet(LONG_EN, ["ginger"], 120)
    assert "ginger" in snippet.text
    assert snippet.start > len(FILLER_EN) * 40
    assert snippet.text.startswith(ELLIPSIS) and snippet.text.endswith(ELLIPSIS)
    assert highlighted(snippet) == ["ginger"]


def test_the_window_is_centred_on_the_match() -> None:
    snippet = make_snippet(LONG_EN, ["lemongrass"], 100)
    a, b = snippet.highlights[0]
    middle = (a + b) / 2
    assert abs(middle - len(snippet.text) / 2) < 25


def test_a_term_deep_in_long_japanese_text_is_shown_not_the_head() -> None:
    snippet = make_snippet(LONG_JA, ["魚"], 40)
    assert "魚" in snippet.text
    assert snippet.start > len(FILLER_JA) * 35
    assert len(snippet.text) <= 40
    assert "魚" in highlighted(snippet)


def test_a_katakana_query_highlights_the_kanji_in_the_text() -> None:
    snippet = make_snippet(LONG_JA, terms("ネコ"), 30)
    assert highlighted(snippet) == ["猫"]
    assert snippet.matched_terms == 1


def test_inflected_query_words_highlight_other_forms() -> None:
    snippet = make_snippet("Nothing here. It tasted great.", ["tastes"], 80)
    assert highlighted(snippet) == ["tasted"]


def test_english_edges_never_cut_a_word_in_half() -> None:
    words = set(LONG_EN.split())
    for size in (40, 57, 80, 101, 150):
        snippet = make_snippet(LONG_EN, ["ginger", "chili"], size)
        inner = snippet.text.strip(ELLIPSIS).split()
        assert inner[0] in words and inner[-1] in words, snippet.text


def test_more_distinct_terms_beat_more_occurrences_of_one_term() -> None:
    text = "ginger ginger ginger ginger. " + "filler words go here " * 20 + "ginger and lemon together."
    snippet = make_snippet(text, ["ginger", "lemon"], 40)
    assert "lemon" in snippet.text
    assert snippet.matched_terms == 2


def test_without_a_match_the_head_of_the_text_is_returned() -> None:
    snippet = make_snippet(LONG_EN, ["zebra"], 60)
    assert snippet.start == 0
    assert snippet.text.startswith("The quick brown fox")
    assert snippet.text.endswith(ELLIPSIS)
    assert snippet.highlights == ()
    assert snippet.matched_terms == 0


def test_short_text_is_returned_whole_with_whitespace_collapsed() -> None:
    snippet = make_snippet("  Ginger\n\n  and\tlemon  ", ["lemon"], 80)
    assert snippet == Snippet("Ginger and lemon", 2, 21, ((11, 16),), 1, focus=16)


def test_offsets_locate_the_window_in_the_original_text() -> None:
    snippet = make_snippet(LONG_EN, ["ginger"], 90)
    original = LONG_EN[snippet.start : snippet.end]
    assert re.sub(r"\s+", " ", original) == snippet.text.strip(ELLIPSIS)


def test_tiny_limits_are_respected() -> None:
    for size in (1, 2, 3, 4):
        assert len(make_snippet(LONG_EN, ["ginger"], size).text) <= size
    assert make_snippet(LONG_EN, ["ginger"], 0).text == ""


words = st.sampled_from(["ginger", "tea", "猫", "魚を", "東京都", "a", "lemongrass", "ｶﾞｲﾄﾞ", "…", "x_y"])
documents = st.lists(words | st.text(max_size=8), max_size=60).map(" ".join) | st.text(max_size=200)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.lists(words, max_size=3), st.integers(min_value=1, max_value=120))
def test_snippets_never_exceed_the_limit_and_highlights_stay_inside(
    text: str, query: list[str], max_chars: int
) -> None:
    snippet = make_snippet(text, query, max_chars)
    assert len(snippet.text) <= max_chars
    assert 0 <= snippet.start <= snippet.end <= len(text)
    previous_end = 0
    for a, b in snippet.highlights:
        assert previous_end <= a < b <= len(snippet.text)
        previous_end = b
    assert 0 <= snippet.matched_terms <= len({t for q in query for t in terms(q)})


# ------------------------------------------------------------ what is marked

KATAKANA = "オブジェクトをイミュータブルに扱う。新しいタブを開く。"


def test_a_word_is_not_marked_inside_a_longer_unknown_word() -> None:
    # Sudachi does not know イミュータブル, so it is indexed as bigrams, one of which is タブ.
    snippet = make_snippet(KATAKANA, ["タブ"], 80)
    assert highlighted(snippet) == ["タブ"]
    assert snippet.highlights[0][0] == snippet.text.index("新しいタブ") + len("新しい")


def test_an_unknown_word_is_marked_whole_and_its_bigrams_mark_no_other_word() -> None:
    snippet = make_snippet(KATAKANA, ["イミュータブル"], 80)
    assert highlighted(snippet) == ["イミュータブル"]


def test_stop_words_and_single_letters_are_never_marked() -> None:
    text = "Do you have a plan? I do, and a backup plan for x."
    snippet = make_snippet(text, ["do I have a plan for x"], 80)
    assert highlighted(snippet) == ["plan", "plan"]
    assert highlighted(make_snippet(text, ["a", "I", "do"], 80)) == []


def test_a_single_kanji_is_a_word_and_is_marked() -> None:
    assert highlighted(make_snippet("その猫は魚を盗んだ。", ["猫"], 40)) == ["猫"]


# ------------------------------------------------------------------- markup

KEEPALIVE = (
    "## KeepAlive {#keepalive}\n\n"
    "<!-- TODO: rewrite this section -->\n"
    "`<KeepAlive>` caches [component instances](https://vuejs.org/guide/built-ins/keep-alive.html) "
    '<sup class="vt-badge">3.2+</sup> while they are removed.\n'
)


def test_a_markdown_snippet_leaves_markup_out_and_its_offsets_still_slice_the_file() -> None:
    snippet = make_snippet(KEEPALIVE, ["keepalive caches"], 300, markup=True)
    assert snippet.text == "KeepAlive <KeepAlive> caches component instances 3.2+ while they are removed."
    assert highlighted(snippet) == ["KeepAlive", "KeepAlive", "caches"]
    assert KEEPALIVE[snippet.start : snippet.end].startswith("KeepAlive {#keepalive}")
    assert KEEPALIVE[snippet.start : snippet.end].endswith("removed.")


def test_a_url_word_is_neither_shown_nor_marked() -> None:
    snippet = make_snippet(KEEPALIVE, ["vuejs guide"], 300, markup=True)
    assert "vuejs" not in snippet.text and highlighted(snippet) == []


def test_plain_text_keeps_what_looks_like_markup() -> None:
    snippet = make_snippet("<b>bold</b> and [a](b)", ["bold"], 80)
    assert snippet.text == "<b>bold</b> and [a](b)" and highlighted(snippet) == ["bold"]


def test_a_chunk_that_is_only_markup_shows_its_source_rather_than_nothing() -> None:
    snippet = make_snippet("<Sandpack>\n\n</Sandpack>", ["sandpack"], 80, markup=True)
    assert snippet.text == "<Sandpack> </Sandpack>"


_MARKUP = st.sampled_from(
    ["## ", "{#id}", "{/*a*/}", "<!-- c -->", "<sup>3</sup>", "[link](http://u/ginger)", "![tea](t.png)",
     "`code <b>`", "```js\n<div/>\n```\n", "**b**", "&amp;", "::: tip\n", "import X from 'y'\n", "<Intro>\n",
     "\n\n", "\n", " "]
)  # fmt: skip
markdown = st.lists(words | _MARKUP, max_size=60).map(" ".join)


def _located(text: str, snippet: Snippet) -> bool:
    """Whether the snippet's text (ellipses aside) is display text at the snippet's source offsets."""
    shown = display_text(text)
    if not shown.text and text.strip():
        shown = display_text(text, markup=False)
    bodies = {snippet.text}
    if snippet.text.startswith(ELLIPSIS):
        bodies |= {b[1:] for b in bodies}
    if snippet.text.endswith(ELLIPSIS):
        bodies |= {b[:-1] for b in bodies}
    for body in bodies:
        at = shown.text.find(body)
        while at >= 0:
            if shown.source_span(at, at + len(body)) == (snippet.start, snippet.end):
                return True
            at = shown.text.find(body, at + 1)
    return False


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown, st.lists(words, max_size=3), st.integers(min_value=3, max_value=120))
def test_markdown_snippets_point_at_the_source_and_mark_only_query_terms(
    text: str, query: list[str], max_chars: int
) -> None:
    snippet = make_snippet(text, query, max_chars, markup=True)
    assert len(snippet.text) <= max_chars
    assert 0 <= snippet.start <= snippet.end <= len(text)
    assert _located(text, snippet)
    wanted = {t for q in query for t in terms(q)}
    if max_chars >= 40:  # room for whole words: a tiny window clips its marks
        for a, b in snippet.highlights:
            assert set(terms(snippet.text[a:b])) & wanted


def test_the_focus_is_where_the_best_group_of_matches_begins_in_the_original_text() -> None:
    text = "## Intro\n\nNothing here.\n\n## Caveats\n\nA **zanzibar** error is thrown, zanzibar again."
    snippet = make_snippet(text, ["zanzibar error"], 300, markup=True)
    assert snippet.focus is not None and text[snippet.focus :].lstrip("*").startswith("zanzibar** error")
    assert make_snippet(text, ["absent"], 300, markup=True).focus is None
    long = "filler words here. " * 40 + "the zanzibar error at last"
    cut = make_snippet(long, ["zanzibar"], 80)
    assert cut.focus == long.index("zanzibar") and cut.start <= cut.focus < cut.end
