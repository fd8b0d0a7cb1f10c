"""Filters built to cost or to confuse, on every store: each answers fast and keeps exactly the
documents the filter states.

The globs are the backtracking families of ``test_globs.py`` run where they run in production: the
SQLite store's matcher and PostgreSQL's regular expressions. Paths named in either Unicode normal
form are found by a prefix or glob typed in either.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbseek.errors import InvalidArgument
from kbseek.filters import parse_filters
from kbseek.store.base import Store
from kbseek.store.sqlite import filters as sqlite_filters
from tests.core.test_filter_fuzz import glob_matches
from tests.unit.test_globs import BACKTRACKING_FAMILIES, finishes
from tests.unit.test_store_contract import BACKENDS, write
from tests.unit.test_store_filters import doc, paths


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = BACKENDS[request.param](tmp_path)()
    yield opened
    opened.close()


NFC_NAME = "メモ/パスワード変更.md"
NFD_NAME = unicodedata.normalize("NFD", "ノート/ガイド.md")


def corpus(store: Store, *adversarial: str) -> None:
    write(
        store,
        doc("runbooks/database/failover.md"),
        doc(NFC_NAME),
        doc(NFD_NAME),
        *(doc(p) for p in adversarial),
    )


@pytest.mark.parametrize(("glob", "path"), BACKTRACKING_FAMILIES)
def test_globs_built_to_backtrack_answer_on_every_store(store: Store, glob: str, path: str) -> None:
    corpus(store, path)
    filters = parse_filters(path_globs=[glob])
    assert finishes(lambda: paths(store, filters)) == set()


def test_a_glob_matches_what_it_says_after_collapsing(store: Store) -> None:
    corpus(store)
    filters = parse_filters(path_globs=["*" * 24 + "e*/failover.md"])
    assert paths(store, filters) == {"runbooks/database/failover.md"}


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_either_normal_form_of_a_prefix_or_glob_finds_a_path_named_in_either(store: Store, form: str) -> None:
    corpus(store)

    def typed(text: str) -> str:
        return unicodedata.normalize(form, text)  # type: ignore[arg-type]

    assert paths(store, parse_filters(path_prefix=typed("メモ/"))) == {NFC_NAME}
    assert paths(store, parse_filters(path_prefix=typed("ノート/"))) == {NFD_NAME}
    assert paths(store, parse_filters(path_globs=[typed("パスワード*")])) == {NFC_NAME}
    assert paths(store, parse_filters(path_globs=[typed("ノート/ガ*")])) == {NFD_NAME}


def test_filters_past_their_time_budget_refuse_the_search_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQLite store interrupts a filter check past ``FILTER_BUDGET_S`` (PostgreSQL's reads
    have the server's own bound); here the budget is zero, so any real check runs past it."""
    store = BACKENDS["sqlite"](tmp_path)()
    try:
        write(store, *(doc(f"notes/n{i}.md") for i in range(500)))
        filters = parse_filters(path_globs=["notes/*a*b*c"])
        assert paths(store, filters) == set()
        monkeypatch.setattr(sqlite_filters, "FILTER_BUDGET_S", 0.0)
        with pytest.raises(InvalidArgument, match="took more than 0 s to check against the documents"):
            store.filtered_rowids(parse_filters(path_globs=["notes/*a*b*d"]))
        # the connection serves the next call as before
        monkeypatch.setattr(sqlite_filters, "FILTER_BUDGET_S", 3.0)
        assert len(paths(store, parse_filters(path_globs=["notes/n1?.md"]))) == 10
    finally:
        store.close()


GLOB_PATHS = [
    "runbooks/db/failover.md", "runbooks/Deploy.MD", "adr/0001-flags.md", NFC_NAME, NFD_NAME,
    unicodedata.normalize("NFD", "café/résumé.md"), "a b/x.y.md", "k/kkk/k.md",
]  # fmt: skip
_PIECES = st.sampled_from(
    ["*", "**", "?", "/", "**/", "k", "db", "md", ".", "ガ", "ガ", "é", "runbooks", "-"]
)


def test_random_globs_keep_what_the_documented_rules_say_on_every_store(store: Store) -> None:
    """Globs drawn from wildcards and the corpus' own characters, against the reference matcher of
    ``tests/core/test_filter_fuzz.py`` (the documented rules, NFC on both sides): both stores agree
    with it, so a team's readers and a laptop keep the same documents."""
    write(store, *(doc(p) for p in GLOB_PATHS))

    @settings(max_examples=150, deadline=None)
    @given(st.lists(_PIECES, min_size=1, max_size=7).map("".join))
    def check(glob: str) -> None:
        try:
            filters = parse_filters(path_globs=[glob])
        except InvalidArgument:
            return
        expected = {p for p in GLOB_PATHS if glob_matches(glob, p)}
        assert finishes(lambda: paths(store, filters)) == expected, glob

    check()


LARGEST_GLOBS = [
    "?" * 32 + "a" * 480,
    "/".join(["*x?"] * 16) + "y" * (512 - 16 * 4 + 1),
    "**/" + "ガ?" * 31 + "é" * 420,
    ("a*" * 32 + "b" * 512)[:512],
]


@pytest.mark.parametrize("glob", LARGEST_GLOBS, ids=["32 ?", "16 folders", "marks", "32 *"])
def test_the_largest_accepted_globs_are_answered_on_every_store(store: Store, glob: str) -> None:
    """At the caps (512 characters, 32 wildcards) each store still reads the glob: PostgreSQL's
    regular expressions have a size limit of their own, which must lie beyond what is accepted."""
    corpus(store, "a" * 100 + "/" + "b" * 100)
    filters = parse_filters(path_globs=[glob])
    assert len(filters.path_globs[0]) <= 512
    assert finishes(lambda: paths(store, filters)) == set()
