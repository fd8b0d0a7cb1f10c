"""PowerPoint (.pptx) through python-pptx: a heading per slide, its text, tables, charts, SmartArt and
pictures' alt text in the order of its shapes (groups followed), then its speaker notes.

- **Charts**: a paragraph ``Chart: <title>`` (``Chart`` when it has none), then a table of what the
  chart plots, from the values cached in the chart part (what PowerPoint draws, never its embedded
  workbook): a row per category, a column per series headed by its name, the corner cell the
  category axis's title; a scatter chart of several series, whose x values are each series' own, has
  a row per point (series, x, value) instead. Numbers go through the format the chart gives them
  (``0%``, ``#,##0``…), as in Excel. At most ``MAX_CHART_ROWS`` rows and ``MAX_CHART_SERIES`` series
  of a chart; a chart cut there says so in a paragraph. Axis titles other than the category axis's,
  data labels and legends are left out.
- **SmartArt**: the text of its data model (``dgm:dataModel``, the part the graphic frame's ``r:dm``
  relationship names), node by node in the order of the diagram's tree: top-level nodes as
  paragraphs, their children as list items. The part is parsed without DTDs, entities or network.
- **Pictures**: ``Image: <alt text>`` when the picture has alt text (its ``descr``, with its ``title``
  before it when both are set); a picture without alt text, or whose alt text is only a name a tool
  put there (``image.png``, ``Picture 3``), adds nothing.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from typing import Any

from .common import MAX_DEPTH, Out, core_meta
from .numbers import format_number

MAX_CHART_ROWS = 1_000
"""Categories (rows) of one chart's table at most."""
MAX_CHART_SERIES = 64
"""Series (columns) of one chart's table at most."""

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_DGM = "{http://schemas.openxmlformats.org/drawingml/2006/diagram}"
_GROUP = 6  # MSO_SHAPE_TYPE.GROUP


def read(raw: bytes, out: Out, meta: dict[str, Any]) -> None:
    import pptx

    deck = pptx.Presentation(io.BytesIO(raw))
    meta.update(core_meta(deck.core_properties))

    def shapes(group: Any, depth: int) -> Iterator[Any]:
        for shape in group:
            if getattr(shape, "shape_type", None) == _GROUP and depth < MAX_DEPTH:
                yield from shapes(shape.shapes, depth + 1)
            else:
                yield shape

    for number, slide in enumerate(deck.slides, 1):
        title_shape = slide.shapes.title
        title = title_shape.text_frame.text if title_shape is not None else ""
        out.add("h", 1, f"Slide {number}: {' '.join(title.split())}" if title.strip() else f"Slide {number}")
        for shape in shapes(slide.shapes, 1):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            element = shape._element
            if getattr(shape, "has_table", False):
                out.add("table", [[c.text for c in row.cells] for row in shape.table.rows])
            elif getattr(shape, "has_chart", False):
                with contextlib.suppress(KeyError, ValueError):  # a chart whose part is missing
                    _chart(shape.chart._chartSpace, out)
            elif (ids := element.find(f".//{_DGM}relIds")) is not None:
                _smartart(shape.part, ids.get(f"{_R}dm"), out)
            elif element.tag == f"{_P}pic":
                _alt_text(element, out)
            elif getattr(shape, "has_text_frame", False):
                for paragraph in shape.text_frame.paragraphs:
                    out.add("li" if paragraph.level > 0 else "p", paragraph.text)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                out.add("h", 2, "Speaker notes")
                out.add("p", notes.text)


# ------------------------------------------------------------------ pictures

_PLACEHOLDER_NAME = re.compile(
    r"(?i)(?:image|picture|img|grafik|bild)\s*\d*(?:\.(?:png|jpe?g|gif|bmp|tiff?|emf|wmf|svg|webp))?\Z"
)
"""A name a tool wrote in place of alt text (python-pptx writes ``image.png``, PowerPoint ``Picture 3``):
not said, since it says nothing of the picture."""


def _alt_text(pic: Any, out: Out) -> None:
    properties = pic.find(f"{_P}nvPicPr/{_P}cNvPr")
    if properties is None:
        return
    said = [" ".join((properties.get(key) or "").split()) for key in ("title", "descr")]
    said = [t for i, t in enumerate(said) if t and t not in said[:i] and not _PLACEHOLDER_NAME.match(t)]
    if said:
        out.add("p", "Image: " + ": ".join(said))


# ------------------------------------------------------------------ charts


def _paragraphs(body: Any) -> list[str]:
    """The text of each ``a:p`` of a DrawingML text body (a title's, a SmartArt node's), runs joined."""
    if body is None:
        return []
    return ["".join(text for t in p.iter(f"{_A}t") for text in t.itertext()) for p in body.iter(f"{_A}p")]


def _text_of(element: Any) -> str:
    """The text of a title or label: rich text's paragraphs, or a cell reference's cached string."""
    if element is None:
        return ""
    rich = element.find(f"{_C}tx/{_C}rich")
    if rich is not None:
        return " ".join(" ".join(_paragraphs(rich)).split())
    return " ".join("".join(text for v in element.iter(f"{_C}v") for text in v.itertext()).split())


