"""Plain text files: paragraphs separated by blank lines, no headings.

Also home to the two helpers every text-like format shares: how bytes become
the served text, and how a file's name becomes its fallback title.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from kbseek.documents import ParsedDocument
from kbseek.ingest.chunker import Block, BlockKind, ChunkOptions, LineIndex, build_chunks

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

    def decode(self, raw: bytes) -> str:
        return decode_utf8(raw)

    def parse(self, path: str, text: str, options: ChunkOptions) -> ParsedDocument:
        title = title_from_path(path)
        blocks = paragraph_blocks(text, LineIndex(text))
        chunks = build_chunks(path, text, blocks, title=title, options=options)
        return ParsedDocument(text=text, title=title, chunks=chunks)
