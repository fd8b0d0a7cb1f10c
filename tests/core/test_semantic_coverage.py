"""What semantic search covers, said honestly: by ``status`` without a model, and by search mid-embedding.

A newcomer saw ``semantic: loading`` from every ``kbseek status`` (the CLI never loads the model
for it), and ``semantic: ok`` from search while the background pass had embedded almost nothing.
The fake embedder stands in for the real model: these tests are about the counts.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from tests.fakes import FakeEmbedder


def semantic_core(root: Path, embedder: FakeEmbedder | None = None, **overrides: Any) -> KnowledgeBase:
    return KnowledgeBase(
        settings=Settings(root=root, freshness_interval_s=0.0, **overrides),
        embedder=embedder if embedder is not None else FakeEmbedder(),
    )


def test_status_without_the_model_reads_the_index_instead_of_saying_loading(kb_root: Path) -> None:
    writer = semantic_core(kb_root)
    writer.load_semantic()
    writer.index()
    chunks = writer.store.counts()[1]
    writer.close()

    model = FakeEmbedder()
    looker = semantic_core(kb_root, model, semantic=True)  # what `kbseek status` builds
    try:
        s = looker.status()
        assert s.semantic == "ok" and s.embedded == chunks
        assert model.load_attempts == 0  # the counts came from the index; the model never loaded
    finally:
        looker.close()


def test_status_without_the_model_counts_chunks_that_have_no_vector_yet(kb_root: Path) -> None:
    lexical = semantic_core(kb_root)
    lexical.index(embed=False)  # as `kbseek index --lexical-only` leaves it
    chunks = lexical.store.counts()[1]
    lexical.close()

    looker = semantic_core(kb_root)
    try:
        s = looker.status()
        assert (s.semantic, s.embedded) == ("partial", 0)
        assert any(
            f"{chunks} chunks of {chunks} have no vector yet" in n and "kbseek index" in n for n in s.notes
        )
    finally:
        looker.close()


def test_status_without_the_model_names_an_index_of_another_model(kb_root: Path) -> None:
    writer = semantic_core(kb_root)
    writer.load_semantic()
    writer.index()
    writer.close()
    with sqlite3.connect(kb_root / ".kbseek" / "index.sqlite") as conn:
        conn.execute("UPDATE meta SET value = 'another-model:1' WHERE key = 'embed_model'")
    looker = semantic_core(kb_root)
    try:
        s = looker.status()
        assert s.semantic == "unavailable" and s.embedded is None
        assert any("kbseek index --reembed" in n for n in s.notes)
    finally:
        looker.close()


def test_a_server_loading_its_model_still_says_loading(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kbseek.kb.SEARCH_PATIENCE", 0.2)  # a search waits this long for the model
    release = threading.Event()  # the model's load waits until the test lets it go: still coming up
    core = semantic_core(kb_root, FakeEmbedder(gate=release))
    try:
        core.index(embed=False)
        core.start_background()  # the model loads on the server's own thread; status does not wait
        assert core.status().semantic == "loading"
        assert core.search("rollback").legs.semantic == "loading"
    finally:
        release.set()
        core.close()


def test_index_and_search_load_the_model_when_first_needed(kb_root: Path) -> None:
    """No call-order trap: without load_semantic(), index() still embeds and search() uses the vectors."""
    core = semantic_core(kb_root)
    try:
        core.index()
        chunks = core.store.counts()[1]
        assert (core.status().semantic, core.status().embedded) == ("ok", chunks)
        r = core.search("rollback load balancer")
        assert r.legs.semantic == "ok" and r.index.embedded == chunks
    finally:
        core.close()
    searcher = semantic_core(kb_root)  # a fresh process that only searches
    try:
        r = searcher.search("rollback load balancer")
        assert r.legs.semantic == "ok" and "semantic_loading" not in r.note_codes
    finally:
        searcher.close()


def test_search_while_the_embedding_pass_runs_says_partial_with_counts_and_a_note(kb_root: Path) -> None:
    core = semantic_core(kb_root)
    try:
        core.index(embed=False)  # the server's lexical catch-up pass
        core.load_semantic()  # the model is up; no chunk has a vector yet
        chunks = core.store.counts()[1]
        seen: list[Any] = []

        def during_the_pass(*_: object) -> None:
            if not seen:  # the first progress call of the embedding pass
                seen.append((core.search("rollback load balancer"), core.status()))

        core.index(progress=during_the_pass)
        mid, status = seen[0]
        assert mid.legs.semantic == "partial"
        assert mid.index.indexing and (mid.index.embedded, mid.index.chunks) == (0, chunks)
        assert mid.hits, "lexical hits are still served"
        assert len(mid.note_codes) == len(mid.notes)
        note = mid.notes[mid.note_codes.index("semantic_partial")]
        assert f"covers 0 of {chunks} chunks" in note and "by their words only" in note
        assert "still running" in note
        assert (status.semantic, status.embedded, status.chunks) == ("partial", 0, chunks)

        after = core.search("rollback load balancer")
        assert after.legs.semantic == "ok" and after.index.embedded == chunks
        assert "semantic_partial" not in after.note_codes
        assert core.status().semantic == "ok"
    finally:
        core.close()


def test_every_search_note_has_its_code(kb_root: Path) -> None:
    core = semantic_core(kb_root, semantic=False)
    try:
        core.index()
        for args in ({"limit": 1000}, {"limit": 1}, {"query": "zzqx nothing"}, {"query": "- : ( )"}):
            query = str(args.pop("query", "runbook database"))
            r = core.search(query, **args)  # type: ignore[arg-type]
            assert len(r.note_codes) == len(r.notes) and r.notes, (query, args)
        r = core.search("runbook database", limit=1)
        assert r.note_codes == ["more_hits"]
        assert core.search("zzqx nothing").note_codes[-1] == "empty"
    finally:
        core.close()


def test_a_search_arriving_while_the_model_loads_waits_for_it_a_bounded_time(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot client (a script, an inspector, a host's first call) searched before the model was
    up and got keywords only, every time: the search now waits for the load, within a bound."""
    monkeypatch.setattr("kbseek.kb.SEARCH_PATIENCE", 5.0)
    release = threading.Event()
    core = semantic_core(kb_root, FakeEmbedder(gate=release))
    try:
        core.index(embed=False)
        core.start_background()
        threading.Timer(0.3, release.set).start()  # the model comes up while the search waits
        r = core.search("rollback")
        # up: "partial" while the background pass embeds what was indexed without the model, or "ok"
        # once it has (a fast embedder on a busy machine can finish first); never "loading"
        assert r.legs.semantic in ("partial", "ok") and "semantic_loading" not in r.note_codes
    finally:
        release.set()
        core.close()
