"""``kbseek model pull`` and ``list``, and ``kbseek index`` with a model it must not download.

The downloads go to a fake Hub on 127.0.0.1 (tests/fake_hub.py) serving the tiny generated encoder
and cross-encoder (tests/tiny_models.py) under the repositories of models fastembed's catalogues know.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli
from tests.fake_hub import FakeHub, serve_hub
from tests.fixture_copies import EXAMPLE_KB, copy_fixture
from tests.tiny_models import write_cross_encoder, write_encoder

pytest.importorskip("fastembed")

NAME = "all-MiniLM-L6-v2"
REPO = "Qdrant/all-MiniLM-L6-v2-onnx"
RERANKER = "Xenova/ms-marco-MiniLM-L-6-v2"
"""A cross-encoder fastembed knows; its repository is itself, with the weights in ``onnx/``."""


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_encoder(tmp_path_factory.mktemp("models") / "tiny-encoder")


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny cross-encoder laid out as :data:`RERANKER`'s repository is (``onnx/model.onnx``)."""
    folder = write_cross_encoder(tmp_path_factory.mktemp("models") / "tiny-cross-encoder")
    (folder / "onnx").mkdir()
    (folder / "model.onnx").rename(folder / "onnx" / "model.onnx")
    return folder


@pytest.fixture
def hub(
    encoder: Path, cross_encoder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeHub]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with serve_hub() as fake:
        fake.add(REPO, encoder)
        fake.add(RERANKER, cross_encoder)
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        yield fake


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


def test_pull_downloads_verifies_and_says_how_to_use_it(hub: FakeHub, tmp_path: Path) -> None:
    result = invoke("model", "pull", NAME)
    assert result.exit_code == 0, result.output
    assert f"pulled sentence-transformers/{NAME} ({REPO} at {hub.repos[REPO].commit[:12]})" in result.stdout
    assert "verified" in result.stdout
    assert 'model = "sentence-transformers/all-MiniLM-L6-v2"' in result.stdout
    assert "Fetching" not in result.stdout, "the progress bar belongs on stderr"
    assert str(tmp_path / "cache") in result.stdout
    assert hub.downloads()


def test_a_corrupted_download_fails_with_the_command_to_run_again(hub: FakeHub) -> None:
    hub.corrupt.add("tokenizer.json")
    result = invoke("model", "pull", NAME)
    assert result.exit_code == 1
    assert "tokenizer.json downloaded from Qdrant/all-MiniLM-L6-v2-onnx does not match" in result.output
    assert f"run `kbseek model pull {NAME}` again" in result.output
    hub.corrupt.clear()
    assert invoke("model", "pull", NAME).exit_code == 0


def test_pull_refuses_offline_and_unknown_names(hub: FakeHub) -> None:
    offline = invoke("model", "pull", NAME, env={"HF_HUB_OFFLINE": "1"})
    assert offline.exit_code == 1 and "HF_HUB_OFFLINE is set" in offline.output
    unknown = invoke("model", "pull", "no-such-model-anywhere")
    assert unknown.exit_code == 1 and "kbseek model list" in unknown.output
    assert hub.requests == []


def test_list_shows_the_catalogue_and_what_is_pulled(hub: FakeHub) -> None:
    before = invoke("model", "list", "--json")
    assert before.exit_code == 0, before.output
    rows = {r["name"]: r for r in json.loads(before.stdout)}
    assert "intfloat/multilingual-e5-large" in rows and rows["intfloat/multilingual-e5-large"]["dim"] == 1024
    assert rows[f"sentence-transformers/{NAME}"]["pulled"] is False
    invoke("model", "pull", NAME)
    text = invoke("model", "list").stdout
    line = next(ln for ln in text.splitlines() if ln.startswith(f"sentence-transformers/{NAME} "))
    assert line.endswith("pulled")


def test_index_never_downloads_and_names_the_command_then_works_offline_once_pulled(
    hub: FakeHub, tmp_path: Path
) -> None:
    kb = tmp_path / "kb"
    copy_fixture(EXAMPLE_KB, kb)
    config = tmp_path / "kbseek.toml"
    config.write_text(f'[embed]\nprovider = "fastembed"\nmodel = "{NAME}"\n', encoding="utf-8")

    refused = invoke("index", "--kb", str(kb), "--config", str(config))
    assert refused.exit_code != 0
    assert f"run `kbseek model pull {NAME}`" in refused.output
    assert hub.requests == [], "index must not reach the Hub"

    assert invoke("model", "pull", NAME).exit_code == 0
    hub.requests.clear()
    indexed = invoke("index", "--kb", str(kb), "--config", str(config), env={"HF_HUB_OFFLINE": "1"})
    assert indexed.exit_code == 0, indexed.output
    assert hub.requests == []
    found = invoke("search", "--kb", str(kb), "--config", str(config), "--json", "meeting notes")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"]


def test_a_cross_encoder_is_pulled_listed_and_reranks_a_search(hub: FakeHub, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    copy_fixture(EXAMPLE_KB, kb)
    config = tmp_path / "kbseek.toml"
    config.write_text(
        f'semantic = false\n[rerank]\nprovider = "local"\nmodel = "{RERANKER}"\nbudget_s = 30\n',
        encoding="utf-8",
    )
    assert invoke("index", "--kb", str(kb), "--config", str(config)).exit_code == 0
    before = json.loads(invoke("search", "--kb", str(kb), "--config", str(config), "--json", "notes").stdout)
    assert "rerank_skipped" in before["note_codes"]
    assert any(f"run `kbseek model pull {RERANKER}`" in note for note in before["notes"])

    pulled = invoke("model", "pull", "ms-marco-MiniLM-L-6-v2")
    assert pulled.exit_code == 0, pulled.output
    assert f"pulled {RERANKER} ({RERANKER} at {hub.repos[RERANKER].commit[:12]})" in pulled.stdout
    assert f'use it with [rerank] provider = "local" and model = "{RERANKER}"' in pulled.stdout

    rows = {r["name"]: r for r in json.loads(invoke("model", "list", "--json").stdout)}
    assert rows[RERANKER] | {"folder": None} == {
        "name": RERANKER, "kind": "reranker", "dim": None, "size_bytes": 80_000_000, "pulled": True,
        "folder": None,
    }  # fmt: skip
    assert rows[f"sentence-transformers/{NAME}"]["kind"] == "embedding"
    line = next(ln for ln in invoke("model", "list").stdout.splitlines() if ln.startswith(f"{RERANKER} "))
    assert line.split()[1] == "reranker" and line.endswith("pulled")

    hub.requests.clear()
    after = invoke("search", "--kb", str(kb), "--config", str(config), "--json", "meeting notes",
                   env={"HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert after.exit_code == 0, after.output
    assert "rerank_skipped" not in json.loads(after.stdout)["note_codes"]
    assert hub.requests == []
