"""Notes and pages in legacy Japanese and Western encodings: decoded when the encoding is sure, with a
warning that says so, and refused with the likely encoding named when it is not; never indexed as
mojibake. Offsets, snippets and lines are the decoded text's, the text ``get`` serves."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kbseek.errors import NotText
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.parsers.child.extraction import web
from kbseek.ingest.parsers.extracted import HtmlParser
from kbseek.ingest.parsers.markdown import MarkdownParser
from kbseek.ingest.parsers.text import TextParser, decode_text, decode_warnings, legacy_reading
from tests.conftest import make_core

RUNBOOK = """# 障害対応の手順

担当: 髙橋淳

サーバーが応答しないときは、まずログを確認してください。
再起動の前に上長へ連絡すること。①ログ ②再起動 ～ 完了。
"""
"""A Japanese runbook with what strict Shift_JIS lacks: 髙 (an IBM kanji), ① (NEC row 13) and ～."""
EUC_RUNBOOK = RUNBOOK.replace("髙", "高").replace("①ログ ②再起動 ～ 完了", "ログ、再起動、完了")
"""The same in what Python's EUC-JP reads: JIS X 0208 has neither 髙 nor ①."""
WESTERN = (
    "Meeting notes\n\nThe deploy went fine – no issues. The café on the corner was closed, so the "
    "“retrospective” moved to Tuesday.\n"
)
SMALL = ChunkOptions(min_chars=0)


def _random_bytes(n: int = 400) -> bytes:
    rng = random.Random(7)
    return bytes(rng.randrange(256) for _ in range(n))


# --------------------------------------------------------------------------- the text decoder


@pytest.mark.parametrize(
    ("text", "encoding", "label"),
    [
        (RUNBOOK, "cp932", "cp932 (Shift_JIS)"),
        (EUC_RUNBOOK, "euc_jp", "EUC-JP"),
        (
            EUC_RUNBOOK.replace("ログ、再起動、完了", "①ログ ②再起動 の順に"),
            "euc_jis_2004",
            "EUC-JP",
        ),  # from Windows
        (EUC_RUNBOOK, "iso2022_jp", "ISO-2022-JP"),
        (RUNBOOK, "utf-16", "UTF-16"),
        (RUNBOOK, "utf-32", "UTF-32"),
        (WESTERN, "cp1252", "cp1252 (Windows Western)"),
    ],
    ids=["cp932", "euc-jp", "euc-jp-nec-row", "iso-2022-jp", "utf-16", "utf-32", "cp1252"],
)
def test_a_note_in_a_legacy_encoding_is_decoded_exactly_and_says_from_what(
    text: str, encoding: str, label: str
) -> None:
    for parser in (MarkdownParser(), TextParser()):
        decoded = parser.decode(text.encode(encoding))
        assert decoded == text
        parsed = parser.parse("notes/runbook.md", decoded, SMALL)
        assert parsed.text == text and type(parsed.text) is str
        assert f"decoded from {label}; served as UTF-8" in parsed.warnings
        assert all(parsed.text[c.start : c.end] == c.text for c in parsed.chunks)


def test_utf8_with_or_without_a_bom_is_served_as_before_and_carries_no_warning() -> None:
    for raw in (RUNBOOK.encode(), b"\xef\xbb\xbf" + RUNBOOK.encode()):
        text = decode_text(raw)
        assert text == RUNBOOK and type(text) is str and decode_warnings(text) == ()
        assert MarkdownParser().parse("a.md", text, SMALL).warnings == ()


def test_utf8_text_with_an_escape_sequence_in_it_stays_utf8() -> None:
    raw = "# 端末\n\nESC $ B is written \x1b$B here.\n".encode()
    assert decode_text(raw) == raw.decode() and type(decode_text(raw)) is str
    ascii_only = b"# Terminal\n\nThe bytes \x1b$B switch a terminal to JIS; \x1b(B back.\n"
    assert (
        decode_text(ascii_only) == "# Terminal\n\nThe bytes \x1b$B switch a terminal to JIS; \x1b(B back.\n"
    )


