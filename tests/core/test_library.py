"""Several knowledge bases as named collections: naming, the ``[[kb]]`` tables, the merge of a search
over several, and the command line's ``--kb`` given twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kbseek.cli import cli
from kbseek.errors import BadResourceUri, ConfigError, InvalidArgument
from kbseek.library import Library, collection_name, open_library, parse_kb_spec
from kbseek.uris import document_uri, parse_collection_uri, parse_uri
from tests.conftest import indexed_kb, write_notes


def test_a_collection_is_named_after_its_folder_or_by_name_equals_path(tmp_path: Path) -> None:
    assert collection_name("~/work/My Docs") == "My-Docs"
    assert parse_kb_spec("docs=~/work/docs") == ("docs", Path("~/work/docs").expanduser())
    odd = tmp_path / "a=b"
    odd.mkdir()
    assert parse_kb_spec(str(odd)) == ("a-b", odd)  # an existing folder with '=' is a path


def test_collection_uris_round_trip_and_one_kb_uris_are_unchanged() -> None:
    uri = document_uri("ops/デプロイ #1.md", "docs")
    assert uri.startswith("kb://docs/doc/ops/")
    ref = parse_collection_uri(uri)
    assert (ref.kb, ref.path, ref.kind) == ("docs", "ops/デプロイ #1.md", "doc")
    assert document_uri("a.md") == "kb://doc/a.md" and parse_uri("kb://doc/a.md").kb is None
    for bad in ("kb://doc/a.md", "kb://../doc/a.md", "kb://docs/doc/../x.md", "kb:///doc/a.md"):
        with pytest.raises(BadResourceUri):
            parse_collection_uri(bad)


def test_a_search_over_two_merges_by_score_and_is_unsure_only_when_both_are(tmp_path: Path) -> None:
    notes = indexed_kb(
        tmp_path / "notes", {"deploy.md": "# Deploy\n\npush the container image to the registry\n"}
    )
    docs = indexed_kb(tmp_path / "docs", {"keys.md": "# Keys\n\nrotate the signing key with keyctl\n"})
    with Library({"notes": notes, "docs": docs}) as lib:
        both = lib.search("rotate the signing key with keyctl")
        alone = {n: kb.search("rotate the signing key with keyctl") for n, kb in lib}
        with pytest.raises(InvalidArgument, match="notes, docs"):
            lib.search("x", kb="other")
        assert lib.pick(["docs", "notes"]) == ["notes", "docs"]
    scores = [h.score for h in both.hits]
    assert scores == sorted(scores, reverse=True)
    assert both.hits[0].kb == "docs" and both.hits[0].path == "keys.md"
    assert both.hits[0].score == alone["docs"].hits[0].score  # each collection's own score, unchanged
    assert both.low_confidence == (alone["notes"].low_confidence and alone["docs"].low_confidence)
    assert both.index.documents == 2


def test_a_collection_weak_keyword_match_scores_on_the_scale_of_the_best_over_all(tmp_path: Path) -> None:
    """One index holding both would normalise the keyword leg by the best match of all: a collection
    whose best match is weak must not score it as a perfect one when merged (decision 0037)."""
    notes = indexed_kb(tmp_path / "notes", {"misc.md": "# Misc\n\nrotate the tyres every spring\n"})
    docs = indexed_kb(tmp_path / "docs", {"keys.md": "# Keys\n\nrotate the signing key with keyctl\n"})
    query = "rotate the signing key with keyctl"
    with Library({"notes": notes, "docs": docs}) as lib:
        both = {h.kb: h.score for h in lib.search(query).hits}
        alone = {n: kb.search(query).hits[0].score for n, kb in lib}
    assert both["docs"] == pytest.approx(alone["docs"])
    assert both["notes"] < alone["notes"]
    assert max(both, key=lambda k: both[k]) == "docs"


def test_kb_tables_name_their_root_and_their_own_ignore(tmp_path: Path) -> None:
    write_notes(tmp_path / "a", {"x.md": "# X\n\nalpha\n", "drafts/y.md": "# Y\n\nalpha draft\n"})
    write_notes(tmp_path / "b", {"z.md": "# Z\n\nalpha too\n", "drafts/w.md": "# W\n\nalpha draft\n"})
    config = tmp_path / "kbseek.toml"
    config.write_text(
        'semantic = false\n\n[[kb]]\nname = "one"\nroot = "a"\nexclude_dirs = ["drafts"]\n\n[[kb]]\nroot = "b"\n',
        encoding="utf-8",
    )
    with open_library([], config=config) as lib:
        assert lib.names == ("one", "b") and lib.default == "one"
        for _, kb in lib:
            kb.index()
        paths = {(h.kb, h.path) for h in lib.search("alpha").hits}
    assert paths == {("one", "x.md"), ("b", "z.md"), ("b", "drafts/w.md")}


def test_kb_tables_refuse_unknown_keys_and_repeated_names(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    config = tmp_path / "kbseek.toml"
    config.write_text('[[kb]]\nroot = "a"\nfusion = "rrf"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key 'fusion'"):
        open_library([], config=config)
    with pytest.raises(ConfigError, match="two collections are named 'a'"):
        open_library([str(tmp_path / "a"), f"a={tmp_path / 'a'}"])


def test_only_serve_takes_several_knowledge_bases(tmp_path: Path) -> None:
    for name in ("a", "b"):
        write_notes(tmp_path / name, {"n.md": "# N\n\ntext\n"})
    result = CliRunner().invoke(cli, ["status", "--kb", str(tmp_path / "a"), "--kb", str(tmp_path / "b")])
    assert result.exit_code == 2 and "only serve takes several" in result.output
    served = CliRunner().invoke(
        cli, ["serve", "--kb", str(tmp_path / "a"), "--kb", str(tmp_path / "b"), "--index-dir", str(tmp_path)]
    )
    assert served.exit_code == 2 and "--index-dir" in served.output


def test_a_search_over_several_runs_each_collections_keyword_legs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shared keyword scale is measured with the legs the search then ranks from: each store is
    asked for each phrasing's candidates once, not once for the scale and again for the search."""
    notes = indexed_kb(tmp_path / "notes", {"misc.md": "# Misc\n\nrotate the tyres every spring\n"})
    docs = indexed_kb(tmp_path / "docs", {"keys.md": "# Keys\n\nrotate the signing key with keyctl\n"})
    asked: dict[str, int] = {}
    for name, kb in (("notes", notes), ("docs", docs)):

        def counting(
            terms: Any, *, _name: str = name, _ask: Any = kb.store.lexical_candidates, **kw: Any
        ) -> Any:
            asked[_name] = asked.get(_name, 0) + 1
            return _ask(terms, **kw)

        monkeypatch.setattr(kb.store, "lexical_candidates", counting)
    with Library({"notes": notes, "docs": docs}) as lib:
        both = lib.search("rotate the signing key", also=["keyctl rotation"])
        assert asked == {"notes": 2, "docs": 2}
        assert both.hits[0].kb == "docs"
