"""The documentation site's own Sphinx extension: settings shared by both languages, the language
switch, and the two reference pages written from the code.

The site is two Sphinx builds of Markdown pages: English from ``docs/`` into ``build/docs/``, and
Japanese from ``docs/ja/`` into ``build/docs/ja/`` (docs/decisions/0046). Each page of one language
links to the same page in the other, and says which kbseek it describes and where its source is. The
search lists the pages for users before the records for developers (``search-scorer.js``). The
command-line and configuration references are written at
build time from the CLI's own help and from the settings table in ``kbseek.config``, so they cannot
drift from the code; a page asks for one with a marker line (``<!-- kbseek:cli -->``,
``<!-- kbseek:config -->``).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
from importlib.metadata import PackageNotFoundError, metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
BUILD = Path(os.environ.get("KBSEEK_DOCS_BUILD", ROOT / "build" / "docs"))
"""Where the English site is built, whose inventory the Japanese build links into: ``build/docs``
for ``make docs``, a folder of its own for the test that builds the site."""

LANGUAGES = {"en": {"source": DOCS, "label": "English"}, "ja": {"source": DOCS / "ja", "label": "日本語"}}

SITE_WORDS = {
    "en": {"version": "Version", "source": "Source", "code_map": "where-the-code-lives"},
    "ja": {"version": "バージョン", "source": "ソース", "code_map": "コードの在りか"},
}
"""The sidebar's words under the project's name, and the anchor of the development page's section on
where the code lives, in each language (its heading there, as MyST writes the anchor)."""
SOURCE_LABELS = {"source", "sourcecode", "repository", "code"}
"""The ``[project.urls]`` labels that name the source repository, normalized as the packaging
specification normalizes them (lower case, without punctuation or spaces)."""

CLI_MARKER = re.compile(r"^<!-- kbseek:cli -->$", flags=re.MULTILINE)
CONFIG_MARKER = re.compile(r"^<!-- kbseek:config -->$", flags=re.MULTILINE)
"""A marker counts alone on its line, so a page may mention one in its text (decision 0046 does)."""
HELP_WIDTH = 100
"""The terminal width the command-line reference is rendered at, so it reads the same everywhere."""


def settings(language: str) -> dict[str, Any]:
    """The ``conf.py`` values of one language's build; each ``conf.py`` is these and nothing else."""
    from kbseek import __version__

    values: dict[str, Any] = {
        "project": "kbseek",
        "author": "the kbseek authors",
        "copyright": "the kbseek authors",
        "version": __version__,
        "release": __version__,
        "language": language,
        "html_search_language": language,
        "extensions": ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.intersphinx", "kbseek_site"],
        "source_suffix": {".md": "markdown"},
        "root_doc": "index",
        "myst_heading_anchors": 4,
        "myst_enable_extensions": ["colon_fence"],
        "templates_path": [str(DOCS / "_templates")],
        "html_theme": "furo",
        "html_title": "kbseek",
        "html_static_path": [str(DOCS / "_static")],
        "html_favicon": str(DOCS / "_static" / "favicon.svg"),
        "html_search_scorer": str(DOCS / "_ext" / "search-scorer.js"),
        "html_last_updated_fmt": None,
        "html_sidebars": {
            "**": [
                "sidebar/brand.html",
                "sidebar/project.html",
                "sidebar/language.html",
                "sidebar/search.html",
                "sidebar/scroll-start.html",
                "sidebar/navigation.html",
                "sidebar/scroll-end.html",
            ]
        },
        "autodoc_member_order": "bysource",
        "autodoc_typehints": "description",
        "autodoc_class_signature": "separated",
        "kbseek_language": language,
        "intersphinx_mapping": {},
        "intersphinx_disabled_reftypes": ["*"],
        "exclude_patterns": ["_build", "_ext", "_templates", "_static"],
    }
    if language == "en":
        values["exclude_patterns"] += ["ja"]
    else:
        # The records a developer reads (architecture, contracts, decisions) are written in English
        # only; Japanese pages link to them in the English build, through its inventory, so a link
        # to a record that does not exist fails the build like any other.
        values["intersphinx_mapping"] = {"en": ("../", str(BUILD / "objects.inv"))}
    return values


# --- the language switch ------------------------------------------------------------------------


def _counterpart(pagename: str, other: str) -> str:
    """The URL, relative to ``pagename``'s own page, of the same page in the other language, or of
    the other language's front page where that page is written in one language only. Japanese is
    built under the English site's ``ja/``."""
    up = "../" * pagename.count("/")
    target = pagename if (LANGUAGES[other]["source"] / f"{pagename}.md").exists() else "index"
    return f"{up}ja/{target}.html" if other == "ja" else f"{up}../{target}.html"


def source_url() -> str | None:
    """The source repository's address as the installed package's metadata names it (a
    ``[project.urls]`` entry of ``pyproject.toml``), or None while it names none: the site links an
    address the project gives, never one made up here."""
    try:
        entries = metadata("kbseek").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    for entry in entries:
        label, _, url = str(entry).partition(",")
        if re.sub(r"[^a-z]", "", label.lower()) in SOURCE_LABELS and url.strip():
            return url.strip()
    return None


def _source_link(app: Any, pagename: str, language: str) -> str:
    """Where the sidebar's source link points from ``pagename``: the repository where the package
    names one, else the development page's section on where the code lives, which is how the
    project describes its source until it names an address."""
    url = source_url()
    if url is not None:
        return url
    page = app.builder.get_relative_uri(pagename, "development")
    return f"{page}#{quote(SITE_WORDS[language]['code_map'])}"


