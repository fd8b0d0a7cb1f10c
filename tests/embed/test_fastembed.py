"""The ``fastembed`` provider and the model cache, on the tiny generated model and the local fake Hub.

Everything here is real but small: the ONNX model (tests/tiny_models.py) runs in ONNX Runtime
through fastembed, and downloads go over HTTP to a Hub on 127.0.0.1 (tests/fake_hub.py) through
huggingface_hub. No request leaves the machine.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tokenizers import Tokenizer

from kbseek.embed import EmbedderSpec, find_model, inspect_model, make_embedder, pull_model
from kbseek.embed import hub as hub_module
from kbseek.errors import ConfigError, EmbedderUnavailable
from tests.fake_hub import FakeHub, serve_hub
from tests.fixture_copies import copy_fixture
from tests.tiny_models import ENCODER_DIM, write_cross_encoder, write_encoder

pytest.importorskip("fastembed")

NAME = "all-MiniLM-L6-v2"
"""A model fastembed's catalogue knows; the fake Hub serves the tiny encoder under its repository."""
REPO = "Qdrant/all-MiniLM-L6-v2-onnx"


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_encoder(tmp_path_factory.mktemp("models") / "tiny-encoder")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache of this test's own, and a Hugging Face home that is not the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return hub_module.models_cache()


