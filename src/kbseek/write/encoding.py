"""A note's text as its file holds it, and back: bytes in, text out, and the same bytes again.

Reading goes through :func:`~kbseek.ingest.parsers.text.decode_text`, the one decoding every text
format uses, so an edit sees exactly the text search and ``get`` serve, and a note kbseek cannot read
is not edited either. What the text alone no longer says is kept beside it in :class:`NoteText`: the
codec, the byte-order mark, and the bytes themselves.

Writing back changes only the bytes of what changed. An edit is text in, text out; the text both
have in common at the start and at the end keeps its original bytes, and only the middle is encoded.
That matters for more than speed: cp932 reads two byte pairs as one character (``0xEEF9`` and
``0x81CA`` are both ``￢``, NEC's and IBM's rows of the same kanji too), and encoding the whole text
again would silently rewrite the user's bytes outside the edit. Text the note's encoding cannot hold
is refused, naming the characters, never replaced by ``?``; and the bytes written must read back,
through the same reader, as the text asked for, or nothing is written (:func:`encode_note`).
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
from dataclasses import dataclass

from kbseek.errors import InvalidArgument, KbBug
from kbseek.ingest.parsers.child.extraction.charsets import LEGACY
from kbseek.ingest.parsers.text import DecodedText, decode_text

NEWLINE = re.compile(r"\r\n|\r|\n")
"""A line ending as markdown-it and kbseek's line index read one: CRLF, a lone CR, or LF."""
SPACE = " \t"
"""What a blank line may hold, as CommonMark reads one: a line of only spaces and tabs is blank."""
WHITE = " \t\r\n"
_BLANK_LINES = re.compile(r"(?:[ \t]*(?:\r\n|\r|\n))*")

_UTF8 = "UTF-8"
_WIDE_BOMS = (  # the order decode_text tries them in: UTF-32 LE starts with UTF-16 LE's mark
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)
_BY_LABEL: dict[str, tuple[str, ...]] = {
    "ISO-2022-JP": ("iso2022_jp_ext", "iso2022_jp_2", "iso2022_jp_2004"),
    **{label: codecs_ for codecs_, label, _ in LEGACY.values()},
}
"""The codecs that may have read a note whose reading :func:`decode_text` labels so; the one that
gives the same text is the one it used (the check, not this order, is what makes it right)."""
_ICONV = {label: iconv for _, label, iconv in LEGACY.values()} | {"ISO-2022-JP": "ISO-2022-JP"}
_SHOWN_CHARACTERS = 10


@dataclass(frozen=True)
class NoteText:
    """A note's text and what writing it back the same way needs."""

    text: str
    """The text as kbseek serves it: the byte-order mark dropped, line endings as in the file."""
    codec: str
    """The Python codec the file is in (``utf-8``, ``utf-16-le``, ``cp932`` …)."""
    label: str
    """How a message names the encoding: ``UTF-8``, ``cp932 (Shift_JIS)`` …"""
    bom: bytes
    """The byte-order mark the file starts with, or ``b""``."""
    raw: bytes
    """The file's bytes, so text an edit leaves alone is written back as these same bytes."""
    newline: str
    """The line ending most lines have (the first seen wins a tie; LF when there is none): what a
    line the edit adds ends with. Lines already there keep their own."""
    final_newline: bool
    """Whether the text ends with a line ending."""


def newline_of(text: str) -> str:
    """The line ending most of ``text``'s lines end with, the first seen on a tie, LF for none.

    The edits call this on the text they are given, so a line they add ends as most of the
    note's lines do, whichever way the text reached them.
    """
    counts = Counter(NEWLINE.findall(text))  # insertion order breaks ties: the first ending seen
    return counts.most_common(1)[0][0] if counts else "\n"


def decode_note(raw: bytes) -> NoteText:
    """``raw`` read as kbseek reads it, with what :func:`encode_note` needs to write it back.

    Raises what :func:`decode_text` raises for bytes it cannot read (an ``Unreadable``, whose message
    says why and how to convert the file): a note search cannot read is not one an agent may edit.
    """
    read = decode_text(raw)
    text = str(read)
    label = read.encoding if isinstance(read, DecodedText) else _UTF8
    bom, candidates = _candidates(raw, label)
    for codec in candidates:
        try:
            if raw[len(bom) :].decode(codec) == text:
                break
        except UnicodeDecodeError:
            continue
    else:  # decode_text read it with a codec this module does not know: a change there, not here
        raise KbBug(f"kbseek read a note as {label} but cannot tell which codec to write it back with")
    return NoteText(
        text=text,
        codec=codec,
        label=label,
        bom=bom,
        raw=raw,
        newline=newline_of(text),
        final_newline=text[-1:] in ("\r", "\n"),
    )


def _candidates(raw: bytes, label: str) -> tuple[bytes, tuple[str, ...]]:
    if label == _UTF8:
        return (codecs.BOM_UTF8 if raw.startswith(codecs.BOM_UTF8) else b""), ("utf-8",)
    for bom, codec, wide in _WIDE_BOMS:
        if label == wide and raw.startswith(bom):
            return bom, (codec,)
    return b"", _BY_LABEL.get(label, ())


def encode_note(note: NoteText, text: str, *, path: str | None = None) -> bytes:
    """``text`` as the bytes of the note ``note`` was read from: same encoding, same byte-order mark,
    the original bytes for everything before and after what changed.

    ``encode_note(note, note.text) == note.raw`` for every note. Refused
    (:class:`~kbseek.errors.InvalidArgument`, naming ``path`` when given) when the encoding cannot
    hold a character of ``text``, or when the bytes would not read back as ``text``: kbseek could no
    longer be sure of a legacy encoding, or the text would start with what a reader takes for a
    byte-order mark.
    """
    if text == note.text:
        return note.raw
    _refuse_unencodable(note, text, path)
    written = note.bom + _spliced(note, text)
    _refuse_unreadable(note, written, text, path)
    return written


