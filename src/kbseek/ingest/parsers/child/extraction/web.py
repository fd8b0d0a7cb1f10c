"""HTML through the standard library's ``html.parser``: the text of ``<main>`` or ``<article>`` when the
page has one, with scripts, styles, navigation, headers, footers and forms dropped."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from .common import Out

_DROPPED = frozenset(
    {"script", "style", "nav", "header", "footer", "aside", "noscript", "template", "svg", "form",
     "button", "iframe", "object", "select", "dialog", "menu"}
)  # fmt: skip
_BREAKS = frozenset(
    {"p", "div", "section", "li", "dd", "dt", "blockquote", "br", "hr", "figcaption", "address",
     "tr", "table", "ul", "ol", "dl", "pre", "article", "main", "body", "details", "summary", "caption"}
)  # fmt: skip
_MAIN = frozenset({"main", "article"})
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr", "area", "base", "col", "source"})


class _Page(HTMLParser):
    """The main text of a page as blocks: streaming, so nesting depth costs nothing.

    What sits inside ``<main>`` or ``<article>`` is kept when the page has
    such an element, everything outside the dropped elements otherwise.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[bool, list[Any]]] = []
        self.stack: list[str] = []
        self.dropping = 0
        self.main = 0
        self.text: list[str] = []
        self.kind: list[Any] = ["p"]
        self.table: list[list[str]] | None = None
        self.tables = 0
        self.cell: list[str] | None = None
        self.pre = 0
        self.title: list[str] | None = None
        self.title_text = ""
        self.meta: dict[str, Any] = {}

    def _flush(self) -> None:
        text = "".join(self.text)
        self.text = []
        if text.strip() if self.pre == 0 else text.strip("\n"):
            self.blocks.append((self.main > 0, [*self.kind, text]))
        self.kind = ["p"]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.title = []
            return
        if tag == "meta":
            values = dict(attrs)
            if (values.get("name") or "").lower() == "keywords" and values.get("content"):
                self.meta["keywords"] = values["content"]
            return
        if tag in _VOID:
            if tag in ("br", "hr") and not self.dropping:
                (self.cell if self.cell is not None else self.text).append("\n")
            return
        self.stack.append(tag)
        if self.dropping or tag in _DROPPED:
            self.dropping += 1
            return
        if tag in _MAIN or dict(attrs).get("role") == "main":
            self.main += 1
        if tag == "table":
            self.tables += 1
            if self.tables == 1:
                self._flush()
                self.table = []
        elif tag == "tr" and self.table is not None and self.tables == 1:
            self.table.append([])
        elif tag in ("td", "th") and self.table is not None and self.tables == 1:
            self.cell = []
        elif self.table is None:
            if re.fullmatch(r"h[1-6]", tag):
                self._flush()
                self.kind = ["h", int(tag[1])]
            elif tag == "pre":
                self._flush()
                self.pre += 1
                self.kind = ["code", ""]
            elif tag == "li":
                self._flush()
                self.kind = ["li"]
            elif tag in _BREAKS:
                self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            if self.title is not None:
                self.title_text = "".join(self.title)
            self.title = None
            return
        if tag not in self.stack:
            return  # a stray end tag closes nothing
        while self.stack:
            open_tag = self.stack.pop()
            self._close(open_tag)
            if open_tag == tag:
                break

    def _close(self, tag: str) -> None:
        if self.dropping:
            self.dropping -= 1
            return
        if tag in ("td", "th") and self.cell is not None and self.tables == 1 and self.table:
            self.table[-1].append("".join(self.cell))
            self.cell = None
        elif tag == "table":
            self.tables -= 1
            if self.tables == 0 and self.table is not None:
                self.blocks.append((self.main > 0, ["table", self.table]))
                self.table = None
        elif self.table is None and (tag in _BREAKS or re.fullmatch(r"h[1-6]", tag)):
            self._flush()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)
        if tag in _MAIN:
            self.main = max(0, self.main - 1)

    def handle_data(self, data: str) -> None:
        if self.title is not None:
            self.title.append(data)
        elif not self.dropping:
            if self.cell is not None:
                self.cell.append(" " + data)
            elif self.table is not None:
                return  # text between cells
            else:
                self.text.append(data)


def _decode_html(raw: bytes) -> str:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        declared = re.search(rb"""charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", raw[:2048])
        try:
            return raw.decode(declared[1].decode("ascii") if declared else "cp1252", "replace")
        except LookupError:
            return raw.decode("cp1252", "replace")


def read(raw: bytes, out: Out, meta: dict[str, Any]) -> None:
    page = _Page()
    page.feed(_decode_html(raw))
    page.close()
    page._flush()
    meta.update(page.meta)
    meta["title"] = " ".join(page.title_text.split()) or None
    in_main = any(main for main, _ in page.blocks)
    for main, block in page.blocks:
        if main or not in_main:
            out.add(*block)