def test_the_markdown_of_a_cp932_note_is_read_as_markdown_titles_and_headings_included() -> None:
    parser = MarkdownParser()
    doc = parser.parse("runbook.md", parser.decode(RUNBOOK.encode("cp932")), SMALL)
    assert doc.title == "障害対応の手順"
    assert any("髙橋淳" in c.text for c in doc.chunks)


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ("café".encode("latin-1"), "most likely cp1252 (Windows Western)"),  # é alone could be й, Θ, È …
        ("Owner: 髙橋\nStatus: open\n".encode("cp932"), "cp932 (Shift_JIS) or cp1252 (Windows Western)"),
        ("障害対応手順\n".encode("euc_jp"), "most likely EUC-JP"),  # kanji alone: Chinese or Korean bytes too
        (_random_bytes(), "nor is the file Shift_JIS, EUC-JP, ISO-2022-JP or Windows Western text"),
        ("서버가 응답하지 않으면 먼저 로그를 확인하십시오.\n".encode("euc_kr"), "not certain"),
        ("服务器无响应时，请先检查日志。重启之前请联系上级。\n".encode("gbk"), "not valid UTF-8 text"),
    ],
    ids=["one-accent", "mostly-ascii-cp932", "kanji-only-euc-jp", "random-bytes", "korean", "chinese"],
)
def test_a_note_whose_encoding_is_not_sure_is_refused_with_the_likely_one_and_how_to_convert(
    raw: bytes, named: str
) -> None:
    with pytest.raises(ValueError, match="not valid UTF-8 text") as refused:
        decode_text(raw)
    reason = str(refused.value)
    assert named in reason
    assert "iconv -f" in reason and "-t UTF-8" in reason


def test_a_refusal_names_the_iconv_command_for_the_likely_encoding() -> None:
    with pytest.raises(ValueError, match=r"iconv -f CP932 -t UTF-8"):
        decode_text("Owner: 髙橋\nStatus: open\n".encode("cp932"))


def test_a_utf16_bom_on_bytes_that_are_not_utf16_is_refused() -> None:
    with pytest.raises(ValueError, match="UTF-16 byte-order mark"):
        decode_text(b"\xff\xfe" + b"a\x00b")  # an odd byte left over


# --------------------------------------------------------------------------- through a knowledge base


def test_legacy_notes_are_indexed_searched_and_served_with_offsets_on_the_decoded_text(kb_root: Path) -> None:
    (kb_root / "ja").mkdir()
    (kb_root / "ja" / "sjis.md").write_bytes(RUNBOOK.encode("cp932").replace(b"\n", b"\r\n"))
    (kb_root / "ja" / "euc.txt").write_bytes(EUC_RUNBOOK.encode("euc_jp"))
    (kb_root / "ja" / "wide.md").write_bytes(("# 議事録\n\n髙橋淳さんの提案を採用した。\n").encode("utf-16"))
    (kb_root / "ja" / "garbled.md").write_bytes(_random_bytes())
    core = make_core(kb_root)
    report = core.index()
    assert {"ja/sjis.md", "ja/euc.txt", "ja/wide.md"} <= set(report.added)
    skipped = dict(report.skipped)
    assert "ja/garbled.md" in skipped and "not valid UTF-8 text" in skipped["ja/garbled.md"]
    assert "ja/garbled.md" not in {d.path for d in core.store.documents()}

    warnings = {(w.path, w.reason) for w in core.status().warnings}
    assert ("ja/sjis.md", "decoded from cp932 (Shift_JIS); served as UTF-8") in warnings
    assert ("ja/euc.txt", "decoded from EUC-JP; served as UTF-8") in warnings
    assert ("ja/wide.md", "decoded from UTF-16; served as UTF-8") in warnings

    served = core.read_document("ja/sjis.md").text
    assert served == RUNBOOK.replace("\n", "\r\n")  # decoded, line endings as written
    hit = next(h for h in core.search("髙橋淳").hits if h.path == "ja/sjis.md")
    assert "髙橋淳" in hit.snippet
    assert "髙橋淳" in served[hit.start : hit.end]
    lines = served.splitlines()
    assert any("髙橋淳" in line for line in lines[hit.line_start - 1 : hit.line_end])

    euc = next(h for h in core.search("再起動").hits if h.path == "ja/euc.txt")
    euc_served = core.read_document("ja/euc.txt").text
    assert euc_served == EUC_RUNBOOK and "再起動" in euc_served[euc.start : euc.end]
    assert "髙橋淳" in core.read_document("ja/wide.md").text
    core.close()


