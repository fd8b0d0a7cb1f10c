"""Random filters against a knowledge base whose every document's facts are known: each search is
refused in words or answers at once, and keeps exactly the documents the filters state.

The expected documents are worked out here from the notes as written, by a reference that shares no
code with kbseek: a memoised glob matcher read straight from the documented rules, the prefix as a
folded string comparison, and the front matter as the dictionaries the notes were made from. Every
document holds the word the search asks for, so a passing document is always a hit and a failing
one never is. A call that does not return within ``HANG_S`` fails (a hang detector: each takes
milliseconds).
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek import Filters, KnowledgeBase
from kbseek.errors import InvalidArgument, KbError
from kbseek.filters import where_from_text
from tests.fakes import FakeEmbedder
from tests.unit.test_globs import finishes

FOLDERS = [
    "runbooks",
    "runbooks/db",
    "Design/ADR",
    "メモ",
    unicodedata.normalize("NFD", "ガイド/手順"),
    "a b",
    "k",
]
NAMES = ["failover.md", "Deploy.MD", "0001-flags.md", "パスワード.md", "notes v2.md", "x.y.md", "kkk.md"]
STATUSES = ["open", "accepted", "Closed", "in review"]
TAGS = ["ops", "DB", "設計", "payments"]
DAYS = ["2023-05-05", "2024-01-10", "2025-06-01", "2026-02-01", "2026-11-30"]


def _documents() -> dict[str, dict[str, Any]]:
    """Path → front matter, drawn from the lists above in a fixed rotation (no two the same)."""
    out: dict[str, dict[str, Any]] = {}
    for i in range(36):
        folder, name = FOLDERS[i % len(FOLDERS)], NAMES[(i * 5) % len(NAMES)]
        path = f"{folder}/{i}-{name}"
        front: dict[str, Any] = {"title": f"Note {i}", "date": DAYS[i % len(DAYS)]}
        if i % 3:
            front["status"] = STATUSES[i % len(STATUSES)]
        if i % 4 == 0:
            front["priority"] = i % 3
        front["tags"] = [TAGS[j] for j in range(len(TAGS)) if (i >> j) & 1]
        out[path] = front
    return out


DOCUMENTS = _documents()


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("fuzz") / "kb"
    for rel, front in DOCUMENTS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        body = (
            f"---\n{yaml.safe_dump(front, allow_unicode=True)}---\n# {front['title']}\n\nThe common word.\n"
        )
        path.write_text(body, encoding="utf-8")
    base = KnowledgeBase(root, index_dir=root.parent / "index", embedder=FakeEmbedder())
    base.index()
    yield base
    base.close()


# -- the reference ---------------------------------------------------------------------------------


def fold(text: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in unicodedata.normalize("NFC", text))


def glob_matches(glob: str, path: str) -> bool:
    """The documented rules, read directly: ``*`` within a folder, ``**`` across, ``**/`` any folders
    or none, ``?`` one character but ``/``; a run of stars is ``**``; no ``/``: a name in any folder;
    a trailing ``/``: everything under it. ASCII case and normal form aside."""
    glob = fold(glob.replace("\\", "/")).lstrip("/")
    while glob.startswith("./"):
        glob = glob[2:].lstrip("/")
    if "/" not in glob.rstrip("/"):
        glob = "**/" + glob
    if glob.endswith("/"):
        glob += "**"
    target = fold(path)

    @functools.cache
    def match(g: int, p: int) -> bool:
        if g == len(glob):
            return p == len(target)
        if glob[g] == "*":
            end = g
            while end < len(glob) and glob[end] == "*":
                end += 1
            if end - g >= 2:
                if glob.startswith("/", end):  # **/: any folders, or none
                    return match(end + 1, p) or any(
                        target[q] == "/" and match(end + 1, q + 1) for q in range(p, len(target))
                    )
                return any(match(end, q) for q in range(p, len(target) + 1))
            return any(match(end, q) for q in range(p, len(target) + 1) if "/" not in target[p:q])
        if p == len(target):
            return False
        if glob[g] == "?":
            return target[p] != "/" and match(g + 1, p + 1)
        return glob[g] == target[p] and match(g + 1, p + 1)

    return match(0, 0)


def value(raw: Any) -> str:
    text = " ".join(str(raw).split())
    return "".join(c.lower() if c.isascii() else c for c in text)


def passes(path: str, front: dict[str, Any], filters: Filters) -> bool:
    if filters.path_prefix is not None:
        typed = filters.path_prefix.strip()
        parts = [p for p in typed.split("/") if p not in ("", ".")]
        prefix = "/".join(parts) + ("/" if parts and typed.endswith("/") else "")
        if parts and not fold(path).startswith(fold(prefix)):
            return False
    if filters.path_globs and not any(glob_matches(g, path) for g in filters.path_globs):
        return False
    tags = {value(t) for t in front.get("tags", [])}
    if not all(value(t) in tags for t in filters.tags):
        return False
    if filters.tags_any and not any(value(t) in tags for t in filters.tags_any):
        return False
    if filters.after and front["date"] < str(filters.after):
        return False
    if filters.before and front["date"] > str(filters.before):
        return False
    for field, wanted in (filters.where or {}).items():
        held = front.get(field.lower())
        present = held is not None and held != []
        if isinstance(wanted, dict):
            if present != wanted["exists"]:
                return False
            continue
        options = wanted if isinstance(wanted, list) else [wanted]
        values = {value(v) for v in (held if isinstance(held, list) else [held])} if present else set()
        if not values & {value(w) for w in options}:
            return False
    return True


# -- the strategies --------------------------------------------------------------------------------

_SEGMENTS = sorted({s for p in DOCUMENTS for s in p.split("/")})
_WILD_PARTS = [
    "*",
    "**",
    "?*",
    "*.md",
    "*.MD",
    "k*",
    "*db*",
    "ガ*",
    "ガ*",
    "???",
    "*-flags.md",
    "1?-*",
    "***",
]
_PART = st.one_of(
    st.sampled_from(_SEGMENTS),
    st.sampled_from(_WILD_PARTS),
    st.lists(st.sampled_from([*_SEGMENTS, *_WILD_PARTS, "db", "?"]), min_size=2, max_size=3).map("".join),
)
_GLOB = st.builds(
    lambda parts, trailing: "/".join(parts) + ("/" if trailing else ""),
    st.lists(_PART, min_size=1, max_size=3),
    st.booleans(),
)
_ODD_PREFIXES = [
    "RUNBOOKS/",
    unicodedata.normalize("NFD", "ガイド/"),
    "メ",
    "run",
    "/runbooks",
    "runbooks/./db",
]
_DOTS = ["..", "../", "...", ".", "./", "runbooks/.."]
_PREFIX = st.sampled_from([*FOLDERS, *(f + "/" for f in FOLDERS), *_ODD_PREFIXES, *_DOTS])
_WHERE_VALUE = st.one_of(
    st.sampled_from([*STATUSES, "OPEN", "in  review", "missing"]),
    st.integers(0, 3),
    st.lists(st.sampled_from([*STATUSES, "ops", "db"]), min_size=1, max_size=3),
    st.builds(lambda e: {"exists": e}, st.booleans()),
)
_WHERE = st.dictionaries(st.sampled_from(["status", "priority", "tags", "Status"]), _WHERE_VALUE, max_size=2)
_DAY = st.one_of(st.none(), st.sampled_from([*DAYS, "2024-12-31", "2026-01-01"]))

FILTERS = st.builds(
    Filters,
    path_prefix=st.one_of(st.none(), _PREFIX),
    path_globs=st.lists(_GLOB, max_size=2),
    tags=st.lists(st.sampled_from([*TAGS, "ops", "Ops"]), max_size=2),
    tags_any=st.lists(st.sampled_from([*TAGS, "none"]), max_size=2),
    after=_DAY,
    before=_DAY,
    where=st.one_of(st.none(), _WHERE),
)
FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(FILTERS)
def test_every_hit_satisfies_the_filters_and_every_passing_document_is_a_hit(
    kb: KnowledgeBase, filters: Filters
) -> None:
    result: Any = finishes(lambda: _search(kb, filters))
    if isinstance(result, KbError):
        assert len(str(result)) < 600
        prefix = (filters.path_prefix or "").replace("\\", "/")
        climbs = ".." in prefix.split("/")
        contradicts = filters.after and filters.before and str(filters.after) > str(filters.before)
        assert climbs or contradicts or filters.path_globs, str(result)
        return
    found = {unicodedata.normalize("NFC", h.path) for h in result.hits}
    expected = {
        unicodedata.normalize("NFC", p) for p, front in DOCUMENTS.items() if passes(p, front, filters)
    }
    assert found == expected, filters


def _search(kb: KnowledgeBase, filters: Filters) -> Any:
    try:
        return kb.search("common", limit=50, filters=filters)
    except KbError as refused:  # a refusal; anything else is a bug and fails the test
        return refused


@FUZZ
@given(st.lists(st.sampled_from(["status=open", "status=Closed", "status", "!status", "priority=0", "!priority"]),
                max_size=4))  # fmt: skip
def test_where_typed_as_entries_never_lets_a_later_entry_replace_an_earlier(entries: list[str]) -> None:
    """Every entry a caller typed holds on every kept document, or the entries are refused."""
    try:
        where = where_from_text(entries)
    except InvalidArgument as refused:
        assert "both as required and as absent" in str(refused)
        fields = {e.lstrip("!").split("=")[0] for e in entries}
        assert any(f"!{f}" in entries for f in fields)
        return
    for entry in entries:
        field = entry.lstrip("!").split("=")[0]
        if entry.startswith("!"):
            assert where[field] == {"exists": False}
        elif "=" in entry:
            assert entry.split("=")[1] in where[field]
        else:
            assert where[field] == {"exists": True} or isinstance(where[field], list)


def test_dates_written_in_other_digits_are_refused(kb: KnowledgeBase) -> None:
    for written in ("２０２６-０２-０１", "٢٠٢٦-٠٢-٠١"):
        with pytest.raises(InvalidArgument, match="not a date"):
            kb.search("common", filters=Filters(after=written))
    assert kb.search("common", limit=50, filters=Filters(after=date(2026, 2, 1))).hits


def test_the_reference_glob_matcher_reads_the_documented_examples() -> None:
    assert glob_matches("runbooks/**", "runbooks/db/a.md") and not glob_matches(
        "runbooks/**", "notes/runbooks/a.md"
    )
    assert glob_matches("*.md", "a/b/c.md") and not glob_matches("runbooks/*.md", "runbooks/db/a.md")
    assert glob_matches("a/**/b.md", "a/b.md") and glob_matches("notes/", "notes/x/y.md")
    assert glob_matches("***k*/f.md", "x/y/kk/f.md") and not glob_matches("?", "/")
    assert glob_matches("ガイド/*", unicodedata.normalize("NFD", "ガイド/a.md"))
