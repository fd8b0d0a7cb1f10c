"""A pass runs in phases (scan, parse, embed), and a failed embed phase is made good by the next check."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.errors import EmbedderUnavailable
from kbseek.progress import ProgressSnapshot


class FlakyEmbedder:
    """Hash vectors; fails while ``down`` is set, like a model server that went away."""

    model_id = "test-hash:1"
    dim = 8

    def __init__(self) -> None:
        self.down = False

    def load(self) -> None:
        pass

    def _vector(self, text: str) -> np.ndarray:
        v = np.frombuffer(hashlib.sha256(text.encode()).digest()[:32], dtype="<u4").astype(np.float32) + 1.0
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.down:
            raise EmbedderUnavailable("the model server is down")
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


@pytest.fixture
def semantic(kb_root: Path) -> tuple[KnowledgeBase, FlakyEmbedder]:
    embedder = FlakyEmbedder()
    core = KnowledgeBase(settings=Settings(root=kb_root, freshness_interval_s=0.0), embedder=embedder)  # type: ignore[arg-type]
    core.load_semantic()
    return core, embedder


def test_a_pass_reports_scan_then_parse_then_embed_with_their_totals(
    semantic: tuple[KnowledgeBase, FlakyEmbedder],
) -> None:
    core, _ = semantic
    seen: list[ProgressSnapshot] = []
    report = core.index(progress=seen.append)
    assert [s.phase for s in seen if s.done == 0] == ["scan", "parse", "embed"]
    scan_end = [s for s in seen if s.phase == "scan"][-1]
    assert (scan_end.done, scan_end.total, scan_end.unit) == (4, 4, "files")
    parse = [s for s in seen if s.phase == "parse"]
    assert [s.done for s in parse] == [0, 1, 2, 3, 4] and {s.total for s in parse} == {4}
    assert {s.item for s in parse[:-1]} == {
        "notes/plain.txt", "notes/障害対応.md", "runbooks/database/backup.md", "runbooks/deploy.md"
    }  # fmt: skip
    embed = [s for s in seen if s.phase == "embed"]
    assert embed[-1].done == embed[-1].total == report.chunks_embedded > 0
    assert all(s.unit == "chunks" for s in embed)

    seen.clear()
    core.index(progress=seen.append)  # nothing changed: a scan, and no phase with nothing to do
    assert {s.phase for s in seen} == {"scan"}
    core.close()


def test_a_failed_embed_phase_keeps_keyword_search_and_the_next_check_embeds(
    semantic: tuple[KnowledgeBase, FlakyEmbedder],
) -> None:
    core, embedder = semantic
    embedder.down = True
    with pytest.raises(EmbedderUnavailable):
        core.index()
    assert core.store.counts()[0] == 4  # every document was written before the embed phase
    assert core.store.chunks_without_vectors()
    assert core.search("load balancer").hits[0].path == "runbooks/deploy.md"

    embedder.down = False
    core.refresh()  # no file changed, but the failed pass is owed
    assert core.store.chunks_without_vectors() == []
    made_good = core.last_report
    assert made_good is not None and made_good.chunks_embedded > 0
    core.refresh()  # once made good, an unchanged tree runs no pass
    assert core.last_report is made_good
    core.close()
