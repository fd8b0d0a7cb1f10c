"""The library API: ``from kbseek import KnowledgeBase``, validated up front, no call-order traps."""

from __future__ import annotations

import inspect
import pydoc
from pathlib import Path

import pytest

import kbseek
from kbseek import ConfigError, Filters, KbError, KnowledgeBase, Settings


def test_the_package_exports_a_sorted_api_holding_the_core_names() -> None:
    """The full boundary is pinned by ``tests/unit/test_public_api.py``; here: sorted, no repeats, and
    the names a first program uses."""
    assert kbseek.__all__ == sorted(set(kbseek.__all__))
    for name in (
        "ConfigError",
        "IndexReport",
        "KbError",
        "KnowledgeBase",
        "Library",
        "SearchResponse",
        "Settings",
    ):
        assert name in kbseek.__all__, name
    assert all(getattr(kbseek, name) is not None for name in kbseek.__all__)


def test_help_documents_every_public_method() -> None:
    text = pydoc.render_doc(kbseek.KnowledgeBase, renderer=pydoc.plaintext)
    for name in ("index", "search", "fetch", "read_document", "topics", "status", "close", "retrieval"):
        assert f"{name}(" in text, name
    undocumented = [
        name
        for name, member in inspect.getmembers(KnowledgeBase, inspect.isfunction)
        if not name.startswith("_") and not inspect.getdoc(member)
    ]
    assert not undocumented, undocumented


def test_a_path_with_a_tilde_is_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nwombats\n", encoding="utf-8")
    with KnowledgeBase("~/notes", semantic=False) as kb:
        assert kb.root == (tmp_path / "notes").resolve()
        kb.index()
        assert kb.search("wombats").hits[0].path == "a.md"


def test_a_missing_root_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(ConfigError, match="does not exist: pass the folder that holds your notes"):
        KnowledgeBase(missing)
    with pytest.raises(ConfigError, match="does not exist"):
        KnowledgeBase(settings=Settings(root=missing))
    assert not missing.exists()


def test_an_unknown_parser_is_a_config_error(kb_root: Path, tmp_path: Path) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text('[parsers]\nenabled = ["md", "rst"]\n', encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"unknown parser\(s\) rst in \[parsers\]\.enabled; available: md, txt, pdf"
    ):
        KnowledgeBase(kb_root, config=config)
    with pytest.raises(ConfigError, match="unknown parser"):
        Settings(root=kb_root, parsers=("md", "rst"))
    assert not (kb_root / ".kbseek").exists()


def test_a_reload_naming_an_unknown_parser_keeps_settings_and_parsers_together(
    kb_root: Path, tmp_path: Path
) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text('semantic = false\n[parsers]\nenabled = ["md"]\n', encoding="utf-8")
    with KnowledgeBase(kb_root, config=config) as kb:
        config.write_text('semantic = false\n[parsers]\nenabled = ["md", "rst"]\n', encoding="utf-8")
        kb.reload_settings()
        status = kb.status()
        assert kb.settings.parsers == ("md",) and status.parsers == ["md"]
        assert any("was not applied" in n and "unknown parser" in n for n in status.notes)


def test_settings_and_a_root_together_are_a_programming_error(kb_root: Path) -> None:
    with pytest.raises(TypeError, match="either settings="):
        KnowledgeBase(kb_root, settings=Settings(root=kb_root))


def test_settings_take_paths_as_strings_as_knowledge_base_does(kb_root: Path, tmp_path: Path) -> None:
    """Settings(root="...") failed with "'str' object has no attribute 'is_dir'" when opened."""
    settings = Settings(root=str(kb_root), index_dir=str(tmp_path / "index"), semantic=False)
    assert settings.root == kb_root and settings.index_dir == tmp_path / "index"
    with KnowledgeBase(settings=settings) as kb:
        assert kb.index().added and kb.search("deploy").hits
    with pytest.raises(ConfigError, match=r"Settings\.root must be a path, not int 7"):
        Settings(root=7)  # type: ignore[arg-type]


def test_read_only_creates_nothing_and_runs_no_pass(kb_root: Path) -> None:
    with KnowledgeBase(kb_root, semantic=False, read_only=True) as kb:
        status = kb.status()
        assert status.documents == 0 and "not indexed yet" in " ".join(status.notes)
        assert kb.read_document("runbooks/deploy.md").indexed is False
        with pytest.raises(KbError, match="only reads the index"):
            kb.index()
    assert not (kb_root / ".kbseek").exists()


def test_the_index_summary_and_last_report_follow_each_pass(kb_root: Path) -> None:
    with KnowledgeBase(kb_root, semantic=False) as kb:
        assert kb.last_report is None
        report = kb.index()
        assert kb.last_report is report and len(report.added) == 4
        assert kb.summary().documents == 4 and kb.index_path.endswith("index.sqlite")
        assert kb.status().semantic == "off"


def test_a_search_narrowed_to_one_file_returns_more_than_the_per_document_cap(tmp_path: Path) -> None:
    """Decision 0012's way to read more of one document: with no other document waiting, the
    per-document cap (3) no longer holds its chunks back."""
    sections = "\n\n".join(f"## Step {i}\n\n" + f"Rotate the signing key, part {i}. " * 40 for i in range(8))
    (tmp_path / "keys.md").write_text("# Key rotation\n\n" + sections + "\n", encoding="utf-8")
    (tmp_path / "other.md").write_text("# Other\n\nRotate the tyres of the car.\n", encoding="utf-8")
    with KnowledgeBase(tmp_path, semantic=False) as kb:
        kb.index()
        narrowed = kb.search("rotate signing key", filters=Filters(path_prefix="keys.md"), limit=6).hits
        assert len(narrowed) == 6 and {h.path for h in narrowed} == {"keys.md"}
        everywhere = kb.search("rotate", limit=6).hits
        paths = [h.path for h in everywhere]
        assert "other.md" in paths[:2] and paths.count("keys.md") == 5  # the other file is shown first
