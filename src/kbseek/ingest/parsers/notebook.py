"""Jupyter notebooks (``.ipynb``), served as Markdown: the Markdown cells as written, code cells fenced.

Outputs are left out: they are results, often large (images as base64,
tracebacks, tables of data), and they repeat what the code and prose say.
Raw cells are left out too (they are build directives more often than text).
The notebook's ``metadata.title`` becomes the title in frontmatter when it
has one; else the first heading names it, as in Markdown.

Reading a notebook is ``json.loads`` on a file of at most ``max_file_bytes``,
so it runs in process: the standard library's parser is linear, and a
document nested too deeply for it raises ``RecursionError``, reported as
unreadable.
"""

from __future__ import annotations

import json
from typing import Any

from kbseek.ingest.parsers.converted import ConvertedParser, clean, render
from kbseek.ingest.parsers.text import decode_utf8

MAX_CELLS = 20_000
"""Cells read at most; a notebook past it ends with a note saying so (D7)."""


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


class NotebookParser(ConvertedParser):
    """``.ipynb`` files (nbformat 4, and 3's worksheets)."""

    name = "ipynb"
    extensions: tuple[str, ...] = (".ipynb",)

    def decode(self, raw: bytes) -> str:
        try:
            notebook = json.loads(decode_utf8(raw))
        except RecursionError:
            raise ValueError("not a readable notebook: JSON nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a readable notebook: {exc}") from None
        if not isinstance(notebook, dict):
            raise ValueError("not a readable notebook: the file is not a JSON object")
        cells: Any = notebook.get("cells")
        if cells is None and isinstance(notebook.get("worksheets"), list):  # nbformat 3
            cells = [c for ws in notebook["worksheets"] if isinstance(ws, dict) for c in ws.get("cells", [])]
        if not isinstance(cells, list):
            raise ValueError("not a readable notebook: it has no list of cells")
        metadata = notebook.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        language = _language(metadata)
        markdown: list[str] = []
        for cell in cells[:MAX_CELLS]:
            if not isinstance(cell, dict):
                continue
            kind, source = cell.get("cell_type"), _source(cell)
            if not source.strip():
                continue
            if kind in ("markdown", "heading"):
                markdown.append(source)
            elif kind == "code":
                markdown.append(render([["code", language, source]]))
        if len(cells) > MAX_CELLS:
            note = f"kbseek reads at most {MAX_CELLS} cells of a notebook; the rest is left out"
            markdown.append(render([], note=note))
        head = render([], {"title": metadata.get("title"), "keywords": metadata.get("keywords")})
        parts = [part.strip("\n") for part in (head, *markdown) if part.strip()]
        return clean("\n\n".join(parts) + "\n") if parts else ""


def _language(metadata: dict[str, Any]) -> str:
    for key in ("language_info", "kernelspec"):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(
            value.get("name" if key == "language_info" else "language"), str
        ):
            return str(value["name" if key == "language_info" else "language"])
    return ""