def test_a_read_of_a_note_whose_encoding_is_not_sure_is_refused_with_the_same_reason(kb_root: Path) -> None:
    (kb_root / "owner.md").write_bytes("Owner: 髙橋\nStatus: open\n".encode("cp932"))
    core = make_core(kb_root)
    skipped = dict(core.index().skipped)
    with pytest.raises(NotText) as refused:
        core.read_document("owner.md")
    assert "cp932 (Shift_JIS) or cp1252 (Windows Western)" in str(refused.value)
    assert "cp932 (Shift_JIS) or cp1252 (Windows Western)" in skipped["owner.md"]
    core.close()


# --------------------------------------------------------------------------- HTML pages

PAGE = (
    "<html><head><meta charset='{charset}'><title>障害対応</title></head><body><main>"
    "<h1>障害対応の手順</h1><p>担当は髙橋淳です。まずログを確認してください。</p></main></body></html>"
)


@pytest.mark.parametrize("charset", ["Shift_JIS", "shift-jis", "sjis", "x-sjis", "windows-31j", "MS_Kanji"])
def test_an_html_page_declaring_any_shift_jis_label_is_read_as_windows_31j(charset: str) -> None:
    text = HtmlParser().decode(PAGE.format(charset=charset).encode("cp932"))
    assert "担当は髙橋淳です。" in text and "# 障害対応の手順" in text and "title: 障害対応" in text


def test_an_html_page_declaring_euc_jp_or_iso_2022_jp_is_read_as_declared() -> None:
    page = PAGE.replace("髙", "高")
    assert "担当は高橋淳です。" in HtmlParser().decode(page.format(charset="EUC-JP").encode("euc_jp"))
    assert "担当は高橋淳です。" in HtmlParser().decode(
        page.format(charset="iso-2022-jp").encode("iso2022_jp")
    )


def test_an_html_page_declaring_latin1_is_read_as_windows_1252_as_browsers_do() -> None:
    raw = "<html><head><meta charset=iso-8859-1></head><body><p>Price: 5 € – “net”</p></body></html>"
    assert "Price: 5 € – “net”" in HtmlParser().decode(raw.encode("cp1252"))


def test_an_undeclared_cp932_page_is_detected_and_a_garbled_one_refused_with_the_likely_encoding() -> None:
    page = PAGE.replace("<meta charset='{charset}'>", "")
    text = HtmlParser().decode(page.encode("cp932"))
    assert "担当は髙橋淳です。" in text
    with pytest.raises(ValueError, match="it declares no charset") as refused:
        HtmlParser().decode(b"<html><body><p>" + _random_bytes() + b"</p></body></html>")
    assert "not valid UTF-8" in str(refused.value)
    with pytest.raises(ValueError, match=r"most likely cp932 \(Shift_JIS\) or cp1252") as unsure:
        HtmlParser().decode("<html><body><p>Owner: 髙橋</p></body></html>".encode("cp932"))
    assert "iconv -f CP932 -t UTF-8" in str(unsure.value)


def test_the_page_reader_reports_the_encoding_it_decoded_from() -> None:
    assert web.decode_html(PAGE.format(charset="Shift_JIS").encode("cp932"))[1] == "cp932 (Shift_JIS)"
    assert web.decode_html(PAGE.format(charset="utf-8").encode())[1] is None


SAMPLES = [
    RUNBOOK.encode("cp932"),
    EUC_RUNBOOK.encode("euc_jp"),
    WESTERN.encode("cp1252"),
    "café".encode("latin-1"),
    "Owner: 髙橋\n".encode("cp932"),
    "障害対応手順\n".encode("euc_jp"),
    "髙橋淳\n".encode("cp932"),
    "ﾃｽﾄ 障害\n".encode("euc_jp"),
    "서버가 응답하지 않으면 먼저 로그를 확인하십시오.\n".encode("euc_kr"),
    _random_bytes(),
]


@pytest.mark.parametrize("raw", SAMPLES, ids=range(len(SAMPLES)))
def test_the_page_reader_and_the_note_reader_decide_a_legacy_encoding_alike(raw: bytes) -> None:
    assert web.legacy_reading(raw) == legacy_reading(raw)
