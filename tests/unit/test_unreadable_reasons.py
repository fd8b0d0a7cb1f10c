"""Why a file is not read, in one sentence a person can act on (``parsers/unreadable.py``).

Every file is made here (or is one of the real files in ``../shared/realfiles``, skipped when absent):
a 0-byte file, files renamed to an extension that is not theirs, a truncated package, OLE files (an
encrypted Office package, Office 97-2003 files), a macro-enabled package under a plain extension. Each
reason names what the file is and what to do, and never shows a Python repr or an exception name; a
refused read (``kbseek get``) says what the index said; an index of files that were all skipped says
so rather than "add notes".
"""

from __future__ import annotations

import io
import json
import re
import struct
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbseek.cli import cli
from kbseek.errors import NotText
from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.guard import load_document
from kbseek.ingest.parsers import AVAILABLE_PARSERS, Registry
from kbseek.ingest.parsers.child.extraction import common
from kbseek.ingest.parsers.extracted import DocxParser, ExtractedParser, XlsxParser
from kbseek.ingest.parsers.markdown import MarkdownParser
from kbseek.ingest.parsers.unreadable import (
    BINARY_FORMATS,
    FORMATS,
    MACRO_FORMATS,
    TABLE,
    Reason,
    Unreadable,
    reason_for,
    scrub,
)
from kbseek.ingest.scan import scan
from tests.fixture_copies import REALFILES, real_file
from tests.office_files import rewrite, saved

docx = pytest.importorskip("docx")
openpyxl = pytest.importorskip("openpyxl")

REPR = re.compile(r"<[^>]+ at 0x[0-9a-f]+>")


def assert_clean(reason: str) -> None:
    """No Python repr (its address changes every run) and no exception name in a reason."""
    assert not REPR.search(reason), reason
    assert "KeyError" not in reason and "ValueError" not in reason and "OSError" not in reason, reason


def a_docx(text: str = "The failover drill runs on Tuesdays.") -> bytes:
    document = docx.Document()
    document.add_paragraph(text)
    return saved(document)


def an_xlsx() -> bytes:
    book = openpyxl.Workbook()
    book.active.append(["host", "cores"])
    return saved(book)


def a_pptx() -> bytes:
    pptx = pytest.importorskip("pptx")
    deck = pptx.Presentation()
    deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "Capacity"
    return saved(deck)


def macro_enabled_docx() -> bytes:
    """A Word package whose main part says it is macro-enabled (a .docm), to be named .docx."""
    package = a_docx()
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        types = archive.read("[Content_Types].xml").decode()
    plain = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
    assert plain in types
    macro = types.replace(plain, "application/vnd.ms-word.document.macroEnabled.main+xml")
    return rewrite(package, {"[Content_Types].xml": macro.encode(), "word/vbaProject.bin": b"Sub AutoOpen()"})


