"""The PDF parser, on PDFs these tests write themselves (English and Japanese text)."""

from __future__ import annotations

import io
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbseek import KnowledgeBase
from kbseek.config import Limits, Settings
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.parsers import AVAILABLE_PARSERS, DEFAULT_ENABLED, Registry
from kbseek.ingest.parsers import pdf as pdf_module
from kbseek.ingest.parsers.pdf import PAGE_SEPARATOR, PdfParser

pypdf = pytest.importorskip("pypdf", reason="PDF support is the optional extra kbseek[pdf]")

SMALL = ChunkOptions(target_chars=60, max_chars=120, overlap_chars=10, min_chars=5)


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


def _write(writer: pypdf.PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_the_parser_declares_its_name_suffix_and_media_type() -> None:
    parser = PdfParser()
    assert (parser.name, parser.extensions, parser.media_type) == ("pdf", (".pdf",), "text/plain")


def test_english_and_japanese_text_is_extracted_under_page_markers() -> None:
    text = PdfParser().decode(make_pdf(PAGES))
    assert text.startswith("[p.1]\n\nQuarterly capacity review\n")
    assert "The cluster needs four more nodes before March." in text
    assert "[p.2]\n\n障害対応の振り返り\nキャッシュの期限切れが原因だった\n" in text
    assert "[p.3]" in text


def test_splitting_on_the_separator_gives_back_one_segment_per_page() -> None:
    text = PdfParser().decode(make_pdf(PAGES))
    segments = text.split(PAGE_SEPARATOR)
    assert [s.splitlines()[0] for s in segments] == ["[p.1]", "[p.2]", "[p.3]"]
    assert "障害対応" in segments[1]


def test_each_chunk_names_its_page_and_slices_the_text_exactly() -> None:
    long_page = [f"Line {i} of the runbook explains one more recovery step." for i in range(12)]
    parser = PdfParser()
    text = parser.decode(make_pdf([*PAGES, long_page]))
    doc = parser.parse("reports/capacity.pdf", text, SMALL)
    assert doc.title == "capacity" and doc.warnings == ()
    assert [c.ordinal for c in doc.chunks] == list(range(len(doc.chunks)))
    assert {c.heading_path for c in doc.chunks} == {("capacity", f"p.{n}") for n in (1, 2, 3, 4)}
    assert sum(c.heading_path[-1] == "p.4" for c in doc.chunks) > 1  # a long page is split further
    for chunk in doc.chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert PAGE_SEPARATOR not in chunk.text and "[p." not in chunk.text
        page = int(chunk.heading_path[-1].removeprefix("p."))
        assert text.count(PAGE_SEPARATOR, 0, chunk.start) == page - 1
        assert text[: chunk.start].count("\n") + 1 == chunk.line_start


def test_chunks_never_merge_across_pages_even_when_pages_are_tiny() -> None:
    parser = PdfParser()
    text = parser.decode(make_pdf([["One."], ["Two."], ["Three."]]))
    doc = parser.parse("tiny.pdf", text, ChunkOptions(min_chars=500))
    assert [(c.heading_path[-1], c.text) for c in doc.chunks] == [
        ("p.1", "One."),
        ("p.2", "Two."),
        ("p.3", "Three."),
    ]


def test_a_page_without_text_keeps_its_number_so_later_pages_stay_true() -> None:
    parser = PdfParser()
    text = parser.decode(make_pdf([PAGES[0], [], PAGES[2]]))
    assert "\n\n\n[p.2]\n\n\n[p.3]\n\n" in text
    doc = parser.parse("gap.pdf", text, SMALL)
    assert [c.heading_path[-1] for c in doc.chunks] == ["p.1", "p.3"]


def test_a_line_that_looks_like_a_page_marker_does_not_start_a_page() -> None:
    parser = PdfParser()
    text = parser.decode(make_pdf([["See the note below.", "[p.7]", "It is on this page."], ["Next."]]))
    doc = parser.parse("tricky.pdf", text, SMALL)
    assert [c.heading_path[-1] for c in doc.chunks] == ["p.1", "p.2"]
    assert "[p.7]" in doc.chunks[0].text


def test_identical_text_on_two_pages_gets_distinct_ids_and_hashes() -> None:
    parser = PdfParser()
    text = parser.decode(make_pdf([["Same words."], ["Same words."]]))
    first, second = parser.parse("twice.pdf", text, SMALL).chunks
    assert first.text == second.text and first.chunk_id != second.chunk_id
    assert first.content_hash != second.content_hash  # the page is part of what gets embedded


@given(
    st.lists(
        st.sampled_from(
            ["[p.1]\n", "[p.12]\n", "\f", "\n", "\n\n", " ", "word ", "語", "。", "[truncated: x]"]
        ),
        max_size=40,
    ).map("".join)
)
def test_any_text_parses_into_page_chunks_that_slice_it(text: str) -> None:
    doc = PdfParser().parse("any.pdf", text, SMALL)
    for chunk in doc.chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert PAGE_SEPARATOR not in chunk.text
        assert chunk.heading_path[0] == "any" and chunk.heading_path[1].startswith("p.")


@pytest.mark.parametrize(
    ("user_password", "algorithm"), [("secret", "RC4-128"), ("", "AES-256")], ids=["password", "empty"]
)
def test_an_encrypted_pdf_is_refused_even_with_an_empty_user_password(
    user_password: str, algorithm: str
) -> None:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make_pdf(PAGES))))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm=algorithm)
    with pytest.raises(ValueError, match=r"^encrypted: it is password-protected .*remove the password"):
        PdfParser().decode(_write(writer))


