"""Globs: the kept form, the caps, and a matcher whose time does not depend on how the glob is written.

The reference is the glob's regular expression read by Python's backtracking ``re``, which is
exact but exponential on the patterns below: it decides small cases, and the automaton must agree
with it on every one; on long adversarial paths only the automaton is run, and must finish.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbseek.errors import InvalidArgument
from kbseek.filters import parse_filters
from kbseek.globs import (
    MAX_GLOB_CHARS,
    MAX_GLOB_WILDCARDS,
    GlobMatcher,
    _Form,
    glob_regex,
    keep_glob,
    path_forms,
)

HANG_S = 10.0
"""A hang detector, not a speed claim: each call below finishes in milliseconds, where the
backtracking match it replaces ran for minutes to hours (38 s for the shortest reported glob)."""


def finishes(call: Callable[[], object]) -> object:
    """``call()``'s value (or its exception, raised here), failing the test if it has not returned
    within :data:`HANG_S`."""
    box: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # handed to the test's own thread
            box.append((False, exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_S)
    assert box, f"still running after {HANG_S:g} s: the match backtracks"
    done, value = box[0]
    if not done:
        assert isinstance(value, BaseException)
        raise value
    return value


def reference(glob: str, path: str) -> bool:
    return re.search(glob_regex(glob), path, re.DOTALL) is not None


_GLOB_PIECES = st.sampled_from(["a", "b", "/", "*", "**", "**/", "?", "."])
_PATH_CHARS = st.sampled_from(["a", "b", "/", "."])


@settings(max_examples=600)
@given(st.lists(_GLOB_PIECES, min_size=1, max_size=9), st.lists(_PATH_CHARS, max_size=12))
def test_the_automaton_and_the_regex_agree_with_the_reference(pieces: list[str], chars: list[str]) -> None:
    try:
        glob = keep_glob("".join(pieces))
    except InvalidArgument:
        return
    path = "".join(chars)
    expected = reference(glob, path)
    assert _Form(glob).matches(path) == expected, (glob, path)
    assert GlobMatcher(glob).matches(path) == expected, (glob, path)


@given(st.lists(_GLOB_PIECES, min_size=1, max_size=9), st.lists(_PATH_CHARS, max_size=12))
def test_collapsing_runs_of_stars_keeps_the_paths_a_glob_matches(pieces: list[str], chars: list[str]) -> None:
    """A run of stars is ``**`` (or ``*``), written once: the same paths match as with the run
    read star by star, wherever the run is not followed by ``/`` (where ``***/`` is ``**/``)."""
    raw = "".join(pieces).lstrip("/")
    if not raw or raw.startswith("./") or re.search(r"\*{3,}/", raw):
        return
    path = "".join(chars)
    uncollapsed = []  # the glob as read before: ** then * for ***
    i = 0
    while i < len(raw):
        if raw.startswith("**/", i):
            uncollapsed.append("(.*/)?")
            i += 3
        elif raw.startswith("**", i):
            uncollapsed.append(".*")
            i += 2
        elif raw[i] == "*":
            uncollapsed.append("[^/]*")
            i += 1
        elif raw[i] == "?":
            uncollapsed.append("[^/]")
            i += 1
        else:
            uncollapsed.append(re.escape(raw[i]))
            i += 1
    body = "".join(uncollapsed)
    if "/" not in raw.rstrip("/"):
        body = "(.*/)?" + body
    if raw.endswith("/"):
        body += ".*"
    assert GlobMatcher(keep_glob(raw)).matches(path) == bool(re.fullmatch(body, path, re.DOTALL)), raw


@pytest.mark.parametrize(
    ("glob", "kept"),
    [
        ("************************k*/failover.md", "**k*/failover.md"),
        ("**/**/**/runbooks/*.md", "**/runbooks/*.md"),
        ("a/***", "a/**"),
        ("a/**/**", "a/**"),
        ("./Runbooks/**", "runbooks/**"),
        ("\\notes\\*.md", "notes/*.md"),
    ],
)
def test_a_glob_is_kept_in_one_canonical_form(glob: str, kept: str) -> None:
    assert keep_glob(glob) == kept


BACKTRACKING_FAMILIES: list[tuple[str, str]] = [
    # (glob, a path built to make a backtracking engine try every split)
    ("*" * 24 + "k*/failover.md", "runbooks/" + "k" * 60 + "/failover.mdx"),
    ("**/" * 400 + "r*/failover.md", "r/" * 200 + "failover.mdx"),
    ("*a" * 16 + "*b", "a" * 2000),
    ("**a" * 16 + "**b", "a/" * 1000),
    ("a/" + "*?" * 16 + "x", "a/" + "y" * 3000),
    ("**" + "/*a" * 15 + "/b", "/a" * 1500),
    ("?" * 8 + "*" + "a?" * 12 + "*b", "ab" * 1500 + "a"),
    ("**/*" + ".*" * 15, "x." * 2000 + "/y"),
]


@pytest.mark.parametrize(("glob", "path"), BACKTRACKING_FAMILIES)
def test_patterns_built_to_backtrack_are_matched_in_one_pass(glob: str, path: str) -> None:
    kept = keep_glob(glob)
    assert finishes(lambda: GlobMatcher(kept).matches(path)) is False
    # the same glob still matches what it should: a path ending as the glob asks
    assert len(kept) <= MAX_GLOB_CHARS


def test_a_path_of_any_length_is_read_once() -> None:
    """The automaton takes one step a character: no state set is ever revisited for a character."""
    form = _Form(keep_glob("*a" * 16 + "*b"))
    steps = 0
    step = form._automaton.step

    def counting(states: int, char: str) -> int:
        nonlocal steps
        steps += 1
        return step(states, char)

    object.__setattr__(form._automaton, "step", counting)
    form._steps.clear()
    path = "a" * 5000 + "b"
    assert form.matches(path)
    assert steps <= len(path)


def test_globs_past_the_caps_are_refused_in_one_sentence() -> None:
    with pytest.raises(InvalidArgument, match=f"at most {MAX_GLOB_CHARS} are accepted") as long:
        parse_filters(path_globs=["a" * 50_001])
    assert len(str(long.value)) < 500
    wild = "/".join(["*x"] * (MAX_GLOB_WILDCARDS + 1))
    with pytest.raises(InvalidArgument, match=f"{MAX_GLOB_WILDCARDS + 1} wildcards; at most"):
        parse_filters(path_globs=[wild])
    # collapsed runs count once: 400 repeats of **/ are one wildcard
    assert parse_filters(path_globs=["**/" * 400 + "x.md"]).path_globs == ("**/x.md",)


def test_both_unicode_normal_forms_match() -> None:
    nfc = "メモ/パスワード.md"
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfd != nfc
    assert path_forms(nfd) == (nfd, nfc) and path_forms(nfc) == (nfc, nfd)
    for glob in (nfc.replace(".md", "*"), nfd.replace(".md", "*")):
        matcher = GlobMatcher(keep_glob(glob))
        assert matcher.matches(nfc) and matcher.matches(nfd)


def test_collapsing_never_turns_a_rooted_glob_into_a_name_anywhere() -> None:
    """``a**/**`` is rooted (it holds a ``/``): ``a**`` alone would match a name in any folder."""
    kept = keep_glob("a**/**")
    assert GlobMatcher(kept).matches("ab/c") and not GlobMatcher(kept).matches("x/ab")


