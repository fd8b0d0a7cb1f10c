"""A pass runs in phases (scan, parse, embed), and a failed embed phase is made good by the next check."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.errors import EmbedderUnavailable
from kbseek.progress import ProgressSnapshot
from tests.fakes import FakeEmbedder


@pytest.fixture
def semantic(kb_root: Path) -> tuple[KnowledgeBase, FakeEmbedder]:
    embedder = FakeEmbedder()
    core = KnowledgeBase(settings=Settings(root=kb_root, freshness_interval_s=0.0), embedder=embedder)
    core.load_semantic()
    return core, embedder


def test_a_pass_reports_scan_then_parse_then_embed_with_their_totals(
    semantic: tuple[KnowledgeBase, FakeEmbedder],
) -> None:
    core, _ = semantic
    seen: list[ProgressSnapshot] = []
    report = core.index(progress=seen.append)
    phases = [s.phase for s in seen if s.done == 0]  # the model was loaded: no model phase
    assert phases[:2] == ["scan", "parse"] and set(phases[2:]) <= {"embed"}
    scan_end = [s for s in seen if s.phase == "scan"][-1]
    assert (scan_end.done, scan_end.total, scan_end.unit) == (4, 4, "files")
    parse = [s for s in seen if s.phase == "parse"]
    assert [s.done for s in parse] == [0, 1, 2, 3, 4] and {s.total for s in parse} == {4}
    assert {s.item for s in parse[:-1]} == {
        "notes/plain.txt", "notes/障害対応.md", "runbooks/database/backup.md", "runbooks/deploy.md"
    }  # fmt: skip
    # What was not embedded while parsing is the embed phase's work, counted from zero to its total.
    embed = [s for s in seen if s.phase == "embed"]
    assert not embed or embed[-1].done == embed[-1].total <= report.chunks_embedded
    assert all(s.unit == "chunks" for s in embed)
    assert report.chunks_embedded == core.status().embedded == core.store.counts()[1] > 0

    seen.clear()
    core.index(progress=seen.append)  # nothing changed: a scan, and no phase with nothing to do
    assert {s.phase for s in seen} == {"scan"}
    core.close()


def test_a_pass_with_nothing_to_embed_never_loads_the_model(kb_root: Path) -> None:
    embedder = FakeEmbedder()
    first = KnowledgeBase(settings=Settings(root=kb_root, freshness_interval_s=0.0), embedder=embedder)
    seen: list[ProgressSnapshot] = []
    first.index(progress=seen.append)  # a first pass loads it, as its own phase
    phases = [s.phase for s in seen if s.done == 0]
    assert phases[:3] == ["scan", "model", "parse"] and set(phases[3:]) <= {"embed"}
    first.close()

    again = FakeEmbedder()
    second = KnowledgeBase(settings=Settings(root=kb_root, freshness_interval_s=0.0), embedder=again)
    seen.clear()
    report = second.index(progress=seen.append)
    assert not report.changed and again.loads == 0 and {s.phase for s in seen} == {"scan"}
    (kb_root / "runbooks" / "deploy.md").write_text("# Deploy\n\nchanged\n", encoding="utf-8")
    second.index(progress=seen.append)  # now there is something to embed
    assert again.loads == 1 and second.search("changed").hits[0].path == "runbooks/deploy.md"
    second.close()


def test_a_failed_embed_phase_keeps_keyword_search_and_the_next_check_embeds(
    semantic: tuple[KnowledgeBase, FakeEmbedder],
) -> None:
    core, embedder = semantic
    embedder.fail = "the model server is down"  # a model server that went away mid-session
    with pytest.raises(EmbedderUnavailable):
        core.index()
    assert core.store.counts()[0] == 4  # every document was written before the embed phase
    assert core.store.chunks_without_vectors()
    down = core.search("load balancer")  # the query cannot be embedded either: keywords answer, and say so
    assert down.hits[0].path == "runbooks/deploy.md"
    assert down.legs.semantic == "unavailable" and "semantic_unavailable" in down.note_codes
    assert any(n.endswith("the model server is down") for n in down.notes)

    embedder.fail = None
    core.refresh()  # no file changed, but the failed pass is owed
    assert core.store.chunks_without_vectors() == []
    made_good = core.last_report
    assert made_good is not None and made_good.chunks_embedded > 0
    core.refresh()  # once made good, an unchanged tree runs no pass
    assert core.last_report is made_good
    assert core.search("load balancer").legs.semantic == "ok"  # the next search asks the model again
    core.close()
