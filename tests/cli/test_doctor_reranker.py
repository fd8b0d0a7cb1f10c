"""``kbseek doctor``'s ``reranker`` check: off, a rerank server, or a local cross-encoder.

Everything is real: the rerank server is an HTTP server on 127.0.0.1 (tests/rerank_server.py), the
local model is the tiny generated cross-encoder run by ONNX Runtime (tests/tiny_models.py), and a
named model is pulled from a fake Hub on 127.0.0.1 (tests/fake_hub.py) whose request log proves that
doctor itself never downloads.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli
from kbseek.cli.doctor.reranker import TEXTS, check_reranker
from kbseek.rerank import RerankSpec
from tests.fake_hub import FakeHub, serve_hub
from tests.fixture_copies import copy_fixture, example_copy
from tests.rerank_server import RerankServer, rerank_server
from tests.tiny_models import write_cross_encoder

NAME = "Xenova/ms-marco-MiniLM-L-6-v2"
"""A cross-encoder fastembed knows; the fake Hub serves the tiny one under its repository."""
AFTER = "; meanwhile searches keep the fused order"


@pytest.fixture
def server() -> Iterator[RerankServer]:
    with rerank_server() as running:
        yield running


def doctor(tmp_path: Path, rerank: str) -> tuple[Result, dict[str, dict[str, str]]]:
    """``kbseek doctor --json`` on the example knowledge base with this ``[rerank]`` table."""
    config = tmp_path / "kbseek.toml"
    config.write_text(f"semantic = false\n[rerank]\n{rerank}\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["doctor", "--kb", str(example_copy(tmp_path)), "--config", str(config), "--json"]
    )
    return result, {c["name"]: c for c in json.loads(result.stdout)}


def test_off_is_a_skip_that_says_searches_keep_the_fused_order() -> None:
    check = check_reranker(RerankSpec())
    assert (check.name, check.status) == ("reranker", "skip")
    assert check.detail == "reranking is off (no [rerank] provider): searches keep the fused order"


def test_a_rerank_server_is_named_and_scores_two_texts_within_the_budget(
    server: RerankServer, tmp_path: Path
) -> None:
    result, found = doctor(tmp_path, f'provider = "http"\nurl = "{server.base}"')
    assert list(found).index("reranker") == list(found).index("model") + 1
    check = found["reranker"]
    assert check["status"] == "ok", check
    assert check["detail"].startswith(f"provider 'http', api tei, endpoint {server.base}/rerank; ")
    assert "scored 2 texts in " in check["detail"] and "within [rerank] budget_s = 1.5" in check["detail"]
    assert [(seen.path, seen.body["texts"]) for seen in server.requests] == [("/rerank", list(TEXTS))]
    assert result.exit_code == 0, result.output


def test_the_jina_api_and_its_model_are_named(server: RerankServer) -> None:
    check = check_reranker(RerankSpec(provider="http", url=f"{server.base}/v1", model="bge-reranker"))
    assert check.status == "ok", check
    assert f"api jina, endpoint {server.base}/v1/rerank, model bge-reranker;" in check.detail
    assert server.requests[0].body["model"] == "bge-reranker"


def test_a_server_slower_than_the_budget_is_a_warning_with_what_to_change(server: RerankServer) -> None:
    server.delay_s = 0.3
    check = check_reranker(RerankSpec(provider="http", url=server.base, budget_s=0.05))
    assert check.status == "warn", check
    assert "over [rerank] budget_s = 0.05: searches give up on it and keep the fused order" in check.detail
    assert check.fix.startswith("raise [rerank] budget_s, lower [rerank] candidates")


def test_a_failing_server_is_a_failure_with_its_message_and_the_fix(server: RerankServer) -> None:
    server.status = 500
    check = check_reranker(RerankSpec(provider="http", url=server.base))
    assert check.status == "fail"
    assert f"the rerank server at {server.base}/rerank answered HTTP 500" in check.detail
    assert "the model crashed" in check.detail and check.fix == "check the rerank server" + AFTER


def test_an_unreachable_server_says_to_start_it(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        result, found = doctor(tmp_path, f'provider = "http"\nurl = "http://127.0.0.1:{port}/rerank"')
    check = found["reranker"]
    assert check["status"] == "fail" and "connection refused" in check["detail"]
    assert check["fix"] == "start the server or fix the rerank url" + AFTER
    assert result.exit_code == 1


# -- local -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cross_encoder(tmp_path_factory.mktemp("models") / "tiny-cross-encoder")


@pytest.fixture
def hub(cross_encoder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A fake Hub serving :data:`NAME` (weights in ``onnx/``, as the real repository has them)."""
    pytest.importorskip("fastembed")
    repo = tmp_path / "repo"
    copy_fixture(cross_encoder, repo)
    (repo / "onnx").mkdir()
    (repo / "model.onnx").rename(repo / "onnx" / "model.onnx")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with serve_hub() as fake:
        fake.add(NAME, repo)
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        yield fake


