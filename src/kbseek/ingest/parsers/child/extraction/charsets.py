"""Which legacy encoding a file is surely in: the one rule for notes and for HTML pages.

Used by kbseek's text decoding (``ingest/parsers/text.py``, which every text format, Markdown and
plain text alike, decodes through) and by the extraction child's HTML reader (``web.py``), which
imports nothing from kbseek: this module imports nothing from it either, so both load the same code.
"""

from __future__ import annotations

import itertools
import re

LEGACY: dict[str, tuple[tuple[str, ...], str, str]] = {
    "cp932": (("cp932",), "cp932 (Shift_JIS)", "CP932"),
    "euc_jp": (("euc_jp", "euc_jis_2004"), "EUC-JP", "EUC-JP"),
    "cp1252": (("cp1252",), "cp1252 (Windows Western)", "CP1252"),
}
"""The legacy encodings a note is read in, as charset-normalizer names them: the Python codecs that
decode one (the first that reads the bytes strictly wins), how a message names it, and its
``iconv`` name.

- ``cp932`` is Shift_JIS as Windows writes it, and as browsers read every Shift_JIS label: strict
  Shift_JIS lacks the NEC and IBM extensions (①, ㈱, 髙), which Japanese files are full of.
- ``euc_jp`` is EUC-JP as Unix systems wrote it; ``euc_jis_2004`` adds the NEC row 13 (①, ㈱)
  that Windows-made EUC-JP (cp51932, which Python lacks) uses.
- ``cp1252`` is Western text from Windows ("ANSI" Notepad), a superset of Latin-1's letters. Latin-1
  itself is no candidate: it reads every byte, so it would accept every wrong guess.

Chinese, Korean and Cyrillic encodings are left out on purpose: kbseek serves English and
Japanese notes, and each one more candidate is one more way to read a short Japanese note
wrongly; such a file is refused with its reason rather than read as kanji it does not hold.
"""
_JAPANESE = ("cp932", "euc_jp")
_UNCLEAN = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ue000-\uf8ff\ufffd]")
"""In a decoded note, the sign of a wrong guess: control characters, C1 controls, the private use
area (cp932's user-defined rows) and replacement characters."""
_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa\u30fc]")
_HALFWIDTH_KANA = re.compile("[\uff61-\uff9f]")
_NON_ASCII = re.compile("[^\x00-\x7f]")
MIN_KANA_SHARE = 0.05
"""Hiragana and full-width katakana among the non-ASCII characters of a sure Japanese reading.
Japanese prose is a third kana or more; Chinese or Korean bytes read as Japanese give kanji with
next to no kana, because the kana rows of EUC-JP and Shift_JIS are rare or absent in those."""


def legacy_reading(raw: bytes) -> tuple[str, str] | list[str]:
    """The text and label of the one sure reading of ``raw`` in a :data:`LEGACY` encoding, or the
    names of the likely encodings (perhaps none) when no reading is sure.

    charset-normalizer ranks the candidates and drops readings whose "mess" is over its threshold;
    each surviving reading is then decoded strictly and must be clean (no control, private-use or
    replacement characters). Which clean reading is *sure*:

    1. exactly one Japanese reading that has kana (:data:`MIN_KANA_SHARE`);
    2. else cp1252, when no Japanese reading has kana and either no Japanese reading is clean and
       charset-normalizer recognises a language in it (a long text), or it reads as Western
       European prose (:func:`western_prose`, any length) and no Japanese reading
       :func:`competes <_competes>` with it;
    3. else cp932 read as kanji only, when it is the only clean reading at all and has no
       half-width katakana (Chinese and Korean bytes read as cp932 give half-width katakana).

    Anything else is unsure: a wrong guess would index mojibake, which no search finds and every
    reader sees. The extraction child decides an HTML page without a declared charset by the same
    rules (``child/extraction/web.py``), through this same module. A text whose only clean reading
    is Western prose is decided without charset-normalizer, which then has nothing to add.
    """
    readings = _clean_readings(raw)
    western = "cp1252" in readings and western_prose(readings["cp1252"])
    if western and not any(n in readings for n in _JAPANESE):
        return readings["cp1252"], LEGACY["cp1252"][1]  # what rule 2 decides, without ranking anything
    plausible = _plausible(raw)
    japanese = [n for n in _JAPANESE if n in readings and n in plausible]
    with_kana = [n for n in japanese if _kana_share(readings[n]) >= MIN_KANA_SHARE]
    sure: str | None = None
    if len(with_kana) == 1:
        sure = with_kana[0]
    elif (
        not with_kana
        and "cp1252" in readings
        and (
            (not japanese and plausible.get("cp1252", 0.0) > 0)
            or (western and not any(_competes(n, readings[n]) for n in japanese))
        )
    ):
        sure = "cp1252"
    elif (
        list(readings) == ["cp932"] and "cp932" in plausible and not _HALFWIDTH_KANA.search(readings["cp932"])
    ):
        sure = "cp932"
    if sure is not None:
        return readings[sure], LEGACY[sure][1]
    also = ["cp1252"] if western else []  # Western prose, refused only for a Japanese reading as likely
    return list(dict.fromkeys([*with_kana, *japanese, *also, *(n for n in plausible if n in readings)]))


