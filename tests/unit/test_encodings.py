"""Notes and pages in legacy Japanese and Western encodings: decoded when the encoding is sure, with a
warning that says so, and refused with the likely encoding named when it is not; never indexed as
mojibake. Offsets, snippets and lines are the decoded text's, the text ``get`` serves. Markdown and
plain text decode through one function, so a file reads alike whatever its extension; Western prose
is read at any length, a line as well as a page."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbseek.errors import NotText
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.parsers.child.extraction import web
from kbseek.ingest.parsers.child.extraction.common import Refused
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
SHORT_WESTERN = "Le café était fermé, déjà… Größe…\n"
"""French and German in a line, too short for a language to be recognised in it."""
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
        (SHORT_WESTERN, "cp1252", "cp1252 (Windows Western)"),
        ("café", "latin-1", "cp1252 (Windows Western)"),
    ],
    ids=[
        "cp932",
        "euc-jp",
        "euc-jp-nec-row",
        "iso-2022-jp",
        "utf-16",
        "utf-32",
        "cp1252",
        "cp1252-line",
        "one-accent",
    ],
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
        ("été".encode("cp1252"), "most likely cp1252 (Windows Western)"),  # a word: é could be й, Θ, È …
        ("Owner: 髙橋\nStatus: open\n".encode("cp932"), "cp932 (Shift_JIS) or cp1252 (Windows Western)"),
        ("障害対応手順\n".encode("euc_jp"), "most likely EUC-JP"),  # kanji alone: Chinese or Korean bytes too
        (_random_bytes(), "nor is the file Shift_JIS, EUC-JP, ISO-2022-JP or Windows Western text"),
        ("서버가 응답하지 않으면 먼저 로그를 확인하십시오.\n".encode("euc_kr"), "not certain"),
        ("服务器无响应时，请先检查日志。重启之前请联系上级。\n".encode("gbk"), "not valid UTF-8 text"),
    ],
    ids=["one-word", "mostly-ascii-cp932", "kanji-only-euc-jp", "random-bytes", "korean", "chinese"],
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


@pytest.mark.parametrize(
    "text",
    [
        SHORT_WESTERN,
        "Ça va ? Où est l’hôtel ? « Déjà » — 20 €",
        "Straße, Größe, Äpfel — „Zitat“ und ‚innen‘, 21 °C, 12 m²",
        "El niño pidió ¿qué? ¡Olé! Él dijo que sí, 3 ó 4 veces.",
        "São Paulo, às vezes; é a cidade.",
        "Ele disse: às vezes chove.",  # às: one kanji in cp932, but a word kbseek knows
        "Åse och Östen åt ål på ön. Ö ligger där.",
        "Ærø og Øresund – hvør býr tú?",
        "Ég á heima í Reykjavík, það er gott.",
        "naïve cœur, œuvre de Noël; Word® 2024 © ACME, nº 5",
        "The deploy went fine – no issues; the “retrospective” moved.",
    ],
    ids=[
        "french-german",
        "french",
        "german",
        "spanish",
        "portuguese",
        "portuguese-às",
        "swedish",
        "faroese",
        "icelandic",
        "signs",
        "english-quotes",
    ],
)
def test_western_prose_of_a_line_is_decoded_exactly_as_markdown_and_as_plain_text(text: str) -> None:
    raw = text.encode("cp1252")
    for parser in (MarkdownParser(), TextParser()):
        decoded = parser.decode(raw)
        assert decoded == text
        assert (
            "decoded from cp1252 (Windows Western); served as UTF-8"
            in parser.parse("a.md", decoded, SMALL).warnings
        )


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Привет, мир! Как дела?\n", "cp1251"),  # Ïðèâåò: words of accented letters only
        ("Ο διακομιστής δεν αποκρίνεται.\n", "cp1253"),
        ("Zażółć gęślą jaźń.\n", "cp1250"),  # signs inside words: Za¿ó³æ
        ("Łódź, Kraków i Gdańsk.\n", "cp1250"),
        ("Le café, déjà fermé.\n", "mac_roman"),  # cafŽ: a letter no Western text needs
        ("Größe: café, déjà.\n", "cp850"),  # DOS: caf‚, a mark inside a word
        ("Le cœur de l'œuvre\n", "iso8859_15"),  # Latin-9's œ is cp1252's ½
        ("Bugün hava çok güzel, ağaçlar yeşil.\n", "cp1254"),  # ð and þ without Icelandic's vowels
        ("Owner: 髙橋\n", "cp932"),
        ("担当: 鈴木一郎\n", "cp932"),
        ("Owner: 森\n", "euc_jp"),
        ("Owner: 김민수\n", "euc_kr"),
        ("Owner: 王小明\n", "gbk"),
        ("Owner: 王小明\n", "big5"),
    ],
    ids=lambda v: v if isinstance(v, str) and v.isascii() else None,
)
def test_a_short_text_in_another_encoding_is_never_taken_for_western_prose(text: str, encoding: str) -> None:
    try:
        decoded = decode_text(text.encode(encoding))
    except ValueError:
        return  # refused, naming what it likely is
    assert decoded == text  # or decoded as what it is, never as cp1252 mojibake


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


def test_a_line_whose_bytes_are_also_a_kanji_standing_alone_is_refused_naming_both() -> None:
    """In cp932 the bytes of "à…" are one kanji, here alone between spaces: a short file could be either."""
    for parser in (MarkdownParser(), TextParser()):
        with pytest.raises(
            ValueError, match=r"most likely cp932 \(Shift_JIS\) or cp1252 \(Windows Western\)"
        ):
            parser.decode("Et puis à… rien.\n".encode("cp1252"))


def test_a_line_of_western_prose_is_indexed_alike_as_markdown_and_as_plain_text(kb_root: Path) -> None:
    """Before, a line of French in cp1252 was refused as not certainly Windows Western, in a .txt as in a
    .md: too short for charset-normalizer to recognise a language in it."""
    (kb_root / "western").mkdir()
    for name in ("cafe.md", "cafe.txt"):
        (kb_root / "western" / name).write_bytes(SHORT_WESTERN.encode("cp1252"))
    core = make_core(kb_root)
    report = core.index()
    assert {"western/cafe.md", "western/cafe.txt"} <= set(report.added)
    assert not [path for path, _ in report.skipped if path.startswith("western/")]
    warnings = {(w.path, w.reason) for w in core.status().warnings}
    for path in ("western/cafe.md", "western/cafe.txt"):
        assert (path, "decoded from cp1252 (Windows Western); served as UTF-8") in warnings
        assert core.read_document(path).text == SHORT_WESTERN
    assert {"western/cafe.md", "western/cafe.txt"} <= {h.path for h in core.search("fermé").hits}
    core.close()


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_or_utf32_without_a_byte_order_mark_is_refused_naming_it(encoding: str) -> None:
    wide = encoding.upper().replace("-LE", "LE").replace("-BE", "BE")
    for text in (WESTERN, "# 議事録\n\nTeam sync: 髙橋淳さんの提案を採用した。\n"):
        for parser in (MarkdownParser(), TextParser()):
            with pytest.raises(
                ValueError, match=f"looks like {wide} text without a byte-order mark"
            ) as refused:
                parser.decode(text.encode(encoding))
            assert f"iconv -f {wide} -t UTF-8" in str(refused.value)
        with pytest.raises(Refused, match=f"looks like {wide} without a byte-order mark"):
            web.decode_html(f"<html><body><p>{text}</p></body></html>".encode(encoding))


def test_english_in_utf16_without_a_mark_is_no_longer_indexed_with_a_nul_between_its_letters(
    kb_root: Path,
) -> None:
    """ASCII in UTF-16 is valid UTF-8, NULs and all: before, such a note was indexed as "M\\x00e\\x00…"."""
    (kb_root / "wide.txt").write_bytes(WESTERN.encode("utf-16-le"))
    (kb_root / "padded.txt").write_bytes(WESTERN.encode() + bytes(64))  # NULs, but on no side of a pair
    core = make_core(kb_root)
    report = core.index()
    assert "padded.txt" in report.added
    assert dict(report.skipped)["wide.txt"].startswith(
        "not text in a known encoding: it looks like UTF-16LE text without a byte-order mark"
    )
    assert "wide.txt" not in {d.path for d in core.store.documents()}
    core.close()


_ACCENTED = "àáâãäåæçèéêëìíîïñòóôõöøùúûüßœ"
"""Western letters beyond ASCII, less Icelandic's ð, þ and ý (read only among acute vowels, above)."""
_SEPARATORS = (
    " ", ", ", ". ", "\n", "\n\n", " – ", " — ", "… ", ": ", "; ", "! ", "? ", " (", ") ", " « ", " » ",
    " “", "” ", "’", " ‘", "’ ", " „", "“ ", " ¿", " ¡", " • ", "\xa0", "-", " 20 € ", " 21 °C ", " § 4 ",
    " 5 µm ", " © 2024 ", " 12 m² ", " nº 5 ", " 1½ ", " Word® ", " ‹", "› ", " · ",
)  # fmt: skip


