"""The parser registry: which file extensions kbseek can open, and how.

A parser turns the raw bytes of one file into the text kbseek serves
(``decode``) and into a :class:`~kbseek.documents.ParsedDocument` with chunks
(``parse``). Adding a format is adding a module that defines one parser and
one line in ``_builtin()`` below; nothing else in the pipeline knows formats.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kbseek.documents import ParsedDocument
from kbseek.errors import ConfigError
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.parsers.unreadable import BINARY_FORMATS, FORMATS, MACRO_FORMATS, Reason, Unreadable


class Parser(Protocol):
    """One document format."""

    name: str
    """Short name used in ``[parsers].enabled`` (``"md"``, ``"txt"``)."""
    extensions: tuple[str, ...]
    """Lower-case file suffixes including the dot (``".md"``)."""
    media_type: str
    """The MIME type of the text kbseek *serves* for this format (D6)."""

    def decode(self, raw: bytes) -> str:
        """Return the served text; raise ``UnicodeDecodeError`` (or ``ValueError``) for unreadable input."""
        ...

    def parse(self, path: str, text: str, options: ChunkOptions) -> ParsedDocument:
        """Split decoded text into metadata and chunks whose offsets slice ``text``."""
        ...

    def raw_size_limit(self, max_file_bytes: int) -> int:
        """The bytes of a raw file this parser reads at most, for the configured ``max_file_bytes``:
        ``max_file_bytes`` itself for most formats. For a format whose file holds much that is thrown
        away (a notebook's outputs) the raw file may be larger; ``decode`` then raises
        ``Unreadable(Reason.TOO_LARGE, …)`` if what it keeps is still over ``max_file_bytes``."""
        ...


def raw_size_limit(parser: Parser, max_file_bytes: int) -> int:
    """The size over which the scan and every read refuse a raw file for ``parser``; a parser's
    answer that is no size (negative, not an integer) counts as ``max_file_bytes``."""
    limit = parser.raw_size_limit(max_file_bytes)
    return limit if isinstance(limit, int) and limit >= 0 else max_file_bytes


def _builtin() -> dict[str, Parser]:
    from kbseek.ingest.parsers.extracted import DocxParser, HtmlParser, PptxParser, XlsxParser
    from kbseek.ingest.parsers.markdown import MarkdownParser
    from kbseek.ingest.parsers.notebook import NotebookParser
    from kbseek.ingest.parsers.pdf import PdfParser
    from kbseek.ingest.parsers.text import TextParser

    parsers: list[Parser] = [
        MarkdownParser(), TextParser(), PdfParser(), DocxParser(), XlsxParser(), PptxParser(),
        HtmlParser(), NotebookParser(),
    ]  # fmt: skip
    return {p.name: p for p in parsers}


AVAILABLE_PARSERS: tuple[str, ...] = ("md", "txt", "pdf", "docx", "xlsx", "pptx", "html", "ipynb")
DEFAULT_ENABLED: tuple[str, ...] = ("md", "txt", "docx", "xlsx", "ipynb")
"""On by default: formats whose library is small and a dependency of kbseek (decision 0034). PDF and
PowerPoint need an extra; HTML needs nothing but is opt-in, being more often a build output than a note."""

PARSE_VERSION = 9
"""What a parser makes of an unchanged file. Raise it when a parser, the chunker or display text
changes titles, heading paths, chunks or indexed text: the next pass re-parses every file once
(vectors of chunks whose heading path and text did not change are kept). 2: display text.
4: the sections merged into a chunk are recorded (``Chunk.sections``), and a heading right after
an MDX tag line is a heading. 5: the served text is stored (a server without the files serves it). 6: a Markdown document's links
to other notes are stored (``related``, backlinks). 7: encodings, notebooks and PDF pages. 8: each
document's date and front-matter fields are stored for the filters (``kbseek.filters``). 9: text in
UTF-16 or UTF-32 without a byte-order mark, once indexed with a NUL between its letters, and Office
files with a part in an encoding other than UTF-8 or UTF-16 are refused, so their old rows go."""

_MARKUP_PARSERS = frozenset({"md", "docx", "xlsx", "pptx", "html", "ipynb"})
"""Parsers whose served text is Markdown: the converted formats serve Markdown kbseek wrote."""
_QUIET_WHEN_DISABLED = frozenset({"html"})
"""Formats whose files are not listed as skipped while their parser is off: a folder's HTML is far
more often a build output or a template than a note, and a built site would flood the listing."""

OTHER_DOCUMENT_FORMATS: dict[str, str] = {
    ".rst": "reStructuredText", ".rest": "reStructuredText", ".adoc": "AsciiDoc", ".asciidoc": "AsciiDoc",
    ".org": "Org", ".textile": "Textile", ".wiki": "wiki markup",
    ".mediawiki": "MediaWiki", ".creole": "Creole", ".pod": "Perl POD", ".rdoc": "RDoc", ".tex": "LaTeX",
    ".rtf": "RTF", ".doc": "Word 97-2003", ".odt": "OpenDocument text", ".ods": "OpenDocument spreadsheet",
    ".odp": "OpenDocument presentation", ".epub": "EPUB", ".xls": "Excel 97-2003",
    ".xlsb": "Excel binary workbook", ".ppt": "PowerPoint 97-2003",
    ".docm": "macro-enabled Word", ".xlsm": "macro-enabled Excel", ".pptm": "macro-enabled PowerPoint",
}  # fmt: skip
"""Document formats no parser reads. A file in one of them is listed as skipped, so a knowledge
base of ``.rst`` pages does not look indexed when it is not; images, data and code are expected
beside notes and stay unmentioned. HTML is left out on purpose (see ``_QUIET_WHEN_DISABLED``).
Macro-enabled Office files are never opened: kbseek reads no file whose point is code to run.
Where the format's program can save one kbseek reads (Office 97-2003 and binary files, OpenDocument,
RTF), the reason says which (``unreadable.FORMATS``)."""


def media_type_of(parser: str) -> str:
    """The media type of text a parser (by name) serves; plain text for a name this version lacks."""
    found = _builtin().get(parser)
    return found.media_type if found is not None else "text/plain"


def has_markup(parser: str) -> bool:
    """Whether text from ``parser`` is markup whose display text differs (``kbseek.text.display``)."""
    return parser in _MARKUP_PARSERS


class Registry:
    """The active parsers, looked up by file extension."""

    def __init__(self, enabled: Iterable[str] = DEFAULT_ENABLED) -> None:
        known = _builtin()
        unknown = [name for name in enabled if name not in known]
        if unknown:
            raise ConfigError(
                f"unknown parser(s) {', '.join(unknown)} in [parsers].enabled; "
                f"available: {', '.join(AVAILABLE_PARSERS)}"
            )
        self.enabled: tuple[str, ...] = tuple(dict.fromkeys(enabled))
        self._disabled_by_ext = {
            ext: name
            for name, parser in known.items()
            if name not in self.enabled and name not in _QUIET_WHEN_DISABLED
            for ext in parser.extensions
        }
        self._by_ext: dict[str, Parser] = {}
        for name in self.enabled:
            for ext in known[name].extensions:
                self._by_ext[ext] = known[name]

    @property
    def extensions(self) -> frozenset[str]:
        return frozenset(self._by_ext)

    def for_path(self, path: str) -> Parser | None:
        """The parser for ``path``'s extension, or ``None`` if no active parser opens it."""
        return self._by_ext.get(_extension(path))

    def unopened_reason(self, path: str) -> str | None:
        """Why a document no active parser opens is not indexed, and what would change that.

        ``None`` for a file an active parser opens and for files that are not documents
        (images, data, code), which a notes folder is expected to hold.
        """
        ext = _extension(path)
        if not ext or ext in self._by_ext:
            return None
        if (name := self._disabled_by_ext.get(ext)) is not None:
            enabled = ", ".join(f'"{n}"' for n in (*self.enabled, name))
            return (
                f"no enabled parser opens {ext} files; add the {name!r} parser to read them: "
                f"[parsers] enabled = [{enabled}]"
            )
        if ext in OTHER_DOCUMENT_FORMATS:
            kind = ext[1:]
            if kind in MACRO_FORMATS:
                return str(Unreadable(Reason.MACRO, found=kind, expected=kind))
            if kind in BINARY_FORMATS:
                return str(Unreadable(Reason.LEGACY, found=kind, expected=kind))
            readable = ", ".join(sorted(self._by_ext))
            known = FORMATS.get(kind)
            if known is not None and known.save_as is not None:
                return (
                    f"{OTHER_DOCUMENT_FORMATS[ext]} ({ext}) has no parser, so no setting indexes it; open it in "
                    f"{known.app} and save it as {known.save_as}, which kbseek reads"
                )
            return (
                f"{OTHER_DOCUMENT_FORMATS[ext]} ({ext}) has no parser, so no setting indexes it; "
                f"kbseek reads {readable} ([parsers] enabled can be {', '.join(AVAILABLE_PARSERS)})"
            )
        return None


def _extension(path: str) -> str:
    """Lower-case suffix including the dot, or ``""``."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return ""
    return path[dot:].lower()