def test_a_pdf_whose_pages_have_no_text_is_refused_as_scanned() -> None:
    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=612, height=792)
    with pytest.raises(ValueError, match=r"^no text: a scanned or image-only PDF holds no text layer.*OCR"):
        PdfParser().decode(_write(writer))


@pytest.mark.parametrize(
    "raw",
    [b"this is not a pdf at all", b"%PDF-1.7 broken", make_pdf(PAGES)[:300]],
    ids=["no-header", "header-only", "cut-short"],
)
def test_bytes_that_are_not_a_whole_pdf_are_refused(raw: bytes) -> None:
    with pytest.raises(ValueError, match=r"^damaged: \S.*restore it from a backup") as refused:
        PdfParser().decode(raw)
    assert not re.search(r"<[^>]+ at 0x[0-9a-f]+>|Error:", str(refused.value))


def test_the_page_cap_ends_the_text_with_a_note_that_parse_reports() -> None:
    parser = PdfParser(max_pages=2)
    text = parser.decode(make_pdf(PAGES))
    assert text.endswith(
        "\n\n\n[truncated: kbseek extracts at most 2 pages; the text ends after page 2 of 3]\n"
    )
    doc = parser.parse("capped.pdf", text, SMALL)
    assert [c.heading_path[-1] for c in doc.chunks] == ["p.1", "p.2"]
    assert doc.warnings == ("truncated: kbseek extracts at most 2 pages; the text ends after page 2 of 3",)


def test_the_character_cap_stops_mid_page_and_says_on_which() -> None:
    text = PdfParser(max_chars=40).decode(make_pdf(PAGES))
    first, note = text.split(PAGE_SEPARATOR)
    assert first == "[p.1]\n\nQuarterly capacity review\nThe cluster ne"
    assert note == "[truncated: kbseek extracts at most 40 characters; the text stops on page 1 of 3]\n"


class _StallingParser(PdfParser):
    """Runs a stand-in child that records its pid and then hangs, like pypdf stuck in a hostile file."""

    def __init__(self, pid_file: Path, **limits: float) -> None:
        super().__init__(**limits)
        self.pid_file = pid_file

    def child_command(self, input_bytes: int) -> list[str]:
        script = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
        return [sys.executable, "-c", script, str(self.pid_file)]


@pytest.mark.skipif(sys.platform == "win32", reason="checks the pid with POSIX signals")
def test_a_child_over_the_time_limit_is_killed_and_reaped(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    parser = _StallingParser(pid_file, time_limit_s=1.0)
    began = time.monotonic()
    with pytest.raises(ValueError, match=r"^took too long: reading it took longer than 1 s, the time"):
        parser.decode(make_pdf(PAGES))
    assert time.monotonic() - began < 10
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_the_real_child_is_killed_when_the_limit_is_shorter_than_its_start() -> None:
    parser = PdfParser(time_limit_s=0.001)
    with pytest.raises(ValueError, match=r"took longer than 0\.001 s"):
        parser.decode(make_pdf(PAGES))


def test_without_pypdf_decode_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf_module, "pypdf_available", lambda: False)
    with pytest.raises(ValueError, match=r"pip install 'kbseek\[pdf\]'"):
        PdfParser().decode(make_pdf(PAGES))


@pytest.mark.parametrize(
    "limits", [{"time_limit_s": 0.0}, {"time_limit_s": float("inf")}, {"max_pages": 0}, {"max_chars": -1}]
)
def test_limits_must_be_positive_and_finite(limits: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        PdfParser(**limits)


def test_pdf_is_available_but_opt_in_in_the_registry() -> None:
    assert "pdf" in AVAILABLE_PARSERS and "pdf" not in DEFAULT_ENABLED
    assert Registry().for_path("a.pdf") is None
    assert isinstance(Registry(["md", "txt", "pdf"]).for_path("a.PDF"), PdfParser)
    assert ".pdf" in Registry(["md", "txt", "pdf"]).extensions


def test_an_indexed_pdf_is_searchable_and_served_as_extracted_text(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "reports").mkdir(parents=True)
    (root / "reports" / "capacity.pdf").write_bytes(make_pdf(PAGES))
    (root / "reports" / "broken.pdf").write_bytes(b"%PDF-1.7 broken")
    core = KnowledgeBase(settings=Settings(root=root, semantic=False, parsers=("md", "txt", "pdf")))
    report = core.index()
    assert report.added == ["reports/capacity.pdf"]
    assert any(p == "reports/broken.pdf" and r.startswith("damaged: ") for p, r in report.skipped)
    hit = core.search("four more nodes").hits[0]
    assert hit.path == "reports/capacity.pdf" and hit.heading_path[-1] == "p.1"
    served = core.read_resource_document("reports/capacity.pdf")
    assert served.media_type == "text/plain" and "[p.2]" in served.text
    core.close()


def test_narrowing_the_parsers_keeps_pdf_hits_without_uri_until_reindexed(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "capacity.pdf").write_bytes(make_pdf(PAGES))
    full = KnowledgeBase(settings=Settings(root=root, semantic=False, parsers=("md", "txt", "pdf")))
    full.index()
    cut = KnowledgeBase(
        settings=Settings(
            root=root, semantic=False, parsers=("md", "txt", "pdf"), limits=Limits(max_resource_chars=30)
        )
    )
    served = cut.read_resource_document("capacity.pdf")
    assert "truncated at character 30" in served.text and "offset=30" in served.text
    full.close()
    cut.close()
    narrow = KnowledgeBase(settings=Settings(root=root, semantic=False, freshness_interval_s=3600.0))
    hit = narrow.search("four more nodes").hits[0]
    assert hit.path == "capacity.pdf" and hit.uri is None
    assert "capacity.pdf" not in narrow.servable_document_paths()
    narrow.index()
    assert narrow.search("four more nodes").hits == []
    narrow.close()
