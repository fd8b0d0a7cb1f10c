"""Reading filters: dates, front-matter values, globs; each refusal says what is accepted."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbseek.dates import DocumentDate, day_of, document_date, mtime_day, parse_bound
from kbseek.errors import InvalidArgument
from kbseek.filters import FieldCondition, field_rows, field_value, parse_filters, where_from_text
from kbseek.globs import glob_regex

TODAY = date(2026, 3, 31)


def test_bounds_read_days_datetimes_and_ages() -> None:
    assert parse_bound("after", "2026-03-01") == "2026-03-01"
    assert parse_bound("after", "2026-03-01T23:30:00+09:00") == "2026-03-01"
    assert parse_bound("after", "7d", today=TODAY) == "2026-03-24"
    assert parse_bound("after", "2 weeks", today=TODAY) == "2026-03-17"
    assert parse_bound("after", "1m", today=TODAY) == "2026-02-28"  # the month's last day
    assert parse_bound("after", "1y ago", today=TODAY) == "2025-03-31"
    assert parse_bound("after", "yesterday", today=TODAY) == "2026-03-30"
    assert parse_bound("after", date(2020, 1, 2)) == "2020-01-02"
    assert parse_bound("after", None) is None and parse_bound("after", " ") is None


@pytest.mark.parametrize("text", ["last week", "2026-13-01", "2026-02-30", "2026-03-01 junk", "03/01/2026"])
def test_an_unreadable_bound_is_refused_with_the_forms_accepted(text: str) -> None:
    with pytest.raises(
        InvalidArgument, match=r"is not a date: expected a date YYYY-MM-DD .* 7d, 2w, 3m or 1y"
    ):
        parse_bound("before", text)


def test_an_impossible_range_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="after=2026-05-01 is later than before=2026-04-01"):
        parse_filters(after="2026-05-01", before="2026-04-01")


def test_a_document_date_takes_the_first_configured_field_then_the_file_time() -> None:
    front = {"Updated": "2025-01-02", "date": "not a date", "created": "2020-05-05"}
    assert document_date(front, 0) == DocumentDate("2025-01-02", "frontmatter:updated")
    assert document_date(front, 0, fields=("created",), origin="properties") == DocumentDate(
        "2020-05-05", "properties:created"
    )
    assert document_date({}, 1_795_000_000 * 10**9) == DocumentDate(mtime_day(1_795_000_000 * 10**9), "mtime")
    assert day_of("2026/3/1") == "2026-03-01" and day_of(20260301) is None and day_of("2026-02-30") is None


def test_field_values_fold_as_the_stores_compare_them() -> None:
    assert field_value("  Accepted  Now ") == "accepted now"
    assert field_value(True) == "true" and field_value(3.0) == "3" == field_value("3") == field_value(3)
    assert field_value("٥") == "٥" and field_value("５") == "５"  # a number is written in ASCII digits
    assert field_value(2.5) == "2.5" == field_value("2.5")
    assert field_value(None) is None and field_value({"a": 1}) is None and field_value("x" * 201) is None
    rows = field_rows({"Owner": ["Ana", "ana", {"nested": 1}], "n": 1, "meta": {"a": 1}, "": "x"})
    assert rows == [("owner", "ana"), ("n", "1")]


@given(st.one_of(st.text(max_size=30), st.integers(), st.floats(allow_nan=False), st.booleans()))
def test_a_folded_value_folds_to_itself(value: object) -> None:
    folded = field_value(value)
    if folded is not None:
        assert field_value(folded) == folded


def test_where_reads_values_lists_presence_and_refuses_the_rest() -> None:
    parsed = parse_filters(where={"Status": ["Open", "triage"], "owner": {"exists": False}, "n": 2})
    assert parsed.where == (
        FieldCondition("status", ("open", "triage")), FieldCondition("owner", (), False), FieldCondition("n", ("2",)),
    )  # fmt: skip
    for bad in ({"s": []}, {"s": {"$in": ["a"]}}, {"s": [["a"]]}, {"s": None}):
        with pytest.raises(InvalidArgument, match="where"):
            parse_filters(where=bad)
    assert where_from_text(["status=open", "status=triage", "owner", "!draft"]) == {
        "status": ["open", "triage"], "owner": {"exists": True}, "draft": {"exists": False},
    }  # fmt: skip


def test_where_entries_naming_one_field_combine_and_never_replace_each_other() -> None:
    assert where_from_text(["topic", "Topic=ops", "topic=db"]) == {"topic": ["ops", "db"]}
    assert where_from_text(["!draft", "!DRAFT"]) == {"draft": {"exists": False}}
    for entries in (["topic=operations", "!topic"], ["!topic", "topic"], ["topic", "!Topic"]):
        with pytest.raises(InvalidArgument, match="both as required and as absent"):
            where_from_text(entries)
    with pytest.raises(InvalidArgument, match="a value cannot be negated"):
        where_from_text(["!topic=ops"])
    # keys that fold to one field, sent as an object, are two conditions that must both hold
    assert len(parse_filters(where={"Topic": "a", "topic": {"exists": False}}).where) == 2


def test_types_are_parser_names_with_or_without_a_dot() -> None:
    assert parse_filters(types=[".PDF", "md"], known_types=("md", "pdf")).types == ("pdf", "md")
    with pytest.raises(InvalidArgument, match="accepted: md, pdf"):
        parse_filters(types=["doc"], known_types=("md", "pdf"))
    with pytest.raises(InvalidArgument, match=r"types: '\.\./md' is not"):
        parse_filters(types=["../md"], known_types=("md", "pdf"))


@pytest.mark.parametrize(
    ("glob", "matches", "misses"),
    [
        ("runbooks/**", ["runbooks/a.md", "runbooks/db/b.md"], ["notes/runbooks/a.md", "runbooks"]),
        ("runbooks/*.md", ["runbooks/a.md"], ["runbooks/db/a.md"]),
        ("a/**/b.md", ["a/b.md", "a/x/y/b.md"], ["ab.md", "a/xb.md"]),
        ("*.pdf", ["x.pdf", "deep/er/x.pdf"], ["x.pdf.md", "xpdf"]),
        ("notes/", ["notes/a.md", "notes/b/c.md"], ["notes.md"]),
        ("adr/000?-*.md", ["adr/0001-x.md"], ["adr/00011-x.md", "adr/0001/x.md"]),
        ("メモ/*.md", ["メモ/a.md"], ["メモ/b/a.md"]),
        ("a+b(1).md", ["a+b(1).md", "x/a+b(1).md"], ["aab1.md"]),
    ],
)
def test_globs_match_as_documented(glob: str, matches: list[str], misses: list[str]) -> None:
    kept = parse_filters(path_globs=[glob]).path_globs[0]
    pattern = re.compile(glob_regex(kept))
    assert all(pattern.search(p) for p in matches), glob
    assert not any(pattern.search(p) for p in misses), glob


_SEGMENT = st.text(
    st.characters(blacklist_characters="/\\\x00*?", blacklist_categories=("Cs",)), min_size=1, max_size=8
).filter(lambda s: s.strip() not in {".", ".."})
"""A folder or file name as a document path holds one: never ``.`` or ``..`` (paths are root-relative and
normalised; a glob's leading ``./`` is dropped as the path's own would be)."""


@given(st.lists(_SEGMENT, min_size=1, max_size=4))
def test_a_literal_path_is_a_glob_matching_itself_and_star_stays_in_its_folder(segments: list[str]) -> None:
    path = "/".join(s.strip() or "x" for s in segments).lower()
    kept = parse_filters(path_globs=[path]).path_globs[0]
    assert re.search(
        glob_regex(kept),
        path.translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")),
    )
    if "/" in path.rstrip("/"):
        first = path.split("/")[0]
        star = parse_filters(path_globs=[first + "/*"]).path_globs[0]
        assert re.search(glob_regex(star), first + "/x") and not re.search(glob_regex(star), first + "/x/y")
