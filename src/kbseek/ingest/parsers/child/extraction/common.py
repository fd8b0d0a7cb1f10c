"""What every extraction reader shares: the block list under its character cap, refusals, the zip check.

This package runs only inside the extraction child (``_extract_child.py``), which puts its folder on
``sys.path``: it imports nothing from kbseek, so a child starts without kbseek's own imports.
"""

from __future__ import annotations

import codecs
import contextlib
import datetime as dt
import io
import re
import zipfile
from typing import Any

MAX_MEMBERS = 10_000
MAX_DEPTH = 8
"""Tables inside tables (and shape groups) followed at most this deep; deeper text is left out."""


class Stop(Exception):
    """A cap was reached; what was extracted so far is the answer."""


class Refused(Exception):
    """The file is not read; ``code`` is one of kbseek's reason codes (``parsers/unreadable.py``) and
    ``found``, when known, what the bytes really are (a key of its ``FORMATS``)."""

    def __init__(self, code: str, detail: str = "", found: str | None = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.found = found

    def answer(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"error": self.code, "detail": self.detail}
        if self.found is not None:
            answer["found"] = self.found
        return answer


class Out:
    """Blocks, counted against the character cap."""

    def __init__(self, max_chars: int) -> None:
        self.blocks: list[list[Any]] = []
        self.left = max_chars
        self.stopped: str | None = None

    def _take(self, text: str) -> str:
        if len(text) > self.left:
            text = text[: self.left]
            self.left = 0
            self.stopped = "chars"
            return text
        self.left -= len(text)
        return text

    def add(self, kind: str, *args: Any) -> None:
        if kind == "table":
            rows: list[list[str]] = []
            for row in args[0]:
                cells = [self._take(c) for c in row]
                rows.append(cells)
                if self.stopped:
                    break
            self.blocks.append(["table", rows])
        else:
            *head, text = args
            self.blocks.append([kind, *head, self._take(text)])
        if self.stopped:
            raise Stop


# -- what the bytes are, before a library sees them -------------------------------------------------

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""An OLE compound file: the Office 97-2003 formats, and the container of an encrypted Office file."""
STRICT_NAMESPACE = "http://purl.oclc.org/ooxml/"
_SMALL_PART = 1 << 20
"""Bytes of ``[Content_Types].xml`` or ``_rels/.rels`` read at most to tell what a package is."""

_OLE_STREAMS = (
    ("EncryptedPackage", "encrypted"), ("WordDocument", "doc"), ("Workbook", "xls"), ("Book", "xls"),
    ("PowerPoint Document", "ppt"),
)  # fmt: skip
"""Stream names of an OLE directory, in the order they decide what the file is."""

_MAIN_TYPES = {
    "openxmlformats-officedocument.wordprocessingml.document.main": "docx",
    "ms-word.document.macroenabled.main": "docm",
    "openxmlformats-officedocument.wordprocessingml.template.main": "dotx",
    "ms-word.template.macroenabledtemplate.main": "dotm",
    "openxmlformats-officedocument.spreadsheetml.sheet.main": "xlsx",
    "ms-excel.sheet.macroenabled.main": "xlsm",
    "ms-excel.sheet.binary.macroenabled.main": "xlsb",
    "openxmlformats-officedocument.spreadsheetml.template.main": "xltx",
    "ms-excel.template.macroenabled.main": "xltm",
    "ms-excel.addin.macroenabled.main": "xlam",
    "openxmlformats-officedocument.presentationml.presentation.main": "pptx",
    "ms-powerpoint.presentation.macroenabled.main": "pptm",
    "openxmlformats-officedocument.presentationml.slideshow.main": "ppsx",
    "ms-powerpoint.slideshow.macroenabled.main": "ppsm",
    "openxmlformats-officedocument.presentationml.template.main": "potx",
    "ms-powerpoint.template.macroenabled.main": "potm",
}
"""The content type of a package's main part (``application/vnd.`` and ``+xml`` left off), by kind."""
_OPEN_DOCUMENT = {
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/epub+zip": "epub",
}
_MAIN_MEMBERS = (
    ("word/document.xml", "docx"), ("xl/workbook.xml", "xlsx"), ("xl/workbook.bin", "xlsb"),
    ("ppt/presentation.xml", "pptx"),
)  # fmt: skip
FAMILY = {"docx": {"docx", "dotx"}, "xlsx": {"xlsx", "xltx"}, "pptx": {"pptx", "ppsx", "potx"}}
"""Kinds a reader of each format is left to try: the format itself, its template and its slide show."""
MACRO = frozenset({"docm", "dotm", "xlsm", "xltm", "xlam", "pptm", "ppsm", "potm"})
BINARY = frozenset({"doc", "xls", "ppt", "xlsb", "ole"})

_TAG = re.compile(r"<(?:\w+:)?(Override|Default|Relationship)\b([^>]*)>")
_ATTRIBUTE = re.compile(r"""([\w:]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def sniff(raw: bytes) -> str | None:
    """What the bytes are, told by their signature (and an OLE file's directory), never by a library:
    ``empty``, ``encrypted``, ``doc``/``xls``/``ppt``/``ole`` (Office 97-2003), ``zip``, ``pdf``, ``html``,
    ``rtf``, ``text``; ``None`` for anything else."""
    if not raw:
        return "empty"
    if raw.startswith(OLE_MAGIC):
        return _ole_kind(raw)
    if raw.startswith((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")):
        return "zip"
    if b"%PDF-" in raw[:1024]:
        return "pdf"
    head = raw[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<!doctype html", b"<html")) or (head.startswith(b"<?xml") and b"<html" in head):
        return "html"
    if head.startswith(b"{\\rtf"):
        return "rtf"
    sample = raw[:4096]
    if b"\x00" not in sample:
        try:
            codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
        except UnicodeDecodeError:
            return None
        return "text"
    return None


def _ole_kind(raw: bytes) -> str:
    """An OLE file's kind from the stream names in its directory: each entry is 128 bytes, aligned to
    128 in the file, a UTF-16LE name then its length in bytes (terminator included) and its type."""
    for name, kind in _OLE_STREAMS:
        key = name.encode("utf-16-le") + b"\x00\x00"
        at = raw.find(key)
        while at >= 0:
            if (
                at % 128 == 0
                and len(raw) > at + 66
                and int.from_bytes(raw[at + 64 : at + 66], "little") == len(key)
                and raw[at + 66] in (1, 2)  # a storage or a stream
            ):
                return kind
            at = raw.find(key, at + 1)
    return "ole"


def _small_member(package: zipfile.ZipFile, name: str) -> str:
    try:
        with package.open(name) as stream:
            return stream.read(_SMALL_PART).decode("utf-8", "replace")
    except KeyError:
        return ""


def _tags(xml: str, tag: str) -> list[dict[str, str]]:
    return [
        {key.rsplit(":", 1)[-1]: a or b for key, a, b in _ATTRIBUTE.findall(attributes)}
        for name, attributes in _TAG.findall(xml)
        if name == tag
    ]


def package_kind(package: zipfile.ZipFile) -> str | None:
    """What a zip package holds, by its main part's content type (OOXML) or its ``mimetype`` (OpenDocument,
    EPUB): a key of kbseek's ``FORMATS``, ``zip`` for an archive that is no document, ``None`` when the
    package says nothing this can tell (a reader is left to try)."""
    names = set(package.namelist())
    if "[Content_Types].xml" in names:
        types = _small_member(package, "[Content_Types].xml")
        main = next(
            (r.get("Target", "") for r in _tags(_small_member(package, "_rels/.rels"), "Relationship")
             if r.get("Type", "").endswith("/officeDocument")),
            "",
        )  # fmt: skip
        part = "/" + main.lstrip("/")
        extension = part.rsplit(".", 1)[-1].lower() if "." in part else ""
        overrides = {
            o.get("PartName", "").lower(): o.get("ContentType", "") for o in _tags(types, "Override")
        }
        defaults = {d.get("Extension", "").lower(): d.get("ContentType", "") for d in _tags(types, "Default")}
        declared = overrides.get(part.lower()) or (defaults.get(extension, "") if main else "")
        for content_type in (declared, *overrides.values()):
            kind = _MAIN_TYPES.get(content_type.lower().removeprefix("application/vnd.").removesuffix("+xml"))
            if kind is not None:
                return kind
    if "mimetype" in names:
        kind = _OPEN_DOCUMENT.get(_small_member(package, "mimetype").strip())
        if kind is not None:
            return kind
    for member, kind in _MAIN_MEMBERS:
        if member in names:
            return kind
    return None if "[Content_Types].xml" in names else "zip"


def is_strict(package: zipfile.ZipFile) -> bool:
    """Whether the package is Strict Open XML (ISO/IEC 29500 Strict): its relationships and parts are
    in the ``http://purl.oclc.org/ooxml/`` namespaces, which readers of the usual form may not know."""
    return STRICT_NAMESPACE in _small_member(package, "_rels/.rels")


_STRICT_URI = re.compile(r"http://purl\.oclc\.org/ooxml/([A-Za-z]+(?:/[A-Za-z]+)*)")
_RENAMED = {"extendedProperties": "extended-properties", "customProperties": "custom-properties"}
"""The two names Strict spells differently from Transitional; every other name is the same."""


def _transitional_uri(match: re.Match[str]) -> str:
    """``purl.oclc.org/ooxml/drawingml/main`` is ``schemas.openxmlformats.org/drawingml/2006/main``, and
    a relationship type ``…/officeDocument/relationships/worksheet`` the same type under ``2006/``."""
    family, _, name = match[1].partition("/")
    if not name:
        return match[0]
    head, _, last = name.rpartition("/")
    name = f"{head}/{_RENAMED.get(last, last)}" if head else _RENAMED.get(last, last)
    return f"http://schemas.openxmlformats.org/{family}/2006/{name}"


def transitional(raw: bytes) -> tuple[bytes, bool]:
    """The package with Strict OOXML names rewritten to Transitional ones, and whether it was Strict.

    Strict differs from Transitional in its namespace and relationship-type URIs only (the element
    names are the same), so rewriting them in every XML member lets the usual readers (python-docx,
    openpyxl) open it. A package whose root relationships name no Strict part (:func:`is_strict`) is
    returned as it is; a Strict one is rebuilt in memory, one member at a time (it has passed the
    zip budget, so this costs at most that budget again). A member in UTF-16 is rewritten as UTF-16.
    """
    with zipfile.ZipFile(io.BytesIO(raw)) as package:
        if not is_strict(package):
            return raw, False
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
            for info in package.infolist():
                if info.is_dir():
                    continue
                data = package.read(info)
                if info.filename.lower().endswith(XML_PARTS):
                    data = _rewritten(data)
                target.writestr(info.filename, data)
    return out.getvalue(), True


def _rewritten(data: bytes) -> bytes:
    encoding = (
        "utf-16" if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
        else "utf-8-sig" if data.startswith(codecs.BOM_UTF8)
        else "utf-8"
    )  # fmt: skip
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        return data  # not text in its declared form: left for the reader to refuse
    if STRICT_NAMESPACE not in text:
        return data
    return _STRICT_URI.sub(_transitional_uri, text).encode(encoding)


def check_package(raw: bytes, fmt: str, budget: int) -> bool:
    """Refuse an Office file that is not what its extension says, before any library reads it.

    What the bytes are decides the reason: 0 bytes, an encrypted package, an Office 97-2003 file, a PDF,
    an HTML page, a zip that ends early, a package of another kind or a macro-enabled one; then the
    zip's sizes are checked against ``budget`` (:func:`check_zip`), then the encodings its XML parts
    declare (:func:`check_xml_encodings`). Returns whether the package is Strict Open XML, which is
    read like any other: a reader that cannot, says so with that in mind.
    """
    kind = sniff(raw)
    if kind == "empty":
        raise Refused("empty")
    if kind == "encrypted":
        raise Refused("encrypted", "it is password-protected (an encrypted Office package)")
    if kind in BINARY:
        raise Refused("legacy", found=kind)
    if kind is None:
        raise Refused(
            "unreadable",
            f"it is not a zip package, as every .{fmt} file is, nor another format kbseek recognises",
        )
    if kind != "zip":
        raise Refused("other-format", found=kind)
    check_zip(raw, budget)
    with zipfile.ZipFile(io.BytesIO(raw)) as package:
        found = package_kind(package)
        if found in MACRO:
            raise Refused("macro", found=found)
        if found in BINARY:
            raise Refused("legacy", found=found)
        if found is not None and found not in FAMILY.get(fmt, {fmt}):
            raise Refused("other-format", found=found)
        check_xml_encodings(package)
        return is_strict(package)


XML_PARTS = (".xml", ".rels", ".vml")
"""How the names of a package's XML parts end."""
_FREE_XML = "customxml/"
"""Where a package keeps XML data of its own (custom XML parts): no reader here parses it."""
_OFFICE_XML_ENCODINGS = frozenset({"utf8", "utf16", "utf16le", "utf16be"})
"""The encodings an Office part may declare, as :func:`_encoding_key` spells them."""
_DECLARATION_BYTES = 1024
_XML_DECLARATION = re.compile(
    r"""\A\s*<\?xml\s[^>]*?\bencoding\s*=\s*(["'])([A-Za-z][A-Za-z0-9._-]{0,39})\1"""
)


def declared_encoding(head: bytes) -> str | None:
    """The encoding an XML declaration at the start of ``head`` names, or ``None`` when it names none.

    The declaration is read in the form the bytes are in: UTF-16, told by a byte-order mark or by
    ``<?`` written in two-byte units, else an ASCII-compatible encoding (UTF-8, Shift_JIS, UTF-7 and
    the other encodings that write ASCII as ASCII, which is all a declaration holds).
    """
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        text = head[: len(head) // 2 * 2].decode("utf-16", "replace")
    elif head.startswith((b"<\x00?\x00", b"\x00<\x00?")):
        codec = "utf-16-le" if head[0] else "utf-16-be"
        text = head[: len(head) // 2 * 2].decode(codec, "replace")
    else:
        text = head.removeprefix(codecs.BOM_UTF8).decode("latin-1")
    declared = _XML_DECLARATION.match(text)
    return declared[2] if declared else None


def _encoding_key(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def check_xml_encodings(package: zipfile.ZipFile) -> None:
    """Refuse a package an XML part of which declares an encoding other than UTF-8 or UTF-16.

    Office Open XML allows those two only (ECMA-376 Part 2, the Open Packaging Conventions, which also
    have a reader enforce it), so a part that declares Shift_JIS, ISO-8859-1 or UTF-7 was written by
    some other program or edited by hand, and saving the file from Office writes it in UTF-8.

    Refused even when the part would decode, not read leniently: whether the XML library decodes
    Shift_JIS depends on how its copy was built (libxml2 with or without iconv), so a lenient reading
    would index the file on one machine and call it damaged on another; and UTF-7 spells ``<`` as
    ``+ADw-``, so a part in it says one thing to a reader that takes it for ASCII and another to the
    parser. The reason names the part and the encoding, and says what every Office program fixes:
    saving it again. Custom XML parts (``customXml/``), which hold a program's own data that no reader
    here parses, are left alone.
    """
    for info in package.infolist():
        name = info.filename
        if info.is_dir() or not name.lower().endswith(XML_PARTS) or name.lower().startswith(_FREE_XML):
            continue
        with package.open(info) as stream:
            declared = declared_encoding(stream.read(_DECLARATION_BYTES))
        if declared is not None and _encoding_key(declared) not in _OFFICE_XML_ENCODINGS:
            shown = name if len(name) <= 120 else name[:119] + "…"
            raise Refused("xml-encoding", f"{shown} declares the encoding {declared}")


def check_markup(raw: bytes) -> None:
    """Refuse a file named as HTML whose bytes are a binary format (a zip, an Office or a PDF file)."""
    kind = sniff(raw)
    if kind == "empty":
        raise Refused("empty")
    if kind == "encrypted":
        raise Refused("encrypted", "it is a password-protected Office file")
    if kind in BINARY:
        raise Refused("legacy", found=kind)
    if kind == "zip":
        with (
            contextlib.suppress(zipfile.BadZipFile, OSError, ValueError),
            zipfile.ZipFile(io.BytesIO(raw)) as zf,
        ):
            kind = package_kind(zf) or "zip"
        raise Refused("other-format", found=kind)
    if kind == "pdf":
        raise Refused("other-format", found=kind)


def check_zip(raw: bytes, budget: int) -> None:
    """Refuse a package that is not a zip, or inflates past ``budget`` bytes, before any library reads it."""
    try:
        package = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise Refused("damaged", _zip_damage(raw, exc)) from None
    with package:
        members = package.infolist()
        if len(members) > MAX_MEMBERS:
            raise Refused("bomb", f"{len(members)} members in the package, over the limit of {MAX_MEMBERS}")
        declared = sum(m.file_size for m in members)
        if declared > budget:
            raise Refused(
                "bomb", f"its members declare {declared} bytes uncompressed, over the budget of {budget}"
            )
        inflated = 0
        for member in members:
            try:
                with package.open(member) as stream:
                    while chunk := stream.read(1 << 20):
                        inflated += len(chunk)
                        if inflated > budget:
                            raise Refused("bomb", f"its members inflate past the budget of {budget} bytes")
            except Refused:
                raise
            except RuntimeError as exc:  # zipfile: "File ... is encrypted"
                raise Refused("encrypted", f"its part {member.filename} is encrypted ({exc})") from None
            except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
                raise Refused("damaged", f"its part {member.filename} is broken ({exc})") from None
            except Exception as exc:  # zlib.error and the like
                raise Refused("damaged", f"its part {member.filename} is broken ({exc})") from None


def _zip_damage(raw: bytes, exc: Exception) -> str:
    if str(exc) == "File is not a zip file" and raw.startswith(b"PK"):
        return f"its zip package ends early: the table of its parts is missing ({len(raw)} bytes)"
    return f"its zip package is broken ({exc})"


def failure(exc: Exception, strict: bool) -> dict[str, Any]:
    """A reader's exception as a refusal: a Strict package said as Strict, broken XML as damage."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, KeyError) and exc.args:
        message = f"a part it needs is missing ({' '.join(str(exc.args[0]).split())})"
    if strict:
        return Refused("strict", message).answer()
    if type(exc).__name__ in ("XMLSyntaxError", "ParseError", "ExpatError"):
        if "depth" in message.lower():
            return Refused("unreadable", "its XML is nested too deeply to read").answer()
        return Refused("damaged", f"its XML is malformed ({message})").answer()
    if isinstance(exc, (zipfile.BadZipFile, EOFError)) or type(exc).__name__ == "error":  # zlib.error
        return Refused("damaged", message).answer()
    return Refused("unreadable", message).answer()


def when(value: object) -> str | None:
    return value.isoformat() if isinstance(value, (dt.datetime, dt.date)) else None


def core_meta(props: Any) -> dict[str, Any]:
    """Title, keywords and dates from an OPC package's core properties (docx, xlsx, pptx alike)."""
    return {
        "title": getattr(props, "title", None),
        "keywords": getattr(props, "keywords", None),
        "date": when(getattr(props, "created", None)),
        "modified": when(getattr(props, "modified", None)),
    }