@st.composite
def _western_word(draw: st.DrawFn) -> str:
    """A word of ASCII letters with accented ones among them (two in a row at most), or a one-letter word."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from("àáéèíóöøåÀÁÉÈÍÓÖØÅ"))
    letters = draw(st.lists(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), min_size=1, max_size=8))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(letters)))
        if not any(all(c in _ACCENTED for c in letters[i : i + 2]) for i in (at - 2, at - 1, at) if i >= 0):
            letters.insert(at, draw(st.sampled_from(_ACCENTED)))
    word = "".join(letters)
    return draw(st.sampled_from((word, word.capitalize(), word.upper())))


@st.composite
def _western_prose(draw: st.DrawFn) -> str:
    words = draw(st.lists(_western_word(), min_size=1, max_size=15))
    text = words[0] + "".join(draw(st.sampled_from(_SEPARATORS)) + word for word in words[1:])
    return text + draw(st.sampled_from(("", "\n", ".\n", "…")))


@given(
    _western_prose().filter(lambda text: sum(c in "abcdefghijklmnopqrstuvwxyz" for c in text.lower()) >= 3)
)
def test_western_prose_in_cp1252_decodes_to_itself_through_markdown_and_plain_text_alike(text: str) -> None:
    """Any prose of Western European words in cp1252 decodes to exactly itself, the same through both
    parsers. Two exceptions, the same through both: bytes that are valid UTF-8 too are UTF-8, as every
    file is read first ("Âœ" is C2 9C, a control character); and bytes that read as Japanese too, a
    kanji standing alone ("à…" is one in cp932), are refused, naming cp1252 as a likely encoding."""
    raw = text.encode("cp1252")
    answers = []
    for parser in (MarkdownParser(), TextParser()):
        try:
            answers.append(str(parser.decode(raw)))
        except ValueError as refused:
            answers.append(f"refused: {refused}")
    assert answers[0] == answers[1]
    if _reads_as(raw, "utf-8"):
        assert answers[0] == raw.decode("utf-8")
    elif answers[0].startswith("refused: "):
        assert "cp1252 (Windows Western)" in answers[0]
        assert any(_reads_as(raw, codec) for codec in ("cp932", "euc_jp", "euc_jis_2004"))
    else:
        assert answers[0] == text


def _reads_as(raw: bytes, codec: str) -> bool:
    try:
        raw.decode(codec)
    except UnicodeDecodeError:
        return False
    return True


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