def test_a_local_folder_is_reported_loaded_and_scoring(cross_encoder: Path, tmp_path: Path) -> None:
    pytest.importorskip("fastembed")
    _, found = doctor(tmp_path, f'provider = "local"\nmodel = "{cross_encoder}"\nbudget_s = 30')
    check = found["reranker"]
    assert check["status"] == "ok", check
    assert check["detail"].startswith("provider 'local' (package fastembed ")
    assert f": {cross_encoder}, from folder {cross_encoder}, " in check["detail"]
    assert "complete and verified; loaded in " in check["detail"] and "scored 2 texts in" in check["detail"]


def test_a_named_model_not_pulled_fails_with_the_pull_command_and_nothing_is_downloaded(
    hub: FakeHub, tmp_path: Path
) -> None:
    _, found = doctor(tmp_path, f'provider = "local"\nmodel = "{NAME}"')
    check = found["reranker"]
    assert (
        check["status"] == "fail" and "(not pulled)" in check["detail"] and "never pulled" in check["detail"]
    )
    assert check["fix"] == f"run `kbseek model pull {NAME}`" + AFTER

    allowed = check_reranker(RerankSpec(provider="local", model=NAME, allow_download=True))
    assert allowed.status == "warn" and "the first search downloads it" in allowed.detail
    assert allowed.fix == f"run `kbseek model pull {NAME}` now, so that no search waits for the download"
    assert hub.requests == [], "doctor never downloads, even when [rerank] allow_download = true"


def test_a_pulled_model_is_verified_byte_for_byte(hub: FakeHub, tmp_path: Path) -> None:
    pulled = CliRunner().invoke(cli, ["model", "pull", NAME])
    assert pulled.exit_code == 0, pulled.output
    hub.requests.clear()
    spec = RerankSpec(provider="local", model=NAME, budget_s=30.0)
    check = check_reranker(spec)
    assert check.status == "ok", check
    folder = tmp_path / "cache" / "kbseek" / "models" / "hub" / "models--Xenova--ms-marco-MiniLM-L-6-v2"
    assert f": {NAME}, from cache {folder / 'snapshots' / hub.repos[NAME].commit}, " in check.detail
    assert "complete and verified; loaded in" in check.detail

    weights = (folder / "snapshots" / hub.repos[NAME].commit / "onnx" / "model.onnx").resolve()
    data = bytearray(weights.read_bytes())
    data[150] ^= 0x01  # same size: only hashing notices, which doctor does and a load does not
    weights.write_bytes(bytes(data))
    damaged = check_reranker(spec)
    assert damaged.status == "fail" and "onnx/model.onnx changed since it was pulled" in damaged.detail
    assert damaged.fix == f"run `kbseek model pull {NAME}` to download the damaged files again" + AFTER
    assert hub.requests == []


def test_without_fastembed_the_fix_is_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastembed.rerank.cross_encoder", None)  # what a missing package raises
    folder = write_cross_encoder(tmp_path / "never-loaded")  # loaded models are shared, not imported again
    from_folder = check_reranker(RerankSpec(provider="local", model=str(folder)))
    assert from_folder.status == "fail" and "needs the fastembed package" in from_folder.detail
    assert from_folder.fix == "pip install 'kbseek[models]'" + AFTER
    named = check_reranker(RerankSpec(provider="local", model=NAME))
    assert named.status == "fail" and named.fix == "pip install 'kbseek[models]', or use provider 'http'"


def test_a_missing_folder_says_which(tmp_path: Path) -> None:
    check = check_reranker(RerankSpec(provider="local", model=str(tmp_path / "nowhere")))
    assert check.status == "fail" and "the folder does not exist" in check.detail
    assert check.fix == "give the path of the folder holding model.onnx" + AFTER