def ole_file(*streams: str) -> bytes:
    """An OLE compound file: the header, then one directory sector naming the root and ``streams``.

    Enough for what kbseek looks at (the signature and the directory's names); nothing here is a
    document a library could open.
    """
    header = bytearray(512)
    header[:8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    header[0x1E:0x20] = struct.pack("<H", 9)  # 512-byte sectors
    header[0x30:0x34] = struct.pack("<I", 0)  # the directory starts in sector 0
    directory = bytearray()
    for name, kind in (("Root Entry", 5), *((s, 2) for s in streams)):
        encoded = name.encode("utf-16-le") + b"\x00\x00"
        entry = bytearray(128)
        entry[: len(encoded)] = encoded
        entry[64:66] = struct.pack("<H", len(encoded))
        entry[66] = kind
        directory += entry
    directory += bytes(-len(directory) % 512)
    return bytes(header + directory + bytes(1024))


# -------------------------------------------------------------- each case, its words


CASES: list[tuple[str, str, object, list[str]]] = [
    ("empty", "docx", lambda: b"", ["empty file: it is 0 bytes", "restore it from a backup"]),
    (
        "pptx-as-docx", "docx", a_pptx,
        ["wrong extension: it is a PowerPoint presentation (.pptx) named .docx", "(.pptx)"],
    ),
    (
        "xlsx-as-docx", "docx", an_xlsx,
        ["wrong extension: it is an Excel workbook (.xlsx) named .docx", "real extension (.xlsx)"],
    ),
    (
        "html-as-docx", "docx", lambda: b"<!DOCTYPE html>\n<html><body><p>Runbook</p></body></html>\n",
        ["wrong extension: it is an HTML page (.html) named .docx"],
    ),
    (
        "pdf-as-docx", "docx", lambda: b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
        ["wrong extension: it is a PDF (.pdf) named .docx"],
    ),
    (
        "pdf-as-xlsx", "xlsx", lambda: b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n",
        ["wrong extension: it is a PDF (.pdf) named .xlsx"],
    ),
    (
        "truncated", "docx", lambda: a_docx()[:2000],
        ["damaged: its zip package ends early", "truncated or corrupt", "open it in Word and save it again"],
    ),
    (
        "encrypted-ole", "docx", lambda: ole_file("EncryptionInfo", "EncryptedPackage"),
        ["encrypted: it is password-protected", "open it in Word, remove the password and save it again"],
    ),
    (
        "doc-as-docx", "docx", lambda: ole_file("WordDocument", "1Table"),
        ["binary Office format: it is a Word 97-2003 file (.doc) named .docx", "save it as Word Document (.docx)"],
    ),
    (
        "xls-as-xlsx", "xlsx", lambda: ole_file("Workbook"),
        ["binary Office format: it is an Excel 97-2003 file (.xls) named .xlsx",
         "open it in Excel and save it as Excel Workbook (.xlsx)"],
    ),
    (
        "xls-as-docx", "docx", lambda: ole_file("Book"),
        ["it is an Excel 97-2003 file (.xls) named .docx", "open it in Excel and save it as Excel Workbook (.xlsx)"],
    ),
    (
        "ppt-as-docx", "docx", lambda: ole_file("PowerPoint Document", "Current User"),
        ["it is a PowerPoint 97-2003 file (.ppt) named .docx", "PowerPoint Presentation (.pptx)"],
    ),
    (
        "docm-as-docx", "docx", macro_enabled_docx,
        ["macro-enabled: it is a macro-enabled Word document (.docm) named .docx",
         "never opens a file whose point is code to run"],
    ),
    (
        "plain-zip-as-docx", "docx", lambda: _zip({"notes.txt": b"hello"}),
        ["wrong extension: it is a zip archive (.zip) named .docx"],
    ),
    (
        "blank-docx", "docx", lambda: a_docx(""),
        ["no text: the file holds no text, so there is nothing to index"],
    ),
    (
        "xlsx-sheet-in-cp1252", "xlsx", lambda: _declaring(an_xlsx(), "xl/worksheets/sheet1.xml", "windows-1252"),
        ["XML in a foreign encoding: xl/worksheets/sheet1.xml declares the encoding windows-1252",
         "Office files hold their XML in UTF-8 or UTF-16", "open it in Excel and save it again"],
    ),
    (
        "real-empty-docx", "docx", lambda: real_file("mammoth/empty.docx"),
        ["no text: the file holds no text"],
    ),
    (
        "real-password-protected-xlsx", "xlsx", lambda: real_file("calamine/pass_protected.xlsx"),
        ["encrypted: it is password-protected", "open it in Excel, remove the password and save it again"],
    ),
    (
        "real-xlsb-as-xlsx", "xlsx", lambda: real_file("calamine/any_sheets.xlsb"),
        ["binary Office format: it is an Excel binary workbook (.xlsb) named .xlsx",
         "save it as Excel Workbook (.xlsx)"],
    ),
    (
        "real-ods-as-xlsx", "xlsx", lambda: real_file("calamine/any_sheets.ods"),
        ["wrong extension: it is an OpenDocument spreadsheet (.ods) named .xlsx", "(.ods)"],
    ),
]  # fmt: skip


def _declaring(package: bytes, part: str, encoding: str) -> bytes:
    """The package with ``part`` declaring ``encoding`` in an XML declaration (its text is ASCII)."""
    with zipfile.ZipFile(io.BytesIO(package)) as source:
        xml = re.sub(r"\A<\?xml[^>]*\?>\s*", "", source.read(part).decode("utf-8"))
    return rewrite(package, {part: f'<?xml version="1.0" encoding="{encoding}"?>\n{xml}'.encode("ascii")})


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


PARSERS: dict[str, type[ExtractedParser]] = {"docx": DocxParser, "xlsx": XlsxParser}


@pytest.mark.parametrize(("fmt", "make", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_unreadable_file_gets_a_reason_naming_what_it_is_and_what_to_do(
    fmt: str, make: object, words: list[str]
) -> None:
    raw = make()  # type: ignore[operator]
    with pytest.raises(Unreadable) as caught:
        PARSERS[fmt]().decode(raw)
    reason = str(caught.value)
    for expected in words:
        assert expected in reason, reason
    assert_clean(reason)


def test_the_four_files_that_all_read_as_not_a_zip_package_now_get_four_reasons() -> None:
    reasons = set()
    for raw in (b"", b"<html><body>x</body></html>", a_docx()[:1500], ole_file("EncryptedPackage")):
        with pytest.raises(Unreadable) as caught:
            DocxParser().decode(raw)
        reasons.add(caught.value.code)
    assert reasons == {Reason.EMPTY, Reason.OTHER_FORMAT, Reason.DAMAGED, Reason.ENCRYPTED}


def test_a_document_without_body_text_but_with_a_title_is_still_read() -> None:
    document = docx.Document()
    document.core_properties.title = "Quarterly review"
    document.add_paragraph("")
    assert "title: Quarterly review" in DocxParser().decode(saved(document))


def test_library_messages_lose_their_reprs_and_exception_names() -> None:
    measured = (
        "ValueError: file '<_io.BytesIO object at 0x7f38554eade0>' is not a Word file, content type is "
        "'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml'"
    )
    assert scrub(measured).startswith("the file is not a Word file, content type is")
    assert scrub("KeyError: \"There is no item named '[Content_Types].xml' in the archive\"") == (
        "There is no item named '[Content_Types].xml' in the archive"
    )
    assert scrub("OSError: File contains no valid workbook part") == "File contains no valid workbook part"
    for detail in (measured, "bad <Element {w}body at 0xdeadbeef> here", "KeyError('x')"):
        assert_clean(str(Unreadable(Reason.UNREADABLE, detail, expected="docx")))


def test_a_decoder_s_own_errors_are_worded_by_the_table_too() -> None:
    try:
        b"caf\xe9".decode("utf-8")
    except UnicodeDecodeError as exc:
        encoding = reason_for(exc)
    assert encoding.startswith("not text in a known encoding: byte 0xE9 at offset 3 is not valid UTF-8 text")
    assert "UTF-8" in encoding.split(";")[-1]
    plain = reason_for(ValueError("file '<_io.BytesIO object at 0x7f0000000000>' is broken"))
    assert plain.startswith("unreadable: the file is broken")
    assert_clean(plain)
    assert all(entry.sentence.split(":")[0] for entry in TABLE.values())
    assert set(TABLE) == set(Reason)


def test_the_child_names_formats_and_codes_the_table_knows() -> None:
    """The extraction child imports nothing from kbseek, so it spells kinds and codes itself."""
    assert common.MACRO == MACRO_FORMATS and common.BINARY == BINARY_FORMATS
    named = {
        *common._MAIN_TYPES.values(),
        *common._OPEN_DOCUMENT.values(),
        *(k for _, k in common._MAIN_MEMBERS),
    }
    named |= {k for _, k in common._OLE_STREAMS if k != "encrypted"} | {
        "ole",
        "zip",
        "pdf",
        "html",
        "rtf",
        "text",
    }
    assert named <= set(FORMATS)
    child_codes = {
        "empty",
        "encrypted",
        "legacy",
        "other-format",
        "macro",
        "unreadable",
        "damaged",
        "bomb",
        "strict",
        "xml-encoding",
    }
    assert child_codes <= {r.value for r in Reason}


class _Crashing(DocxParser):
    def child_command(self, input_bytes: int) -> list[str]:
        return [sys.executable, "-c", "import sys; sys.stderr.write('segfault-like\\n'); sys.exit(3)"]


class _Unstartable(DocxParser):
    def child_command(self, input_bytes: int) -> list[str]:
        return ["/nonexistent/kbseek-no-such-interpreter"]


def test_a_reader_that_dies_or_cannot_start_is_worded_by_the_table() -> None:
    with pytest.raises(
        Unreadable, match=r"^reader failed: the Word \(\.docx\) reader stopped before it finished "
    ):
        _Crashing().decode(a_docx())
    with pytest.raises(Unreadable, match=r"^reader not started: .*says nothing about the file"):
        _Unstartable().decode(a_docx())


# ------------------------------------------------------------------ formats no parser reads


def test_xlsb_is_listed_like_xls_with_what_to_save_it_as_and_macros_stay_unopened() -> None:
    registry = Registry(AVAILABLE_PARSERS)
    xlsb, xls = registry.unopened_reason("book.xlsb"), registry.unopened_reason("old.xls")
    assert xlsb is not None and "Excel binary workbook (.xlsb)" in xlsb and "Excel Workbook (.xlsx)" in xlsb
    assert xls is not None and "Excel 97-2003 file (.xls)" in xls and "Excel Workbook (.xlsx)" in xls
    ods, odt = registry.unopened_reason("a.ods"), registry.unopened_reason("a.odt")
    assert ods is not None and "OpenDocument spreadsheet (.ods)" in ods and "Excel Workbook (.xlsx)" in ods
    assert odt is not None and "OpenDocument text (.odt)" in odt and "Word Document (.docx)" in odt
    macro = registry.unopened_reason("figures.xlsm")
    assert (
        macro is not None
        and macro.startswith("macro-enabled: ")
        and registry.for_path("figures.xlsm") is None
    )


# ------------------------------------------------------------------ the index, status and a read


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_a_read_of_a_skipped_file_says_the_reason_the_index_gave(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "locked.docx").write_bytes(ole_file("EncryptionInfo", "EncryptedPackage"))
    (root / "deck.docx").write_bytes(an_xlsx())
    (root / "book.xlsb").write_bytes(
        real_file("calamine/any_sheets.xlsb") if REALFILES.is_dir() else b"PK\x03\x04"
    )
    (root / "note.md").write_text("# Note\n\nThe failover drill runs on Tuesdays.\n", encoding="utf-8")
    code, _, _ = _cli("index", "--kb", str(root), "--lexical-only")
    assert code == 0
    code, out, _ = _cli("status", "--kb", str(root), "--lexical-only", "--json")
    skipped = {s["path"]: s["reason"] for s in json.loads(out)["skipped"]}
    assert skipped["locked.docx"].startswith("encrypted: ")
    assert skipped["deck.docx"].startswith("wrong extension: it is an Excel workbook (.xlsx) named .docx")
    assert skipped["book.xlsb"].startswith("binary Office format: it is an Excel binary workbook (.xlsb)")
    for path, reason in skipped.items():
        assert_clean(reason)
        code, _, err = _cli("get", "--kb", str(root), "--lexical-only", path)
        assert code == 1
        assert reason in " ".join(err.split()), err
        assert "is not readable as" not in err


def test_load_document_refuses_with_the_same_sentence(tmp_path: Path) -> None:
    (tmp_path / "empty.docx").write_bytes(b"")
    with pytest.raises(NotText) as caught:
        load_document(tmp_path, "empty.docx", Registry(), max_bytes=1 << 20)
    assert str(caught.value) == f"'empty.docx' cannot be read: {Unreadable(Reason.EMPTY, expected='docx')}"


def test_nothing_indexable_tells_all_skipped_from_none_found(tmp_path: Path) -> None:
    skipped_all = tmp_path / "broken"
    skipped_all.mkdir()
    (skipped_all / "a.docx").write_bytes(b"")
    (skipped_all / "b.xlsx").write_bytes(ole_file("Workbook"))
    code, out, _ = _cli("index", "--kb", str(skipped_all), "--lexical-only")
    assert code == 0 and "indexed 0 documents" in out
    assert f"found 2 files under {skipped_all}, but all were skipped" in out
    assert "`kbseek status`" in out and "add notes there" not in out
    code, out, _ = _cli("status", "--kb", str(skipped_all), "--lexical-only")
    assert "found 2 files" in out and "all were skipped" in " ".join(out.split())

    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, _ = _cli("index", "--kb", str(empty), "--lexical-only")
    assert f"no Markdown or other indexable files were found under {empty}" in out
    assert "all were skipped" not in out


# ------------------------------------------------------------------ a parser's own size limit


class _GenerousMarkdown(MarkdownParser):
    def raw_size_limit(self, max_file_bytes: int) -> int:
        return 2 * max_file_bytes


def test_a_parser_s_raw_size_limit_is_what_the_scan_and_a_read_enforce(tmp_path: Path) -> None:
    registry = Registry()
    registry._by_ext[".md"] = _GenerousMarkdown()
    (tmp_path / "within.md").write_text("# Within\n\n" + "x" * 1500, encoding="utf-8")
    (tmp_path / "over.md").write_text("# Over\n\n" + "x" * 2500, encoding="utf-8")
    result = scan(tmp_path, registry, Exclusion(tmp_path, (), tmp_path / ".kbseek"), 1000)
    assert "within.md" in result.files and "over.md" not in result.files
    (reason,) = [s.reason for s in result.skipped if s.path == "over.md"]
    assert reason.startswith("too large: it is 2508 bytes, over the read cap of 2000 bytes for a md file")
    assert "max_file_bytes is 1000, counted the way the md parser reads it" in reason
    assert load_document(tmp_path, "within.md", registry, max_bytes=1000).text.startswith("# Within")
    plain = scan(tmp_path, Registry(), Exclusion(tmp_path, (), tmp_path / ".kbseek"), 1000)
    assert {s.path: s.reason for s in plain.skipped}["within.md"].startswith(
        "too large: it is 1510 bytes, over the read cap of 1000 bytes (max_file_bytes)"
    )


# ------------------------------------------------------------------ external entities


def test_an_external_entity_in_a_docx_is_never_resolved_and_the_file_is_read_without_it(
    tmp_path: Path,
) -> None:
    """What the README should say (it says such files are refused; they are read, the entity dropped)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-WORDS", encoding="utf-8")
    package = a_docx("Visible words.")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        xml = archive.read("word/document.xml").decode()
    declaration = f'<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file://{secret}">]>'
    xml = xml.replace("?>", "?>" + declaration, 1).replace("Visible words.", "Visible words. &xxe;")
    text = DocxParser().decode(rewrite(package, {"word/document.xml": xml.encode()}))
    assert "Visible words." in text and "TOPSECRET" not in text
