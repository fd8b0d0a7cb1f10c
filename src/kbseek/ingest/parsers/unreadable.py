"""Why a file cannot be read, in one table: a reason code, and the sentence a person reads with what to do.

A parser that cannot read a file raises :class:`Unreadable` with a :class:`Reason` and a detail (the
particulars: a member name, a byte offset, a size). ``str()`` of it is the sentence from :data:`TABLE`,
and that sentence is what ``kbseek status`` lists for a skipped file and what a refused read
(``kbseek get``, ``get_document``) says, so both say the same thing in the same words. Every sentence
opens with a short head (``encrypted:``, ``wrong extension:``) and ends with what would make the
file readable.

The extraction child answers ``{"error": code, "detail": text, "found": kind}`` with the codes of
:class:`Reason` (it imports nothing from kbseek, so it writes them as strings); :meth:`Unreadable.from_child`
reads that answer. ``found`` names what the bytes really are, a key of :data:`FORMATS`.

Details come from libraries, which like to print Python reprs (``<_io.BytesIO object at 0x7f…>``) and
exception names (``KeyError: "…"``); :func:`scrub` takes those out, so no reason changes between
runs or reads like a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Reason(StrEnum):
    """Why a file could not be read; the values are the codes the extraction child answers with."""

    EMPTY = "empty"
    ENCRYPTED = "encrypted"
    OTHER_FORMAT = "other-format"
    LEGACY = "legacy"
    MACRO = "macro"
    STRICT = "strict"
    DAMAGED = "damaged"
    ZIP_BOMB = "bomb"
    TOO_LARGE = "too-large"
    NO_TEXT = "no-text"
    ENCODING = "encoding"
    XML_ENCODING = "xml-encoding"
    MEMORY = "memory"
    TIMEOUT = "timeout"
    MISSING_LIBRARY = "missing-library"
    CRASHED = "crashed"
    NOT_STARTED = "not-started"
    UNREADABLE = "unreadable"

    @classmethod
    def of(cls, code: str) -> Reason:
        """The reason for a child's code; an older or unknown code reads as :attr:`UNREADABLE`."""
        try:
            return cls(code)
        except ValueError:
            return _ALIASES.get(code, cls.UNREADABLE)


_ALIASES = {"corrupt": Reason.DAMAGED, "missing-pypdf": Reason.MISSING_LIBRARY}
"""Codes of children written before this table (``_pdf_child.py``)."""


@dataclass(frozen=True)
class Format:
    """A file format as a sentence names it, and how to turn it into one kbseek reads."""

    name: str
    """With its article and extension: ``a PowerPoint presentation (.pptx)``."""
    ext: str
    app: str
    """What opens it: ``Word``; it is told to open the file there and save it again."""
    save_as: str | None = None
    """The "Save As" type kbseek reads, when that program can save one."""


_DOCX, _XLSX, _PPTX = "Word Document (.docx)", "Excel Workbook (.xlsx)", "PowerPoint Presentation (.pptx)"

