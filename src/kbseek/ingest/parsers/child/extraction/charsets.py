"""Which legacy encoding a file is surely in: the one rule for notes and for HTML pages.

Used by kbseek's text decoding (``ingest/parsers/text.py``) and by the extraction child's HTML
reader (``web.py``), which imports nothing from kbseek: this module imports nothing from it either,
so both load the same code.
"""

from __future__ import annotations

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
    2. else cp1252, when no Japanese reading is clean and charset-normalizer recognises a
       language in it (a few accented letters alone say little: é is й in cp1251);
    3. else cp932 read as kanji only, when it is the only clean reading at all and has no
       half-width katakana (Chinese and Korean bytes read as cp932 give half-width katakana).

    Anything else is unsure: a wrong guess would index mojibake, which no search finds and every
    reader sees. The extraction child decides an HTML page without a declared charset by the same
    rules (``child/extraction/web.py``), through this same module.
    """
    from charset_normalizer import from_bytes

    codecs_tried = [codec for codecs_, _, _ in LEGACY.values() for codec in codecs_]
    matches = {
        name: m for m in from_bytes(raw, cp_isolation=codecs_tried) for name in m.could_be_from_charset
    }
    plausible: dict[str, float] = {}  # candidate → charset-normalizer's coherence of its reading
    readings: dict[str, str] = {}
    for name, (codecs_, _, _) in LEGACY.items():
        if found := [matches[c] for c in codecs_ if c in matches]:
            plausible[name] = max(m.coherence for m in found)
        for codec in codecs_:
            try:
                text = raw.decode(codec)
            except UnicodeDecodeError:
                continue
            if not _UNCLEAN.search(text):
                readings[name] = text
            break
    japanese = [n for n in _JAPANESE if n in readings and n in plausible]
    with_kana = [n for n in japanese if _kana_share(readings[n]) >= MIN_KANA_SHARE]
    sure: str | None = None
    if len(with_kana) == 1:
        sure = with_kana[0]
    elif not japanese and "cp1252" in readings and plausible.get("cp1252", 0.0) > 0:
        sure = "cp1252"
    elif (
        list(readings) == ["cp932"] and "cp932" in plausible and not _HALFWIDTH_KANA.search(readings["cp932"])
    ):
        sure = "cp932"
    if sure is not None:
        return readings[sure], LEGACY[sure][1]
    return list(dict.fromkeys([*with_kana, *japanese, *(n for n in plausible if n in readings)]))


def _kana_share(text: str) -> float:
    non_ascii = len(_NON_ASCII.findall(text))
    return len(_KANA.findall(text)) / non_ascii if non_ascii else 0.0
