"""Which store holds the index: ``[store].url`` / ``--store`` / ``KBSEEK_STORE_URL`` and the name in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from kbseek.cli import cli
from kbseek.config import build_settings, load_config_file
from kbseek.errors import ConfigError
from kbseek.store.opening import MAX_NAME, kb_name_of


def test_the_config_file_names_the_store_and_a_flag_wins(tmp_path: Path) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text(
        '[store]\nurl = "postgresql://kb@db.internal/notes"\nname = "team_docs"\n', encoding="utf-8"
    )
    settings = build_settings(root=tmp_path, file_values=load_config_file(config))
    assert settings.store_url == "postgresql://kb@db.internal/notes" and settings.kb_name == "team_docs"
    flagged = build_settings(
        root=tmp_path, file_values=load_config_file(config), store_url="postgres://other/db", kb_name="mine"
    )
    assert flagged.store_url == "postgres://other/db" and flagged.kb_name == "mine"
    assert build_settings(root=tmp_path).store_url is None  # the default: a SQLite file


def test_a_url_that_is_not_postgresql_is_refused_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must be a PostgreSQL URL"):
        build_settings(root=tmp_path, store_url="mysql://db/notes")
    config = tmp_path / "kbseek.toml"
    config.write_text("[store]\nurl = 5432\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[store\]\.url must be of type str"):
        build_settings(root=tmp_path, file_values=load_config_file(config))


def test_every_command_takes_the_store_flags(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["index", "--help"])
    assert "--store URL" in result.output and "--kb-name NAME" in result.output
    bad = CliRunner().invoke(cli, ["status", "--kb", str(tmp_path), "--store", "sqlite:///x"])
    assert bad.exit_code != 0 and "PostgreSQL URL" in bad.output


def test_names_from_folders_read_like_the_folder() -> None:
    assert kb_name_of(Path("/home/me/Team Docs")) == "team_docs"
    assert kb_name_of(Path("/srv/2024-notes")) == "kb_2024_notes"
    japanese = kb_name_of(Path("/home/me/ノート"))
    assert japanese.startswith("kb_") and japanese != kb_name_of(Path("/home/me/メモ"))


@given(
    st.text(min_size=1, max_size=120).filter(
        lambda s: "/" not in s and "\x00" not in s and s not in (".", "..")
    )
)
def test_a_derived_name_is_always_a_safe_schema_name(name: str) -> None:
    derived = kb_name_of(Path("/kb") / name)
    assert re.fullmatch(r"[a-z][a-z0-9_]*", derived) and len(derived) <= MAX_NAME