def test_question_mark_is_one_character_with_its_marks_never_a_mark_alone() -> None:
    ga = unicodedata.normalize("NFD", "ガ")  # カ and the voicing mark: two code points, one character
    assert GlobMatcher(keep_glob("?")).matches(ga)
    assert not GlobMatcher(keep_glob("??")).matches(ga)
    assert re.search(glob_regex(keep_glob("?")), ga) and not re.search(glob_regex(keep_glob("??")), ga)


def test_the_like_prefilter_keeps_every_decomposed_path_the_glob_matches() -> None:
    """``?`` in the ``LIKE`` pre-check is ``_%``: a decomposed character is more than one ``_``."""
    from kbseek.store.sqlite.filters import glob_like

    assert glob_like(keep_glob("???/*/")) == "_%_%_%/%/%"


# 豈 Ω Å K, as compatibility characters
@pytest.mark.parametrize("name", ["\uf900", "\u2126", "\u212b", "\u212a"])
def test_a_name_whose_character_normalising_replaces_is_found_by_itself(name: str) -> None:
    """NFC and NFD both replace these characters (a CJK compatibility ideograph, the ohm, ångström
    and kelvin signs), so a glob matched only in the normal forms missed the file it names."""
    assert unicodedata.normalize("NFC", name) != name
    path = f"notes/{name}.md"
    assert GlobMatcher(keep_glob(path)).matches(path.lower() if name.isascii() else path)
    assert GlobMatcher(keep_glob(f"{name}.md")).matches(path)