FORMATS: dict[str, Format] = {
    "docx": Format("a Word document (.docx)", ".docx", "Word", _DOCX),
    "docm": Format("a macro-enabled Word document (.docm)", ".docm", "Word", _DOCX),
    "dotx": Format("a Word template (.dotx)", ".dotx", "Word", _DOCX),
    "dotm": Format("a macro-enabled Word template (.dotm)", ".dotm", "Word", _DOCX),
    "doc": Format("a Word 97-2003 file (.doc)", ".doc", "Word", _DOCX),
    "xlsx": Format("an Excel workbook (.xlsx)", ".xlsx", "Excel", _XLSX),
    "xlsm": Format("a macro-enabled Excel workbook (.xlsm)", ".xlsm", "Excel", _XLSX),
    "xltx": Format("an Excel template (.xltx)", ".xltx", "Excel", _XLSX),
    "xltm": Format("a macro-enabled Excel template (.xltm)", ".xltm", "Excel", _XLSX),
    "xlam": Format("an Excel add-in (.xlam)", ".xlam", "Excel", _XLSX),
    "xlsb": Format("an Excel binary workbook (.xlsb)", ".xlsb", "Excel", _XLSX),
    "xls": Format("an Excel 97-2003 file (.xls)", ".xls", "Excel", _XLSX),
    "pptx": Format("a PowerPoint presentation (.pptx)", ".pptx", "PowerPoint", _PPTX),
    "pptm": Format("a macro-enabled PowerPoint presentation (.pptm)", ".pptm", "PowerPoint", _PPTX),
    "ppsx": Format("a PowerPoint slide show (.ppsx)", ".ppsx", "PowerPoint", _PPTX),
    "ppsm": Format("a macro-enabled PowerPoint slide show (.ppsm)", ".ppsm", "PowerPoint", _PPTX),
    "potx": Format("a PowerPoint template (.potx)", ".potx", "PowerPoint", _PPTX),
    "potm": Format("a macro-enabled PowerPoint template (.potm)", ".potm", "PowerPoint", _PPTX),
    "ppt": Format("a PowerPoint 97-2003 file (.ppt)", ".ppt", "PowerPoint", _PPTX),
    "ole": Format("an Office 97-2003 file", "", "the program that made it"),
    "odt": Format("an OpenDocument text (.odt)", ".odt", "LibreOffice Writer or Word", _DOCX),
    "ods": Format("an OpenDocument spreadsheet (.ods)", ".ods", "LibreOffice Calc or Excel", _XLSX),
    "odp": Format("an OpenDocument presentation (.odp)", ".odp", "LibreOffice Impress or PowerPoint", _PPTX),
    "rtf": Format("an RTF document (.rtf)", ".rtf", "Word", _DOCX),
    "epub": Format("an EPUB book (.epub)", ".epub", "an e-book editor"),
    "pdf": Format("a PDF (.pdf)", ".pdf", "a PDF editor"),
    "html": Format("an HTML page (.html)", ".html", "a browser or an editor"),
    "zip": Format("a zip archive (.zip)", ".zip", "an archive tool"),
    "text": Format("a plain-text file (.txt)", ".txt", "a text editor"),
    "ipynb": Format("a Jupyter notebook (.ipynb)", ".ipynb", "Jupyter"),
}
"""What the bytes of a file can turn out to be, by the key the extraction child names it with."""

MACRO_FORMATS = frozenset({"docm", "dotm", "xlsm", "xltm", "xlam", "pptm", "ppsm", "potm"})
BINARY_FORMATS = frozenset({"doc", "xls", "ppt", "xlsb", "ole"})


@dataclass(frozen=True)
class Entry:
    sentence: str
    """What a person reads; ``str.format`` fields: ``detail``, ``what``, ``found``, ``named``,
    ``found_ext``, ``expected``, ``app``, ``save_as`` (:meth:`Unreadable.fields`)."""
    detail: str = ""
    """The detail when the raiser gave none."""


