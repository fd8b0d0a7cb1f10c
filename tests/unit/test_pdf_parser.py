"""The PDF parser, on PDFs these tests write themselves (English and Japanese text)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kb_mcp.config import Settings
from kb_mcp.core import KbCore
from kb_mcp.ingest.chunker import ChunkOptions
from kb_mcp.ingest.parsers import Registry
from kb_mcp.ingest.parsers.pdf import PdfParser

pypdf = pytest.importorskip("pypdf", reason="PDF support is the optional extra kb-mcp[pdf]")


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF. ASCII lines use Helvetica; other lines a Type0 font with a ToUnicode map."""
    glyphs: dict[str, int] = {}
    for page in pages:
        for line in page:
            if not line.isascii():
                for ch in line:
                    glyphs.setdefault(ch, len(glyphs) + 1)
    objects: list[bytes] = []

    def add(body: str | bytes) -> int:
        objects.append(body.encode("latin-1") if isinstance(body, str) else body)
        return len(objects)

    catalog = add("")  # filled in below
    pages_obj = add("")
    helv = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    bfchar = "".join(f"<{gid:04X}> <{ord(ch):04X}>\n" for ch, gid in glyphs.items())
    cmap = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /KbTest def "
        "1 begincodespacerange <0000> <FFFF> endcodespacerange "
        f"{len(glyphs)} beginbfchar\n{bfchar}endbfchar endcmap CMapName currentdict /CMap defineresource pop end end"
    )
    to_unicode = add(f"<< /Length {len(cmap)} >>\nstream\n{cmap}\nendstream")
    cid_font = add(
        "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /KbTestJP "
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 1000 >>"
    )
    jp = add(
        f"<< /Type /Font /Subtype /Type0 /BaseFont /KbTestJP /Encoding /Identity-H "
        f"/DescendantFonts [{cid_font} 0 R] /ToUnicode {to_unicode} 0 R >>"
    )
    page_ids = []
    for page in pages:
        ops = []
        y = 720
        for line in page:
            if line.isascii():
                ops.append(f"BT /F1 12 Tf 72 {y} Td ({_escape(line)}) Tj ET")
            else:
                codes = "".join(f"{glyphs[ch]:04X}" for ch in line)
                ops.append(f"BT /F2 12 Tf 72 {y} Td <{codes}> Tj ET")
            y -= 18
        stream = "\n".join(ops)
        content = add(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        page_ids.append(
            add(
                f"<< /Type /Page /Parent {pages_obj} 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R "
                f"/Resources << /Font << /F1 {helv} 0 R /F2 {jp} 0 R >> >> >>"
            )
        )
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {pages_obj} 0 R >>".encode()
    kids = " ".join(f"{i} 0 R" for i in page_ids)
    objects[pages_obj - 1] = f"<< /Type /Pages /Kids [{kids}] /Count {len(page_ids)} >>".encode()
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(
        f"trailer\n<< /Size {len(objects) + 1} /Root {catalog} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out.getvalue()


PAGES = [
    ["Quarterly capacity review", "The cluster needs four more nodes before March."],
    ["障害対応の振り返り", "キャッシュの期限切れが原因だった"],
    ["Appendix", "Contact the platform team for access."],
]


def test_english_and_japanese_text_is_extracted_with_page_markers() -> None:
    text = PdfParser().decode(make_pdf(PAGES))
    assert "[p.1]" in text and "[p.2]" in text and "[p.3]" in text
    assert "four more nodes" in text
    assert "障害対応の振り返り" in text


def test_each_chunk_names_its_page_and_slices_the_text() -> None:
    parser = PdfParser()
    text = parser.decode(make_pdf(PAGES))
    doc = parser.parse(
        "reports/capacity.pdf",
        text,
        ChunkOptions(target_chars=60, max_chars=120, overlap_chars=10, min_chars=5),
    )
    assert doc.title == "capacity"
    pages = {c.heading_path[-1] for c in doc.chunks}
    assert pages == {"p.1", "p.2", "p.3"}
    for chunk in doc.chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.heading_path[0] == "capacity"


def test_an_encrypted_pdf_is_refused_with_the_reason() -> None:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make_pdf(PAGES))))
    writer.encrypt("secret")
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(ValueError, match="encrypted PDF"):
        PdfParser().decode(buffer.getvalue())


def test_a_pdf_without_text_is_refused_as_scanned() -> None:
    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=612, height=792)
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(ValueError, match="no extractable text"):
        PdfParser().decode(buffer.getvalue())


def test_garbage_bytes_are_refused() -> None:
    with pytest.raises(ValueError, match="not a readable PDF"):
        PdfParser().decode(b"this is not a pdf at all")


def test_extraction_over_the_time_limit_is_killed_and_reported() -> None:
    parser = PdfParser()
    parser.time_limit_s = 0.001  # far below the child's start-up time: the real kill path runs
    with pytest.raises(ValueError, match="took longer than"):
        parser.decode(make_pdf(PAGES))


def test_pdf_is_opt_in_in_the_registry() -> None:
    assert Registry().for_path("a.pdf") is None
    assert isinstance(Registry(["md", "txt", "pdf"]).for_path("scans/A.PDF"), PdfParser)


def test_an_indexed_pdf_is_searchable_and_served_as_extracted_text(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "reports").mkdir(parents=True)
    (root / "reports" / "capacity.pdf").write_bytes(make_pdf(PAGES))
    (root / "reports" / "locked.pdf").write_bytes(b"%PDF-1.7 broken")
    core = KbCore(Settings(root=root, semantic=False, parsers=("md", "txt", "pdf")))
    report = core.index()
    assert report.added == ["reports/capacity.pdf"]
    assert any(p == "reports/locked.pdf" and "not a readable PDF" in r for p, r in report.skipped)
    hit = core.search("four more nodes").hits[0]
    assert hit.path == "reports/capacity.pdf" and hit.heading_path[-1] == "p.1"
    served = core.read_resource_document("reports/capacity.pdf")
    assert served.media_type == "text/plain" and "[p.2]" in served.text
    core.close()


def test_narrowing_the_parsers_keeps_pdf_hits_without_uri_until_reindexed(tmp_path: Path) -> None:
    from kb_mcp.config import Limits

    root = tmp_path / "kb"
    root.mkdir()
    (root / "capacity.pdf").write_bytes(make_pdf(PAGES))
    full = KbCore(Settings(root=root, semantic=False, parsers=("md", "txt", "pdf")))
    full.index()
    cut = KbCore(
        Settings(
            root=root, semantic=False, parsers=("md", "txt", "pdf"), limits=Limits(max_resource_chars=30)
        )
    )
    served = cut.read_resource_document("capacity.pdf")
    assert (
        "truncated at character 30" in served.text and "offset=30" in served.text
    )  # extracted text is cut with the note
    full.close()
    cut.close()
    narrow = KbCore(Settings(root=root, semantic=False, freshness_interval_s=3600.0))
    hit = narrow.search("four more nodes").hits[0]
    assert hit.path == "capacity.pdf" and hit.uri is None
    assert "capacity.pdf" not in narrow.servable_document_paths()
    narrow.index()
    assert narrow.search("four more nodes").hits == []
    narrow.close()
