"""The store contract for the search filters and the dated listings, on every backend.

The same documents go into SQLite and PostgreSQL, and each filter must keep the same documents in
both legs' forms (``lexical_candidates`` and ``filtered_rowids``): a filter that one engine reads
differently from the other would give a team's readers different answers from a laptop's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kbseek.dates import DocumentDate, mtime_day
from kbseek.filters import FieldCondition, SearchFilters, parse_filters
from kbseek.store.base import Store
from kbseek.store.records import DocumentInput
from kbseek.store.sqlite import filters as sqlite_filters
from tests.unit.test_store_contract import BACKENDS, document, write


@pytest.fixture(autouse=True, params=["by index", "by map"])
def chunk_lookup(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice on SQLite: the passing documents' chunks found through the chunks' index
    (few documents), and picked from the map of every chunk's document (many)."""
    if request.param == "by map":
        monkeypatch.setattr(sqlite_filters, "FEW_DOCUMENTS", -1)
    return str(request.param)


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = BACKENDS[request.param](tmp_path)()
    yield opened
    opened.close()


SAME_DAY_NS = 1_795_000_000 * 10**9
"""A modification time in November 2026: later than every front-matter date below."""


def doc(
    path: str, *, parser: str = "md", day: str | None = None, fields: dict[str, Any] | None = None,
    tags: tuple[str, ...] = (), mtime_ns: int = SAME_DAY_NS,
) -> DocumentInput:  # fmt: skip
    base = document(path, f"word {path}", tags=tags)
    front: dict[str, Any] = {"title": "Title", **(fields or {})}
    if day is not None:
        front["date"] = day
    return replace(base, parser=parser, frontmatter=front, mtime_ns=mtime_ns)


def corpus(store: Store) -> None:
    write(
        store,
        doc("adr/0001-flags.md", day="2024-01-10", fields={"status": "Accepted", "owner": ["ana", "Bo"]}),
        doc("adr/0002-queue.md", day="2025-06-01", fields={"status": "superseded", "priority": 2}),
        doc("runbooks/db/failover.md", day="2026-02-01", fields={"status": "accepted", "draft": False}),
        doc("runbooks/Deploy.MD", fields={"priority": 2.0}, tags=("Ops",)),
        doc("notes/scan.pdf", parser="pdf", day="2023-05-05", tags=("ops", "finance")),
        doc("notes/日本語/メモ.md", day="2025-12-24", fields={"status": "open"}),
    )


def paths(store: Store, filters: SearchFilters) -> set[str]:
    """The documents both legs keep for ``filters``, checked to agree."""
    hits = store.lexical_candidates(["word"], limit=50, filters=filters)
    narrow = store.lexical_candidates(["word"], limit=50, filters=filters, complete=False)
    lexical = {c.path for c in store.chunks_by_rowid([r for r, _ in hits]).values()}
    allowed = store.filtered_rowids(filters)
    assert allowed is not None
    assert {c.path for c in store.chunks_by_rowid(sorted(allowed)).values()} == lexical
    assert {r for r, _ in narrow} <= allowed
    return lexical


def test_dates_filter_by_day_with_both_bounds_included(store: Store) -> None:
    corpus(store)
    assert paths(store, SearchFilters(after="2025-06-01")) == {
        "adr/0002-queue.md", "runbooks/db/failover.md", "notes/日本語/メモ.md", "runbooks/Deploy.MD",
    }  # fmt: skip
    assert paths(store, SearchFilters(before="2024-01-10")) == {"adr/0001-flags.md", "notes/scan.pdf"}
    assert paths(store, SearchFilters(after="2025-01-01", before="2025-12-31")) == {
        "adr/0002-queue.md", "notes/日本語/メモ.md",
    }  # fmt: skip
    # the undated document is filed under its modification time's day
    assert paths(store, SearchFilters(after=mtime_day(SAME_DAY_NS), before=mtime_day(SAME_DAY_NS))) == {
        "runbooks/Deploy.MD"
    }


def test_where_compares_folded_values_lists_and_presence(store: Store) -> None:
    corpus(store)
    accepted = FieldCondition("status", ("accepted",))
    assert paths(store, SearchFilters(where=(accepted,))) == {"adr/0001-flags.md", "runbooks/db/failover.md"}
    either = FieldCondition("status", ("open", "superseded"))
    assert paths(store, SearchFilters(where=(either,))) == {"adr/0002-queue.md", "notes/日本語/メモ.md"}
    assert paths(store, SearchFilters(where=(FieldCondition("owner", ("bo",)),))) == {"adr/0001-flags.md"}
    assert paths(store, SearchFilters(where=(FieldCondition("priority", ("2",)),))) == {
        "adr/0002-queue.md", "runbooks/Deploy.MD",
    }  # fmt: skip
    assert paths(store, SearchFilters(where=(FieldCondition("draft", ("false",)),))) == {
        "runbooks/db/failover.md"
    }
    assert paths(store, SearchFilters(where=(FieldCondition("owner"),))) == {"adr/0001-flags.md"}
    without = paths(store, SearchFilters(where=(FieldCondition("status", (), exists=False),)))
    assert without == {"runbooks/Deploy.MD", "notes/scan.pdf"}
    both = SearchFilters(where=(accepted,), after="2025-01-01")
    assert paths(store, both) == {"runbooks/db/failover.md"}


