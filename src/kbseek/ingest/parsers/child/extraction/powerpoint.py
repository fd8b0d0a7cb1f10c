"""PowerPoint (.pptx) through python-pptx: a heading per slide, its text and tables, then its speaker notes."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from .common import MAX_DEPTH, Out, core_meta


def read(raw: bytes, out: Out, meta: dict[str, Any]) -> None:
    import pptx

    deck = pptx.Presentation(io.BytesIO(raw))
    meta.update(core_meta(deck.core_properties))

    def shapes(group: Any, depth: int) -> Iterator[Any]:
        for shape in group:
            if getattr(shape, "shape_type", None) == 6 and depth < MAX_DEPTH:  # MSO_SHAPE_TYPE.GROUP
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
            if getattr(shape, "has_table", False):
                out.add("table", [[c.text for c in row.cells] for row in shape.table.rows])
            elif getattr(shape, "has_text_frame", False):
                for paragraph in shape.text_frame.paragraphs:
                    out.add("li" if paragraph.level > 0 else "p", paragraph.text)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                out.add("h", 2, "Speaker notes")
                out.add("p", notes.text)
