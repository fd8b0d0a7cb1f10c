"""``kbseek doctor --auth``: sign-in checked as ``serve --http`` would run it, against an issuer made in
the test and served over HTTP on loopback (its metadata, keys and introspection endpoint are real).

Each mistake a team makes setting up a provider is one failed line naming it and what to change: an
issuer off by a trailing slash, an issuer that cannot be reached, keys for another algorithm, wrong
introspection credentials, and, with ``--check-token``, a token for another audience, expired, or
without the read scope. No secret and no token is ever printed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli
from tests.auth_issuer import INTROSPECTION_CLIENT, Issuer, running_issuer
from tests.wire.serving import free_port

RESOURCE = "http://127.0.0.1:8765/mcp"
"""What a server started with ``serve --http`` (port 8765) is reached at: no start-up warning."""
STATIC = "ci-static-secret-0123"
INTROSPECTION_SECRET = INTROSPECTION_CLIENT[1]


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        yield running


@pytest.fixture
def secrets_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KB_CI_TOKEN", STATIC)
    monkeypatch.setenv("KB_INTROSPECTION_SECRET", INTROSPECTION_SECRET)


def config(tmp_path: Path, issuer: str, *lines: str) -> Path:
    """A team's config file: ``[auth]`` with the issuer, the resource, a static token, an
    introspection client, and ``lines``."""
    path = tmp_path / "kbseek.toml"
    path.write_text(
        "\n".join([
            "[auth]", f'issuer = "{issuer}"', f'resource = "{RESOURCE}"', 'tokens = ["ci=KB_CI_TOKEN"]',
            f'introspection_client_id = "{INTROSPECTION_CLIENT[0]}"',
            'introspection_secret_env = "KB_INTROSPECTION_SECRET"', *lines,
        ]) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    return path


def doctor(cfg: Path, *extra: str) -> Result:
    return CliRunner().invoke(cli, ["doctor", "--auth", "--config", str(cfg), *extra, "--json"])


def checks(result: Result) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(result.stdout)}


def statuses(result: Result) -> dict[str, str]:
    return {name: c["status"] for name, c in checks(result).items()}


def test_a_good_configuration_is_all_ok(tmp_path: Path, issuer: Issuer, secrets_set: None) -> None:
    result = doctor(config(tmp_path, issuer.url))
    assert result.exit_code == 0, result.output
    assert statuses(result) == {
        "auth config": "ok", "token ci": "ok", "issuer": "ok", "keys": "ok", "introspection": "ok", "resource": "ok"
    }  # fmt: skip
    found = checks(result)
    assert f"jwks_uri {issuer.url}/jwks" in found["issuer"]["detail"]
    assert "can check tokens signed with RS256" in found["keys"]["detail"]
    assert "a made-up token is inactive" in found["introspection"]["detail"]
    assert STATIC not in result.output and INTROSPECTION_SECRET not in result.output
    assert issuer.count("/introspect") == 1  # one request, for a made-up token


def test_an_issuer_off_by_a_trailing_slash_is_called_out_by_name(
    tmp_path: Path, issuer: Issuer, secrets_set: None
) -> None:
    result = doctor(config(tmp_path, issuer.url), "--auth-issuer", issuer.url + "/")
    assert result.exit_code == 1
    found = checks(result)
    assert found["issuer"]["status"] == "fail"
    assert found["issuer"]["detail"].startswith(f"trailing slash: the issuer's metadata names {issuer.url!r}")
    assert f"set [auth] issuer (or --auth-issuer) to {issuer.url!r}" in found["issuer"]["fix"]
    assert found["keys"]["status"] == "skip"

    text = CliRunner().invoke(
        cli, ["doctor", "--auth", "--config", str(config(tmp_path, issuer.url)), "--auth-issuer", issuer.url + "/"],
    )  # fmt: skip
    assert text.exit_code == 1
    assert any(
        line.startswith("fail  issuer ") and "trailing slash" in line for line in text.stdout.splitlines()
    )
    assert "fix: set [auth] issuer" in text.stdout


def test_an_unreachable_issuer_fails_with_what_was_tried(tmp_path: Path, secrets_set: None) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    result = doctor(config(tmp_path, nowhere))
    assert result.exit_code == 1
    found = checks(result)
    assert found["issuer"]["status"] == "fail"
    assert "cannot be had" in found["issuer"]["detail"]
    assert f"{nowhere}/.well-known/openid-configuration could not be reached" in found["issuer"]["detail"]
    assert found["keys"]["status"] == "skip"
    assert found["introspection"]["status"] == "skip"  # its endpoint comes from the metadata


def test_keys_only_for_another_algorithm_say_which_algorithm_they_are_for(
    tmp_path: Path, issuer: Issuer, secrets_set: None
) -> None:
    result = doctor(config(tmp_path, issuer.url, 'algorithms = ["ES256", "PS256"]'))
    assert result.exit_code == 1
    keys = checks(result)["keys"]
    assert keys["status"] == "fail"
    assert "fits the configured algorithms (ES256, PS256)" in keys["detail"]
    assert "its keys are for key 'k1': RS256" in keys["detail"]
    assert keys["fix"].startswith("add RS256 to [auth] algorithms")


def test_wrong_introspection_credentials_are_a_401_said_as_such(
    tmp_path: Path, issuer: Issuer, secrets_set: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_INTROSPECTION_SECRET", "not-the-secret")
    result = doctor(config(tmp_path, issuer.url))
    assert result.exit_code == 1
    found = checks(result)
    assert found["introspection"]["status"] == "fail"
    assert f"{issuer.url}/introspect answered 401 to client 'kbseek-rs'" in found["introspection"]["detail"]
    assert (
        "the client id or its secret ($KB_INTROSPECTION_SECRET) is wrong" in found["introspection"]["detail"]
    )
    assert "not-the-secret" not in result.output
    assert {found[n]["status"] for n in ("issuer", "keys", "resource")} == {"ok"}


def test_an_unset_token_variable_is_its_own_failed_line(
    tmp_path: Path, issuer: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_INTROSPECTION_SECRET", INTROSPECTION_SECRET)
    monkeypatch.delenv("KB_CI_TOKEN", raising=False)
    result = doctor(config(tmp_path, issuer.url), "--token-env", "KB_OLD_TOKEN")
    found = checks(result)
    assert result.exit_code == 1
    assert (
        found["token ci"]["status"] == "fail"
        and "$KB_CI_TOKEN is empty or unset" in found["token ci"]["detail"]
    )
    assert found["token KB_OLD_TOKEN"]["status"] == "fail"
    assert found["issuer"]["status"] == "ok" and found["introspection"]["status"] == "ok"


def test_a_resource_at_odds_with_the_port_warns_in_serves_words(
    tmp_path: Path, issuer: Issuer, secrets_set: None
) -> None:
    result = doctor(config(tmp_path, issuer.url), "--port", "9000")
    assert result.exit_code == 0  # a warning, as serve starts with it
    resource = checks(result)["resource"]
    assert resource["status"] == "warn"
    assert "the resource URL names port 8765, but the server listens on 9000" in resource["detail"]


def check_token(
    tmp_path: Path, issuer: Issuer, monkeypatch: pytest.MonkeyPatch, token: str
) -> dict[str, str]:
    monkeypatch.setenv("TOKEN_TO_CHECK", token)
    result = doctor(config(tmp_path, issuer.url), "--check-token", "TOKEN_TO_CHECK")
    assert token not in result.output
    found = checks(result)["token"]
    assert result.exit_code == (0 if found["status"] == "ok" else 1), result.output
    return found


def test_a_good_token_is_accepted_with_whom_it_names(
    tmp_path: Path, issuer: Issuer, secrets_set: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = check_token(tmp_path, issuer, monkeypatch, issuer.token(RESOURCE, scope="kb:read kb:write"))
    assert found["status"] == "ok"
    assert found["detail"].startswith(
        "accepted: a JWT for subject 'alice', client 'claude', scopes kb:read kb:write"
    )
    assert "expires" in found["detail"]
    static = check_token(tmp_path, issuer, monkeypatch, STATIC)
    assert static["status"] == "ok" and static["detail"].startswith("accepted: the static token 'ci'")


def test_a_token_for_another_audience_shows_its_aud_against_the_resource(
    tmp_path: Path, issuer: Issuer, secrets_set: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = check_token(tmp_path, issuer, monkeypatch, issuer.token("https://other.example.com/mcp"))
    assert found["status"] == "fail"
    assert found["detail"].startswith(
        "refused (audience): the token's aud is 'https://other.example.com/mcp', and this server's resource "
        f"is {RESOURCE!r}"
    )
    assert f"resource={RESOURCE}" in found["fix"]


def test_an_expired_token_says_when(
    tmp_path: Path, issuer: Issuer, secrets_set: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    expired = int(time.time()) - 3600
    found = check_token(tmp_path, issuer, monkeypatch, issuer.token(RESOURCE, iat=expired - 600, exp=expired))
    assert found["status"] == "fail"
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expired))
    assert found["detail"].startswith(f"refused (expired): the token expired at {when}, 60 min ago")
    assert "get a new token" in found["fix"]


def test_a_token_without_the_read_scope_says_which_it_has_and_which_is_needed(
    tmp_path: Path, issuer: Issuer, secrets_set: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = check_token(tmp_path, issuer, monkeypatch, issuer.token(RESOURCE, scope="profile kb:write"))
    assert found["status"] == "fail"
    assert found["detail"] == (
        "refused (scope): a JWT for subject 'alice', client 'claude' has the scopes profile kb:write, and "
        "reading needs kb:read (the server answers 403 insufficient_scope)"
    )


def test_other_refusals_name_the_servers_reason_code(
    tmp_path: Path, issuer: Issuer, secrets_set: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    slash = check_token(tmp_path, issuer, monkeypatch, issuer.token(RESOURCE, iss=issuer.url + "/"))
    assert slash["detail"].startswith("refused (issuer): trailing slash: the token's iss is")
    unsigned = check_token(tmp_path, issuer, monkeypatch, issuer.unsigned(RESOURCE))
    assert unsigned["detail"].startswith("refused (algorithm):")
    opaque = check_token(tmp_path, issuer, monkeypatch, issuer.opaque_token(RESOURCE, active=False))
    assert opaque["detail"].startswith("refused (introspection_inactive):")


def test_no_sign_in_configured_warns_and_checks_nothing_else(tmp_path: Path) -> None:
    empty = tmp_path / "kbseek.toml"
    empty.write_text("", encoding="utf-8")
    result = CliRunner().invoke(cli, ["doctor", "--auth", "--config", str(empty), "--json"])
    assert result.exit_code == 0
    assert statuses(result) == {
        "auth config": "warn", "issuer": "skip", "keys": "skip", "introspection": "skip", "resource": "skip"
    }  # fmt: skip


def test_a_broken_auth_table_fails_naming_the_key(tmp_path: Path) -> None:
    broken = tmp_path / "kbseek.toml"
    broken.write_text('[auth]\nissuer = "https://sso.example.com"\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["doctor", "--auth", "--config", str(broken), "--json"])
    assert result.exit_code == 1
    found = checks(result)["auth config"]
    assert found["status"] == "fail" and "[auth].issuer needs [auth].resource" in found["detail"]
