"""Display text: markup left out of what readers and the index see, offsets kept into the source."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.text.display import DisplayText, display_line, display_text

# ------------------------------------------------------------------- markup


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        # attribute lists and anchors
        ("## KeepAlive {#keepalive}", "KeepAlive"),
        ("Title {.lead #intro}", "Title"),
        ("Kramdown {: .note}", "Kramdown"),
        ("## State {/*state*/}", "State"),
        # comments
        ("before <!-- hidden\nacross lines --> after", "before after"),
        ("in<!-- x -->word", "inword"),
        # HTML tags keep their inner text; inline ones do not split a word
        ('Hello <span class="x">world</span>', "Hello world"),
        ("H<sub>2</sub>O", "H2O"),
        ('defineModel() <sup class="vt-badge" data-text="3.4+" />', "defineModel()"),
        ("one<br>two", "one two"),
        ('<div align="center">\n\nCentered\n\n</div>', "Centered"),
        # badges and images
        ("[![Build](https://ci.example.com/b.svg)](https://ci.example.com) Docs", "Docs"),
        ("![npm](https://img.shields.io/npm/v/kbseek.svg) Docs", "Docs"),
        ("![a diagram of the flow](img/flow.png)", "a diagram of the flow"),
        ('<img src="x.png" alt="logo"> Docs', "Docs"),
        # links keep their text, never their URL
        ('See [the guide](https://example.com/a_(b) "Title").', "See the guide."),
        ("See [the *guide*][guide].", "See the guide."),
        ("See [the guide](<https://example.com/a b>).", "See the guide."),
        ("[guide]: https://example.com/guide", ""),
        ("Mail <me@example.com> or <https://example.com>", "Mail <me@example.com> or <https://example.com>"),
        # components: VitePress and MDX
        ("<script setup>\nimport { ref } from 'vue'\nconst n = ref(0)\n</script>\n\nText", "Text"),
        ("<style scoped>\n.a { color: red }\n</style>\nText", "Text"),
        ("::: tip 注意\nBody text\n:::", "注意 Body text"),
        (":::details Click to expand\nBody\n:::", "Click to expand Body"),
        ('Suspense <Badge type="warning" text="experimental" />', "Suspense"),
        ("<Intro>\n\nComponents need memory.\n\n</Intro>", "Components need memory."),
        ("<Suspense fallback={<Loading />}>\n  Albums\n</Suspense>", "Albums"),
        ("import { Foo } from './foo';\nimport Bar from \"bar\"\n\n# Title\n\nText", "Title Text"),
        ("import {\n  a,\n  b,\n} from 'x'\n\nText", "Text"),
        ("export const meta = {\n  title: 'x',\n}\n\nText", "Text"),
        ("{% include note.html %} Text", "Text"),
        # Markdown syntax characters
        ("# Heading ##", "Heading"),
        ("> quoted **bold** and _italic_ and ~~gone~~", "quoted bold and italic and gone"),
        ("これは**重要**です", "これは重要です"),
        ("Use `<b>raw</b>` here", "Use <b>raw</b> here"),
        ("``a ` b``", "a ` b"),
        ("Fish &amp; chips &lt;3 &#x263A; &nosuch;", "Fish & chips <3 ☺ &nosuch;"),
        (r"\*not emphasis\* and \[not a link\]", "*not emphasis* and [not a link]"),
        ("Intro\n\n---\n\nAfter", "Intro After"),
        ("| a | b |\n|---|:---:|\n| 1 | 2 |", "| a | b | | 1 | 2 |"),
    ],
)
def test_markup_is_left_out_of_display_text(source: str, shown: str) -> None:
    assert display_text(source).text == shown


@pytest.mark.parametrize(
    "source",
    [
        "import the data from a CSV file, then export it",
        "snake_case_name and path_to_file_v2",
        "2 * 3 * 4 = 24",
        "*args and **kwargs",
        "if a < b and c > d",
        "- [ ] open task\n- [x] done task",
        "[^1]: a footnote stays",
        "Languages: C# and F#",
        "a {literal} brace and {x: 1}",
        "[just brackets] in prose",
    ],
)
def test_prose_that_only_looks_like_markup_is_kept(source: str) -> None:
    assert display_text(source).text == " ".join(source.split())


@pytest.mark.parametrize(
    ("source", "shown"),
    [("\\<>", "<>"), ("a\\<b>c", "a<b>c"), ("\\</> and \\<x/>", "</> and <x/>"), ("a <b>b</b>", "a b")],
)
def test_an_escaped_angle_bracket_is_text_not_a_tag(source: str, shown: str) -> None:
    """A Word paragraph reading ``<>`` was served as ``\\<>`` and shown as nothing: the tag pattern
    took the escaped bracket for a JSX fragment (found by the converted formats' property test)."""
    assert display_text(source).text == shown


def test_code_is_kept_byte_for_byte_and_only_its_fences_are_dropped() -> None:
    source = (
        "Text <b>bold</b>\n\n"
        "```jsx {expectedErrors: 1}\n"
        "import { useState } from 'react';\n"
        "export default function App() {\n"
        '  return <div className="x">[a](b) **c** {/*d*/}</div>;\n'
        "}\n"
        "```\n\n"
        "~~~\n<!-- kept -->\n~~~\n"
    )
    assert display_text(source).text == (
        "Text bold import { useState } from 'react'; export default function App() { "
        'return <div className="x">[a](b) **c** {/*d*/}</div>; } <!-- kept -->'
    )


def test_an_unclosed_fence_keeps_the_rest_as_code() -> None:
    assert display_text("Text\n\n```\n<b>x</b>\n").text == "Text <b>x</b>"


def test_inline_markup_never_spans_a_blank_line() -> None:
    assert display_text("a *b\n\nc* d").text == "a *b c* d"


def test_plain_text_only_collapses_whitespace() -> None:
    source = "  <b>kept</b>\n\n  [as](typed)  "
    assert display_text(source, markup=False).text == "<b>kept</b> [as](typed)"


def test_display_line_is_one_trimmed_line() -> None:
    assert display_line("  Shared-State\n  Concurrency  {#shared}") == "Shared-State Concurrency"


# ----------------------------------------------------------------- offsets


def _check_map(source: str, shown: DisplayText) -> None:
    assert len(shown.starts) == len(shown.ends) == len(shown.text)
    assert shown.source_length == len(source)
    previous = 0
    for i, char in enumerate(shown.text):
        start, end = shown.starts[i], shown.ends[i]
        assert previous <= start < end <= len(source)
        previous = start
        piece = source[start:end]
        # A character is copied, or replaces whitespace/markup (a space), an entity or an escape.
        assert piece == char or char == " " or piece[0] in "&\\", (i, char, piece)


_MARKUP = st.sampled_from(
    [
        "# ", "## ", "{#id}", "{/*a*/}", "<!-- c -->", "<sup>3</sup>", '<Badge text="x" />', "[link](http://u)",
        "![img](i.png)", "`code <b>`", "```js\n<div/>\n```\n", "**b**", "_i_", "&amp;", "\\*", "::: tip\n",
        ":::\n", "import X from 'y'\n", "\n", "\n\n", "\r\n", " ", "\t", "word", "猫", "イミュータブル", "> ",
        "- ", "| a | b |\n|---|---|\n", "<script>x</script>", "<Intro>\n", "</Intro>\n", "[", "]", "(", ")",
        "<", ">", "*", "_", "`", "{", "}", "~~~\n", "---\n",
    ]
)  # fmt: skip
markdown = st.lists(_MARKUP | st.text(max_size=6), max_size=40).map("".join)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(markdown)
def test_every_display_character_maps_back_into_the_source_in_order(source: str) -> None:
    _check_map(source, display_text(source))
    _check_map(source, display_text(source, markup=False))


@FAST
@given(markdown)
def test_display_text_is_collapsed_and_trimmed(source: str) -> None:
    text = display_text(source).text
    assert text == text.strip() and "  " not in text and "\n" not in text


@FAST
@given(st.text(alphabet=st.characters(exclude_characters="#{}<>[]()!`*_~&\\:|-=>%"), max_size=200))
def test_text_without_markup_characters_is_only_collapsed(source: str) -> None:
    shown = display_text(source).text
    assert shown == display_text(source, markup=False).text
    assert shown.split() == source.split()


@FAST
@given(markdown, st.integers(0, 60), st.integers(0, 60))
def test_source_span_of_any_window_lies_inside_the_source(source: str, a: int, b: int) -> None:
    shown = display_text(source)
    a, b = sorted((min(a, len(shown.text)), min(b, len(shown.text))))
    start, end = shown.source_span(a, b)
    assert 0 <= start <= end <= len(source)