def test_parsed_where_values_match_what_yaml_stored(store: Store) -> None:
    corpus(store)
    filters = parse_filters(where={"STATUS": "ACCEPTED", "priority": "2"})
    assert paths(store, filters) == set()  # no document is both accepted and priority 2
    assert paths(store, parse_filters(where={"priority": 2})) == {"adr/0002-queue.md", "runbooks/Deploy.MD"}


def test_types_globs_and_any_tags(store: Store) -> None:
    corpus(store)
    assert paths(store, SearchFilters(types=("pdf",))) == {"notes/scan.pdf"}
    assert paths(store, SearchFilters(path_globs=("runbooks/**",))) == {
        "runbooks/db/failover.md", "runbooks/Deploy.MD",
    }  # fmt: skip
    assert paths(store, SearchFilters(path_globs=("runbooks/*.md",))) == {"runbooks/Deploy.MD"}
    assert paths(store, SearchFilters(path_globs=("*.pdf", "adr/0001-*"))) == {
        "notes/scan.pdf", "adr/0001-flags.md",
    }  # fmt: skip
    assert paths(store, parse_filters(path_globs=["メモ.md"])) == {"notes/日本語/メモ.md"}
    assert paths(store, parse_filters(path_globs=["RUNBOOKS/DB/*"])) == {"runbooks/db/failover.md"}
    assert paths(store, SearchFilters(tags_any=("OPS", "nothing"))) == {
        "runbooks/Deploy.MD",
        "notes/scan.pdf",
    }
    assert paths(store, SearchFilters(tags_any=("finance",), tags=("ops",))) == {"notes/scan.pdf"}


def test_the_newest_listing_walks_dates_and_honours_filters(store: Store) -> None:
    corpus(store)
    newest = store.newest_chunks(SearchFilters(), limit=3)
    rows = store.chunks_by_rowid(newest)
    assert [rows[r].path for r in newest] == [
        "runbooks/Deploy.MD",
        "runbooks/db/failover.md",
        "notes/日本語/メモ.md",
    ]
    assert [rows[r].date for r in newest] == [mtime_day(SAME_DAY_NS), "2026-02-01", "2025-12-24"]
    only_adr = store.newest_chunks(SearchFilters(path_prefix="adr/"), limit=10)
    assert [store.chunks_by_rowid(only_adr)[r].path for r in only_adr] == [
        "adr/0002-queue.md",
        "adr/0001-flags.md",
    ]


def test_facets_count_documents_and_values(store: Store) -> None:
    corpus(store)
    facets = {name: (n, values) for name, n, values in store.field_facets(fields=10, values=2)}
    assert facets["status"] == (4, [("accepted", 2), ("open", 1)])
    assert facets["title"][0] == 6
    assert store.has_field("status") and not store.has_field("stauts")
    assert store.date_sources() == {"frontmatter:date": 5, "mtime": 1}


def test_dates_and_fields_follow_rewrites_touches_and_deletes(store: Store) -> None:
    [doc_id] = write(store, doc("a.md", fields={"status": "open"}))
    assert store.document("a.md").dated == DocumentDate(mtime_day(SAME_DAY_NS), "mtime")  # type: ignore[union-attr]
    later = SAME_DAY_NS + 40 * 86_400 * 10**9
    with store.transaction() as tx:
        tx.touch_document(doc_id, 100, later)
    assert store.document("a.md").dated == DocumentDate(mtime_day(later), "mtime")  # type: ignore[union-attr]
    with store.transaction() as tx:
        tx.write_document(doc("a.md", day="2020-02-02", fields={"status": "closed"}), replaces=doc_id)
        tx.touch_document(doc_id, 100, SAME_DAY_NS)  # a front-matter date does not follow the file's time
    assert store.document("a.md").dated == DocumentDate("2020-02-02", "frontmatter:date")  # type: ignore[union-attr]
    assert paths(store, SearchFilters(where=(FieldCondition("status", ("open",)),))) == set()
    assert paths(store, SearchFilters(where=(FieldCondition("status", ("closed",)),))) == {"a.md"}
    with store.transaction() as tx:
        tx.delete_document(doc_id)
    assert not store.has_field("status") and store.date_sources() == {}


def test_the_chunks_a_filter_passes_come_as_a_set_no_caller_can_change(store: Store) -> None:
    """Stores hand the same set to every search narrowed alike, and the graph keeps its scan keyed on
    it (``search/ann.py``): a mutable set changed by one caller would have changed every other's."""
    corpus(store)
    allowed = store.filtered_rowids(SearchFilters(path_globs=("runbooks/**",)))
    assert isinstance(allowed, frozenset) and allowed
