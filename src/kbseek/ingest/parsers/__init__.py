"""The parser registry: which file extensions kbseek can open, and how.

A parser turns the raw bytes of one file into the text kbseek serves
(``decode``) and into a :class:`~kbseek.models.ParsedDocument` with chunks
(``parse``). Adding a format is adding a module that defines one parser and
one line in ``_BUILTIN`` below; nothing else in the pipeline knows formats.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kbseek.ingest.chunker import ChunkOptions
from kbseek.models import ParsedDocument


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


def _builtin() -> dict[str, Parser]:
    from kbseek.ingest.parsers.markdown import MarkdownParser
    from kbseek.ingest.parsers.pdf import PdfParser
    from kbseek.ingest.parsers.text import TextParser

    parsers: list[Parser] = [MarkdownParser(), TextParser(), PdfParser()]
    return {p.name: p for p in parsers}


AVAILABLE_PARSERS: tuple[str, ...] = ("md", "txt", "pdf")
DEFAULT_ENABLED: tuple[str, ...] = ("md", "txt")


class Registry:
    """The active parsers, looked up by file extension."""

    def __init__(self, enabled: Iterable[str] = DEFAULT_ENABLED) -> None:
        known = _builtin()
        unknown = [name for name in enabled if name not in known]
        if unknown:
            raise ValueError(
                f"unknown parser(s) {', '.join(unknown)} in [parsers].enabled; "
                f"available: {', '.join(sorted(known))}"
            )
        self.enabled: tuple[str, ...] = tuple(dict.fromkeys(enabled))
        self._by_ext: dict[str, Parser] = {}
        for name in self.enabled:
            for ext in known[name].extensions:
                self._by_ext[ext] = known[name]

    @property
    def extensions(self) -> frozenset[str]:
        return frozenset(self._by_ext)

    def for_path(self, path: str) -> Parser | None:
        """The parser for ``path``'s extension, or ``None`` if no active parser opens it."""
        dot = path.rfind(".")
        if dot < 0 or "/" in path[dot:]:
            return None
        return self._by_ext.get(path[dot:].lower())
