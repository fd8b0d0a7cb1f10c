"""Compiling agent queries into terms, and the store's FTS5 expressions of them, that never misbehave."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.config import Limits
from kbseek.search.fts_query import CompiledQuery, compile_query
from kbseek.store.sqlite.fts_match import match_expression
from kbseek.text.analyzer import index_text

MAX_TERMS = Limits().max_query_terms

_SYNTAX = "-:\"()*^+ ANDORNOTNEAR{},.'\\ ab猫"
queries = (
    st.text(alphabet=st.sampled_from(_SYNTAX), max_size=40)
    | st.text(max_size=40)
    | st.lists(st.sampled_from(["AND", "OR", "NOT", "NEAR", "NEAR(", '"', "*", "-", "x:", "^", "+"])).map(
        " ".join
    )
)


@pytest.fixture(scope="module")
def db() -> Iterator[sqlite3.Connection]:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 0')")
    docs = [
        "The soup has a strong taste of ginger.",
        "猫が台所で魚を食べた。",
        "Operators: and or not near, in plain English.",
        "Ginger tea with lemon and honey tastes good.",
        "Nothing relevant here at all.",
    ]
    con.executemany(
        "INSERT INTO t(rowid, body) VALUES (?, ?)", [(i, index_text(d)) for i, d in enumerate(docs)]
    )
    yield con
    con.close()


def search(con: sqlite3.Connection, query: str) -> list[int]:
    expression = match_expression(compile_query(query, max_terms=MAX_TERMS).terms)
    if expression is None:
        return []
    sql = "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)"
    return [row[0] for row in con.execute(sql, (expression,))]


def test_terms_are_quoted_and_joined_with_or() -> None:
    compiled = compile_query("ginger tea", max_terms=MAX_TERMS)
    assert compiled == CompiledQuery(terms=("ginger", "tea"), dropped=())
    assert match_expression(compiled.terms) == '"ginger" OR "tea"'


def test_a_query_of_only_punctuation_has_no_expression() -> None:
    empty = CompiledQuery(terms=(), dropped=())
    assert compile_query(" -- :: ** ()", max_terms=MAX_TERMS) == empty
    assert match_expression(compile_query("", max_terms=MAX_TERMS).terms) is None


def test_repeated_terms_are_used_once_in_their_first_order() -> None:
    assert compile_query("tea Ginger TEA ginger teas", max_terms=MAX_TERMS).terms == ("tea", "ginger")


def test_terms_beyond_the_cap_are_reported_as_dropped() -> None:
    compiled = compile_query("one two three four five", max_terms=3)
    assert compiled.terms == ("one", "two", "three")
    assert compiled.dropped == ("four", "fiv")
    assert match_expression(compiled.terms) == '"one" OR "two" OR "three"'


def test_the_cap_must_allow_at_least_one_term() -> None:
    with pytest.raises(ValueError):
        compile_query("anything", max_terms=0)


def test_bare_operators_are_searched_as_ordinary_words(db: sqlite3.Connection) -> None:
    assert search(db, "NEAR") == [2]
    assert search(db, "NOT") == search(db, "not") == [2]
    assert match_expression(compile_query("AND", max_terms=MAX_TERMS).terms) == '"and"'


def test_syntax_characters_are_treated_as_separators(db: sqlite3.Connection) -> None:
    assert search(db, 'title:"ginger* -soup (') == search(db, "title ginger soup")
    assert 0 in search(db, "^soup+")


def test_an_inflected_query_finds_the_base_form(db: sqlite3.Connection) -> None:
    assert search(db, "tastes")[:2] != []
    assert set(search(db, "tastes")) == {0, 3}


def test_a_katakana_query_matches_kanji_text(db: sqlite3.Connection) -> None:
    assert search(db, "ネコ") == [1]


def test_documents_matching_more_terms_rank_first(db: sqlite3.Connection) -> None:
    assert search(db, "ginger tea lemon")[0] == 3


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries)
def test_any_query_compiles_to_an_expression_fts5_accepts(db: sqlite3.Connection, query: str) -> None:
    compiled = compile_query(query, max_terms=8)
    assert len(compiled.terms) <= 8
    assert len(set(compiled.terms)) == len(compiled.terms)
    expression = match_expression(compiled.terms)
    if expression is None:
        assert compiled.terms == ()
    else:
        db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)", (expression,)).fetchall()
