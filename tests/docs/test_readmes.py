"""The English and Japanese READMEs, and the site's pages in each language, describe the same product.

The READMEs are what a newcomer reads first, so they stay short and say the same thing; the site
(``docs/``, ``docs/ja/``) must let a reader of either language meet every command and every MCP
tool and prompt, so the names are taken from the real CLI and the real server, not from a list
kept here that could drift along with the pages.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.cli import cli
from kbseek.server.mcp import build_server

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
READMES = {"en": ROOT / "README.md", "ja": ROOT / "README.ja.md"}
SITES = {"en": ROOT / "docs", "ja": ROOT / "docs" / "ja"}
SITE_ONLY = {"changelog", "architecture", "contracts"}
"""Pages the README need not link: the changelog is linked as ``CHANGELOG.md``, and the records for
people working on kbseek are reached from the development page."""
README_LINES = 200
"""A README holds what a newcomer needs first and fits on a screen or two; the rest is on the site."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def cli_commands() -> set[str]:
    """Every command a user can type, with a group's subcommands as ``group sub``."""
    names: set[str] = set()
    for name, command in cli.commands.items():
        if isinstance(command, click.Group):
            names.update(f"{name} {sub}" for sub in command.commands)
        else:
            names.add(name)
    return names


async def mcp_names(core: KnowledgeBase) -> set[str]:
    async with Client(build_server(core)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
    return tools | prompts


def named_commands(text: str, known: set[str]) -> set[str]:
    return {
        c for c in known if re.search(r"\bkbseek\s+" + r"\s+".join(map(re.escape, c.split())) + r"\b", text)
    }


def named_mcp(text: str, known: set[str]) -> set[str]:
    return {n for n in known if re.search(r"`" + re.escape(n) + r"[`(]", text)}


def test_the_english_readme_links_the_japanese_one_in_its_first_lines_and_back() -> None:
    head = READMES["en"].read_text(encoding="utf-8").splitlines()[:5]
    assert any("README.ja.md" in line for line in head), "README.md must link README.ja.md near the top"
    head_ja = READMES["ja"].read_text(encoding="utf-8").splitlines()[:5]
    assert any("README.md" in line for line in head_ja), "README.ja.md must link README.md near the top"


def site_text(lang: str) -> str:
    """Every page of one language's site, as written (the generated references left out)."""
    return "\n".join(page.read_text(encoding="utf-8") for page in sorted(SITES[lang].glob("*.md")))


async def test_both_sites_name_every_cli_command_and_mcp_tool_and_prompt(core: KnowledgeBase) -> None:
    commands, mcp = cli_commands(), await mcp_names(core)
    found = {}
    for lang in SITES:
        text = site_text(lang)
        found[lang] = (named_commands(text, commands), named_mcp(text, mcp))
    for lang in SITES:
        cmds, names = found[lang]
        assert cmds == commands, f"the {lang} pages never name: {sorted(commands - cmds)}"
        assert names == mcp, f"the {lang} pages never name: {sorted(mcp - names)}"
    assert found["en"] == found["ja"]


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_each_readme_fits_on_a_screen_or_two_and_links_into_the_site(lang: str) -> None:
    text = READMES[lang].read_text(encoding="utf-8")
    assert len(text.splitlines()) < README_LINES, f"{READMES[lang].name}: move detail to a page under docs/"
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", text))
    pages = {
        f"docs/{p.relative_to(ROOT / 'docs')}" for p in SITES[lang].glob("*.md") if p.stem not in SITE_ONLY
    }
    assert pages - {"docs/index.md", "docs/ja/index.md"} <= linked, sorted(pages - linked)
    for link in linked:
        assert (ROOT / link).is_file(), link


def test_both_readmes_have_the_same_sections() -> None:
    """Same number of second-level sections in the same order: a section added to one is added to both."""
    counts = {
        lang: len(re.findall(r"^## ", path.read_text(encoding="utf-8"), flags=re.MULTILINE))
        for lang, path in READMES.items()
    }
    assert counts["en"] == counts["ja"], counts


INSTALL_HEADINGS = {"en": "## Install", "ja": "## インストール"}


def install_blocks(lang: str) -> list[list[str]]:
    """The commands (comments dropped) of each ``bash`` block in the README's install section."""
    text = READMES[lang].read_text(encoding="utf-8")
    section = text.split(INSTALL_HEADINGS[lang] + "\n", 1)[1].split("\n## ", 1)[0]
    return [
        [line.split("  #", 1)[0].strip() for line in block.strip().splitlines()]
        for block in re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    ]


def test_both_install_sections_give_the_same_commands_in_the_same_order() -> None:
    assert install_blocks("en") == install_blocks("ja")


def test_the_first_install_commands_work_from_a_checkout_and_by_name_waits_for_a_release() -> None:
    """Nothing is published yet: a command that installs ``kbseek`` by name answers "No matching
    distribution", so the first block installs from the checkout (``.``), and the by-name commands
    come after a sentence saying they need a release."""
    first, *rest = install_blocks("en")
    assert first[0] == "pip install ."
    assert all(re.search(r"(?:^|\s)(?:--from )?'?\.(?:\[|\s|'|$)", cmd) for cmd in first), first
    by_name = next(block for block in rest if "pip install kbseek" in block)
    for lang, said in {"en": "Once a release is published", "ja": "リリースが公開された後"}.items():
        text = READMES[lang].read_text(encoding="utf-8")
        assert text.index(said) < text.index("pip install kbseek"), lang
    assert by_name == ["pip install kbseek", "pipx install kbseek", "uvx kbseek serve --kb ~/notes"]


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_readmes_search_output_is_the_one_get_started_checks_against_a_real_run(lang: str) -> None:
    """Get started's output block is compared with what the search prints
    (``test_get_started.py``); the README shows the same lines, so it is held to the same run."""
    readme = re.findall(r"```text\n(.*?)```", READMES[lang].read_text(encoding="utf-8"), flags=re.DOTALL)
    page = ROOT / "docs" / ("get-started.md" if lang == "en" else "ja/get-started.md")
    checked = re.findall(r"```text\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    shown = [block for block in readme if " hits for " in block]
    assert len(shown) == 1 and shown[0] in checked, "the README's search output differs from Get started's"
