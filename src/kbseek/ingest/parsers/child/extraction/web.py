"""HTML through the standard library's ``html.parser``: the text of ``<main>`` or ``<article>`` when the
page has one, with scripts, styles, navigation, headers, footers and forms dropped.

The bytes are decoded as a browser decodes them (:func:`decode_html`), with one difference: a page
whose encoding is not sure is refused with the likely one named, where a browser shows mojibake."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from .charsets import LEGACY, legacy_reading, wide_without_bom
from .common import Out, Refused

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


# ------------------------------------------------------------------ encodings

_UTF8 = "utf-8"
_WINDOWS_1252 = "windows-1252"
_LABEL_TABLE = """
utf-8: unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8
utf-8: csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff unicodefffe utf-16 utf-16be utf-16le
cp932: csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis
euc_jp: cseucpkdfmtjapanese euc-jp x-euc-jp
iso2022_jp: csiso2022jp iso-2022-jp
windows-1252: ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1
windows-1252: iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252
gb18030: chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk gb18030
big5hkscs: big5 big5-hkscs cn-big5 csbig5 x-x-big5
cp949: cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 ksc_5601
cp949: windows-949
cp1250: windows-1250 x-cp1250
cp1251: windows-1251 x-cp1251
cp1254: windows-1254 x-cp1254 iso-8859-9 iso8859-9 latin5 l5
koi8_r: cskoi8r koi koi8 koi8-r koi8_r
koi8_u: koi8-ru koi8-u
iso8859_2: iso-8859-2 iso8859-2 latin2 l2
iso8859_15: iso-8859-15 iso8859-15 latin-9 l9
"""
_LABELS: dict[str, str] = {
    label: codec
    for line in _LABEL_TABLE.strip().splitlines()
    for codec, labels in [line.split(": ")]
    for label in labels.split()
}
"""Charset labels of the WHATWG Encoding Standard, to the Python codec that decodes as a browser does
(the Japanese ones and the common ones; a ``<meta>`` that declares UTF-16 means UTF-8, as the
standard's prescan reads it). Every Shift_JIS label is Windows-31J (``cp932``: strict Shift_JIS lacks 髙 and ①),
every Latin-1 and ASCII label windows-1252 (:func:`_windows_1252`), GBK labels GB18030, EUC-KR
labels windows-949. EUC-JP is Python's ``euc_jp``, then ``euc_jis_2004`` for the NEC row (①, ㈱);
neither has the IBM kanji that browsers' EUC-JP maps past row 88, so a page using them is read as
an undeclared one would be (and refused when that is not sure). A label not in the table is
ignored, as browsers ignore one they do not know."""

_CP1252_C1 = {
    b: bytes([b]).decode("cp1252") for b in range(0x80, 0xA0) if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)
}
_NAMES = {
    "cp932": "cp932 (Shift_JIS)", "euc_jp": "EUC-JP", "iso2022_jp": "ISO-2022-JP",
    _WINDOWS_1252: "cp1252 (Windows Western)", "gb18030": "GB18030", "big5hkscs": "Big5", "cp949": "EUC-KR",
}  # fmt: skip
_FALLBACKS = {
    "euc_jp": ("euc_jp", "euc_jis_2004"),
    "iso2022_jp": ("iso2022_jp_ext", "iso2022_jp_2", "iso2022_jp_2004"),
}
_DECLARED = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)
_JIS_ESCAPE = re.compile(rb"\x1b(?:\$[@B]|\$\(D|\(I)")


def _windows_1252(raw: bytes) -> str:
    """windows-1252 as browsers decode it: cp1252, with its five unassigned bytes as C1 controls, so
    it never fails (Python's ``cp1252`` raises on them)."""
    return raw.decode("latin-1").translate(_CP1252_C1)


def _decode_as(raw: bytes, codec: str) -> str | None:
    """``raw`` in ``codec`` read strictly (its variants in turn), or ``None``."""
    if codec == _WINDOWS_1252:
        return _windows_1252(raw)
    for variant in _FALLBACKS.get(codec, (codec,)):
        try:
            return raw.decode(variant)
        except (UnicodeDecodeError, LookupError):
            continue
    return None


def decode_html(raw: bytes) -> tuple[str, str | None]:
    """The text of a page, and the label of its encoding when that is not UTF-8.

    As a browser decides, except where a browser would show garbage: a byte-order mark first (UTF-16
    or UTF-32 without one is refused, naming it: :func:`wide_without_bom`), then UTF-8 when the bytes
    are valid UTF-8 (a page mislabelled in its ``<meta>`` is common, a non-UTF-8 page that happens to
    be valid UTF-8 is not), then the declared charset (:data:`_LABELS`) read strictly. A page that
    declares nothing, or whose bytes its declaration does not read, is read by the legacy-encoding
    rules of kbseek's text notes (:func:`legacy_reading`), and refused with the likely encoding named
    when none is sure: never decoded as garbage without a word.
    """
    for bom, bom_codec, named in (
        (b"\xef\xbb\xbf", "utf-8", None), (b"\xff\xfe", "utf-16", "UTF-16"), (b"\xfe\xff", "utf-16", "UTF-16"),
    ):  # fmt: skip
        if raw.startswith(bom):
            try:
                return raw.decode(bom_codec).removeprefix("\ufeff"), named
            except UnicodeDecodeError:
                if bom_codec != "utf-8":
                    raise Refused(
                        "encoding", f"it starts with a {named} byte-order mark, but is not {named}"
                    ) from None
                raw = raw[len(bom) :]  # a UTF-8 mark on bytes that are not: what they are is decided below
    if (wide := wide_without_bom(raw)) is not None:  # its ASCII is valid UTF-8, NULs and all
        raise Refused(
            "encoding",
            f"it looks like {wide} without a byte-order mark (NUL bytes between its letters), which kbseek "
            f"reads only with one; convert it to UTF-8 (iconv -f {wide} -t UTF-8)",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        utf8_error = exc
    else:
        if raw.isascii() and _JIS_ESCAPE.search(raw) and (jis := _decode_as(raw, "iso2022_jp")) is not None:
            return jis, _NAMES["iso2022_jp"]  # 7-bit, so valid UTF-8 too: its escapes say what it is
        return text, None
    declared = _DECLARED.search(raw[:2048])
    label = declared[1].decode("ascii").lower() if declared else ""
    codec = _LABELS.get(label)
    if codec is not None and codec != _UTF8 and (as_declared := _decode_as(raw, codec)) is not None:
        if (
            codec == _WINDOWS_1252
            and isinstance(sure := legacy_reading(raw), tuple)
            and sure[1] in _JAPANESE_NAMES
        ):
            return sure  # a Japanese page under a template's Latin-1 label, which reads any byte
        return as_declared, _NAMES.get(codec, label)
    reading = legacy_reading(raw)
    if isinstance(reading, tuple):
        return reading
    said = f"it declares {label}, which does not read its bytes" if codec else "it declares no charset"
    bad = f"byte 0x{raw[utf8_error.start]:02X} at offset {utf8_error.start} is not valid UTF-8"
    if not reading:
        detail = (
            f"{bad}, {said}, and it is not Shift_JIS, EUC-JP or Windows Western text; declare its charset "
            "(<meta charset=...>) or convert it to UTF-8"
        )
    else:
        names = " or ".join(LEGACY[n][1] for n in reading)
        detail = (
            f"{bad}, {said}, and its encoding is not certain (most likely {names}); declare it "
            f"(<meta charset=...>) or convert it to UTF-8 (iconv -f {LEGACY[reading[0]][2]} -t UTF-8)"
        )
    raise Refused("encoding", detail)


_JAPANESE_NAMES = frozenset(LEGACY[n][1] for n in ("cp932", "euc_jp"))


def read(raw: bytes, out: Out, meta: dict[str, Any]) -> None:
    text, encoding = decode_html(raw)
    if encoding is not None:  # for a warning: "decoded from cp932 (Shift_JIS); served as UTF-8"
        meta["encoding"] = encoding
    page = _Page()
    page.feed(text)
    page.close()
    page._flush()
    meta.update(page.meta)
    meta["title"] = " ".join(page.title_text.split()) or None
    in_main = any(main for main, _ in page.blocks)
    for main, block in page.blocks:
        if main or not in_main:
            out.add(*block)
