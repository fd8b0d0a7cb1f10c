"""``HttpPolicy.from_flags``: the policy ``serve --http`` assembles from its flags."""

from __future__ import annotations

import pytest

from kbseek.errors import ConfigError
from kbseek.server.http import MAX_BODY_BYTES, MAX_SESSIONS, HttpPolicy, is_loopback, mcp_url


def test_defaults_allow_the_loopback_names_at_the_port_only() -> None:
    policy = HttpPolicy.from_flags(host="127.0.0.1", port=8765, environ={})
    assert policy.port == 8765
    assert policy.allowed_hosts == ("127.0.0.1:8765", "localhost:8765", "[::1]:8765")
    assert policy.allowed_origins == ("http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765")
    assert policy.token is None and not policy.ui_remote
    assert (policy.max_sessions, policy.max_body_bytes) == (MAX_SESSIONS, MAX_BODY_BYTES)


def test_extra_hosts_and_origins_come_after_the_loopback_names() -> None:
    policy = HttpPolicy.from_flags(
        host="localhost", port=9000, allow_hosts=("notes.example",), allow_origins=("https://notes.example",),
        environ={},
    )  # fmt: skip
    assert policy.allowed_hosts[-1] == "notes.example" and "localhost:9000" in policy.allowed_hosts
    assert policy.allowed_origins[-1] == "https://notes.example"
    assert "http://localhost:9000" in policy.origins()


def test_limits_and_the_web_page_flag_are_carried_over() -> None:
    policy = HttpPolicy.from_flags(
        host="::1", port=1, max_sessions=3, max_body_bytes=10, ui_allow_remote=True, environ={}
    )
    assert (policy.max_sessions, policy.max_body_bytes, policy.ui_remote) == (3, 10, True)


def test_a_non_loopback_host_needs_allow_remote() -> None:
    with pytest.raises(ConfigError, match="--allow-remote"):
        HttpPolicy.from_flags(host="0.0.0.0", port=8765, environ={})
    assert HttpPolicy.from_flags(host="0.0.0.0", port=8765, allow_remote=True, environ={}).port == 8765


def test_the_token_is_read_from_the_named_variable() -> None:
    policy = HttpPolicy.from_flags(
        host="127.0.0.1", port=8765, token_env="KB_TOKEN", environ={"KB_TOKEN": "s3"}
    )
    assert policy.token == "s3"


@pytest.mark.parametrize("environ", [{}, {"KB_TOKEN": ""}])
def test_an_empty_or_unset_token_variable_is_refused(environ: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="--token-env KB_TOKEN"):
        HttpPolicy.from_flags(host="127.0.0.1", port=8765, token_env="KB_TOKEN", environ=environ)


def test_loopback_hosts_and_the_mcp_url() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1"))
    assert not is_loopback("0.0.0.0") and not is_loopback("[::1]")
    assert mcp_url("127.0.0.1", 8765) == "http://127.0.0.1:8765/mcp"
    assert mcp_url("::1", 8765) == "http://[::1]:8765/mcp"