def _clean_readings(raw: bytes) -> dict[str, str]:
    """Each :data:`LEGACY` encoding whose codecs read ``raw`` strictly (the first that does) to clean text."""
    readings: dict[str, str] = {}
    for name, (codecs_, _, _) in LEGACY.items():
        for codec in codecs_:
            try:
                text = raw.decode(codec)
            except UnicodeDecodeError:
                continue
            if not _UNCLEAN.search(text):
                readings[name] = text
            break
    return readings


def _plausible(raw: bytes) -> dict[str, float]:
    """The :data:`LEGACY` encodings charset-normalizer keeps for ``raw`` (it drops readings over its
    "mess" threshold), with the coherence of the reading: above 0 when it recognises a language."""
    from charset_normalizer import from_bytes

    codecs_tried = [codec for codecs_, _, _ in LEGACY.values() for codec in codecs_]
    matches = {
        name: m for m in from_bytes(raw, cp_isolation=codecs_tried) for name in m.could_be_from_charset
    }
    plausible: dict[str, float] = {}
    for name, (codecs_, _, _) in LEGACY.items():
        if found := [matches[c] for c in codecs_ if c in matches]:
            plausible[name] = max(m.coherence for m in found)
    return plausible


def _kana_share(text: str) -> float:
    non_ascii = len(_NON_ASCII.findall(text))
    return len(_KANA.findall(text)) / non_ascii if non_ascii else 0.0


# ------------------------------------------------------------------ Western European prose

