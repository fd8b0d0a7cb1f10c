"""The ``local`` rerank provider: a real ONNX cross-encoder run in process by fastembed.

The model is the tiny cross-encoder ``tests.tiny_models`` generates (seeded random weights, a real
graph and tokenizer), so each score is checked against ONNX Runtime run on the pair directly. A
named model comes from a fake Hub on 127.0.0.1 (tests/fake_hub.py) serving that cross-encoder under
the repository of a cross-encoder fastembed knows, through ``kbseek model pull``'s verified path.
The tests skip only when fastembed (the ``kbseek[models]`` extra) is not installed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastembed", reason="the local reranker needs fastembed: pip install 'kbseek[models]'")

import onnxruntime as ort
from tokenizers import Tokenizer

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed import hub as hub_module
from kbseek.embed import pull_model, reranker_catalogue
from kbseek.rerank import RerankFailed, RerankSpec, RerankStage, make_reranker
from tests.conftest import write_notes
from tests.fake_hub import FakeHub, serve_hub
from tests.fixture_copies import copy_fixture
from tests.tiny_models import write_cross_encoder

NAME = "Xenova/ms-marco-MiniLM-L-6-v2"
"""A cross-encoder fastembed knows; the fake Hub serves the tiny one under its repository."""

QUERY = "which pets are cats"
TEXTS = ["the cat sat on the mat", "dogs bark at the mail", "cats and dogs are pets", "the weather is cold"]


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))


@pytest.fixture(scope="module")
def hub_layout(model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny cross-encoder laid out as the Hub repository of :data:`NAME` is (``onnx/model.onnx``)."""
    folder = tmp_path_factory.mktemp("repo") / "ms-marco"
    copy_fixture(model_folder, folder)
    (folder / "onnx").mkdir()
    (folder / "model.onnx").rename(folder / "onnx" / "model.onnx")
    return folder