def _points(data: Any) -> dict[int, str]:
    """A series' categories or values: each point's ``idx`` to its text, numbers as their format shows."""
    if data is None:
        return {}
    cache = None
    for tag in (
        "numRef/numCache",
        "numLit",
        "strRef/strCache",
        "strLit",
        "multiLvlStrRef/multiLvlStrCache/lvl",
    ):
        cache = data.find("/".join(f"{_C}{step}" for step in tag.split("/")))
        if cache is not None:
            break
    if cache is None:
        return {}
    numeric = cache.tag in (f"{_C}numCache", f"{_C}numLit")
    code = cache.findtext(f"{_C}formatCode") or "General"
    points: dict[int, str] = {}
    for pt in cache.iter(f"{_C}pt"):
        try:
            idx = int(pt.get("idx", ""))
        except ValueError:
            continue
        text = (pt.findtext(f"{_C}v") or "").strip()
        if numeric and text:
            with contextlib.suppress(ValueError):  # a number cached as text that is no number stays text
                text = format_number(float(text), pt.get("formatCode") or code)
        points[idx] = text
    return points


def _chart(space: Any, out: Out) -> None:
    chart = space.find(f"{_C}chart")
    if chart is None:
        return
    title = _text_of(chart.find(f"{_C}title"))
    plot_area = chart.find(f"{_C}plotArea")
    series = [] if plot_area is None else [s for plot in plot_area for s in plot.iter(f"{_C}ser")]
    corner = ""
    if plot_area is not None:
        for axis in ("catAx", "dateAx", "serAx", "valAx"):  # a scatter chart's x axis is a valAx
            if corner := _text_of(plot_area.find(f"{_C}{axis}/{_C}title")):
                break
    out.add("p", f"Chart: {title}" if title else "Chart")
    names, columns, labels = [], [], []
    for number, ser in enumerate(series[:MAX_CHART_SERIES], 1):
        names.append(_text_of(ser.find(f"{_C}tx")) or f"Series {number}")
        columns.append(_points(_first(ser, "val", "yVal")))
        labels.append(_points(_first(ser, "cat", "xVal")))
    xy = any(ser.find(f"{_C}xVal") is not None for ser in series)
    rows: list[list[str]] = []
    if xy and len(columns) > 1:  # each series has x values of its own: a row per point
        rows.append(["Series", corner, "Value"])
        for name, values, xs in zip(names, columns, labels, strict=True):
            rows.extend([name, xs.get(i, ""), values.get(i, "")] for i in sorted(set(values) | set(xs)))
    elif columns:
        shared: dict[int, str] = {}
        for category in labels:
            for i, label in category.items():
                shared.setdefault(i, label)
        rows.append([corner, *names])
        for i in sorted(shared.keys() | set().union(*columns)):
            rows.append([shared.get(i, str(i + 1)), *(values.get(i, "") for values in columns)])
    kept = rows[: MAX_CHART_ROWS + 1]
    if len(kept) > 1:
        out.add("table", kept)
    if len(rows) > len(kept) or len(series) > len(columns):
        out.add(
            "p",
            f"(kbseek keeps {len(kept) - 1} of this chart's {len(rows) - 1} rows and {len(columns)} of its "
            f"{len(series)} series)",
        )


def _first(element: Any, *tags: str) -> Any:
    for tag in tags:
        if (found := element.find(f"{_C}{tag}")) is not None:
            return found
    return None


# ------------------------------------------------------------------ SmartArt


def _smartart(part: Any, rel_id: str | None, out: Out) -> None:
    from lxml import etree  # type: ignore[import-untyped]

    if not rel_id:
        return
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        model = etree.fromstring(part.related_part(rel_id).blob, parser)
    except (KeyError, AttributeError, SyntaxError):  # a missing or broken data part: no text from it
        return
    texts: dict[str, str] = {}
    order: list[str] = []
    root = None
    for pt in model.iter(f"{_DGM}pt"):
        key, kind = pt.get("modelId", ""), pt.get("type", "node")
        if kind == "doc" and root is None:
            root = key
        if kind in ("node", "asst"):
            lines = _paragraphs(pt.find(f"{_DGM}t"))
            if text := "\n".join(line for line in lines if line.strip()):
                texts[key] = text
                order.append(key)
    children: dict[str, list[tuple[int, str]]] = {}
    for cxn in model.iter(f"{_DGM}cxn"):
        if cxn.get("type", "parOf") == "parOf":
            try:
                place = int(cxn.get("srcOrd", "0"))
            except ValueError:
                place = 0
            children.setdefault(cxn.get("srcId", ""), []).append((place, cxn.get("destId", "")))
    seen: set[str] = set()
    stack = [(key, 1) for _, key in sorted(children.get(root or "", []), reverse=True)]
    while stack:  # the diagram's tree, depth first, in each node's order; no recursion
        key, depth = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        if key in texts:
            out.add("p" if depth == 1 else "li", texts[key])
        stack.extend((child, depth + 1) for _, child in sorted(children.get(key, []), reverse=True))
    for key in order:  # nodes the tree does not reach keep their text too
        if key not in seen:
            out.add("p", texts[key])