_WESTERN_LETTERS = "À-ÖØ-öø-ÿŒœ"
"""The letters of Western European languages that cp1252 has beyond ASCII: Latin-1's, and French Œ œ.
Š š Ž ž Ÿ ƒ ˆ ˜ are left out: rare in these languages, they are what DOS and Mac Roman text (é, à,
ö there) and kanji lead bytes become when read as cp1252."""
_ACCENTED_UPPER = "À-ÖØ-ÞŒ"
_ACCENTED_LOWER = "ß-öø-ÿœ"
_MARKS = "…‘’“”„‚–—«»‹›•¡¿·´\xa0\xad"
"""Typographic marks, which sit between words and next to any letter: "déjà…", « Ça » (with no-break
spaces), l’hôtel or l´hôtel, a soft hyphen inside a word."""
_AFTER_WORD = "©®™¹²³ªº"
"""Signs that follow a word or a number and are never followed by a letter: Word®, m², nº 5, 1ª."""
_BY_NUMBERS = "€£¢¥§±×÷¼½¾"
"""Signs that stand by numbers and touch no letter: 20 €, § 4, 1½."""
_UNITS = "°µ"
"""Signs that stand by numbers and may start a unit, never end a word: 21 °C, 5 µm."""
_SIGNS = _AFTER_WORD + _BY_NUMBERS + _UNITS
_LONE = "àáéèíóöøåÀÁÉÈÍÓÖØÅ"
"""Letters that are words by themselves: French, Catalan and Portuguese à, Portuguese é, Italian è,
Spanish ó, Icelandic á and í, Swedish å and ö, Danish ø; capitalised at the start of a sentence."""
_LONE_NOT = "".join(
    c for c in map(chr, [*range(0xC0, 0x100), 0x152, 0x153]) if c not in "×÷" and c not in _LONE
)
_L = "A-Za-z" + _WESTERN_LETTERS
_CODE_PUNCTUATION = "@\\[\\\\\\]^_`{|}~"
"""ASCII that prose never glues to an accented letter, and half of kanji's second bytes read as ASCII."""
_NOT_WESTERN = re.compile(
    "[^\\x00-\\x7f](?:"  # each rule is about a non-ASCII character and the characters on either side
    + "|".join(
        (
            f"(?<=[^\\x00-\\x7f{_WESTERN_LETTERS}{_MARKS}{_SIGNS}])",  # a character no Western text needs
            f"(?<=[{_SIGNS}])(?=[^\\x00-\\x7f\\xa0])|(?<=[^\\xa0])(?=[{_SIGNS}])",  # a sign next to non-ASCII
            f"(?<=[{_AFTER_WORD}{_BY_NUMBERS}])(?=[{_L}])|(?<=[{_L}][{_BY_NUMBERS}{_UNITS}])",  # … by a word
            f"(?<=[{_L}][^{_WESTERN_LETTERS}’´·\\xa0\\xad])(?=[{_L}])",  # a mark inside a word: no apostrophe
            f"(?<=[{_WESTERN_LETTERS}])(?=[{_WESTERN_LETTERS}]{{2}})",  # three accented letters in a row
            f"(?<![{_L}].)(?<=[{_WESTERN_LETTERS}])(?=[{_WESTERN_LETTERS}](?![{_L}]))",  # a word of two of them
            f"(?<![{_L}].)(?<=[{_LONE_NOT}])(?![{_L}])",  # a one-letter word that no language has
            f"(?<=[{_ACCENTED_LOWER}])(?=[A-Z{_ACCENTED_UPPER}])|(?<=[a-z][{_ACCENTED_UPPER}])",  # aB, one accented
            f"(?=[{_CODE_PUNCTUATION}])|(?<=[{_CODE_PUNCTUATION}].)",  # code punctuation glued to it
        )
    )
    + ")"
)
"""Where a text breaks :func:`western_prose`. Every match starts at a non-ASCII character, so a search
skips ASCII at the speed of a scan and tests the rules only where they can apply."""
_ASCII_LETTER = re.compile("[A-Za-z]")
_ICELANDIC = "ðþýÐÞÝ"
_ACUTE = "áéíóúæÁÉÍÓÚÆ"
"""Icelandic and Faroese write ð, þ and ý among acute vowels and æ; Turkish cp1254 text read as cp1252
gives ð, þ and ý (its ğ, ş and ı) among ç, ö and ü only."""
_FREE_RUN = re.compile("(?<![A-Za-z\x80-\U0010ffff])[^\x00-\x7f]+(?![A-Za-z\x80-\U0010ffff])")
"""Non-ASCII characters together, touching no ASCII letter: a Japanese word, not part of a Latin one."""


def western_prose(text: str) -> bool:
    """Whether ``text`` (a cp1252 reading) reads as Western European prose: accented letters inside
    words written in ASCII letters, typographic marks between words, signs beside digits.

    Each rule is what Western text keeps and what other bytes read as cp1252 break: Cyrillic and
    Greek (cp1251, cp1253) give words made only of accented letters (Привет is Ïðèâåò), Chinese
    and Korean double-byte text gives signs among letters (서버 is ¼, a soft hyphen, ¹ö), Central European,
    DOS and Mac Roman text gives signs or Š ž ˆ inside words (Łódź is £ódŸ, DOS café is caf‚).
    Turkish gives ð, þ and ý (its ğ, ş, ı) without the acute vowels Icelandic writes them among. Three
    ASCII letters at least: a character or two of other bytes can look like anything.

    Regular expressions only, so a large file is decided at the speed of a scan.
    """
    if _NOT_WESTERN.search(text) is not None:
        return False
    if any(c in text for c in _ICELANDIC) and not any(c in text for c in _ACUTE):
        return False
    return sum(1 for _ in itertools.islice(_ASCII_LETTER.finditer(text), 3)) == 3


