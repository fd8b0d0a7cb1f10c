"""What a PowerPoint deck says and kbseek keeps: charts as their titles and a table of their values,
SmartArt text in the order of its tree, and pictures' alt text, in groups as on slides.

Every deck goes through ``PptxParser().decode``, so the extraction child reads it. Real files come from
other projects' test suites in ``../shared/realfiles`` (beside the checkout; its README names sources
and licences); a test of one skips when the folder is absent. Charts and pictures are written here
with python-pptx, which writes no SmartArt: that comes from the real deck.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kbseek.ingest.parsers.extracted import PptxParser
from tests.fixture_copies import real_file
from tests.office_files import rewrite, saved

pptx = pytest.importorskip("pptx")
from pptx.chart.data import CategoryChartData, XyChartData  # noqa: E402 - after the importorskip
from pptx.enum.chart import XL_CHART_TYPE  # noqa: E402
from pptx.util import Inches  # noqa: E402

BOX = (Inches(1), Inches(1), Inches(6), Inches(4))
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a1e6d1a50000000049454e44ae426082"
)  # a 1x1 picture


def slide_with_title(deck: Any, title: str) -> Any:
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = title
    return slide


def tsv_after(text: str, line: str) -> list[str]:
    """The rows of the table right after a paragraph."""
    block = re.search(re.escape(f"{line}\n\n```tsv\n") + r"(.*?)\n```", text, re.S)
    assert block is not None, f"no table after {line!r} in:\n{text[:3000]}"
    return block[1].split("\n")


# ------------------------------------------------------------------ charts


def test_a_chart_is_kept_as_its_title_and_a_table_of_its_values_as_formatted() -> None:
    deck = pptx.Presentation()
    data = CategoryChartData(number_format="#,##0.0")
    data.categories = ["Q1", "Q2", "Q3"]
    data.add_series("2023", (1234.5, 2345.25, 18.364620000000002))
    data.add_series("2024", (1500, None, 3000))
    chart = (
        slide_with_title(deck, "Revenue").shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, *BOX, data).chart
    )
    chart.has_title = True
    chart.chart_title.text_frame.text = "Revenue by quarter"
    chart.category_axis.has_title = True
    chart.category_axis.axis_title.text_frame.text = "Quarter"
    pie = CategoryChartData(number_format="0%")
    pie.categories = ["ops", "dev"]
    pie.add_series("Share", (0.25, 0.75))
    slide_with_title(deck, "Split").shapes.add_chart(XL_CHART_TYPE.PIE, *BOX, pie)
    text = PptxParser().decode(saved(deck))
    assert "# Slide 1: Revenue\n\nChart: Revenue by quarter\n\n```tsv\n" in text
    assert tsv_after(text, "Chart: Revenue by quarter") == [
        "Quarter\t2023\t2024",
        "Q1\t1,234.5\t1,500.0",
        "Q2\t2,345.3\t",  # rounded half away from zero, as PowerPoint shows it; no value is no value
        "Q3\t18.4\t3,000.0",
    ]
    assert tsv_after(text, "# Slide 2: Split\n\nChart") == ["\tShare", "ops\t25%", "dev\t75%"]


def test_a_scatter_chart_of_several_series_has_a_row_per_point_and_groups_are_followed() -> None:
    deck = pptx.Presentation()
    data = XyChartData()
    load = data.add_series("Load")
    load.add_data_point(1.5, 0.25)
    load.add_data_point(2, 0.5)
    spare = data.add_series("Spare")
    spare.add_data_point(10, 7)
    group = slide_with_title(deck, "Capacity").shapes.add_group_shape()
    group.shapes.add_chart(XL_CHART_TYPE.XY_SCATTER, *BOX, data)
    text = PptxParser().decode(saved(deck))
    assert tsv_after(text, "# Slide 1: Capacity\n\nChart") == [
        "Series\t\tValue",
        "Load\t1.5\t0.25",
        "Load\t2\t0.5",
        "Spare\t10\t7",
    ]


# ------------------------------------------------------------------ SmartArt


def test_smartart_text_is_kept_in_the_order_of_its_tree() -> None:
    text = PptxParser().decode(real_file("pandoc/pptx/basic.pptx"))
    assert text.endswith(
        "# Slide 4: Smart Art\n\nFirst\n\n- subtitle\n\n- another\n\nSecond\n\n- yet more\n\n- and yet again\n"
    )


def test_smartart_data_is_parsed_without_entities_and_a_broken_one_loses_only_itself(tmp_path: Path) -> None:
    package = real_file("pandoc/pptx/basic.pptx")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        data = archive.read("ppt/diagrams/data1.xml").decode()
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-XXE", encoding="utf-8")
    doctype = f'<!DOCTYPE x [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'
    hostile = data.replace("?>", "?>" + doctype, 1).replace(">yet more<", ">&xxe; yet more<")
    text = PptxParser().decode(rewrite(package, {"ppt/diagrams/data1.xml": hostile.encode()}))
    assert "TOP-SECRET-XXE" not in text and "yet more" in text and "and yet again" in text
    broken = PptxParser().decode(rewrite(package, {"ppt/diagrams/data1.xml": data[:500].encode()}))
    assert "# Slide 4: Smart Art" in broken and "Col1\tCol2\tCol3" in broken and "subtitle" not in broken


# ------------------------------------------------------------------ pictures


def test_a_picture_says_its_alt_text_and_a_tool_written_name_is_not_alt_text() -> None:
    deck = pptx.Presentation()
    shapes = slide_with_title(deck, "Team").shapes
    described = shapes.add_picture(io.BytesIO(PNG), Inches(1), Inches(1))
    described._element.nvPicPr.cNvPr.set("descr", "The on-call rota\nfor March")
    titled = shapes.add_group_shape().shapes.add_picture(io.BytesIO(PNG), Inches(2), Inches(1))
    titled._element.nvPicPr.cNvPr.set("title", "Logo")
    titled._element.nvPicPr.cNvPr.set("descr", "A red fox")
    shapes.add_picture(io.BytesIO(PNG), Inches(3), Inches(1))  # python-pptx writes descr="image.png"
    text = PptxParser().decode(saved(deck))
    assert text.endswith("# Slide 1: Team\n\nImage: The on-call rota for March\n\nImage: Logo: A red fox\n")
