"""The "get started" page's examples work as written, in both languages.

Its first-index commands run against a copy of the example knowledge base and print what the page
shows; every ``kbseek`` command line on the page, in a shell block or in a host's JSON config, is
one the real CLI accepts (parsed by click, options and all), so a renamed option cannot leave the
page behind. Installing and starting hosts is not done here: the wheel smoke test installs the
package the ways the page names, and the wire tests start the server.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from kbseek.cli import cli
from tests.fixture_copies import copy_fixture

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"en": ROOT / "docs" / "get-started.md", "ja": ROOT / "docs" / "ja" / "get-started.md"}
FIRST_INDEX = {"en": "## Your first index", "ja": "## 最初のインデックス"}


def section(lang: str) -> str:
    text = PAGES[lang].read_text(encoding="utf-8")
    return text.split(FIRST_INDEX[lang] + "\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", text, flags=re.DOTALL)


def commands(block: str) -> list[str]:
    """A shell block's commands, comments dropped and continued lines joined."""
    joined = block.replace("\\\n", " ")
    return [
        line.split("  #", 1)[0].strip()
        for line in joined.splitlines()
        if line.strip() and not line.startswith("#")
    ]


def test_both_languages_show_the_same_first_commands_and_output() -> None:
    en, ja = section("en"), section("ja")
    assert [commands(b) for b in blocks(en, "bash")] == [commands(b) for b in blocks(ja, "bash")]
    assert blocks(en, "text") == blocks(ja, "text")


@pytest.mark.slow
def test_the_first_index_commands_print_what_the_page_shows(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    copy_fixture(ROOT / "examples" / "kb", notes)
    (bash,) = blocks(section("en"), "bash")
    (shown,) = blocks(section("en"), "text")
    printed = ""
    for line in commands(bash):
        argv = shlex.split(line.replace("~/notes", str(notes)))
        assert argv[0] == "kbseek", line
        done = subprocess.run(
            [sys.executable, "-m", "kbseek", *argv[1:]],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, (line, done.stderr)
        printed = done.stdout
    lines, expected = printed.splitlines(), shown.splitlines()
    assert lines[:2] == expected[:2], "the page's search output is not what the search prints"
    token = re.compile(r"<<<kbseek-doc [0-9a-f]+ ")  # drawn afresh for every answer
    assert token.sub("<<<kbseek-doc * ", lines[2]) == token.sub("<<<kbseek-doc * ", expected[2])
    assert lines[3].startswith(expected[3].rstrip("…").rstrip())


def kbseek_argv(lang: str) -> Iterator[tuple[str, list[str]]]:
    """Every kbseek command line the page gives: shell lines, ``claude mcp add … --`` lines and the
    command and args of each server in a host's JSON config, with what runs kbseek (uvx) dropped."""
    text = PAGES[lang].read_text(encoding="utf-8")
    for block in blocks(text, "bash"):
        for line in commands(block):
            words = shlex.split(line)
            if "kbseek" in words and not any(w in words for w in ("pip", "pipx", "make", "python", "build")):
                yield line, words[words.index("kbseek") + 1 :]
    for block in blocks(text, "json"):
        for server in _servers(json.loads(block)):
            if "command" in server:
                argv = [server["command"], *server.get("args", [])]
                if "kbseek" in argv:
                    yield block, argv[argv.index("kbseek") + 1 :]


def _servers(config: object) -> Iterator[dict[str, object]]:
    if isinstance(config, dict):
        if "command" in config or "url" in config:
            yield config
        for value in config.values():
            yield from _servers(value)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_every_kbseek_command_on_the_page_is_one_the_cli_accepts(lang: str) -> None:
    seen = 0
    for shown, argv in kbseek_argv(lang):
        if not argv or argv[0] in ("--help", "-h"):
            continue
        # Each subcommand's context has its parent's, as when kbseek runs: a context made without
        # them would give (and click would keep, for every later --help) the default help option.
        command: click.Command = cli
        parent = click.Context(cli, info_name="kbseek", **cli.context_settings)
        words = list(argv)
        while isinstance(command, click.Group) and words and words[0] in command.commands:
            if command is not cli:
                parent = click.Context(command, info_name=command.name, parent=parent)
            command = command.commands[words.pop(0)]
        try:
            command.make_context(command.name or "kbseek", words, parent=parent)
        except click.UsageError as exc:  # the failure message is the point
            pytest.fail(
                f"{PAGES[lang].name}: `{shown.strip()}` is refused by the CLI: {exc.format_message()}"
            )
        seen += 1
    assert seen >= 5, f"only {seen} kbseek command lines found on {PAGES[lang]}"


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_every_host_config_on_the_page_is_json(lang: str) -> None:
    for block in blocks(PAGES[lang].read_text(encoding="utf-8"), "json"):
        assert list(_servers(json.loads(block))), block