def _refuse_unencodable(note: NoteText, text: str, path: str | None) -> None:
    try:
        text.encode(note.codec)
    except UnicodeEncodeError:
        pass
    else:
        return
    bad = sorted({c for c in set(text) if not _encodes(c, note.codec)})
    shown = " ".join(f"{c!r} (U+{ord(c):04X})" for c in bad[:_SHOWN_CHARACTERS])
    more = f" and {len(bad) - _SHOWN_CHARACTERS} more" if len(bad) > _SHOWN_CHARACTERS else ""
    raise InvalidArgument(
        f"{_named(path)} is in {note.label}, which cannot hold {shown}{more}: write the text without "
        f"{'it' if len(bad) == 1 else 'them'}, or convert the note to UTF-8 first{_iconv(note)}"
    )


def _encodes(character: str, codec: str) -> bool:
    try:
        character.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def _spliced(note: NoteText, text: str) -> bytes:
    """The original bytes of the text both versions share at the start and the end, the middle encoded.

    A stateless codec encodes each character alone, so the joins are exact; for ISO-2022-JP, whose
    escapes switch character sets, the result is checked, and the whole text is encoded instead
    when a join would read wrongly (Python's encoder ends every line in ASCII, so that only changes
    the escapes around the edit).
    """
    old, body = note.text, note.raw[len(note.bom) :]
    start = _common_prefix(old, text)
    end = _common_prefix(old[start:][::-1], text[start:][::-1])
    head, tail = body[: _byte_offset(note, start)], body[_byte_offset(note, len(old) - end) :]
    spliced = head + text[start : len(text) - end].encode(note.codec) + tail
    if _reads(spliced, note.codec) == text:
        return spliced
    whole = text.encode(note.codec)
    if _reads(whole, note.codec) == text:
        return whole
    raise KbBug(f"{note.codec} does not read back what it wrote")  # pragma: no cover


def _reads(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return None


def _common_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at the start; slices are compared in C, halving."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _byte_offset(note: NoteText, characters: int) -> int:
    """Where character ``characters`` of ``note.text`` begins in the file's bytes after the mark.

    UTF-8, UTF-16 and UTF-32 read each byte sequence as one text and back, so the length of the
    prefix encoded is its length in the file. Another codec is asked by decoding prefixes, halving:
    more bytes never decode to fewer characters, and the fewest that give ``characters`` end the
    last of them (an escape sequence after it, which reads as nothing, stays with what follows).
    """
    if note.codec.startswith("utf-"):
        return len(note.text[:characters].encode(note.codec))
    body = note.raw[len(note.bom) :]
    low, high = 0, len(body)
    while low < high:
        middle = (low + high) // 2
        if len(codecs.getincrementaldecoder(note.codec)().decode(body[:middle])) >= characters:
            high = middle
        else:
            low = middle + 1
    return low


def _refuse_unreadable(note: NoteText, written: bytes, text: str, path: str | None) -> None:
    """Nothing is written that kbseek would read as other text than ``text``, or not at all."""
    try:
        read = decode_text(written)
    except ValueError as exc:  # Unreadable: the legacy reading is no longer sure
        raise InvalidArgument(
            f"after this edit kbseek could no longer be sure that {_named(path)} is in {note.label} "
            f"({exc}), so nothing was written: convert the note to UTF-8 first{_iconv(note)}"
        ) from None
    if str(read) == text:
        return
    if text.startswith("\ufeff") and not note.bom:
        problem = "would start with U+FEFF, which readers drop as a byte-order mark: leave it out"
    else:
        problem = (
            f"would read back as {read.encoding if isinstance(read, DecodedText) else _UTF8} text "
            "that differs from it: write the text without the characters that make it look so"
        )
    raise InvalidArgument(f"the new text of {_named(path)} {problem}")


def _named(path: str | None) -> str:
    return f"note {path}" if path else "this note"


def _iconv(note: NoteText) -> str:
    iconv = _ICONV.get(note.label)
    return f" (iconv -f {iconv} -t UTF-8)" if iconv else ""


# ------------------------------------------------------------------ lines


def as_block(text: object, nl: str, what: str, *, empty: bool = False) -> str:
    """A caller's text as a block of a note whose lines end with ``nl``: its own line endings made
    ``nl``, its blank lines at either end and its last line ending dropped, so the edit decides the
    joints. Empty text is refused unless ``empty`` (``what`` names it in the refusal)."""
    if not isinstance(text, str):
        raise InvalidArgument(f"{what} must be text, not {type(text).__name__}")
    lines = NEWLINE.split(text)
    while lines and not lines[0].strip(SPACE):
        del lines[0]
    while lines and not lines[-1].strip(SPACE):
        del lines[-1]
    if not lines and not empty:
        raise InvalidArgument(f"{what} is empty: pass the text to write")
    return nl.join(lines)


def past_blank_lines(text: str, at: int) -> int:
    """Where the blank lines that start at ``at`` (a line start) end."""
    found = _BLANK_LINES.match(text, at)
    return found.end() if found else at


def line_start(text: str, at: int) -> int:
    """Where the line holding offset ``at`` starts."""
    return max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1


def ends_blank_line(text: str) -> bool:
    """Whether ``text`` ends with the line ending of a blank line (CRLF counted as one ending)."""
    if not text or text[-1] not in "\r\n":
        return False
    text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return not text[line_start(text, len(text)) :].strip(SPACE)
