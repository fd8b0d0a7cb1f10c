"""Word (.docx) through python-docx and the lxml tree it parses: what the file says, in reading order.

python-docx opens the package, gives the core properties (title, keywords, dates), resolves paragraph
styles (``Title`` and ``Heading N`` become headings, ``List …`` list items) and finds the parts related
to the main document. The text itself is read here from its XML, because python-docx's own ``text``
leaves out much of what a reader sees: runs inside tracked insertions, content controls, simple fields
and smart tags, text boxes, equations and note references. What is kept, and how:

- **Body**, in order: paragraphs and tables, also inside block content controls (``w:sdt``) and custom
  XML. Tracked changes read as if accepted: insertions and moves kept, deletions dropped. A field
  keeps its shown result, never its code. Ruby (furigana) keeps the base text. A symbol (``w:sym``)
  is its character, a symbol font's in the private-use area, as ``converted.readable`` expects.
- **Text boxes** (``w:txbxContent``, in DrawingML shapes or VML) become blocks right after the
  paragraph that anchors them; in a table cell they join the cell's text. Word writes a modern box
  twice (``mc:Choice`` and a VML ``mc:Fallback``); only the first branch is read, so it counts once.
- **Equations** (OMML) become linear text, see :func:`math_text`.
- **Tables** keep Word's grid, so every row has the header's columns in the header's places: a
  merged cell's text is repeated in each grid column and each row it covers (``gridSpan``, ``vMerge``),
  and grid columns a row skips (``gridBefore``/``gridAfter``) are empty cells. Repeated rather than
  left empty: a header merged over three columns then labels each of them, and a label merged down a
  block stays on each of its rows, also when a long table is split into chunks on rows (their pieces
  do not carry the header, decision 0034); it is also what the spreadsheet reader does with merged
  ranges. The price is a title row spanning the table written once per column. A row holding only
  text continued from above is not written again. Nested tables follow their row.
- **Footnotes, endnotes and comments** follow the body as sections headed ``Footnotes``, ``Endnotes``
  and ``Comments``; each item starts with its label, ``[1] …``, ``[i] …`` or
  ``[MW1] Author (2016-07-03): …``. In the body the reference becomes that label in brackets,
  ``Ouch[1].``: footnotes numbered in order of reference in the file's number format (decimal unless
  it says otherwise), endnotes likewise (lower Roman unless it says otherwise, as in Word), a custom
  mark kept as written, a comment as Word prints it, the author's initials (else ``C``) and a running
  number. Not Markdown's ``[^1]``: the served text escapes brackets (``converted.render``), so
  ``[^1]`` could never become a footnote link and would only show the caret in every snippet; ``[1]``
  reads as the plain-text convention it is, and the label is the same in the text and in the
  section, so either finds the other. Notes no reference points at (a deleted reference, the
  separators) are left out, as Word shows them nowhere; every comment is kept.
- **Strict OOXML** (ISO/IEC 29500 Strict, ``http://purl.oclc.org/ooxml/…`` namespaces and
  relationship types) is translated to the Transitional names in memory before python-docx sees the
  package (:func:`transitional`); a part that still cannot be read refuses the file as ``strict``.

Zero-width characters are removed from every text, heading and core property (:func:`visible`):
invisible in Word, they would split or glue words in the index. U+200C and U+200D stay only between
two non-ASCII characters, where they carry meaning.

Left out: headers and footers (boilerplate repeated on every page), pictures and their alternative
text, charts, SmartArt and embedded objects (their text lives in other parts), and deleted text.

**Safe parsing.** python-docx parses every part it loads with its own lxml parser,
``etree.XMLParser(remove_blank_text=True, resolve_entities=False)``: entities are never expanded, and
lxml's defaults keep the DTD unloaded (``load_dtd=False``), the network off (``no_network=True``)
and the tree at most 256 elements deep (``huge_tree=False``). The parts it loads only as bytes
(footnotes, endnotes) are parsed here with that same parser (``docx.oxml.parser.parse_xml``). The
package passed the zip check (``common.check_zip``) before any of this.

Unchanged bounds: ``Out``'s character cap stops the walk (a cut table keeps its first rows), and
tables and text boxes inside one another are followed ``MAX_DEPTH`` deep.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from typing import Any

from .common import MAX_DEPTH, Out, Refused, core_meta, transitional
from .word_math import math_text
from .word_text import _M, _MC, _REL, _VAL, _W, visible

_SYMBOL_FONTS = frozenset(("symbol", "wingdings", "wingdings 2", "wingdings 3", "webdings"))
MAX_SPAN = 64
"""Grid columns one cell may cover (Word allows 63); a hostile ``gridSpan`` cannot allocate more."""

# Inline elements skipped with everything inside them: properties, deleted text, field codes, ruby
# readings, a note's own number mark (the label is written instead), separators.
_SKIP = frozenset(
    _W + name
    for name in (
        "pPr", "rPr", "sdtPr", "sdtEndPr", "del", "moveFrom", "delText", "instrText", "delInstrText",
        "rt", "footnoteRef", "endnoteRef", "annotationRef", "separator", "continuationSeparator",
        "tblPr", "tcPr", "trPr", "sectPr",
    )
)  # fmt: skip
_CONTAINERS = frozenset(_W + name for name in ("sdtContent", "customXml", "ins", "moveTo"))
"""Block-level wrappers whose children are read as if they stood in their place."""


def read(raw: bytes, out: Out, meta: dict[str, Any]) -> None:
    import docx

    raw, strict = transitional(raw)
    stage = "the main document part"
    try:
        try:
            document = docx.Document(io.BytesIO(raw))
        except KeyError as exc:  # "no relationship of type …officeDocument", a part named but absent
            if strict:
                raise
            raise Refused("damaged", f"a part it needs is missing ({_said(exc)})") from None
        stage = "the core properties"
        meta.update(
            {
                k: visible(v) if isinstance(v, str) else v
                for k, v in core_meta(document.core_properties).items()
            }
        )
        stage = "its settings, notes or comments"
        reader = _Reader(document, out)
        stage = "the document body"
        reader.body()
        stage = "its notes or comments"
        reader.annotations()
    except (KeyError, ValueError, SyntaxError) as exc:  # lxml's XMLSyntaxError is a SyntaxError
        if not strict:
            raise
        raise Refused("strict", f"{stage} could not be read ({_said(exc)})") from None


def _said(exc: Exception) -> str:
    """An exception's message on one line (a ``KeyError``'s without the quotes its ``str`` adds)."""
    return " ".join(str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).split())


# ------------------------------------------------------------------ reader


def _symbol(sym: Any) -> str:
    """A ``w:sym`` character: its code point, in the private-use area Word maps a symbol font to."""
    try:
        code = int(str(sym.get(_W + "char", "")), 16)
    except ValueError:
        return ""
    if code <= 0xFF and str(sym.get(_W + "font", "")).strip().lower() in _SYMBOL_FONTS:
        code += 0xF000  # "00B7" in Symbol is U+F0B7, as Word itself writes it
    return chr(code) if 0x20 <= code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else ""


def _choice(alternate: Any) -> Any | None:
    """The one branch of ``mc:AlternateContent`` that is read: the first choice, else the fallback."""
    choice = alternate.find(_MC + "Choice")
    return choice if choice is not None else alternate.find(_MC + "Fallback")


def _continues(merge: Any) -> bool:
    """Whether a ``vMerge``/``hMerge`` element continues the merged cell before it (no value: it does)."""
    return merge is not None and merge.get(_VAL, "continue") != "restart"


def _count(value: Any) -> int:
    try:
        return max(0, min(MAX_SPAN, int(value)))
    except (TypeError, ValueError):
        return 0


_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
          (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))  # fmt: skip


def number_label(n: int, fmt: str) -> str:
    """A note's number as Word shows it in ``fmt`` (``w:numFmt``); formats not handled here are decimal."""
    if fmt in ("lowerRoman", "upperRoman") and 0 < n < 4000:
        digits = ""
        for value, letters in _ROMAN:
            count, n = divmod(n, value)
            digits += letters * count
        return digits.upper() if fmt == "upperRoman" else digits
    if fmt in ("lowerLetter", "upperLetter") and 0 < n <= 780:
        letter = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)
        return letter.upper() if fmt == "upperLetter" else letter
    if fmt == "chicago" and 0 < n <= 400:
        return "*†‡§"[(n - 1) % 4] * ((n - 1) // 4 + 1)
    return str(n)


class _Notes:
    """Footnotes or endnotes: the note elements by id, and labels given in order of reference."""

    def __init__(self, root: Any | None, kind: str, fmt: str, start: int) -> None:
        self.kind = kind
        self.fmt = fmt
        self.next = start
        self.items: dict[str, Any] = {}
        if root is not None:
            for note in root.iter(_W + kind):
                if note.get(_W + "type", "normal") == "normal":
                    self.items.setdefault(str(note.get(_W + "id")), note)
        self.labels: dict[str, str] = {}
        """Labels of the notes referenced so far, in order of first reference."""

    def reference(self, ref: Any) -> str:
        """The marker for a reference in the text ("" for a custom mark, which follows as text)."""
        key = str(ref.get(_W + "id"))
        if key not in self.items:
            return ""
        custom = ref.get(_W + "customMarkFollows")
        if custom is not None and str(custom).lower() not in ("0", "off", "false"):
            if key not in self.labels:
                after = ref.itersiblings()
                mark = "".join((t.text or "") for t in after if t.tag == _W + "t").strip()
                self.labels[key] = mark or "*"
            return ""
        if key not in self.labels:
            self.labels[key] = number_label(self.next, self.fmt)
            self.next += 1
        return f"[{self.labels[key]}]"


class _Reader:
    def __init__(self, document: Any, out: Out) -> None:
        from docx.enum.style import WD_STYLE_TYPE

        self.out = out
        self.part = document.part
        self.paragraph_style = WD_STYLE_TYPE.PARAGRAPH
        self.body_element = document.element.body
        self.styles: dict[str | None, str] = {}
        settings = document.settings.element
        final = self.body_element.find(_W + "sectPr") if self.body_element is not None else None
        self.notes = {
            kind: _Notes(self._related(reltype), kind, *self._numbering(kind, default, final, settings))
            for kind, reltype, default in (
                ("footnote", "footnotes", "decimal"),
                ("endnote", "endnotes", "lowerRoman"),
            )
        }
        self.comments: dict[str, Any] = {}
        comments = self._related("comments")
        if comments is not None:
            for comment in comments.iter(_W + "comment"):
                self.comments.setdefault(str(comment.get(_W + "id")), comment)
        self.comment_labels: dict[str, str] = {}

    # -- parts

    def _related(self, name: str) -> Any | None:
        """The root element of the part the main document relates to by ``name``, if it has one."""
        from docx.oxml.parser import parse_xml

        for rel in self.part.rels.values():
            if rel.reltype == _REL + name and not rel.is_external:
                target = rel.target_part
                element = getattr(target, "element", None)
                return element if element is not None else parse_xml(target.blob)
        return None

    @staticmethod
    def _numbering(kind: str, default: str, final: Any, settings: Any) -> tuple[str, int]:
        fmt, start = default, 1
        for holder in (settings, final):  # the document's settings, then its last section's
            props = holder.find(f"{_W}{kind}Pr") if holder is not None else None
            if props is None:
                continue
            if (element := props.find(_W + "numFmt")) is not None and element.get(_VAL):
                fmt = str(element.get(_VAL))
            if (element := props.find(_W + "numStart")) is not None:
                with contextlib.suppress(ValueError):
                    start = max(0, int(element.get(_VAL, "1")))
        return fmt, start

    # -- blocks

    def body(self) -> None:
        if self.body_element is not None:
            self.blocks(self.body_element, 0)

    def blocks(self, container: Any, depth: int) -> None:
        """Paragraphs and tables of ``container`` into ``out``; ``depth`` counts enclosing tables and boxes."""
        for item in _block_items(container):
            if item.tag == _W + "p":
                text, boxes = self.inline(item)
                style = self._style(item)
                heading = re.fullmatch(r"Heading ([1-9])", style)
                if style == "Title":
                    self.out.add("h", 1, text)
                elif heading is not None:
                    self.out.add("h", int(heading[1]), text)
                elif style.startswith("List"):
                    self.out.add("li", text)
                else:
                    self.out.add("p", text)
                if depth < MAX_DEPTH:
                    for box in boxes:
                        self.blocks(box, depth + 1)
            else:
                self.out.add("table", list(self.rows(item, depth + 1)))

    def rows(self, table: Any, depth: int) -> Iterator[list[str]]:
        """The rows of ``table`` on its grid, then each nested table's rows after the row holding it.

        A merged cell's text fills every grid column it covers: across its ``gridSpan`` (or a legacy
        ``hMerge``), and down the rows its ``vMerge`` continues into. A row holding nothing but text
        continued from above (the lower half of a two-row header) is not written again.
        """
        above: list[str] = []
        """The text on each grid column of the row before."""
        for row in _within(table, _W + "tr"):
            properties = row.find(_W + "trPr")
            skip_before = skip_after = 0
            if properties is not None:
                if (before := properties.find(_W + "gridBefore")) is not None:
                    skip_before = _count(before.get(_VAL))
                if (after := properties.find(_W + "gridAfter")) is not None:
                    skip_after = _count(after.get(_VAL))
            cells: list[str] = [""] * skip_before
            nested: list[Any] = []
            own = False
            for cell in _within(row, _W + "tc"):
                span, down, across = 1, False, False
                properties = cell.find(_W + "tcPr")
                if properties is not None:
                    if (grid_span := properties.find(_W + "gridSpan")) is not None:
                        span = max(1, _count(grid_span.get(_VAL)))
                    down = _continues(properties.find(_W + "vMerge"))
                    across = _continues(properties.find(_W + "hMerge"))
                text = " ".join(t for t in self.flat(cell, depth, nested) if t)
                if text.strip():
                    own = True
                elif down:
                    text = above[len(cells)] if len(cells) < len(above) else ""
                elif across:
                    text = cells[-1] if cells else ""
                cells.extend([text] * span)
            cells.extend([""] * skip_after)
            above = cells
            if own or not any(c.strip() for c in cells):
                yield cells
            if depth < MAX_DEPTH:
                for inner in nested:
                    yield from self.rows(inner, depth + 1)

    def flat(self, container: Any, depth: int, tables: list[Any] | None = None) -> list[str]:
        """The texts of block content, one per paragraph, text boxes after theirs.

        Tables inside go to ``tables`` when given (a cell's nested tables follow its row), else they
        become lines of their own (in a note or comment).
        """
        texts: list[str] = []
        for item in _block_items(container):
            if item.tag == _W + "p":
                text, boxes = self.inline(item)
                texts.append(text)
                if depth < MAX_DEPTH:
                    for box in boxes:
                        texts.extend(self.flat(box, depth + 1, tables))
            elif tables is not None:
                tables.append(item)
            elif depth < MAX_DEPTH:
                texts.extend(" ".join(c for c in row if c) for row in self.rows(item, depth + 1))
        return texts

    # -- inline text

    def inline(self, paragraph: Any) -> tuple[str, list[Any]]:
        """A paragraph's text and the text boxes it anchors."""
        parts: list[str] = []
        boxes: list[Any] = []
        self._inline(paragraph, parts, boxes)
        return visible("".join(parts)), boxes

    def _inline(self, element: Any, parts: list[str], boxes: list[Any]) -> None:
        for child in element:
            tag = child.tag
            if not isinstance(tag, str) or tag in _SKIP:
                continue
            if tag == _W + "t":
                parts.append(child.text or "")
            elif tag in (_W + "tab", _W + "ptab"):
                parts.append("\t")
            elif tag in (_W + "br", _W + "cr"):
                parts.append("\n")
            elif tag == _W + "noBreakHyphen":
                parts.append("-")
            elif tag == _W + "sym":
                parts.append(_symbol(child))
            elif tag == _W + "footnoteReference":
                parts.append(self.notes["footnote"].reference(child))
            elif tag == _W + "endnoteReference":
                parts.append(self.notes["endnote"].reference(child))
            elif tag == _W + "commentReference":
                parts.append(self._comment_marker(child))
            elif tag == _W + "txbxContent":
                boxes.append(child)
            elif tag in (_M + "oMath", _M + "oMathPara"):
                parts.append(math_text(child))
            elif tag == _MC + "AlternateContent":
                if (branch := _choice(child)) is not None:
                    self._inline(branch, parts, boxes)
            else:  # runs, hyperlinks, insertions, content controls, fields, drawings, shapes, ruby base
                self._inline(child, parts, boxes)

    def _comment_marker(self, ref: Any) -> str:
        key = str(ref.get(_W + "id"))
        comment = self.comments.get(key)
        if comment is None:
            return ""
        if key not in self.comment_labels:
            initials = " ".join(str(comment.get(_W + "initials") or "").split()) or "C"
            self.comment_labels[key] = f"{initials}{len(self.comment_labels) + 1}"
        return f"[{self.comment_labels[key]}]"

    def _style(self, paragraph: Any) -> str:
        properties = paragraph.find(_W + "pPr")
        style_id = None
        if properties is not None and (element := properties.find(_W + "pStyle")) is not None:
            style_id = element.get(_VAL)
        if style_id not in self.styles:
            style = self.part.get_style(style_id, self.paragraph_style)
            self.styles[style_id] = (style.name if style is not None else "") or ""
        return self.styles[style_id]

    # -- after the body

    def annotations(self) -> None:
        """Footnotes, endnotes and comments, each a section after the body."""
        for notes, heading in ((self.notes["footnote"], "Footnotes"), (self.notes["endnote"], "Endnotes")):
            order = list(notes.labels)
            if order:
                self.out.add("h", 1, heading)
            for key in order:  # a note referencing a note not yet labelled adds it to the end
                text = "\n".join(t for t in self.flat(notes.items[key], 1) if t.strip())
                self.out.add("p", f"[{notes.labels[key]}] {text.strip()}")
                order.extend(k for k in notes.labels if k not in order)
        if not self.comments:
            return
        self.out.add("h", 1, "Comments")
        for key, comment in self.comments.items():  # labels for comments no reference points at
            if key not in self.comment_labels:
                self._comment_marker(comment)
        for key, label in self.comment_labels.items():  # in order of reference, the rest after
            comment = self.comments[key]
            author = visible(" ".join(str(comment.get(_W + "author") or "").split()))
            date = str(comment.get(_W + "date") or "")[:10]
            head = f"[{label}]" + (f" {author}" if author else "") + (f" ({date})" if date else "")
            text = "\n".join(t for t in self.flat(comment, 1) if t.strip())
            self.out.add("p", f"{head}: {text.strip()}")


def _block_items(container: Any) -> Iterator[Any]:
    """The ``w:p`` and ``w:tbl`` of block content, in order, through content controls and custom XML."""
    for child in container:
        tag = child.tag
        if tag in (_W + "p", _W + "tbl"):
            yield child
        elif tag == _W + "sdt":
            if (content := child.find(_W + "sdtContent")) is not None:
                yield from _block_items(content)
        elif tag in _CONTAINERS:
            yield from _block_items(child)
        elif tag == _MC + "AlternateContent" and (branch := _choice(child)) is not None:
            yield from _block_items(branch)


def _within(parent: Any, tag: str) -> Iterator[Any]:
    """The ``tag`` elements (a table's ``w:tr``, a row's ``w:tc``) of ``parent``, also those a content
    control or another container wraps."""
    for child in parent:
        if child.tag == tag:
            yield child
        elif child.tag == _W + "sdt" and (content := child.find(_W + "sdtContent")) is not None:
            yield from _within(content, tag)
        elif child.tag in _CONTAINERS:
            yield from _within(child, tag)