@pytest.fixture
def fake_hub(encoder: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with serve_hub() as hub:
        hub.add(REPO, encoder)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        yield hub


def spec(model: str, **kwargs: Any) -> EmbedderSpec:
    return EmbedderSpec(provider="fastembed", model=model, **kwargs)


def test_a_local_folder_embeds_unit_vectors_the_same_every_time(encoder: Path, cache: Path) -> None:
    embedder = make_embedder(spec(str(encoder)))
    texts = ["the cat eats fish", "a database lock", ""]
    first = embedder.embed_documents(texts)
    assert first.shape == (3, ENCODER_DIM) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    again = make_embedder(spec(str(encoder)))
    assert np.allclose(again.embed_documents(texts), first, atol=1e-6)
    assert again.model_id == embedder.model_id and embedder.model_id.startswith("fastembed:folder:")
    assert embedder.embed_query("cat").shape == (ENCODER_DIM,)
    assert not (cache / hub_module.MANIFESTS).exists(), "a folder model writes nothing to the cache"


def test_a_folder_that_asks_for_cls_pooling_gets_other_vectors_and_another_id(
    encoder: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "cls"
    copy_fixture(encoder, folder)
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}', encoding="utf-8")
    mean, cls = make_embedder(spec(str(encoder))), make_embedder(spec(str(folder)))
    assert mean.model_id.endswith(":mean") and cls.model_id.endswith(":cls")
    texts = ["the cat eats fish"]
    assert not np.allclose(mean.embed_documents(texts), cls.embed_documents(texts))


def test_a_folder_without_its_tokenizer_is_refused_naming_the_file(encoder: Path, tmp_path: Path) -> None:
    folder = tmp_path / "incomplete"
    folder.mkdir()
    (folder / "model.onnx").write_bytes((encoder / "model.onnx").read_bytes())
    with pytest.raises(EmbedderUnavailable, match=r"has no tokenizer\.json, tokenizer_config\.json"):
        make_embedder(spec(str(folder))).load()


def test_the_spec_needs_a_model_and_keeps_allow_download_to_fastembed() -> None:
    with pytest.raises(ConfigError, match="provider 'fastembed' needs an embedding model"):
        EmbedderSpec(provider="fastembed")
    with pytest.raises(ConfigError, match="allow_download applies only to provider 'fastembed'"):
        EmbedderSpec(provider="use", allow_download=True)
    with pytest.raises(ConfigError, match="true or false"):
        spec(NAME, allow_download="yes")
    assert spec(NAME, allow_download=True).allow_download is True


def test_an_unknown_name_says_where_the_known_ones_are(cache: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="kbseek model list"):
        make_embedder(spec("no-such-model-anywhere")).load()
    with pytest.raises(ConfigError, match="could be any of"):
        pull_model("bge")


def test_names_resolve_in_full_after_the_slash_or_by_a_unique_prefix(cache: Path) -> None:
    full = find_model("intfloat/multilingual-e5-large")
    assert find_model("multilingual-e5-large") == full == find_model("Multilingual-E5-Large")
    assert full.dim == 1024 and full.source.repo_id == "Qdrant/multilingual-e5-large-onnx"
    assert "model.onnx_data" in full.source.files, "external weights are part of the model"
    mpnet = find_model("paraphrase-multilingual-mpnet")
    assert mpnet.name == "sentence-transformers/paraphrase-multilingual-mpnet-base-v2"


def test_the_tiny_cross_encoder_scores_pairs_with_onnx_runtime(tmp_path: Path) -> None:
    onnxruntime = pytest.importorskip("onnxruntime")
    folder = write_cross_encoder(tmp_path / "ce")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    pairs = tokenizer.encode_batch(
        [("what do cats eat", "the cat eats fish"), ("what do cats eat", "a lock")]
    )
    feeds = {
        "input_ids": np.array([p.ids for p in pairs], dtype=np.int64),
        "attention_mask": np.array([p.attention_mask for p in pairs], dtype=np.int64),
        "token_type_ids": np.array([p.type_ids for p in pairs], dtype=np.int64),
    }
    assert pairs[0].tokens[0] == "[CLS]" and pairs[0].type_ids[-1] == 1
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"))
    (logits,) = session.run(["logits"], feeds)
    assert logits.shape == (2, 1) and logits.dtype == np.float32 and logits[0, 0] != logits[1, 0]


def test_a_model_not_pulled_is_refused_with_the_command_and_nothing_is_downloaded(fake_hub: FakeHub) -> None:
    with pytest.raises(EmbedderUnavailable, match=f"run `kbseek model pull {NAME}`"):
        make_embedder(spec(NAME)).load()
    assert fake_hub.requests == []


def test_pull_downloads_verifies_and_records_then_loading_is_offline(
    fake_hub: FakeHub, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, pulled = pull_model(NAME)
    assert found.source.repo_id == REPO and pulled.commit == fake_hub.repos[REPO].commit
    assert pulled.folder.is_relative_to(cache) and (pulled.folder / "model.onnx").is_file()
    manifest = json.loads(hub_module.manifest_path(found.source).read_text())
    assert manifest["files"]["model.onnx"]["sha256"] == fake_hub.repos[REPO].files["model.onnx"].sha256

    fake_hub.requests.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = make_embedder(spec(NAME))
    assert embedder.dim == ENCODER_DIM
    assert embedder.model_id == f"fastembed:sentence-transformers/{NAME}@{pulled.commit[:12]}"
    assert fake_hub.requests == [], "loading a pulled model reads nothing from the Hub"

    report = inspect_model(NAME)
    assert report.problems == () and report.origin == f"cache {pulled.folder}"
    assert report.size_bytes == sum(len(f.data) for f in fake_hub.repos[REPO].files.values())


def test_a_second_pull_downloads_nothing_again(fake_hub: FakeHub) -> None:
    pull_model(NAME)
    first = len(fake_hub.downloads())
    pull_model(NAME)
    assert len(fake_hub.downloads()) == first


def test_a_corrupted_download_is_caught_deleted_and_not_recorded(fake_hub: FakeHub) -> None:
    fake_hub.corrupt.add("model.onnx")
    with pytest.raises(
        EmbedderUnavailable, match=r"model\.onnx .* does not match the Hub's checksum .* deleted"
    ):
        pull_model(NAME)
    source = hub_module.HubSource(REPO, ("model.onnx",))
    assert hub_module.installed(source) is None
    with pytest.raises(EmbedderUnavailable, match="never pulled"):
        make_embedder(spec(NAME)).load()

    fake_hub.corrupt.clear()  # the network recovers: the same command now succeeds
    _, pulled = pull_model(NAME)
    assert (pulled.folder / "model.onnx").read_bytes() == fake_hub.repos[REPO].files["model.onnx"].data


def test_a_file_damaged_in_the_cache_is_found_by_loading_and_by_doctor(fake_hub: FakeHub) -> None:
    _, pulled = pull_model(NAME)
    weights = (pulled.folder / "model.onnx").resolve()
    data = bytearray(weights.read_bytes())
    data[100] ^= 0xFF  # same size: only hashing notices
    weights.write_bytes(bytes(data))
    report = inspect_model(NAME)
    assert report.problems == ("model.onnx changed since it was pulled (its sha256 differs)",)
    assert f"kbseek model pull {NAME}" in report.fix

    weights.write_bytes(bytes(data[:-10]))  # truncated: loading checks sizes
    with pytest.raises(EmbedderUnavailable, match=r"model\.onnx has \d+ bytes"):
        make_embedder(spec(NAME)).load()


def test_allow_download_pulls_on_first_load(fake_hub: FakeHub) -> None:
    embedder = make_embedder(spec(NAME, allow_download=True))
    assert embedder.dim == ENCODER_DIM
    assert fake_hub.downloads()


def test_offline_refuses_even_with_allow_download_and_names_the_command(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbedderUnavailable, match=f"HF_HUB_OFFLINE is set: run `kbseek model pull {NAME}`"):
        make_embedder(spec(NAME, allow_download=True)).load()
    with pytest.raises(EmbedderUnavailable, match=r"HF_HUB_OFFLINE is set, so .* cannot be downloaded"):
        pull_model(NAME)
    assert fake_hub.requests == []


def test_without_fastembed_the_message_names_the_extra(
    encoder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_fastembed(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "fastembed" or name.startswith("fastembed."):
            raise ImportError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_fastembed)
    with pytest.raises(EmbedderUnavailable, match=r"pip install 'kbseek\[models\]'"):
        make_embedder(spec(str(encoder))).load()


def test_models_sharing_a_repository_each_need_their_own_files_on_record(fake_hub: FakeHub) -> None:
    # fastembed's bge-reranker-v2-m3 and its int8 variant share one repository with other weights.
    weights = hub_module.HubSource(REPO, ("model.onnx", "tokenizer.json"))
    configs = hub_module.HubSource(REPO, ("tokenizer_config.json", "tokenizer.json"))
    hub_module.pull(weights, command="kbseek model pull weights")
    assert hub_module.installed(weights) is not None
    assert hub_module.installed(configs) is None, "the record of one does not vouch for the other"
    hub_module.pull(configs, command="kbseek model pull configs")
    first, second = hub_module.installed(weights), hub_module.installed(configs)
    assert first is not None and second is not None and first.files == second.files
    assert set(first.files) == {"model.onnx", "tokenizer.json", "tokenizer_config.json"}
