"""PDF, served as the text kb-mcp extracts from it (opt-in: ``[parsers].enabled = [..., "pdf"]``).

Extraction runs in a child process with a time limit, because a hostile or
broken PDF can make a pure-Python parser loop for minutes; the child is
killed when the limit passes. The served text marks each page with a line
``[p.N]``, so a reader can cite pages and the chunker can use the markers as
headings (a hit's heading path ends in ``p.N``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from kb_mcp.ingest.chunker import Block, BlockKind, ChunkOptions, LineIndex, build_chunks
from kb_mcp.ingest.parsers.text import paragraph_blocks, title_from_path
from kb_mcp.models import ParsedDocument

TIME_LIMIT_S = 20.0
MAX_PAGES = 2000
MAX_CHARS = 2_000_000
_PAGE_MARK = re.compile(r"^\[p\.(\d+)\]$")
_INSTALL_HINT = "pip install 'kb-mcp[pdf]'"


def page_marker(number: int) -> str:
    return f"[p.{number}]"


class PdfParser:
    name = "pdf"
    extensions: tuple[str, ...] = (".pdf",)
    media_type = "text/plain"  # what is served is extracted text, never the PDF bytes

    time_limit_s: float = TIME_LIMIT_S

    def decode(self, raw: bytes) -> str:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "kb_mcp.ingest.parsers._pdf_child", str(MAX_PAGES), str(MAX_CHARS)],
                input=raw,
                capture_output=True,
                timeout=self.time_limit_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ValueError(f"PDF text extraction took longer than {self.time_limit_s:g} s") from None
        try:
            answer = json.loads(done.stdout.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            raise ValueError(f"PDF text extraction failed: {detail[0][:200]}") from None
        if "error" in answer:
            if answer["error"] == "missing-pypdf":
                raise ValueError(f"reading PDF needs the package pypdf: {_INSTALL_HINT}")
            raise ValueError(answer["error"])
        pages: list[str] = answer["pages"]
        if not any(p.strip() for p in pages):
            raise ValueError("no extractable text (scanned or image-only PDF)")
        parts = []
        for number, page in enumerate(pages, 1):
            parts.append(page_marker(number) + "\n\n" + page.strip() + "\n")
        return "\n".join(parts)

    def parse(self, path: str, text: str, options: ChunkOptions) -> ParsedDocument:
        title = title_from_path(path)
        lines = LineIndex(text)
        blocks: list[Block] = []
        for block in paragraph_blocks(text, lines):
            marker = _PAGE_MARK.match(text[block.start : block.end].strip())
            if marker:
                blocks.append(Block(block.start, block.end, BlockKind.HEADING, 1, f"p.{marker.group(1)}"))
            else:
                blocks.append(block)
        chunks = build_chunks(path, text, blocks, title=title, options=options)
        return ParsedDocument(text=text, title=title, chunks=chunks)
