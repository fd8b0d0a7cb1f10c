"""Jupyter notebooks of nbformat 2, 3 and 4 through one reader: prose and code kept, outputs left out,
heading cells as headings, a title that is a title, and a size counted on the text kept."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.parsers.notebook import (
    MAX_JSON_VALUES,
    MAX_TITLE_CHARS,
    RAW_SIZE_CEILING,
    RAW_SIZE_FACTOR,
    NotebookParser,
)
from tests.conftest import make_core
from tests.fixture_copies import REALFILES

NBFORMAT = REALFILES / "nbformat"
PANDOC = REALFILES / "pandoc" / "ipynb"
needs_real_files = pytest.mark.skipif(not NBFORMAT.is_dir(), reason="the shared real notebooks are not here")
SMALL = ChunkOptions(min_chars=0)
MiB = 1024 * 1024


def _served(path: Path) -> str:
    return NotebookParser().decode(path.read_bytes())


def _headings(markdown: str) -> list[str]:
    """ATX headings outside fenced code."""
    found, fence = [], ""
    for line in markdown.splitlines():
        if fence:
            fence = "" if line.startswith(fence) and not line.strip("`") else fence
        elif (opened := re.match(r"`{3,}", line)) is not None:
            fence = opened[0]
        elif re.match(r"#{1,6} ", line):
            found.append(line)
    return found


def _notebook(cells: list[dict[str, object]], **metadata: object) -> bytes:
    return json.dumps({"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}).encode()


# --------------------------------------------------------------------------- the three layouts


@needs_real_files
def test_a_version_2_notebook_keeps_its_line_breaks_its_code_and_a_short_title() -> None:
    text = _served(NBFORMAT / "test2.ipynb")
    assert "modesof" not in text and "atthe" not in text  # lines written without their "\n"
    assert "allows for new modes\nof interaction with IPython" in text
    assert '```python\ndef f(x):\n    """My function\n    x : parameter"""' in text
    assert text.count("```python") >= 5
    doc = NotebookParser().parse("intro/test2.ipynb", text, SMALL)
    assert doc.title == "An introduction to the Jupyter notebook"
    assert (_headings(text)[:3]) == [
        "# An introduction to the Jupyter notebook",
        "## User interface",
        "### Main editing area",
    ]


@needs_real_files
def test_a_version_3_notebook_keeps_its_code_cells_and_its_heading_cells_as_headings() -> None:
    text = _served(NBFORMAT / "test3.ipynb")
    assert '```python\nprint("hello")\n```' in text
    assert "```python\nfrom IPython.display import HTML\nHTML(" in text
    assert _headings(text) == ["# nbconvert latex test", "## Printed Using Python", "## Pyout", "### Image"]
    doc = NotebookParser().parse("test3.ipynb", text, SMALL)
    assert doc.title == "nbconvert latex test"
    assert ("nbconvert latex test", "Printed Using Python") in {c.heading_path for c in doc.chunks}


@needs_real_files
def test_versions_3_and_4_of_one_notebook_serve_the_same_headings_and_as_many_code_blocks() -> None:
    v3, v4 = _served(NBFORMAT / "test3.ipynb"), _served(NBFORMAT / "test4.ipynb")
    assert _headings(v3) == _headings(v4)
    assert v3.count("```") == v4.count("```") == 8


@needs_real_files
def test_real_version_4_notebooks_keep_heading_cells_and_leave_outputs_attachments_and_unknown_cells_out() -> (
    None
):
    invalid = _served(NBFORMAT / "invalid.ipynb")  # nbformat 4 carrying a version 3 heading cell
    assert _headings(invalid)[:1] == ["## Printed Using Python"]
    future = _served(NBFORMAT / "test4plus.ipynb")  # nbformat 4.99 with a "future cell"
    assert _headings(future)[0] == "# nbconvert latex test"
    for name in ("simple.ipynb", "mime.ipynb", "rank.ipynb"):
        raw = (PANDOC / name).read_bytes()
        text = NotebookParser().decode(raw)
        for cell in json.loads(raw)["cells"]:
            for output in cell.get("outputs", []):
                for mime, value in output.get("data", {}).items():
                    blob = "".join(value) if isinstance(value, list) else str(value)
                    if mime.startswith("image/"):  # a text output may repeat the code, which is kept
                        assert blob[:40] not in text
            for attachment in cell.get("attachments", {}).values():
                assert all(blob[:40] not in text for blob in attachment.values())


def test_version_3_lines_joined_as_nbformat_joins_them() -> None:
    raw = json.dumps({
        "nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""},
        "worksheets": [{"cells": [
            {"cell_type": "heading", "level": 3, "source": ["Deploy\n", "steps"]},
            {"cell_type": "markdown", "source": ["first line\n", "second line"]},
            {"cell_type": "markdown", "source": ["old writer", "no newlines"]},
            {"cell_type": "code", "language": "bash", "input": ["make\n", "make install"], "outputs": [
                {"output_type": "stream", "text": ["SECRET-OUTPUT"]}]},
            {"cell_type": "raw", "source": ["raw directive"]},
        ]}],
    }).encode()  # fmt: skip
    text = NotebookParser().decode(raw)
    assert text == (
        "### Deploy steps\n\nfirst line\nsecond line\n\nold writer\nno newlines\n\n```bash\nmake\nmake install\n```\n"
    )


# --------------------------------------------------------------------------- titles


def test_the_title_is_the_metadata_title_then_the_first_heading_never_a_paragraph() -> None:
    parser = NotebookParser()
    titled = parser.decode(_notebook([{"cell_type": "markdown", "source": "# Heading"}], title="Load test"))
    assert parser.parse("nb/a.ipynb", titled, SMALL).title == "Load test"
    long_heading = "# " + "word " * 250
    text = parser.decode(_notebook([{"cell_type": "markdown", "source": long_heading + "\n\nBody."}]))
    doc = parser.parse("nb/capacity-plan.ipynb", text, SMALL)
    assert doc.title == "capacity-plan" and len(long_heading) > MAX_TITLE_CHARS
    assert all(c.heading_path[0] == "capacity-plan" for c in doc.chunks)


# --------------------------------------------------------------------------- size


def test_the_raw_size_limit_is_a_multiple_of_max_file_bytes_bounded_and_never_below_it() -> None:
    parser = NotebookParser()
    assert parser.raw_size_limit(1 * MiB) == RAW_SIZE_FACTOR * MiB
    assert parser.raw_size_limit(4 * MiB) == RAW_SIZE_CEILING == 128 * MiB
    assert parser.raw_size_limit(16 * MiB) == RAW_SIZE_CEILING
    assert parser.raw_size_limit(512 * MiB) == 512 * MiB


def _plots(text_chars: int, plots: int, plot_bytes: int) -> bytes:
    """A notebook of ``plots`` image outputs around ``text_chars`` characters of prose."""
    image = base64.b64encode(bytes(range(256)) * (plot_bytes // 256)).decode()
    cells: list[dict[str, object]] = [{"cell_type": "markdown", "source": "# Plots\n\n" + "x" * text_chars}]
    for n in range(plots):
        cells.append({
            "cell_type": "code", "source": f"plot({n})", "execution_count": n, "metadata": {},
            "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": image}}],
        })  # fmt: skip
    return _notebook(cells)


def test_a_notebook_is_refused_for_the_text_it_keeps_not_for_its_outputs() -> None:
    parser = NotebookParser()
    raw = _plots(384, plots=80, plot_bytes=150_000)
    assert len(raw) > 12 * 1_000_000
    parser.raw_size_limit(4 * MiB)
    text = parser.decode(raw)
    assert "x" * 384 in text and len(text) < 2_000
    parser.raw_size_limit(500)
    with pytest.raises(ValueError, match=r"its text is \d+ bytes, over max_file_bytes \(500\)"):
        parser.decode(raw)


def test_a_flood_of_tiny_json_values_is_refused_before_it_is_parsed() -> None:
    raw = b'{"cells": [], "x": [' + b"[]," * (MAX_JSON_VALUES // 2) + b"[]]}"
    with pytest.raises(ValueError, match="JSON values"):
        NotebookParser().decode(raw)


def test_a_large_notebook_of_plots_is_indexed_and_one_with_too_much_text_is_skipped(kb_root: Path) -> None:
    (kb_root / "nb").mkdir()
    (kb_root / "nb" / "plots.ipynb").write_bytes(_plots(384, plots=12, plot_bytes=150_000))  # ~2.4 MB
    (kb_root / "nb" / "prose.ipynb").write_bytes(_plots(300_000, plots=1, plot_bytes=1_000))
    core = make_core(kb_root, max_file_bytes=200_000)
    report = core.index()
    skipped = dict(report.skipped)
    assert "nb/plots.ipynb" in report.added
    assert (
        "its text is" in skipped["nb/prose.ipynb"]
        and "over max_file_bytes (200000)" in skipped["nb/prose.ipynb"]
    )
    assert "x" * 384 in core.read_document("nb/plots.ipynb").text
    core.close()