def _page_context(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    language = app.config.kbseek_language
    other = next(name for name in LANGUAGES if name != language)
    context["kbseek_other_label"] = LANGUAGES[other]["label"]
    context["kbseek_other_url"] = _counterpart(pagename, other)
    context["kbseek_other_language"] = other
    context["kbseek_version_label"] = SITE_WORDS[language]["version"]
    context["kbseek_source_label"] = SITE_WORDS[language]["source"]
    context["kbseek_source_url"] = _source_link(app, pagename, language)


# --- the command-line reference -----------------------------------------------------------------


def cli_reference() -> str:
    """Every command's ``--help``, as the CLI prints it, under a heading of its own."""
    import click

    from kbseek.cli import cli

    parts: list[str] = []

    def walk(command: click.Command, path: list[str], parent: click.Context | None) -> None:
        # The command's own context settings (``-h`` beside ``--help``), as ``kbseek … --help`` has them.
        settings = {**command.context_settings, "terminal_width": HELP_WIDTH, "max_content_width": HELP_WIDTH}
        ctx = click.Context(command, info_name=path[-1], parent=parent, **settings)
        name = " ".join(path)
        level = "#" * min(2 + len(path) - 1, 4)
        if len(path) > 1:
            parts.append(f"{level} `{name}`\n")
            summary = command.get_short_help_str(limit=200)
            parts.append(f"{summary}\n")
        parts.append("```text\n" + command.get_help(ctx).rstrip() + "\n```\n")
        if isinstance(command, click.Group):
            for sub in sorted(command.commands):
                walk(command.commands[sub], [*path, sub], ctx)

    walk(cli, ["kbseek"], None)
    return "\n".join(parts)


# --- the configuration reference ----------------------------------------------------------------


def _attribute_docs(cls: type) -> dict[str, str]:
    """A dataclass's field docstrings (the string literal under each field), as written in the code."""
    from sphinx.pycode import ModuleAnalyzer

    analyzer = ModuleAnalyzer.for_module(cls.__module__)
    docs = analyzer.find_attr_docs()
    return {
        name: " ".join(" ".join(lines).split())
        for (owner, name), lines in docs.items()
        if owner == cls.__qualname__
    }


DECISION = re.compile(r"(?:docs/decisions/|decision )(\d{4})")
ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def _decision_link(match: re.Match[str], language: str, up: str) -> str:
    number = match.group(1)
    found = sorted((DOCS / "decisions").glob(f"{number}-*.md"))
    if not found:
        return match.group(0)  # left as written: the test of this page names the missing record
    target = f"decisions/{found[0].stem}"
    href = f"{up}{target}.md" if language == "en" else f"inv:en:std:doc#{target}"
    return f"[decision {number}]({href})"


def _cell(text: str, language: str, up: str = "") -> str:
    """A docstring as one table cell: reST roles as code, decisions as links, pipes escaped."""
    text = ROLE.sub(r"``\1``", text)
    text = DECISION.sub(lambda m: _decision_link(m, language, up), text)
    return text.replace("|", "\\|").replace("\n", " ")


def _default(cls: type, name: str) -> str:
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "(required)"
    if value is None:
        return "(not set)"
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if dataclasses.is_dataclass(value):
        return "(its table)"
    return f"`{value!r}`".replace("'", '"')


def _kind(cls: type, name: str) -> str:
    hints = inspect.get_annotations(cls, eval_str=True)
    hint = hints.get(name)
    text = getattr(hint, "__name__", None) if not getattr(hint, "__args__", None) else None
    return text or str(hint).replace("typing.", "")


CONFIG_WORDS = {
    "en": {
        "header": "| key | type | default | applied while running | what it does |",
        "live": "yes",
        "restart": "after a restart",
    },
    "ja": {"header": "| キー | 型 | 既定値 | 実行中に反映 | 説明 |", "live": "される", "restart": "再起動後"},
}
"""The reference table's own words; the descriptions are the code's docstrings, in English."""


def config_reference(language: str = "en", up: str = "") -> str:
    """Every key of the config file: where it sits, its type and default, whether a running server
    applies a change to it, and what it does, in the words of the code's own field docstrings."""
    from kbseek.config import KEYS, SECTIONS, Settings

    words = CONFIG_WORDS[language]

    def row(label: str, kind: str, cls: type, name: str, reloadable: bool, doc: str) -> str:
        cells = (kind, _default(cls, name), words["live"] if reloadable else words["restart"], doc)
        return f"| `{label}` | " + " | ".join(_cell(cell, language, up) for cell in cells) + " |"

    docs = _attribute_docs(Settings)
    rows = [words["header"], "|---|---|---|---|---|"]
    rows += [
        row(key.label, key.kind.__name__, Settings, key.field, key.reloadable, docs.get(key.field, ""))
        for key in KEYS
    ]
    for table, (cls, reloadable) in sorted(SECTIONS.items()):
        field_docs = _attribute_docs(cls)
        rows += [
            row(
                f"[{table}].{f.name}", _kind(cls, f.name), cls, f.name, reloadable, field_docs.get(f.name, "")
            )
            for f in dataclasses.fields(cls)
            if f.init and not f.name.startswith("_")
        ]
    return "\n".join(rows) + "\n"


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    up = "../" * docname.count("/")
    text = CLI_MARKER.sub(lambda _: cli_reference(), source[0])
    source[0] = CONFIG_MARKER.sub(lambda _: config_reference(app.config.kbseek_language, up), text)


def _scripts(app: Any) -> None:
    if app.config.kbseek_language == "ja":
        # Before searchtools.js (priority 500), which keeps a splitQuery defined earlier.
        app.add_js_file("ja-query.js", priority=200)


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("kbseek_language", "en", "html")
    app.connect("builder-inited", _scripts)
    app.connect("html-page-context", _page_context)
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