TABLE: dict[Reason, Entry] = {
    Reason.EMPTY: Entry(
        "empty file: it is 0 bytes, so there is nothing to read; restore it from a backup or save it "
        "again from {app}, or delete it"
    ),
    Reason.ENCRYPTED: Entry(
        "encrypted: {detail}, so kbseek cannot read its text; open it in {app}, remove the password "
        "and save it again",
        "it is password-protected",
    ),
    Reason.OTHER_FORMAT: Entry(
        "wrong extension: it is {found}{named}, not {expected}; give it its real extension ({found_ext}) "
        "so it is read as what it is"
    ),
    Reason.LEGACY: Entry(
        "binary Office format: it is {found}{named}, which kbseek does not read; open it in {app} and "
        "save it as {save_as}"
    ),
    Reason.MACRO: Entry(
        "macro-enabled: it is {found}{named}, and kbseek never opens a file whose point is code to run; "
        "to index its text, open it in {app} and save it as {save_as}"
    ),
    Reason.STRICT: Entry(
        "Strict Open XML: it is saved as Strict Open XML, and kbseek could not read it: {detail}; open "
        'it in {app} and save it as "{save_as}" (not "Strict Open XML")',
        "no text came out of it",
    ),
    Reason.DAMAGED: Entry(
        "damaged: {detail}; the file is truncated or corrupt (an interrupted copy or download?): restore "
        "it from a backup, or open it in {app} and save it again",
        "its structure is broken",
    ),
    Reason.ZIP_BOMB: Entry(
        "zip bomb: {detail}; it was refused before any reader opened it; if it is a real document, "
        "save it again with smaller pictures or split it",
        "it would inflate past the budget",
    ),
    Reason.TOO_LARGE: Entry(
        "too large: {detail}; raise max_file_bytes in the configuration to read it, or split the file",
        "it is over max_file_bytes",
    ),
    Reason.NO_TEXT: Entry(
        "no text: {detail}, so there is nothing to index; a scan or a picture of text needs text "
        "recognition (OCR) first",
        "the file holds no text",
    ),
    Reason.ENCODING: Entry(
        "not text in a known encoding: {detail}; an editor can save it as UTF-8 too (Save As, "
        "Encoding: UTF-8)",
        "it is not valid UTF-8 text",
    ),
    Reason.XML_ENCODING: Entry(
        "XML in a foreign encoding: {detail}; Office files hold their XML in UTF-8 or UTF-16, and no "
        "other is read: open it in {app} and save it again",
        "one of its parts declares an encoding other than UTF-8 or UTF-16",
    ),
    Reason.MEMORY: Entry(
        "out of memory: reading it needed more memory than the {what} reader may use, so the file is "
        "damaged or built to exhaust memory; open it in {app} and save it again, or split it"
    ),
    Reason.TIMEOUT: Entry(
        "took too long: reading it took longer than {detail}; it is very large, damaged or built to "
        "stall a reader: split it, or open it in {app} and save it again",
        "the time one file may take",
    ),
    Reason.MISSING_LIBRARY: Entry(
        "missing library: reading {what} files needs {detail}", "a package that is not installed"
    ),
    Reason.CRASHED: Entry(
        "reader failed: the {what} reader stopped before it finished ({detail}); the file is probably "
        "damaged: open it in {app} and save it again",
        "no answer",
    ),
    Reason.NOT_STARTED: Entry(
        "reader not started: {detail}; this says nothing about the file: check kbseek's installation, "
        "then index again",
        "the reading process could not start",
    ),
    Reason.UNREADABLE: Entry(
        "unreadable: {detail}; open it in {app} and save it again", "its reader could not make sense of it"
    ),
}
"""The one table from a reason to the sentence a person reads."""

_UNNAMED = {Reason.LEGACY: "an older binary Office file", Reason.MACRO: "a macro-enabled Office file"}
"""What ``found`` reads when the raiser could not tell the format."""
_MAX_DETAIL = 400
_BYTES_REPR = re.compile(r"\b(?:file\s+)?'?<_io\.\w+ object at 0x[0-9a-fA-F]+>'?")
_ANY_REPR = re.compile(r"'?<[^<>]*? at 0x[0-9a-fA-F]+>'?")
_EXCEPTION_NAME = re.compile(r"\b(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception)|BadZip[Ff]ile)\b:?\s*")
_QUOTED = re.compile(r"""^(["'])(.*)\1$""")


def scrub(detail: str) -> str:
    """``detail`` without Python reprs, exception names or control characters, at most 300 characters."""
    text = _BYTES_REPR.sub("the file", detail)
    text = _ANY_REPR.sub("an object", text)
    text = _EXCEPTION_NAME.sub("", text)
    text = " ".join(text.split()).strip(" :;,")
    if (quoted := _QUOTED.match(text)) is not None:
        text = quoted[2]
    if len(text) > _MAX_DETAIL:
        text = text[: _MAX_DETAIL - 1].rstrip() + "…"
    return text


