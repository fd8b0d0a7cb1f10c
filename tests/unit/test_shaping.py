"""Response shaping from plain values: caps, notes and their codes, empty explanations, fitting (T3, T4).

No store, no model, no server: ``kbseek.facade.shaping`` is pure, so every wording and cap is checked on
responses built by hand.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kbseek.config import Limits
from kbseek.facade.request import search_request
from kbseek.facade.response_cap import fit_search
from kbseek.facade.semantic import SemanticState
from kbseek.facade.shaping import (
    FoundRun,
    clamp,
    document_response,
    empty_explanation,
    fetch_args,
    fetch_response,
    resource_text,
    search_response,
    semantic_for_search,
    topics_response,
)
from kbseek.facade.status import StatusFacts, status_response
from kbseek.filters import NO_FILTERS, Filters, SearchFilters
from kbseek.ingest.guard import LoadedDocument
from kbseek.responses import IndexSummary, MissingChunk, SearchResponse
from kbseek.search.fts_query import CompiledQuery
from kbseek.search.fusion import Fused
from kbseek.search.passages import JoinedText
from kbseek.search.pipeline import PipelineResult, RankedHit
from kbseek.search.request import SearchRequest
from kbseek.search_query import SearchQuery
from kbseek.store.records import ChunkRow
from kbseek.text.plurals import counted
from kbseek.text.snippets import Snippet

LIMITS = Limits()
INDEXED = IndexSummary(documents=3, chunks=7, indexing=False, embedded=None)


def chunk(n: int, text: str = "a chunk about rollbacks", path: str = "runbooks/deploy.md") -> ChunkRow:
    return ChunkRow(
        rowid=n, chunk_id=f"c_{n:016}", document_id=1, path=path, title="Deploy", ordinal=n,
        start=n * 100, end=n * 100 + len(text), line_start=n, line_end=n, heading_path=("Deploy",),
        text=text, content_hash=f"h{n}",
    )  # fmt: skip


def ranked(n: int, snippet: str = "a chunk about rollbacks") -> RankedHit:
    return RankedHit(
        chunk(n),
        Snippet(snippet, 0, len(snippet), ((2, 7),), 1),
        Fused(n, 1.0 / n, lexical_rank=n),
        ("Deploy",),
    )


def result(hits: list[RankedHit], *, terms: tuple[str, ...] = ("rollback",), **flags: bool) -> PipelineResult:
    return PipelineResult(
        hits=hits, compiled=CompiledQuery(terms=terms, dropped=()), semantic_used=False,
        more_available=flags.get("more", False), low_confidence=flags.get("low", False),
    )  # fmt: skip


def shaped(hits: list[RankedHit]) -> SearchResponse:
    return search_response(
        search_request(LIMITS, SearchQuery("rollback")), result(hits), limits=LIMITS, servable={"runbooks/deploy.md"},
        semantic=SemanticState.OFF, semantic_error=None, summary=INDEXED, extensions={".md", ".txt"},
    )  # fmt: skip


def test_a_clamped_argument_is_said_in_the_notes_and_an_omitted_one_takes_the_default() -> None:
    notes: list[str] = []
    assert clamp("limit", None, 8, 1, 50, notes) == 8 and notes == []
    assert clamp("limit", 0, 8, 1, 50, notes) == 1
    assert clamp("limit", 99, 8, 1, 50, notes) == 50
    assert notes == ["limit=0 was raised to the minimum 1", "limit=99 was clamped to the maximum 50"]
    args = search_request(
        Limits(default_limit=3),
        SearchQuery(
            "q",
            snippet_chars=5,
            filters=Filters(path_prefix="/runbooks/", tags=[" a ", ""]),
        ),
    )
    assert (args.limit, args.snippet_chars, args.filters) == (3, 40, SearchFilters("runbooks/", ("a",)))
    assert args.notes == ("snippet_chars=5 was raised to the minimum 40",)


def test_a_search_response_has_one_code_per_note_and_uris_only_for_servable_paths() -> None:
    args = search_request(LIMITS, SearchQuery("rollback", limit=500))
    other = RankedHit(chunk(2, path="notes/big.pdf"), Snippet("x", 0, 1, (), 0), Fused(2, 0.5), ("Deploy",))
    r = search_response(
        args, result([ranked(1), other], more=True), limits=LIMITS, servable={"runbooks/deploy.md"},
        semantic=SemanticState.LOADING, semantic_error=None, summary=INDEXED, extensions={".md"},
    )  # fmt: skip
    assert [h.uri for h in r.hits] == ["kb://doc/runbooks/deploy.md", None]
    assert r.note_codes == ["clamped", "more_hits", "semantic_loading"]
    assert len(r.notes) == len(r.note_codes) and r.truncated
    assert r.legs.lexical == "ok" and r.legs.semantic == "loading"
    assert r.hits[0].highlights == [[2, 7]] and r.hits[0].explain is None


def test_a_loaded_model_that_covers_part_of_the_index_is_shown_as_partial() -> None:
    summary = IndexSummary(documents=3, chunks=7, indexing=True, embedded=2)
    state, note, code = semantic_for_search(SemanticState.OK, None, summary)
    assert (state, code) == (SemanticState.PARTIAL, "semantic_partial")
    assert note is not None and "covers 2 of 7 chunks" in note and "still running" in note
    full = summary.model_copy(update={"embedded": 7})
    assert semantic_for_search(SemanticState.OK, None, full) == (SemanticState.OK, None, None)
    state, note, code = semantic_for_search(SemanticState.UNAVAILABLE, "no model", full)
    assert code == "semantic_unavailable" and note is not None and note.endswith("no model")


def test_an_empty_result_says_whether_nothing_matched_or_nothing_is_indexed() -> None:
    running = IndexSummary(documents=0, chunks=0, indexing=True)
    assert "first indexing pass is still running" in empty_explanation(running, False, NO_FILTERS, {".md"})
    empty = running.model_copy(update={"indexing": False})
    assert "no indexable files (.md, .txt)" in empty_explanation(empty, False, NO_FILTERS, {".txt", ".md"})
    scoped = empty_explanation(INDEXED, False, SearchFilters("notes/", ("ops",)), {".md"})
    assert (
        "within the filters (path_prefix=notes/; tags=ops)" in scoped and "3 documents and 7 chunks" in scoped
    )
    assert "no searchable words" in empty_explanation(INDEXED, True, NO_FILTERS, {".md"})
    r = search_response(
        search_request(LIMITS, SearchQuery("- :")), result([], terms=()), limits=LIMITS, servable=set(),
        semantic=SemanticState.OFF, semantic_error=None, summary=INDEXED, extensions={".md"},
    )  # fmt: skip
    assert r.legs.lexical == "no_terms" and r.note_codes == ["empty"]


def test_a_response_over_the_cap_drops_hits_from_the_end_and_says_so() -> None:
    big = [ranked(n, "word " * 200) for n in range(1, 6)]
    full = shaped(big)
    cut = fit_search(full, 3000)
    assert 0 < len(cut.hits) < 5 and cut.truncated
    assert cut.note_codes[-1] == "cut_to_fit" and len(cut.notes) == len(cut.note_codes)
    assert f"cut to {len(cut.hits)} hit" in cut.notes[-1]
    assert fit_search(cut, 10**9) is cut


def test_a_cut_search_response_fits_its_cap_with_the_note_and_keeps_every_hit_that_fits() -> None:
    full = shaped([ranked(n, "word " * 60) for n in range(1, 6)])
    size = len(full.model_dump_json())
    no_hits = len(fit_search(full, 999).model_dump_json())  # the note alone (a 3-digit cap in its text)
    for cap in range(no_hits, size, 7):
        cut = fit_search(full, cap)
        assert len(cut.model_dump_json()) <= cap, cap
        k = len(cut.hits)
        assert cut.note_codes[-1] == "cut_to_fit" and f"cut to {counted(k, 'hit')} " in cut.notes[-1]
        if k + 1 < len(full.hits):  # one hit more, with the note that would say so, does not fit
            note = cut.notes[-1].replace(counted(k, "hit"), counted(k + 1, "hit"))
            more = cut.model_copy(update={"hits": full.hits[: k + 1], "notes": [*cut.notes[:-1], note]})
            assert len(more.model_dump_json()) > cap, cap


def test_a_fetch_never_returns_more_passage_text_than_its_cap_however_many_runs_are_cut() -> None:
    args = fetch_args(LIMITS, ["c_1", "c_2", "c_3"], 0)
    runs = [
        FoundRun(JoinedText(c.start, c.end, c.text, (c,)), [c.chunk_id])
        for c in (chunk(n, "y" * 40) for n in (1, 2, 3))
    ]
    r = fetch_response(args, runs, [], servable=set(), max_fetch_chars=50)
    # The cap counts the text read from the documents; the notes saying where to read on are extra.
    assert sum(len(p.text) for p in r.passages) == 50
    assert [(len(p.text), p.truncated) for p in r.passages] == [(40, False), (10, True), (0, True)]
    assert [n.split("offset=")[1] for n in r.notes] == [f"{chunk(2).start + 10})", f"{chunk(3).start})"]


def test_a_document_window_never_exceeds_max_chars_whatever_notes_it_carries() -> None:
    doc = LoadedDocument("a.md", "x" * 500, "text/markdown", 500, "md")
    for max_chars in (1, 7, 499, 500, 10**9):
        r = document_response(
            doc,
            offset=-1,
            max_chars=max_chars,
            limits=Limits(default_document_chars=200, max_document_chars=300),
            indexed=False,
        )
        assert r.returned_chars == len(r.text) <= min(max_chars, 300) and r.notes


def test_a_cut_resource_keeps_exactly_its_cap_of_text_and_then_says_where_the_rest_is() -> None:
    text = "z" * 100
    assert resource_text("a.md", text, 100) == text
    cut = resource_text("a.md", text, 30)
    body, note = cut.split("\n\n---\n", 1)
    assert body == "z" * 30 and "at character 30 of 100" in note and "offset=30" in note


def test_topic_caps_count_topics_and_titles_whatever_the_notes_say() -> None:
    titles = {f"t{i}/": [f"doc {j}" for j in range(i + 1)] for i in range(5)}
    limits = Limits(max_topics=3, max_titles_per_topic=1)
    r = topics_response(titles, limits=limits, summary=INDEXED)
    assert len(r.topics) == 3 and all(len(t.titles) <= 1 for t in r.topics)
    assert [t.more_titles for t in r.topics] == [0, 1, 2] and len(r.notes) == 2


def test_fetch_ids_are_deduplicated_capped_and_a_cut_passage_says_where_to_read_on() -> None:
    args = fetch_args(Limits(max_chunk_ids=2), [" a ", "a", "b", "c", ""], 9)
    assert args.ids == ("a", "b") and args.truncated and args.context == 5
    assert args.notes == (
        "context=9 was clamped to the maximum 5",
        "3 chunk ids were given; only the first 2 were fetched",
    )
    c = chunk(1, "x" * 50)
    run = JoinedText(c.start, c.end, c.text, (c,))
    missing = [MissingChunk(chunk_id="zz", status="unknown", message="unknown id")]
    r = fetch_response(args, [FoundRun(run, ["c_1"])], missing, servable=set(), max_fetch_chars=20)
    p = r.passages[0]
    assert (p.text, p.end, p.truncated, p.uri) == ("x" * 20, c.start + 20, True, None)
    assert f"offset={c.start + 20}" in r.notes[-2] and "search again" in r.notes[-1]


def test_a_document_window_names_the_offset_of_the_rest() -> None:
    doc = LoadedDocument("a.md", "0123456789", "text/markdown", 10, "md")
    r = document_response(doc, offset=-3, max_chars=4, limits=LIMITS, indexed=False)
    assert (r.text, r.offset, r.next_offset, r.truncated) == ("0123", 0, 4, True)
    assert r.notes[0] == "offset=-3 was raised to 0" and "offset=4" in r.notes[1]
    assert "not in the search index" in r.notes[-1]
    end = document_response(doc, offset=99, max_chars=None, limits=LIMITS, indexed=True)
    assert end.text == "" and "past the end of the document (10 characters)" in end.notes[0]


def test_topics_are_capped_with_notes() -> None:
    titles = {f"t{i}/": [f"doc {j}" for j in range(3)] for i in range(4)}
    r = topics_response(titles, limits=Limits(max_topics=2, max_titles_per_topic=2), summary=INDEXED)
    assert [t.prefix for t in r.topics] == ["t0/", "t1/"] and r.truncated
    assert r.topics[0].titles == ["doc 0", "doc 1"] and r.topics[0].more_titles == 1
    assert len(r.notes) == 2
    assert topics_response({}, limits=LIMITS, summary=INDEXED).notes == ["nothing is indexed yet"]


def test_a_cap_of_one_reads_in_the_singular_in_every_note_that_names_it() -> None:
    titles = {"t/": ["doc 0", "doc 1"]}
    one = topics_response(titles, limits=Limits(max_titles_per_topic=1), summary=INDEXED)
    assert one.notes[0].startswith("each topic lists at most 1 title; ")
    assert (
        "at most 2 titles; "
        in topics_response(
            {"t/": ["a", "b", "c"]}, limits=Limits(max_titles_per_topic=2), summary=INDEXED
        ).notes[0]
    )
    c = chunk(1, "x" * 5)
    fetched = fetch_response(
        fetch_args(LIMITS, ["c_1"], 0),
        [FoundRun(JoinedText(c.start, c.end, c.text, (c,)), ["c_1"])],
        [],
        servable=set(),
        max_fetch_chars=1,
    )
    assert "was cut at 1 character per fetch" in fetched.notes[0]
    cut = fit_search(shaped([ranked(1)]), 1)
    assert "cut to 0 hits to stay under 1 character;" in cut.notes[-1]


def test_status_notes_say_what_to_run_and_what_is_wrong() -> None:
    facts = StatusFacts(
        root=Path("/kb"), index_path="/kb/.kbseek/index.sqlite", documents=0, chunks=0,
        skipped=[("a.rst", "no parser"), ("b.rst", "no parser")], warnings=[], last_pass_at=None,
        indexing=False, progress=None, last_pass_seconds=None, semantic=SemanticState.OFF, embedded=None,
        semantic_note=None, semantic_error="not installed", model=None, watcher="off", parsers=["md"],
        config_note=None, other_writer="pid 7, kbseek serve", last_error=None,
        index_command="kbseek index --kb /kb", nothing_found="nothing found",
    )  # fmt: skip
    r = status_response(facts, max_skipped=1)
    assert r.skipped_total == 2 and len(r.skipped) == 1 and r.semantic == "off"
    assert r.notes[0] == "semantic search unavailable: not installed"
    assert "pid 7, kbseek serve" in r.notes[1] and "2 paths were skipped" in r.notes[2]
    assert r.notes[3] == "not indexed yet: run `kbseek index --kb /kb` to build the index"
    indexed_empty = status_response(
        StatusFacts(**{**facts.__dict__, "last_pass_at": 1.0, "other_writer": None}), max_skipped=5
    )
    assert indexed_empty.notes[-1] == "nothing found" and indexed_empty.last_index_at is not None


@pytest.mark.parametrize(
    ("query", "other"), [("rollback the load balancer", "Japanese"), ("ロールバックの手順", "English")]
)
def test_weak_hits_without_alternatives_suggest_the_question_in_the_other_language(
    query: str, other: str
) -> None:
    def respond(
        args: SearchRequest, hits: list[RankedHit], low: bool, japanese: bool = True
    ) -> SearchResponse:
        return search_response(
            args, result(hits, low=low), limits=LIMITS, servable=set(), semantic=SemanticState.OK,
            semantic_error=None, summary=INDEXED, extensions={".md"},
            holds_japanese=lambda: japanese,
        )  # fmt: skip

    r = respond(search_request(LIMITS, SearchQuery(query)), [ranked(1)], low=True)
    assert r.note_codes == ["try_other_language"]
    assert f"may be in {other}" in r.notes[0] and "also=[the question in" in r.notes[0]
    assert (
        respond(search_request(LIMITS, SearchQuery(query, also=["x y"])), [ranked(1)], low=True).note_codes
        == []
    )
    assert respond(search_request(LIMITS, SearchQuery(query)), [ranked(1)], low=False).note_codes == []
    assert (
        "try_other_language"
        not in respond(search_request(LIMITS, SearchQuery(query)), [], low=True).note_codes
    )
    absent = search_response(
        search_request(LIMITS, SearchQuery(query)), replace(result([ranked(1)], low=True), absent_names=("Kafka",)),
        limits=LIMITS, servable=set(), semantic=SemanticState.OK, semantic_error=None, summary=INDEXED,
        extensions={".md"},
    )  # fmt: skip
    assert absent.note_codes == ["absent_names"]  # the absent name explains the weak hits
    # an English-only knowledge base: no Japanese page to miss, so an English query gets no hint
    english_only = respond(
        search_request(LIMITS, SearchQuery(query)), [ranked(1)], low=True, japanese=False
    ).note_codes
    assert english_only == ([] if other == "Japanese" else ["try_other_language"])


def test_the_knowledge_bases_languages_are_asked_only_when_the_hint_could_be_given() -> None:
    asked: list[bool] = []

    def holds_japanese() -> bool:
        asked.append(True)
        return True

    for low in (False, True):
        search_response(
            search_request(LIMITS, SearchQuery("rollback")), result([ranked(1)], low=low), limits=LIMITS, servable=set(),
            semantic=SemanticState.OK, semantic_error=None, summary=INDEXED, extensions={".md"},
            holds_japanese=holds_japanese,
        )  # fmt: skip
        assert len(asked) == int(low)  # a confident search never reads the index for it
