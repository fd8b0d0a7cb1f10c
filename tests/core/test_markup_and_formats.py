"""Real Markdown through the whole pipeline: display text in titles, snippets and the index, MDX,
and documents in formats no parser opens listed as skipped."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kbseek import KnowledgeBase
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.parsers import PARSE_VERSION
from tests.conftest import make_core

STATE_MDX = """---
title: State
---
import { Sandpack } from './components';
import Diagram from "./Diagram"

<Intro>

Components need to *remember* things between renders.

</Intro>

## Adding a state variable {/*adding-a-state-variable*/}

<Sandpack>

```js
export default function Counter() { return <b>{count}</b>; }
```

</Sandpack>
"""

SECTIONS = ChunkOptions(min_chars=0)
"""One chunk per section, however short."""

KEEPALIVE_MD = """## KeepAlive {#keepalive}

<!-- TODO: wombat screenshots -->
`<KeepAlive>` caches [component instances](https://zebrafish.example.com/keep-alive)
<sup class="vt-badge">3.2+</sup> while they are removed from the page.
"""


def _indexed(kb_root: Path, notes: dict[str, str], **settings: object) -> KnowledgeBase:
    for rel, text in notes.items():
        (kb_root / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb_root / rel).write_text(text, encoding="utf-8")
    core = make_core(kb_root, **settings)
    core.index()
    return core


def test_an_mdx_page_is_indexed_with_its_imports_and_jsx_left_out(kb_root: Path) -> None:
    core = _indexed(kb_root, {"learn/state.mdx": STATE_MDX}, chunking=SECTIONS)
    assert "learn/state.mdx" in core.last_report.added  # type: ignore[union-attr]
    hit = next(h for h in core.search("remember things").hits if h.path == "learn/state.mdx")
    assert hit.snippet.startswith("Components need to remember things")
    assert "<Intro>" not in hit.snippet and "import" not in hit.snippet
    section = next(h for h in core.search("counter").hits if h.path == "learn/state.mdx")
    assert section.heading_path == ["State", "Adding a state variable"]
    # Sandpack and Diagram only occur in import lines and component tags.
    assert all(h.path != "learn/state.mdx" for h in core.search("sandpack diagram").hits)
    assert core.read_document("learn/state.mdx").text == STATE_MDX  # served as written
    core.close()


def test_titles_snippets_and_the_index_see_display_text_and_offsets_see_the_file(kb_root: Path) -> None:
    core = _indexed(kb_root, {"guide/keep-alive.md": KEEPALIVE_MD})
    hit = core.search("keepalive caches").hits[0]
    assert hit.path == "guide/keep-alive.md" and hit.title == "KeepAlive"
    assert hit.snippet.startswith("KeepAlive <KeepAlive> caches component instances 3.2+ while")
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["KeepAlive", "KeepAlive", "caches"]
    assert KEEPALIVE_MD[hit.start : hit.end].startswith("## KeepAlive {#keepalive}")
    assert hit.line_start == 1
    # Words only in a link URL or a comment are markup: not found, and not shown.
    assert core.search("zebrafish").hits == [] and core.search("wombat").hits == []
    core.close()


def test_documents_no_parser_opens_are_listed_as_skipped_with_what_would_enable_them(kb_root: Path) -> None:
    (kb_root / "guide").mkdir()
    (kb_root / "guide" / "intro.rst").write_text("Intro\n=====\n\nText.\n", encoding="utf-8")
    (kb_root / "papers").mkdir()
    (kb_root / "papers" / "capacity.pdf").write_bytes(b"%PDF-1.4\n")
    (kb_root / "diagram.png").write_bytes(b"\x89PNG")
    (kb_root / "poetry.lock").write_text("[[package]]\n", encoding="utf-8")
    core = make_core(kb_root)
    reasons = dict(core.index().skipped)
    assert "reStructuredText" in reasons["guide/intro.rst"] and "no setting" in reasons["guide/intro.rst"]
    assert (
        '[parsers] enabled = ["md", "txt", "docx", "xlsx", "ipynb", "pdf"]' in reasons["papers/capacity.pdf"]
    )
    assert "diagram.png" not in reasons and "poetry.lock" not in reasons
    status = {s.path: s.reason for s in core.status().skipped}
    assert status["guide/intro.rst"] == reasons["guide/intro.rst"]
    core.close()

    (kb_root / ".kbseekignore").write_text("drafts/\n*.rst\n", encoding="utf-8")
    quiet = make_core(kb_root)
    assert "guide/intro.rst" not in dict(quiet.index().skipped)  # the ignore file silences the listing
    quiet.close()


def test_a_disabled_format_listed_as_skipped_keeps_its_rows_until_an_explicit_pass(kb_root: Path) -> None:
    make_core(kb_root).index()
    narrow = make_core(kb_root, parsers=("md",))
    report = narrow.index(prune_disabled=False)  # what the server's freshness pass does (D4)
    assert "notes/plain.txt" in dict(report.skipped) and "notes/plain.txt" not in report.deleted
    assert any(h.path == "notes/plain.txt" for h in narrow.search("descaling").hits)
    assert "notes/plain.txt" in narrow.index().deleted
    narrow.close()


def test_an_index_written_by_older_parsers_is_reparsed_once(kb_root: Path) -> None:
    core = make_core(kb_root)
    core.index()
    core.close()
    conn = sqlite3.connect(core.store.path)
    conn.execute("UPDATE meta SET value='1' WHERE key='parse_version'")
    conn.execute("UPDATE documents SET title='stale'")
    conn.commit()
    conn.close()

    again = make_core(kb_root)
    assert again.store.meta().parse_version == 1
    report = again.index()
    assert len(report.updated) == 4 and report.unchanged == 0
    assert "stale" not in {d.title for d in again.store.documents()}
    assert again.store.meta().parse_version == PARSE_VERSION
    assert again.index().unchanged == 4
    again.close()
