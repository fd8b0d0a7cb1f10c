"""The HTTP JSON API page, in each language, documents every route the web app serves.

The routes are read from the real app, so an endpoint added to the server without its section
on the page (or a section for one that was removed) fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.server.web import build_web_app

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"en": ROOT / "docs" / "http-api.md", "ja": ROOT / "docs" / "ja" / "http-api.md"}


def served_paths(core: KnowledgeBase) -> set[str]:
    return {route.path for route in build_web_app(core).routes}


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_every_route_is_in_the_endpoint_table_and_every_api_route_has_its_section(
    core: KnowledgeBase, lang: str
) -> None:
    text = PAGES[lang].read_text(encoding="utf-8")
    table = "\n".join(line for line in text.splitlines() if line.startswith("| `"))
    sections = set(re.findall(r"^## `GET (/api/\w+)`", text, flags=re.MULTILINE))
    paths = served_paths(core)
    for path in paths:
        assert re.search(rf"`(?:GET )?{re.escape(path)}`|, `{re.escape(path)}`", table), (
            f"{lang}: {path} not in the table"
        )
    api = {p for p in paths if p.startswith("/api/")}
    assert sections == api, {"undocumented": api - sections, "not served": sections - api}