def _competes(name: str, japanese: str) -> bool:
    """Whether a Japanese reading (in the :data:`LEGACY` encoding ``name``) without kana is a real
    alternative to a Western one: it has kanji standing on their own, touching no ASCII letter.

    Western bytes read as cp932 or EUC-JP give a kanji for an accented letter and the byte after it,
    glued into an ASCII word (São is S, a kanji, then " Paulo"); half-width katakana is what accented
    capitals read as, never a competitor. A lone cp932 kanji whose bytes are one of
    :data:`_TWO_LETTER_WORDS` in cp1252 is taken for that word: they are rare kanji of JIS's second
    level, which a Japanese line seldom holds by itself. Any other kanji standing alone refuses the
    text, naming both encodings: a short file could be either.
    """
    if _HALFWIDTH_KANA.search(japanese) is not None:
        return False
    for run in _FREE_RUN.finditer(japanese):
        if name == "cp932" and len(run[0]) == 1 and _two_letter_word(run[0]):
            continue
        return True
    return False


_TWO_LETTER_WORDS = frozenset({"às", "ça", "él", "és", "ég", "ís", "úr", "år", "åt", "ås", "ån"})
"""Western words of a small accented letter and a small ASCII one, whose two bytes cp932 reads as one
kanji: Portuguese às, French ça, Spanish él, Catalan és, Icelandic ég, ís and úr, Swedish, Danish and
Norwegian år, åt, ås and ån."""


def _two_letter_word(kanji: str) -> bool:
    return kanji.encode("cp932", "ignore").decode("cp1252", "ignore") in _TWO_LETTER_WORDS


# ------------------------------------------------------------------ UTF-16 and UTF-32 without a mark

_WIDE_MIN_NUL_SHARE = 16
"""At least one byte in this many is NUL in text that :func:`wide_without_bom` names: the high bytes
of ASCII characters. Fewer leaves too little to tell a byte order by."""


def wide_without_bom(raw: bytes) -> str | None:
    """``UTF-16LE``, ``UTF-16BE``, ``UTF-32LE`` or ``UTF-32BE`` when ``raw`` is that without a
    byte-order mark, else ``None``.

    Told by where its NUL bytes are (the high bytes of its ASCII characters: every fourth byte of
    UTF-32, at least one in :data:`_WIDE_MIN_NUL_SHARE` bytes, nine in ten on the same side of
    UTF-16's pairs) and by a strict decoding that is clean text. ASCII in UTF-16 is valid UTF-8 too,
    NULs and all, so this is asked before UTF-8 is; a text note has no NUL to be mistaken.
    """
    nuls = raw.count(0)
    if nuls == 0 or len(raw) < 4 or nuls * _WIDE_MIN_NUL_SHARE < len(raw):
        return None
    candidates: list[tuple[str, str]] = []
    if len(raw) % 4 == 0:
        if raw[3::4].count(0) == len(raw) // 4:
            candidates.append(("UTF-32LE", "utf-32-le"))
        if raw[0::4].count(0) == len(raw) // 4:
            candidates.append(("UTF-32BE", "utf-32-be"))
    if len(raw) % 2 == 0:
        even, odd = raw[0::2].count(0), raw[1::2].count(0)
        if odd * 10 >= nuls * 9:
            candidates.append(("UTF-16LE", "utf-16-le"))
        elif even * 10 >= nuls * 9:
            candidates.append(("UTF-16BE", "utf-16-be"))
    for name, codec in candidates:
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError:
            continue
        if "\x00" not in text and not _UNCLEAN.search(text):
            return name
    return None
