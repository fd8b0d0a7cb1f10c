"""Plain text files: paragraphs separated by blank lines, no headings.

Also home to the two helpers every text-like format shares: how bytes become
the served text (:func:`decode_text`), and how a file's name becomes its fallback title.
"""

from __future__ import annotations

import codecs
import re
from pathlib import PurePosixPath

from kbseek.documents import ParsedDocument
from kbseek.ingest.chunker import Block, BlockKind, ChunkOptions, LineIndex, build_chunks
from kbseek.ingest.parsers.child.extraction.charsets import LEGACY, legacy_reading, wide_without_bom
from kbseek.ingest.parsers.unreadable import Reason, Unreadable

_BOM = "\ufeff"


def decode_utf8(raw: bytes) -> str:
    """Strict UTF-8 with a leading byte-order mark dropped.

    Line endings are left exactly as they are: chunk offsets slice the served
    text, so any normalisation here would make them point at the wrong place
    for a client that reads the file itself. Non-UTF-8 input raises
    ``UnicodeDecodeError`` rather than being guessed at, so a mis-encoded file
    is reported instead of indexed as mojibake.
    """
    text = raw.decode("utf-8")
    return text[1:] if text.startswith(_BOM) else text


# ------------------------------------------------------------------ legacy encodings


class DecodedText(str):
    """Served text that was not UTF-8 in the file, carrying the encoding it was decoded from.

    ``decode`` returns ``str`` and ``parse`` receives only that text, so the fact "this note was
    cp932" travels *with the value*: a ``str`` subclass, which every caller (the indexer, the guard,
    the store) takes for the ``str`` it is, and which ``parse`` turns into a warning
    (:func:`decode_warnings`). No state is kept between the two calls, so nothing goes stale or races
    between threads; a cache keyed by the bytes' hash would be both, and ``parse`` never sees the
    bytes to detect again. A UTF-8 file, by far the common case, gets a plain ``str``.
    """

    encoding: str
    """How the warning names the encoding: ``cp932 (Shift_JIS)``."""

    def __new__(cls, text: str, encoding: str) -> DecodedText:
        made = super().__new__(cls, text)
        made.encoding = encoding
        return made


def decode_warnings(text: str) -> tuple[str, ...]:
    """The warning that ``kbseek status`` lists for text decoded from a legacy encoding; none for UTF-8."""
    if isinstance(text, DecodedText):
        return (f"decoded from {text.encoding}; served as UTF-8",)
    return ()


_UTF_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32", "UTF-32"),  # before UTF-16: FF FE 00 00 starts with FF FE
    (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"),
)
_JIS_ESCAPE = re.compile(rb"\x1b(?:\$[@B]|\$\(D|\(I)")
"""An ISO-2022-JP designation (JIS X 0208, JIS X 0212, half-width katakana). ISO-2022-JP is 7-bit,
so it is valid UTF-8 too (the escapes read as control characters): 7-bit text is looked at for these
before UTF-8 wins."""
_ISO_2022_JP = ("iso2022_jp_ext", "iso2022_jp_2", "iso2022_jp_2004")


def decode_text(raw: bytes) -> str:
    """The served text of a text file, from whatever encoding it is sure of: the one decoding of every
    text format (Markdown and MDX, plain text), so a file is read alike whatever its extension.

    In order: UTF-16 or UTF-32 *with* a byte-order mark; UTF-16 or UTF-32 without one is refused,
    naming it (:func:`wide_without_bom`: its ASCII is valid UTF-8, NULs and all, so it is asked
    first); UTF-8, with or without a byte-order mark (a plain ``str``, as before); ISO-2022-JP, 7-bit
    text with its escapes; otherwise a legacy encoding (:data:`LEGACY`) chosen by
    :func:`legacy_reading`, or :class:`~kbseek.ingest.parsers.unreadable.Unreadable` (a ``ValueError``,
    reason ``ENCODING``) saying why none was sure, which encoding it likely is and how to convert the
    file. Text not from UTF-8 is a :class:`DecodedText`, so ``parse`` can warn that it was converted.

    Line endings are kept (chunk offsets slice this text). Offsets then slice the *decoded* text,
    which is what ``get`` serves, decoded by this same function.
    """
    for bom, codec, label in _UTF_BOMS:
        if raw.startswith(bom):
            try:
                return DecodedText(raw.decode(codec), label)
            except UnicodeDecodeError as exc:
                raise Unreadable(
                    Reason.ENCODING,
                    f"it starts with a {label} byte-order mark, but is not valid {label} text ({exc.reason} "
                    f"at offset {exc.start})",
                ) from None
    if (wide := wide_without_bom(raw)) is not None:
        raise Unreadable(Reason.ENCODING, _without_bom(wide))
    try:
        text = decode_utf8(raw)
    except UnicodeDecodeError as exc:
        utf8_error = exc
    else:
        if (jis := _iso_2022_jp(raw)) is not None:
            return DecodedText(jis, "ISO-2022-JP")
        return text
    text, label = guess_legacy(raw, utf8_error)
    return DecodedText(text, label)


