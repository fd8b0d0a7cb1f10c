"""``[rerank]``: off unless a provider is set, and every mistake refused at start-up, naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbseek.config import RELOADABLE, Settings, build_settings, load_config_file
from kbseek.errors import ConfigError
from kbseek.rerank import RERANKERS, RerankSpec, make_reranker
from kbseek.rerank.http import HttpReranker
from tests.rerank_server import FakeReranker, fake_reranker


def _settings(tmp_path: Path, text: str) -> Settings:
    config = tmp_path / "kbseek.toml"
    config.write_text(text, encoding="utf-8")
    return build_settings(root=tmp_path, file_values=load_config_file(config))


def test_reranking_is_off_by_default(tmp_path: Path) -> None:
    spec = Settings(root=tmp_path).rerank
    assert spec == RerankSpec() and not spec.enabled
    assert (spec.candidates, spec.budget_s, spec.allow_download) == (30, 1.5, False)


def test_the_table_sets_every_key(tmp_path: Path) -> None:
    spec = _settings(
        tmp_path,
        '[rerank]\nprovider = "HTTP"\nurl = "http://127.0.0.1:8080/v1/rerank"\nmodel = "bge"\n'
        'api_key_env = "RERANK_KEY"\ncandidates = 12\nbudget_s = 2\n',
    ).rerank
    assert spec == RerankSpec(
        provider="http", url="http://127.0.0.1:8080/v1/rerank", model="bge", api_key_env="RERANK_KEY",
        candidates=12, budget_s=2.0,
    )  # fmt: skip
    assert spec.enabled and spec.http_api == "jina" and isinstance(spec.budget_s, float)


def test_a_changed_rerank_table_applies_without_a_restart() -> None:
    assert "rerank" in RELOADABLE


@pytest.mark.parametrize(
    ("url", "api"),
    [
        ("http://h:80/rerank", "tei"),
        ("http://h:80", "tei"),
        ("http://h:80/v1", "jina"),
        ("http://h:80/v1/rerank/", "jina"),
    ],
)
def test_the_api_follows_the_url_unless_set(url: str, api: str) -> None:
    assert RerankSpec(provider="http", url=url).http_api == api
    assert RerankSpec(provider="http", url=url, api="TEI").http_api == "tei"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('provider = "cohere"', r"unknown rerank provider 'cohere'; choose one of 'http', 'local'"),
        ('provider = "http"', r"rerank provider 'http' needs a url"),
        ('provider = "http"\nurl = "ftp://h/rerank"', r"not an http:// or https:// URL"),
        ('provider = "http"\nurl = "http://h/rerank"\napi = "openai"', r"unknown rerank api 'openai'"),
        ('provider = "http"\nurl = "http://h/rerank"\napi_key_env = "sk-123"', r"name of an environment"),
        ('provider = "http"\nurl = "http://h/rerank"\nallow_download = true', r"allow_download applies only"),
        ('provider = "local"', r"rerank provider 'local' needs a model"),
        ('provider = "local"\nmodel = "m"\nurl = "http://h/rerank"', r"url applies only to provider 'http'"),
        ('url = "http://h/rerank"', r"rerank url set but no rerank provider"),
        ('provider = "http"\nurl = "http://h"\ncandidates = 0', r"candidates must be a whole number from 1"),
        ('provider = "http"\nurl = "http://h"\ncandidates = 201', r"candidates must be a whole number"),
        (
            'provider = "http"\nurl = "http://h"\nbudget_s = 0',
            r"budget_s must be a number of seconds above 0",
        ),
        ('provider = "http"\nurl = "http://h"\nbudget_s = nan', r"budget_s must be"),
        ('provider = "local"\nmodel = "m"\nthreads = 0', r"threads must be a whole number"),
        ('provider = ""', r"rerank provider is empty"),
        ("provider = 3", r"rerank provider must be a string"),
    ],
)
def test_a_mistake_is_refused_naming_the_key(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _settings(tmp_path, f"[rerank]\n{table}\n")


def test_an_unknown_key_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'top_n' in \[rerank\]; known keys: allow_download"):
        _settings(tmp_path, "[rerank]\ntop_n = 5\n")


def test_a_registered_provider_is_valid_and_builds_its_reranker() -> None:
    with fake_reranker("Fake") as made:
        spec = RerankSpec(provider="fake")
        reranker = make_reranker(spec)
        assert isinstance(reranker, FakeReranker) and made == [reranker]
    assert "fake" not in RERANKERS
    with pytest.raises(ConfigError, match="unknown rerank provider 'fake'"):
        RerankSpec(provider="fake")


def test_the_builtins_build_without_touching_anything() -> None:
    reranker = make_reranker(RerankSpec(provider="http", url="http://user:pw@127.0.0.1:9/v1"))
    assert isinstance(reranker, HttpReranker)
    assert reranker.endpoint == "http://127.0.0.1:9/v1/rerank"  # the password never shows
    local = make_reranker(RerankSpec(provider="local", model="/nowhere/model"))
    assert local.name == "local reranker '/nowhere/model'"
    with pytest.raises(ValueError, match="reranking is off"):
        make_reranker(RerankSpec())
