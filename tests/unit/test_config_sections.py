"""The config-file layout is one table (``config.KEYS``, ``config.SECTIONS``): every key in it loads,
types and reloads by that table alone, and every setting is either applied live or waits for a restart."""

from __future__ import annotations

import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from kbseek.config import (
    KEYS,
    RELOADABLE,
    RESTART_NEEDED,
    SECTIONS,
    Settings,
    build_settings,
    load_config_file,
)
from kbseek.errors import ConfigError

# A value unlike the default for every key: a key added to the table without one fails
# test_every_key_has_a_sample, so each new key is exercised by the tests below.
SAMPLES: dict[str, Any] = {
    "exclude_dirs": ["drafts"],
    "max_file_bytes": 1234,
    "semantic": False,
    "[parsers].enabled": ["md"],
    "[search].fusion": "rrf",
    "[search].dense_weight": 0.5,
    "[search].dense_weight_matched": 0.4,
    "[search].rrf_k": 10,
    "[search].far_ahead": 2.0,
    "[search].also_agreement": 0.1,
    "[search].bridge_weight": 0.25,
    "[index].freshness_interval": 3.0,
    "[index].reconcile_interval": 30.0,
    "[index].approximate_above": 7,
    "[index].date_fields": ["published", "date"],
    "[store].url": "postgresql://reader@db.example/notes",
    "[store].name": "team-notes",
}


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def _config_text(key_label: str, value: Any) -> str:
    if key_label.startswith("["):
        table, name = key_label[1:].split("].")
        return f"[{table}]\n{name} = {_toml(value)}\n"
    return f"{key_label} = {_toml(value)}\n"


def test_every_setting_is_either_live_or_waits_for_a_restart() -> None:
    names = [f.name for f in fields(Settings)]
    assert sorted(RELOADABLE + RESTART_NEEDED) == sorted(names)
    assert not set(RELOADABLE) & set(RESTART_NEEDED)


def test_every_key_names_a_setting_of_its_kind() -> None:
    defaults = {f.name: f for f in fields(Settings)}
    for key in KEYS:
        assert key.field in defaults, key
    for table, (cls, _) in SECTIONS.items():
        assert table in defaults and defaults[table].default_factory is cls, table  # type: ignore[misc]
    labels = [key.label for key in KEYS]
    assert len(labels) == len(set(labels))


def test_every_key_has_a_sample() -> None:
    assert sorted(SAMPLES) == sorted(key.label for key in KEYS)


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.label)
def test_each_key_in_a_file_sets_its_setting(key: Any, tmp_path: Path) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text(_config_text(key.label, SAMPLES[key.label]), encoding="utf-8")
    settings = build_settings(root=tmp_path, file_values=load_config_file(config))
    expected = SAMPLES[key.label]
    got = getattr(settings, key.field)
    assert (list(got) if isinstance(got, tuple) else got) == expected
    assert got != getattr(Settings(root=tmp_path), key.field)


@pytest.mark.parametrize("key", [k for k in KEYS if k.kind is not str], ids=lambda k: k.label)
def test_each_key_of_the_wrong_type_is_refused_by_its_label(key: Any, tmp_path: Path) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text(_config_text(key.label, "not-a-number-or-list"), encoding="utf-8")
    label = key.label.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    with pytest.raises(ConfigError, match=label):
        build_settings(root=tmp_path, file_values=load_config_file(config))


def test_an_unknown_key_in_a_table_names_the_known_ones(tmp_path: Path) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text("[search]\nfusoin = 'rrf'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key 'fusoin' in \[search\]; known keys: also_agreement"):
        load_config_file(config)


def test_flags_outrank_the_file_for_the_keys_they_set(tmp_path: Path) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text('semantic = true\n[store]\nname = "from-file"\n', encoding="utf-8")
    values = load_config_file(config)
    settings = build_settings(root=tmp_path, file_values=values, semantic=False, kb_name="from-flag")
    assert settings.semantic is False and settings.kb_name == "from-flag"


def test_the_samples_are_valid_toml() -> None:
    for label, value in SAMPLES.items():
        tomllib.loads(_config_text(label, value))


def test_a_changed_store_waits_for_a_restart(tmp_path: Path) -> None:
    """``[store]`` was in neither list: a running server took no notice of a new database URL and said
    nothing about it."""
    from kbseek.facade.live_config import LiveConfig

    (tmp_path / "notes").mkdir()
    config = tmp_path / "kbseek.toml"
    config.write_text("semantic = false\n", encoding="utf-8")
    live = LiveConfig.resolve(tmp_path / "notes", config=config, index_dir=None, semantic=None, settings=None)
    config.write_text('semantic = false\n[store]\nname = "renamed"\n', encoding="utf-8")
    live.reload()
    assert live.note is not None and "kb_name" in live.note and "restarted" in live.note
    assert live.active.settings.kb_name is None


@pytest.mark.parametrize("table", ["embed", "rerank"])
def test_a_model_folder_written_relative_is_the_config_files_neighbour(
    table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative folder was resolved against the working directory, so a server started from
    another directory looked for the model somewhere else."""
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "kbseek.toml"
    config.write_text(f'[{table}]\nmodel = "./models/tiny"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    values = load_config_file(config)
    assert values[table]["model"] == str(tmp_path / "conf" / "models" / "tiny")
    config.write_text(f'[{table}]\nmodel = "intfloat/multilingual-e5-large"\n', encoding="utf-8")
    assert load_config_file(config)[table]["model"] == "intfloat/multilingual-e5-large"
