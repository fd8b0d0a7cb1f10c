"""The HTTP API page's examples are what the server answers (``scripts/doc_examples.py``).

The page said its examples were real answers while its first one showed offsets and lines the
answer no longer had. Each example is now marked with the request it answers; the slow test starts
``kbseek serve --http`` on a copy of the example notes with the default model, asks each request and
compares, and ``python scripts/doc_examples.py --write`` rewrites the page from such a run.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def doc_examples() -> ModuleType:
    spec = importlib.util.spec_from_file_location("doc_examples", ROOT / "scripts" / "doc_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_both_pages_mark_every_request_and_show_the_same_answers() -> None:
    examples = doc_examples()
    english, japanese = (
        dict(examples.MARKER.findall(page.read_text(encoding="utf-8"))) for page in examples.PAGES
    )
    assert set(english) == set(examples.REQUESTS) and english == japanese
    for block in english.values():
        json.loads(block)  # every example is JSON a client could parse


def test_the_formatting_is_the_pages() -> None:
    shown = doc_examples().shown
    assert shown({"error": "x"}) == '{"error": "x"}'
    assert shown({"a": [1, 2], "b": {"c": 1}}) == '{\n  "a": [1, 2],\n  "b": {"c": 1}\n}'
    assert (
        shown({"hits": [{"chunk_id": "c", "n": 1}]})
        == '{\n  "hits": [\n    {\n      "chunk_id": "c",\n      "n": 1\n    }\n  ]\n}'
    )


@pytest.mark.slow
def test_every_example_is_what_the_server_answers() -> None:
    examples = doc_examples()
    problems = examples.differences(examples.answers())
    assert not problems, "\n".join(problems) + "\n(run: python scripts/doc_examples.py --write)"
