"""Collections by group: the claim read, the table checked at start, and the library a caller sees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbseek.auth_spec import AuthSpec
from kbseek.config import load_config_file
from kbseek.errors import ConfigError, InvalidArgument
from kbseek.library import Library
from kbseek.server.auth.collections import CollectionRules, groups_of
from kbseek.server.auth.identity import KbAccessToken
from kbseek.server.auth.settings import AuthConfig
from tests.conftest import indexed_kb

SERVED = ("hr", "runbooks", "wiki")


def caller(*, groups: Any = None, credential: str | None = None, **claims: Any) -> KbAccessToken:
    if groups is not None:
        claims["groups"] = groups
    return KbAccessToken(
        token="t", client_id="c", scopes=["kb:read"], claims=claims, credential=credential,
        method="static" if credential else "jwt",
    )  # fmt: skip


def rules(table: dict[str, list[str]] | None, claim: str = "groups") -> CollectionRules:
    return CollectionRules(None if table is None else list(table.items()), served=SERVED, claim=claim)


@pytest.mark.parametrize(
    ("claims", "claim", "expected"),
    [
        ({"groups": ["a", "b"]}, "groups", ["a", "b"]),
        ({"groups": "a"}, "groups", ["a"]),
        ({"groups": ["a", 3, None]}, "groups", ["a"]),
        ({"realm_access": {"roles": ["support"]}}, "realm_access.roles", ["support"]),
        ({"https://example.com/groups": ["x"]}, "https://example.com/groups", ["x"]),
        ({"realm_access": ["not", "a", "table"]}, "realm_access.roles", []),
        ({}, "groups", []),
        ({"groups": {"a": 1}}, "groups", []),
    ],
)
def test_groups_are_read_from_a_claim_by_name_or_by_dotted_path(
    claims: dict[str, Any], claim: str, expected: list[str]
) -> None:
    assert groups_of(claims, claim) == expected


def test_without_a_table_every_caller_reads_everything() -> None:
    assert rules(None).readable(caller(groups=["anyone"])) is None
    assert not rules(None).enabled


def test_a_caller_reads_the_union_of_its_groups_in_the_servers_order() -> None:
    table = rules({"support": ["runbooks"], "writers": ["wiki", "runbooks"]})
    assert table.readable(caller(groups=["writers", "support"])) == ("runbooks", "wiki")
    assert table.readable(caller(groups=["support"])) == ("runbooks",)
    assert table.readable(caller(groups=["marketing"])) == ()
    assert table.readable(caller()) == ()


def test_star_is_every_caller_as_a_group_and_every_collection_as_a_value() -> None:
    table = rules({"*": ["wiki"], "hr": ["*"]})
    assert table.readable(caller(groups=["marketing"])) == ("wiki",)
    assert table.readable(caller(groups=["hr"])) is None  # everything: the whole library, unchanged


def test_a_static_token_is_named_token_colon_its_name_and_its_claims_are_not_read() -> None:
    table = rules({"token:ci": ["runbooks"], "ci": ["hr"]})
    assert table.readable(caller(credential="ci", groups=["ci"])) == ("runbooks",)


def test_a_collection_the_server_does_not_hold_stops_the_server_at_start_naming_it() -> None:
    with pytest.raises(
        ConfigError, match=r"\[auth.collections\].support names 'runbook'.*hr, runbooks, wiki"
    ):
        rules({"support": ["runbook"]})


def test_a_token_group_for_no_static_token_is_refused_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = AuthSpec(tokens=("ci=KB_CI",), collections={"token:cl": ["wiki"]})
    with pytest.raises(ConfigError, match="no static token is named 'cl'; the static tokens are ci"):
        AuthConfig.resolve(spec, environ={"KB_CI": "secret"})
    ok = AuthConfig.resolve(
        AuthSpec(tokens=("ci=KB_CI",), collections={"token:ci": ["wiki"]}), environ={"KB_CI": "s"}
    )
    assert ok.readers == (("token:ci", ("wiki",)),)


@pytest.mark.parametrize(
    ("collections", "message"),
    [
        ({"support": "runbooks"}, "must be a list of collection names"),
        ({"support": [""]}, "must be a list of collection names"),
        ({"support": [1]}, "must be a list of collection names"),
        ({" ": ["wiki"]}, "a group name is empty"),
        ({"token:no spaces": ["wiki"]}, "names no possible static token"),
        (["wiki"], "must be a table"),
    ],
)
def test_a_malformed_table_is_refused_when_the_file_is_read(collections: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AuthSpec(collections=collections)


def test_the_table_is_read_from_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text(
        '[auth]\ngroups_claim = "realm_access.roles"\n[auth.collections]\nsupport = ["runbooks"]\n"*" = ["wiki"]\n',
        encoding="utf-8",
    )
    values = load_config_file(config)["auth"]
    spec = AuthSpec(**values)
    assert spec.groups_claim == "realm_access.roles"
    assert spec.readers == (("support", ("runbooks",)), ("*", ("wiki",)))


NOTES = {"a.md": "# A\n\nrotate the signing key\n"}


@pytest.fixture
def library(tmp_path: Path) -> Any:
    with Library({n: indexed_kb(tmp_path / n, NOTES) for n in SERVED}) as lib:
        yield lib


def test_a_view_holds_only_its_collections_and_refuses_the_others_as_unknown(library: Library) -> None:
    view = library.only(("runbooks", "wiki"))
    assert view.names == ("runbooks", "wiki")
    assert view.several and view.default == "runbooks"  # the library's default, hr, is not in it
    with pytest.raises(InvalidArgument) as hidden:
        view.pick("hr")
    with pytest.raises(InvalidArgument) as never:
        view.pick("xx")
    assert str(hidden.value).replace("'hr'", "'xx'") == str(never.value)
    assert "hr" not in str(never.value)
    assert {h.kb for h in view.search("signing key").hits} == {"runbooks", "wiki"}
    assert list(view.status()) == ["runbooks", "wiki"]


def test_a_view_of_one_collection_still_names_it_and_closing_a_view_closes_nothing(library: Library) -> None:
    view = library.only(("wiki",))
    hit = view.search("signing key").hits[0]
    assert hit.kb == "wiki" and hit.uri == "kb://wiki/doc/a.md"
    view.close()
    assert library["wiki"].search("signing key").hits  # still open
    assert library.only(SERVED) is library
