"""The bilingual bridge: the query's words in the other language, for the keyword leg (decision 0027).

The fake embedder knows no other language, so these tests give the Japanese note an English word
the query shares (an API name, as real notes have), which gives it the dense similarity the bridge
is gated on; what the bridge adds is then its own part of the score, shown in ``explain``.
"""

from __future__ import annotations

from pathlib import Path

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.search.bridge import bridge_query
from kbseek.text.analyzer import terms
from tests.conftest import write_notes
from tests.fakes import FakeEmbedder

NOTES = {
    "ja/effects.md": "# 副作用\n\nuseEffect で副作用を扱う。状態を共有するときは親に持ち上げる。\n",
    "en/memo.md": "# Memo\n\nuseEffect runs after paint. Keep the dependency list short.\n",
}


def _kb(root: Path, **overrides: float) -> KnowledgeBase:
    write_notes(root, NOTES)
    kb = KnowledgeBase(
        settings=Settings(root=root, freshness_interval_s=0.0, **overrides), embedder=FakeEmbedder()
    )
    kb.load_semantic()
    kb.index()
    return kb


def test_only_translations_the_index_holds_are_searched(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    store = kb.retrieval().store
    bridge = bridge_query(store, "share the side effects")
    words = dict(bridge.groups)
    assert words[" ".join(terms("side effect"))] == (("副", "作用"),)
    assert ("共有",) in words["shar"]  # the sense this knowledge base uses
    assert "株" not in bridge.terms and "株式" not in bridge.terms  # senses it never uses
    assert bridge_query(store, "the and of").groups == ()  # function words translate into nothing
    kb.close()


def test_the_bridge_adds_its_part_to_a_page_in_the_other_language(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    found = kb.search("useEffect side effects", explain=True)
    japanese = next(h for h in found.hits if h.path == "ja/effects.md")
    english = next(h for h in found.hits if h.path == "en/memo.md")
    assert japanese.explain is not None and japanese.explain.bridge > 0
    assert english.explain is not None and english.explain.bridge == 0
    kb.close()
    off = _kb(tmp_path, bridge_weight=0.0)
    hit = next(
        h for h in off.search("useEffect side effects", explain=True).hits if h.path == "ja/effects.md"
    )
    assert hit.explain is not None and hit.explain.bridge == 0
    assert hit.score < japanese.score
    off.close()


def test_a_page_the_meaning_does_not_reach_gains_nothing(tmp_path: Path) -> None:
    """Gated on the dense leg: 副作用 matches, but the query's meaning shares nothing with the page."""
    kb = _kb(tmp_path)
    found = kb.search("side effects", explain=True)
    assert all(h.explain is not None and h.explain.bridge == 0 for h in found.hits)
    kb.close()


def test_without_a_model_the_bridge_alone_reaches_the_other_language(kb_root: Path) -> None:
    """Lexical only, nothing gates the bridge: an English question finds the Japanese note by its
    words' translations (kitten → 猫, pictures → 写真, channel → チャンネル), weighed below 1."""
    from tests.conftest import make_core

    core = make_core(kb_root)
    core.index()
    found = core.search("kitten pictures channel", explain=True)
    assert found.hits and found.hits[0].path == "notes/障害対応.md"
    top = found.hits[0]
    assert top.explain is not None and 0 < top.explain.bridge <= Settings(root=kb_root).bridge_weight + 1e-9
    assert not make_core(kb_root, bridge_weight=0.0).search("kitten pictures channel").hits
    core.close()


def test_without_a_model_the_bridge_is_a_share_of_the_querys_own_best_score(tmp_path: Path) -> None:
    """Lexical-only scores are raw BM25: the bridge's part is in those units, at most the weight
    times the query's own best, so it never swamps the query's words nor vanishes beside them."""
    filler = {
        f"misc/{i}.md": f"# Note {i}\n\nGroceries, weather and travel plans number {i}.\n" for i in range(20)
    }
    write_notes(tmp_path, {**NOTES, **filler})  # enough documents for BM25's weights to be far from 0
    kb = KnowledgeBase(settings=Settings(root=tmp_path, semantic=False, freshness_interval_s=0.0))
    kb.index()
    found = kb.search("useEffect side effects", explain=True)
    explained = {h.path: h.explain for h in found.hits}
    own_best = max(e.lexical_score or 0.0 for e in explained.values() if e is not None)
    japanese = explained["ja/effects.md"]
    assert own_best > 0.5
    assert japanese is not None and 0 < japanese.bridge <= kb.settings.bridge_weight * own_best + 1e-6
    kb.close()