@pytest.fixture
def hub(hub_layout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A fake Hub serving :data:`NAME`, and a user cache and Hugging Face home of this test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with serve_hub() as fake:
        fake.add(NAME, hub_layout)
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        yield fake


def _direct(folder: Path, query: str, texts: list[str]) -> list[float]:
    """Each pair's logit, from ONNX Runtime and the tokenizer alone, one pair at a time."""
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    weights = next(p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.is_file())
    session = ort.InferenceSession(str(weights), providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        enc = tokenizer.encode(query, text)
        feed = {
            "input_ids": np.array([enc.ids], dtype=np.int64),
            "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([enc.type_ids], dtype=np.int64),
        }
        out.append(float(session.run(["logits"], feed)[0][0][0]))
    return out


def _local(model: str, **spec: object) -> object:
    return make_reranker(RerankSpec(provider="local", model=model, **spec))  # type: ignore[arg-type]


def test_a_folder_model_scores_as_onnx_runtime_does(model_folder: Path) -> None:
    reranker = _local(str(model_folder))
    scores = reranker.score(QUERY, TEXTS, timeout_s=1.0)  # type: ignore[attr-defined]
    assert scores == pytest.approx(_direct(model_folder, QUERY, TEXTS), rel=1e-4, abs=1e-5)
    assert len(set(scores)) == len(TEXTS)  # the texts are told apart: the order means something


def test_a_folder_loaded_twice_is_registered_with_fastembed_once(model_folder: Path) -> None:
    # Another thread count is another copy of the model, under the name fastembed already knows.
    first, second = _local(str(model_folder)), _local(str(model_folder), threads=2)
    texts = TEXTS[:2]
    assert first.score(QUERY, texts, timeout_s=1.0) == pytest.approx(
        second.score(QUERY, texts, timeout_s=1.0)
    )  # type: ignore[attr-defined]
    assert first._encoder is not second._encoder  # type: ignore[attr-defined]


def test_a_search_follows_the_models_order(tmp_path: Path, model_folder: Path) -> None:
    root = tmp_path / "kb"
    write_notes(root, {f"note{i}.md": f"# Note {i}\n\n{text}, about cats.\n" for i, text in enumerate(TEXTS)})
    spec = RerankSpec(provider="local", model=str(model_folder), budget_s=30.0)
    kb = KnowledgeBase(settings=Settings(root=root, semantic=False, freshness_interval_s=0.0, rerank=spec))
    try:
        kb.index()
        response = kb.search("cats", explain=True, limit=10)
    finally:
        kb.close()
    assert len(response.hits) == len(TEXTS) and "rerank_skipped" not in response.note_codes
    passages = [
        f"Note {h.path[4]}\n# Note {h.path[4]}\n\n{TEXTS[int(h.path[4])]}, about cats." for h in response.hits
    ]
    expected = _direct(model_folder, "cats", passages)
    got = [h.explain.rerank_score for h in response.hits if h.explain is not None]
    assert got == pytest.approx(expected, rel=1e-4, abs=1e-5)
    assert got == sorted(got, reverse=True)  # one chunk per note: the model's order is the answer's


def test_a_folder_without_a_model_says_what_it_needs(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(
        RerankFailed, match=r"rerank model folder .* has no model\.onnx; give a folder holding"
    ):
        _local(str(tmp_path)).load()  # type: ignore[attr-defined]
    with pytest.raises(RerankFailed, match=r"rerank model folder '/no/such/folder' does not exist"):
        _local("/no/such/folder").load()  # type: ignore[attr-defined]


def test_an_unknown_name_says_where_the_known_ones_are() -> None:
    with pytest.raises(
        RerankFailed, match=r"fastembed knows no cross-encoder named 'nobody/nothing'; `kbseek model list`"
    ):
        _local("nobody/nothing").load()  # type: ignore[attr-defined]


def test_a_named_model_not_pulled_is_a_note_naming_the_pull_command(hub: FakeHub) -> None:
    stage = RerankStage.from_spec(RerankSpec(provider="local", model=NAME, budget_s=5.0))
    outcome = stage.score("q", ["a"])
    assert outcome.scores is None and outcome.note is not None
    assert f"run `kbseek model pull {NAME}`" in outcome.note and "never pulled" in outcome.note
    assert "[rerank] allow_download = true" in outcome.note
    assert hub.requests == [], "a search never downloads unasked"


def test_a_pulled_cross_encoder_scores_offline_as_onnx_runtime_does(
    hub: FakeHub, hub_layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, pulled = pull_model(NAME)
    assert found.kind == "reranker" and found in reranker_catalogue()
    assert pulled.commit == hub.repos[NAME].commit and (pulled.folder / "onnx" / "model.onnx").is_file()
    assert pulled.folder.is_relative_to(hub_module.models_cache()), "the embedders' verified cache"
    hub.requests.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scores = _local(NAME).score(QUERY, TEXTS, timeout_s=1.0)  # type: ignore[attr-defined]
    assert scores == pytest.approx(_direct(hub_layout, QUERY, TEXTS), rel=1e-4, abs=1e-5)
    assert hub.requests == [], "loading a pulled model reads nothing from the Hub"


def test_allow_download_pulls_through_the_verified_path(hub: FakeHub, hub_layout: Path) -> None:
    reranker = _local(NAME, allow_download=True)
    scores = reranker.score(QUERY, TEXTS[:2], timeout_s=1.0)  # type: ignore[attr-defined]
    assert scores == pytest.approx(_direct(hub_layout, QUERY, TEXTS[:2]), rel=1e-4, abs=1e-5)
    assert hub.downloads(), "it was fetched"
    (source,) = [m.source for m in reranker_catalogue() if m.name == NAME]
    recorded = hub_module.installed(source)
    assert recorded is not None, "and recorded in a manifest, as `kbseek model pull` does"
    assert recorded.files["onnx/model.onnx"].sha256 == hub.repos[NAME].files["onnx/model.onnx"].sha256


def test_a_corrupted_download_is_caught_and_never_loaded(hub: FakeHub) -> None:
    hub.corrupt.add("onnx/model.onnx")
    with pytest.raises(RerankFailed, match=r"onnx/model\.onnx downloaded from .* does not match the Hub's"):
        _local(NAME, allow_download=True).load()  # type: ignore[attr-defined]
    (source,) = [m.source for m in reranker_catalogue() if m.name == NAME]
    assert hub_module.installed(source) is None
    hub.corrupt.clear()
    _, pulled = pull_model(NAME)  # the network recovers: the command named in the message works
    weights = (pulled.folder / "onnx" / "model.onnx").resolve()
    weights.write_bytes(weights.read_bytes()[:-10])  # damaged in the cache afterwards: sizes catch it
    with pytest.raises(
        RerankFailed, match=rf"onnx/model\.onnx has \d+ bytes.*run `kbseek model pull {NAME}`"
    ):
        _local(NAME, threads=3).load()  # type: ignore[attr-defined]


def test_offline_refuses_to_download_even_when_allowed(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RerankFailed, match=rf"HF_HUB_OFFLINE is set: run `kbseek model pull {NAME}`"):
        _local(NAME, allow_download=True).load()  # type: ignore[attr-defined]
    assert hub.requests == []


def test_without_fastembed_the_note_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastembed.rerank.cross_encoder", None)  # what a missing package raises
    write_cross_encoder(tmp_path)  # a model no test loaded yet: loaded ones are shared, not imported again
    stage = RerankStage.from_spec(RerankSpec(provider="local", model=str(tmp_path), budget_s=5.0))
    outcome = stage.score("q", ["a"])
    assert outcome.scores is None and outcome.note is not None
    assert "needs the fastembed package" in outcome.note and "pip install 'kbseek[models]'" in outcome.note


def test_collections_with_the_same_model_share_one_copy(model_folder: Path) -> None:
    first, second = _local(str(model_folder)), _local(str(model_folder))
    first.load()  # type: ignore[attr-defined]
    second.load()  # type: ignore[attr-defined]
    assert first._encoder is second._encoder  # type: ignore[attr-defined]


def test_a_failed_load_is_remembered_for_a_while(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbseek.rerank import local

    folder = tmp_path / "later"
    reranker = _local(str(folder))
    with pytest.raises(RerankFailed, match="does not exist") as first:
        reranker.load()  # type: ignore[attr-defined]
    write_cross_encoder(folder)
    with pytest.raises(RerankFailed) as again:
        reranker.load()  # type: ignore[attr-defined]
    assert again.value is first.value  # answered from memory: not looked for on every search
    monkeypatch.setattr(local, "RETRY_AFTER_S", 0.0)
    reranker.load()  # type: ignore[attr-defined]
    assert reranker.loaded  # type: ignore[attr-defined]