def _iso_2022_jp(raw: bytes) -> str | None:
    """``raw`` as ISO-2022-JP when it is 7-bit, has JIS escapes and reads as such; else ``None``
    (UTF-8 text with an escape sequence in it stays UTF-8 text, as it always was)."""
    if not raw.isascii() or _JIS_ESCAPE.search(raw) is None:
        return None
    for codec in _ISO_2022_JP:
        try:
            return raw.decode(codec)
        except UnicodeDecodeError:
            continue
    return None


def guess_legacy(raw: bytes, utf8_error: UnicodeDecodeError) -> tuple[str, str]:
    """``raw`` decoded from the legacy encoding it is surely in, and that encoding's label; or
    :class:`~kbseek.ingest.parsers.unreadable.Unreadable` (a ``ValueError``) naming the likely ones."""
    reading = legacy_reading(raw)
    if isinstance(reading, tuple):
        return reading
    raise Unreadable(Reason.ENCODING, _unsure(reading, utf8_error))


def _without_bom(wide: str) -> str:
    return (
        f"it looks like {wide} text without a byte-order mark (NUL bytes between its letters), which "
        f"kbseek reads only with one; convert it (iconv -f {wide} -t UTF-8)"
    )


def _unsure(likely: list[str], utf8_error: UnicodeDecodeError) -> str:
    bad = f"byte 0x{utf8_error.object[utf8_error.start]:02X} at offset {utf8_error.start} is not valid UTF-8 text"
    if not likely:
        return (
            f"{bad}, nor is the file Shift_JIS, EUC-JP, ISO-2022-JP or Windows Western text (binary data, "
            "or another encoding?); if it is text, convert it (iconv -f <its encoding> -t UTF-8)"
        )
    names = " or ".join(LEGACY[n][1] for n in likely)
    return (
        f"{bad}, and the file's encoding is not certain (most likely {names}): a wrong guess would serve "
        f"garbled text; convert it (iconv -f {LEGACY[likely[0]][2]} -t UTF-8)"
    )


# ------------------------------------------------------------------ plain text


def title_from_path(path: str) -> str:
    """The file name without its extension: ``notes/meeting-2024.txt`` → ``meeting-2024``."""
    name = PurePosixPath(path).stem
    return name or path


def paragraph_blocks(text: str, lines: LineIndex, start_line: int = 0) -> list[Block]:
    """Runs of non-blank lines, from ``start_line`` on, as paragraph blocks."""
    blocks: list[Block] = []
    run_start: int | None = None
    for line in range(start_line, lines.count):
        begin, end = lines.start_of(line), lines.start_of(line + 1)
        blank = text[begin:end].isspace() or begin == end
        if blank and run_start is not None:
            blocks.append(Block(run_start, begin, BlockKind.PARAGRAPH))
            run_start = None
        elif not blank and run_start is None:
            run_start = begin
    if run_start is not None:
        blocks.append(Block(run_start, len(text), BlockKind.PARAGRAPH))
    return blocks


class TextParser:
    """``.txt`` files, titled by their file name."""

    name = "txt"
    extensions: tuple[str, ...] = (".txt",)
    media_type = "text/plain"

    def raw_size_limit(self, max_file_bytes: int) -> int:
        """What this format keeps is its whole file, so the file is held to ``max_file_bytes``."""
        return max_file_bytes

    def decode(self, raw: bytes) -> str:
        return decode_text(raw)

    def parse(self, path: str, text: str, options: ChunkOptions) -> ParsedDocument:
        warnings = decode_warnings(text)
        text = str(text)  # a plain str from here on: the warning is taken
        title = title_from_path(path)
        blocks = paragraph_blocks(text, LineIndex(text))
        chunks = build_chunks(path, text, blocks, title=title, options=options)
        return ParsedDocument(text=text, title=title, chunks=chunks, warnings=warnings)