class Unreadable(ValueError):
    """A file kbseek cannot read, and why: ``str()`` is the sentence a person reads (:data:`TABLE`).

    A ``ValueError``, so every caller that catches a parser's ``ValueError`` catches this one too.
    """

    def __init__(
        self,
        code: Reason,
        detail: str = "",
        *,
        found: str | None = None,
        expected: str | None = None,
        what: str | None = None,
    ) -> None:
        """``found``/``expected``: keys of :data:`FORMATS`, what the bytes are and what the extension
        says they should be; ``what``: how the reader's format is named (``Word (.docx)``)."""
        self.code = code
        self.detail = scrub(detail)
        self.found = found if found in FORMATS else None
        self.expected = expected if expected in FORMATS else None
        self.what = what
        super().__init__(self.sentence)

    def __str__(self) -> str:
        return self.sentence

    @property
    def sentence(self) -> str:
        return TABLE[self.code].sentence.format_map(self.fields())

    def fields(self) -> dict[str, str]:
        """The values a sentence of :data:`TABLE` may name."""
        found = FORMATS.get(self.found or "")
        expected = FORMATS.get(self.expected or "")
        known = found or expected
        named = (
            f" named {expected.ext}" if expected and found is not None and found.ext != expected.ext else ""
        )
        save_as = next(
            (f.save_as for f in (found, expected) if f is not None and f.save_as), "a format kbseek reads"
        )
        return {
            "detail": self.detail or TABLE[self.code].detail,
            "what": self.what or "this format's",
            "found": found.name if found else _UNNAMED.get(self.code, "a file of another format"),
            "named": named,
            "found_ext": (found.ext if found and found.ext else "the extension of its format"),
            "expected": expected.name if expected else "what its extension says",
            "app": known.app if known else "the program that made it",
            "save_as": save_as,
        }

    def about(self, expected: str | None, what: str | None) -> Unreadable:
        """This reason, with the format it was read as filled in where the raiser did not know it."""
        return Unreadable(
            self.code,
            self.detail,
            found=self.found,
            expected=self.expected or expected,
            what=self.what or what,
        )

    @classmethod
    def from_child(cls, answer: dict[str, object], *, expected: str | None, what: str | None) -> Unreadable:
        """The reason in an extraction child's ``{"error": code, "detail": …, "found": kind}``."""
        found = answer.get("found")
        return cls(
            Reason.of(str(answer.get("error"))), str(answer.get("detail") or ""),
            found=found if isinstance(found, str) else None, expected=expected, what=what,
        )  # fmt: skip


def as_unreadable(exc: ValueError) -> Unreadable:
    """Any decoding failure as an :class:`Unreadable`: a ``UnicodeDecodeError`` is an encoding reason,
    another ``ValueError`` an unreadable file, its message scrubbed."""
    if isinstance(exc, Unreadable):
        return exc
    if isinstance(exc, UnicodeDecodeError):
        encoding = {"utf-8": "UTF-8", "utf8": "UTF-8", "ascii": "ASCII"}.get(
            exc.encoding.lower(), exc.encoding
        )
        bad = exc.object[exc.start : exc.start + 1]
        return Unreadable(
            Reason.ENCODING, f"byte 0x{bad.hex().upper()} at offset {exc.start} is not valid {encoding} text"
        )
    return Unreadable(Reason.UNREADABLE, str(exc))


def reason_for(exc: ValueError) -> str:
    """The sentence for a parser's ``decode`` failure: what the index lists and a refused read says."""
    return str(as_unreadable(exc))


def too_large(size: int | None, limit: int, max_file_bytes: int, parser: str | None) -> Unreadable:
    """A file over the size a parser reads: ``size`` bytes (``None``: it grew past ``limit`` as it was read).

    ``limit`` is the parser's raw size limit (``raw_size_limit``), which differs from ``max_file_bytes``
    for a parser that counts a file its own way (a notebook without its outputs); the sentence says so.
    """
    if limit == max_file_bytes or parser is None:
        cap = f"the read cap of {limit} bytes (max_file_bytes)"
    else:
        cap = (
            f"the read cap of {limit} bytes for a {parser} file (max_file_bytes is {max_file_bytes}, counted "
            f"the way the {parser} parser reads it)"
        )
    detail = f"it is {size} bytes, over {cap}" if size is not None else f"it grew over {cap} while being read"
    return Unreadable(Reason.TOO_LARGE, detail)
