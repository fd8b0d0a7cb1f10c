"""The embedding provider registry: one list that validation, messages and construction all read."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kbseek.embed import PROVIDERS, EmbedderSpec, make_embedder, register_provider
from kbseek.embed.base import Registry, provider_list
from kbseek.errors import ConfigError
from tests.fakes import FakeEmbedder, fake_providers


def test_the_built_in_providers_are_registered_in_the_order_messages_show() -> None:
    assert list(PROVIDERS) == ["use", "e5", "use+e5", "http", "fastembed"]
    assert provider_list() == "'use', 'e5', 'use+e5', 'http', 'fastembed'"


def test_a_registered_provider_is_valid_in_a_spec_and_built_by_make_embedder() -> None:
    with fake_providers("fake") as made:
        spec = EmbedderSpec(provider=" Fake ")
        assert spec.provider == "fake"
        embedder = make_embedder(spec)
        assert made == [embedder]
        assert isinstance(embedder, FakeEmbedder)
        with pytest.raises(
            ConfigError, match=r"choose one of 'use', 'e5', 'use\+e5', 'http', 'fastembed', 'fake'"
        ):
            EmbedderSpec(provider="openai")
    assert "fake" not in PROVIDERS
    with pytest.raises(ConfigError, match=r"unknown embedding provider 'fake'"):
        EmbedderSpec(provider="fake")


def test_replacing_a_built_in_keeps_its_place_and_puts_it_back() -> None:
    use = PROVIDERS["use"]
    with fake_providers("use") as made:
        assert isinstance(make_embedder(EmbedderSpec()), FakeEmbedder)
        assert len(made) == 1
    assert PROVIDERS["use"] is use
    assert list(PROVIDERS) == ["use", "e5", "use+e5", "http", "fastembed"]


def test_a_name_cannot_be_taken_twice_by_accident() -> None:
    with pytest.raises(ValueError, match=r"embedding provider 'use' is already registered"):
        register_provider(" USE ", lambda spec: FakeEmbedder())
    with pytest.raises(ValueError, match=r"needs a name"):
        register_provider("  ", lambda spec: FakeEmbedder())


def test_make_embedder_refuses_a_spec_that_bypassed_validation_with_the_list() -> None:
    spec = EmbedderSpec()
    object.__setattr__(spec, "provider", "openai")
    with pytest.raises(ConfigError, match=r"unknown embedding provider 'openai'; choose one of 'use', "):
        make_embedder(spec)


def test_a_provider_that_is_not_a_string_is_unknown_rather_than_a_crash() -> None:
    for value in (3, ["use"], None):
        with pytest.raises(ConfigError, match=r"unknown embedding provider"):
            EmbedderSpec(provider=value)  # type: ignore[arg-type]


def test_a_registry_is_generic_over_what_it_builds() -> None:
    rerankers: Registry[type[object]] = Registry("reranker")
    rerankers.register("plain", object)
    assert rerankers.lookup(" Plain ") is object
    assert "plain" in rerankers and 3 not in rerankers
    with pytest.raises(ConfigError, match=r"unknown reranker 'x'; choose one of 'plain'"):
        rerankers.lookup("x")
    rerankers.unregister("plain")
    assert len(rerankers) == 0


def test_importing_the_package_imports_no_provider() -> None:
    code = (
        "import sys, kbseek.embed; "
        "print(sorted(m for m in sys.modules if m in "
        "('kbseek.embed.use', 'kbseek.embed.e5', 'kbseek.embed.http', 'kbseek.embed.pair')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
