"""Build the bilingual lexicon the keyword leg's bridge reads (``src/kbseek/text/lexicon.tsv.gz``).

    pip install jamdict-data==1.5          # JMdict as SQLite (an sdist of 54 MB; 325 MB unpacked)
    python scripts/build_lexicon.py PATH/TO/jamdict.db

The source is JMdict (the Electronic Dictionary Research and Development Group, CC BY-SA), read
from the SQLite file the PyPI package ``jamdict-data`` installs. That package is a build input,
not a dependency: users install a few megabytes of derived pairs instead of a 325 MB database.

Both sides are stored as the analyzer's terms (``kbseek.text.analyzer``), so a lookup at query time
is a dictionary read, not a Sudachi pass over the dictionary. A change to the analyzer therefore
needs a rebuild; ``tests/unit/test_lexicon.py`` re-analyses a sample and fails when they disagree.

What is kept, and why (docs/decisions/0027-a-bilingual-lexicon-for-the-keyword-leg.md):
- senses marked archaic, obsolete, obscure, rare, vulgar or derogatory are dropped: they are noise
  in technical notes;
- a gloss is cleaned of its parentheses and of a leading "to"/"a"/"the", and kept only if at most
  three words remain: a long gloss explains, it is not a word a page would use;
- the Japanese forms are the kanji spellings that are not marked irregular, and the kana ones for
  words written without kanji (most loanwords, and words usually written in kana);
- a pair is kept only when each side is among the other's first translations back (mutual),
  which drops the sprawling verbs (取る, 持つ, 作る) that gloss everything;
- a katakana loanword whose first gloss is the word comes first (technical Japanese writes
  コンポーネント for "component"); then each entry ranks by how common it is (JMdict's priority
  marks) and each gloss by its sense's place, so the translations of a word are listed most
  likely first.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "src" / "kbseek" / "text" / "lexicon.tsv.gz"

DROPPED_MISC = {
    "archaism",
    "obsolete term",
    "obscure term",
    "rare",
    "vulgar expression or word",
    "derogatory",
    "dated term",
    "historical term",
    "proverb",
    "quotation",
    "yojijukugo",
    "idiomatic expression",
    "manga slang",
    "full name of a particular person",
    "place name",
    "work of art, literature, music, etc. name",
}
COMMON = {"news1", "ichi1", "spec1", "spec2", "gai1", "news2", "ichi2", "gai2"}
MAX_GLOSS_WORDS = 3
MAX_SENSES = 3
PER_KEY = 16
MUTUAL_JA = 4
"""An English word's Japanese translation is kept only if the word is among that Japanese word's
first four translations back: 取る has a gloss for almost every English verb, and "command" or
"install" must not become 取る."""
MUTUAL_EN = 8
"""The same test the other way, looser: an English word has more Japanese near-synonyms than a
Japanese word has English ones."""
_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_LEAD = re.compile(r"^(?:to|a|an|the)\s+", re.IGNORECASE)
_KATAKANA = re.compile(r"^[\u30a0-\u30ffー・]+$")


def clean_gloss(gloss: str) -> str | None:
    text = _PARENS.sub(" ", gloss)
    text = " ".join(text.replace("/", " ").split())
    text = _LEAD.sub("", text).strip(" .,;:!?\"'")
    if not text or len(text.split()) > MAX_GLOSS_WORDS:
        return None
    return text


def build(db: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    from kbseek.text.analyzer import terms
    from kbseek.text.stopwords import stop_terms

    stops = stop_terms()

    def key_of(text: str) -> str | None:
        found = [t for t in terms(text)]
        while found and found[0] in stops:
            found.pop(0)
        while found and found[-1] in stops:
            found.pop()
        if not found or len(found) > 4:
            return None
        return " ".join(found)

    con = sqlite3.connect(db)
    kanji: dict[int, list[tuple[int, str]]] = defaultdict(list)
    kana: dict[int, list[tuple[int, str]]] = defaultdict(list)
    common: set[int] = set()
    irregular_k = {kid for (kid,) in con.execute("SELECT kid FROM KJI")}
    irregular_r = {kid for (kid,) in con.execute("SELECT kid FROM KNI")}
    for kid, idseq, text in con.execute("SELECT ID, idseq, text FROM Kanji ORDER BY ID"):
        if kid not in irregular_k:
            kanji[idseq].append((kid, text))
    for kid, idseq, text in con.execute("SELECT ID, idseq, text FROM Kana ORDER BY ID"):
        if kid not in irregular_r:
            kana[idseq].append((kid, text))
    for table, owner in (("KJP", "Kanji"), ("KNP", "Kana")):
        for idseq, prio in con.execute(
            f"SELECT o.idseq, p.text FROM {table} p JOIN {owner} o ON o.ID = p.kid"
        ):
            if prio in COMMON:
                common.add(idseq)
    dropped = {sid for sid, misc in con.execute("SELECT sid, text FROM misc") if misc in DROPPED_MISC}
    kana_only = {
        sid
        for sid, misc in con.execute("SELECT sid, text FROM misc")
        if misc.startswith("word usually written using kana")
    }
    glosses: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    sense_no: dict[int, int] = {}
    usually_kana: set[int] = set()
    for sid, idseq in con.execute("SELECT ID, idseq FROM Sense ORDER BY ID"):
        n = sense_no[idseq] = sense_no.get(idseq, -1) + 1
        if sid in kana_only and n == 0:
            usually_kana.add(idseq)
        if sid in dropped or n >= MAX_SENSES:
            continue
        for i, (gloss,) in enumerate(
            con.execute("SELECT text FROM SenseGloss WHERE sid = ? AND lang = 'eng'", (sid,))
        ):
            glosses[idseq].append((n, i, gloss))
        for (source,) in con.execute(
            "SELECT text FROM SenseSource WHERE sid = ? AND (lang = 'eng' OR lang IS NULL OR lang = '') AND text IS NOT NULL",
            (sid,),
        ):
            glosses[idseq].append((n, -1, source))

    ja_en: dict[str, dict[str, tuple[int, ...]]] = defaultdict(dict)
    en_ja: dict[str, dict[str, tuple[int, ...]]] = defaultdict(dict)
    for idseq, senses in glosses.items():
        forms = [t for _, t in kanji.get(idseq, [])]
        readings = [t for _, t in kana.get(idseq, [])]
        if not forms or idseq in usually_kana:
            forms += readings
        elif any(_KATAKANA.match(r) for r in readings):
            forms += [r for r in readings if _KATAKANA.match(r)]
        rank_common = 0 if idseq in common else 1
        ja_keys = [k for k in dict.fromkeys(key_of(f) for f in forms) if k]
        if not ja_keys:
            continue
        for n, i, gloss in senses:
            cleaned = clean_gloss(gloss)
            en_key = key_of(cleaned) if cleaned else None
            if not en_key or all(t in stops for t in en_key.split()):
                continue
            for j, ja_key in enumerate(ja_keys):
                # A loanword first: コンポーネント is what a Japanese page about components says.
                loan = 0 if (n, i) == (0, 0) and _KATAKANA.match(ja_key.replace(" ", "")) else 1
                rank = (loan, rank_common, n, i, j)
                held = ja_en[ja_key].get(en_key)
                if held is None or rank < held:
                    ja_en[ja_key][en_key] = rank
                held = en_ja[en_key].get(ja_key)
                if held is None or rank < held:
                    en_ja[en_key][ja_key] = rank

    def ordered(table: dict[str, dict[str, tuple[int, ...]]]) -> dict[str, list[str]]:
        return {
            key: [v for v, _ in sorted(values.items(), key=lambda kv: kv[1])] for key, values in table.items()
        }

    forward, backward = ordered(ja_en), ordered(en_ja)

    def mutual(table: dict[str, list[str]], other: dict[str, list[str]], depth: int) -> dict[str, list[str]]:
        kept = {
            key: [v for v in values if key in other.get(v, [])[:depth]][:PER_KEY]
            for key, values in table.items()
        }
        return {key: values for key, values in kept.items() if values}

    return mutual(forward, backward, MUTUAL_EN), mutual(backward, forward, MUTUAL_JA)


def write(ja_en: dict[str, list[str]], en_ja: dict[str, list[str]], out: Path) -> None:
    header = (
        "# kbseek bilingual lexicon: pairs of the analyzer's terms, most likely translation first.\n"
        "# Derived from JMdict (c) the Electronic Dictionary Research and Development Group,\n"
        "# used under CC BY-SA 3.0 (https://www.edrdg.org/edrdg/licence.html); this file is under\n"
        "# the same licence. Built by scripts/build_lexicon.py. Columns: direction, term(s), translations.\n"
    )
    lines = [header]
    for direction, table in (("ja", ja_en), ("en", en_ja)):
        for key in sorted(table):
            lines.append(f"{direction}\t{key}\t{'|'.join(table[key])}\n")
    # mtime=0: the same input gives the same bytes, so a rebuild shows no diff.
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write("".join(lines).encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("db", type=Path, help="jamdict.db (from the jamdict-data package)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    ja_en, en_ja = build(args.db)
    write(ja_en, en_ja, args.out)
    print(f"{len(ja_en)} Japanese keys, {len(en_ja)} English keys -> {args.out} "
          f"({args.out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    main()
