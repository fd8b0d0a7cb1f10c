"""The single text analyzer shared by indexing and querying.

Indexing and querying must produce identical terms for identical words, otherwise
recall is lost without any error, so everything that turns text into search terms
lives here.

Japanese choices were measured on JSQuAD-IR (the JSQuAD valid split as a BEIR
retrieval set: 2,304 Wikipedia passages, 4,442 questions, one relevant passage
each). Title + text indexed with ``index_text`` in SQLite FTS5 (unicode61), queries
compiled by ``kbseek.search.fts_query`` (OR of terms, cap 32), ranked by bm25.
nDCG@10 on a fixed random 1,000 questions / on all 4,442:

    character bigrams only                        0.9282 / 0.9375
    Sudachi A, drop punctuation only              0.9324 / 0.9351
    Sudachi B, drop punctuation only              0.9317 / 0.9365
    Sudachi C, drop punctuation only              0.9308 / 0.9361
    Sudachi A, also drop 助詞 助動詞              0.9357 / 0.9393
    Sudachi B, also drop 助詞 助動詞              0.9342 / 0.9396
    Sudachi C, also drop 助詞 助動詞              0.9340 / 0.9393
    Sudachi A, also drop 助詞 助動詞 代名詞       0.9358 / 0.9400   <- used
    Sudachi B, also drop 助詞 助動詞 代名詞       0.9358 / 0.9402
    Sudachi C, also drop 助詞 助動詞 代名詞       0.9349 / 0.9403

(Sudachi rows use normalised forms and bigrams for unknown words.) Later, the
light verbs and adjectives (動詞/形容詞 非自立可能: する, なる, ある, いる, できる,
ない …) were dropped too, for snippets: highlighted, they marked し and なっ all
over a Japanese snippet. Retrieval is unchanged within noise: nDCG@10 0.943 ->
0.942 on all 4,442 questions with ``benchmarks/lexical.py jsquad-ir``. Dropping
particles/auxiliaries helps every mode; the modes are within noise of each other,
so the finest, A, is used: a query for 東京 or 委員 must still find 東京都庁 or
委員会, which mode C keeps as single terms. Throughput of ``tokens()`` on that
corpus: roughly 170k-280k chars/s for Japanese (Sudachi itself is about half of
the time), 1.3M-2.2M chars/s for English.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Final

import sudachipy
from sudachipy.errors import SudachiError

__all__ = ["Token", "index_text", "normalize", "terms", "tokens"]


@dataclass(frozen=True, slots=True)
class Token:
    """One search term and where it came from.

    ``start``/``end`` index the ORIGINAL string given to :func:`tokens` (not the
    normalised one), so callers can cut and highlight snippets in the text the user
    actually wrote.
    """

    term: str
    start: int
    end: int
    word: tuple[int, int] | None = None
    """For a character bigram cut from a longer unknown Han/kana word, that word's span
    (in the same coordinates); ``None`` for a token that is a whole word. The term
    ``タブ`` is a bigram of the unknown word ``イミュータブル``: it matches for recall,
    but a snippet must not mark it as the word タブ."""


# Sudachi split mode and the parts of speech whose morphemes carry no search value.
# Chosen by the measurement in the module docstring.
_SPLIT_MODE: Final = "A"
_DROPPED_POS = frozenset({"補助記号", "空白", "助詞", "助動詞", "代名詞"})
# Light verbs and adjectives that also serve as auxiliaries (する, なる, ある, いる, できる, ない,
# よい …) and the stem of ようだ: in almost every sentence, so they rank nothing and, highlighted,
# they speckle a snippet with marks on し and なっ.
_DROPPED_DEPENDENT = frozenset({("動詞", "非自立可能"), ("形容詞", "非自立可能"), ("形状詞", "助動詞語幹")})

# Sudachi rejects inputs above 49149 UTF-8 bytes; 4096 characters stay below that
# even when every character needs four bytes.
_SUDACHI_MAX_CHARS = 4096

# How many times a term may be re-analysed while settling on a stable form.
_MAX_SETTLE_DEPTH = 4

# Han, kana and the iteration/prolonged-sound marks: text that has no spaces and
# is segmented by Sudachi instead of being split on non-alphanumerics.
_CJK = (
    "\u3005-\u3007\u3031-\u3035\u303b\u303c\u3041-\u3096\u309d-\u309f\u30a1-\u30fa"
    "\u30fc-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\U0001b000-\U0001b16f\U00020000-\U0003ffff"
)
# Letters that Python calls alphanumeric but SQLite's unicode61 tables (Unicode 6.1)
# treat as separators; a term containing one would be split in two by FTS5.
_FTS_SEPARATORS = "\u19b0-\u19c0\u19c8\u19c9\u1cf2\u1cf3"
# Default-ignorable code points (soft hyphen, zero-width space/joiners, variation
# selectors, BOM, ...): invisible, so they must neither split nor change a word.
_IGNORABLES = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_IGNORABLE = re.compile(f"[{_IGNORABLES}]")
# Characters that are their own normal form and never combine with a neighbour, so
# long runs of them can skip per-character normalisation (ASCII is lower-cased).
_SAFE = "\x00-\x7f\u3001-\u3004\u3008-\u301b\u3041-\u3096\u30a1-\u30fa\u30fc\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff"
_VOWELS = frozenset("aeiouy")


@cache
def _marks() -> str:
    """Character-class body for all combining marks (computed once, ~20 ms)."""
    category = unicodedata.category
    ranges: list[list[int]] = []
    for cp in range(0x300, 0x20000):
        if category(chr(cp))[0] == "M":
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(runs, normalisation chunks, marks) patterns, built on first use."""
    marks = _marks()
    word = rf"[^\W_{_CJK}{_FTS_SEPARATORS}]"
    # A word keeps its combining marks so they do not split it; they are stripped
    # from the term later, the way diacritic folding would.
    runs = re.compile(rf"(?P<c>[{_CJK}]+)|(?P<w>{word}(?:{word}|[{marks}])*)")
    # Half-width (semi-)voiced sound marks and Hangul medial/final jamo are not
    # combining marks but still compose with the character before them under NFKC;
    # ignorables vanish, so marks after them belong to the character before too.
    joins = marks + "\uff9e\uff9f\u1160-\u11ff" + _IGNORABLES
    chunks = re.compile(rf"(?P<s>(?:[{_SAFE}](?![{joins}]))+)|(?s:.)[{joins}]*")
    return runs, chunks, re.compile(f"[{marks}]+")


def _fold(text: str) -> str:
    """NFKC + case folding without ignorables, iterated until it no longer changes.

    A single NFKC/casefold round is not always a fixed point (casefold can produce
    text NFKC rewrites again), and normalisation must be idempotent.
    """
    text = _IGNORABLE.sub("", text)
    for _ in range(4):
        folded = _IGNORABLE.sub(
            "", unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
        )
        if folded == text:
            break
        text = folded
    return text


_fold_chunk = lru_cache(maxsize=8192)(_fold)


def _normalize_map(line: str) -> tuple[str, list[int] | None, list[int] | None]:
    """Normalise ``line``; return it with per-character original start/end offsets.

    NFKC can change lengths (``…`` becomes three dots, half-width ``ｶﾞ`` one
    character), so each output character remembers which input span it came from.
    The offset lists are None when the mapping is the identity (the common case).
    Normalisation is done per base character plus its combining marks, so the result
    is the same whichever path is taken.
    """
    if line.isascii():
        return line.lower(), None, None
    if unicodedata.is_normalized("NFKC", line) and not _IGNORABLE.search(line):
        folded = line.casefold()
        if len(folded) == len(line) and unicodedata.is_normalized("NFKC", folded):
            return folded, None, None
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for m in _patterns()[1].finditer(line):
        s, e = m.span()
        if m.lastgroup == "s":
            parts.append(m.group().lower())
            starts.extend(range(s, e))
            ends.extend(range(s + 1, e + 1))
        else:
            folded = _fold_chunk(m.group())
            parts.append(folded)
            starts.extend([s] * len(folded))
            ends.extend([e] * len(folded))
    return "".join(parts), starts, ends


def normalize(text: str) -> str:
    """NFKC + case folding (and removal of invisible ignorables); idempotent.

    This is the exact normalisation :func:`tokens` applies before splitting.
    """
    return "".join(_normalize_map(line)[0] for line in text.splitlines(keepends=True))


def _has_vowel(word: str) -> bool:
    return not _VOWELS.isdisjoint(word)


def _undouble(word: str) -> str:
    """``runn`` -> ``run``: undo the consonant doubling of ``running``/``stopped``."""
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiouylsfz":
        return word[:-1]
    return word


def _stem_once(word: str) -> str:
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("eed"):  # agreed -> agree, but need/feed stay whole
        if len(word) > 4:
            word = word[:-1]
    elif word.endswith("ed") and len(word) >= 5 and _has_vowel(word[:-2]):
        word = _undouble(word[:-2])
    elif word.endswith("ing") and len(word) >= 6 and _has_vowel(word[:-3]):
        word = _undouble(word[:-3])
    if word.endswith("e") and not word.endswith("ee") and len(word) >= 4:
        word = word[:-1]
    return word


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """Light English stemming: plurals, -ed, -ing and a final -e.

    Deliberately simple (no Porter) so results are predictable: ``tastes``,
    ``tasted``, ``tasting`` and ``taste`` all become ``tast``; ``policies`` and
    ``policy`` become ``policy``; ``running``/``runs``/``run`` become ``run``.
    Rules are applied until nothing changes, so stemming a stem is a no-op (which
    re-analysing stored terms relies on); stems are keys, not words (``databa``).
    Only plain ASCII words are stemmed.
    """
    if not (word.isascii() and word.isalpha()):
        return word
    while (shorter := _stem_once(word)) != word:
        word = shorter
    return word


_local = threading.local()
_dictionary_lock = threading.Lock()
_loaded: list[sudachipy.Dictionary] = []


def _dictionary() -> sudachipy.Dictionary:
    """The Sudachi dictionary, loaded lazily and only once for all threads.

    Importing the analyzer stays cheap, and tokenizers of every thread share the
    one (large, memory-mapped) dictionary.
    """
    if not _loaded:
        with _dictionary_lock:
            if not _loaded:
                _loaded.append(sudachipy.Dictionary(dict="core"))
    return _loaded[0]


def _tokenizer() -> sudachipy.Tokenizer:
    """This thread's Sudachi tokenizer: the tokenizer object is not thread-safe."""
    tokenizer: sudachipy.Tokenizer | None = getattr(_local, "tokenizer", None)
    if tokenizer is None:
        tokenizer = _dictionary().tokenizer(
            mode=_SPLIT_MODE, fields={"pos", "normalized_form", "split_a", "split_b"}
        )
        _local.tokenizer = tokenizer
    return tokenizer


@cache
def _dropped_pos_ids() -> frozenset[int]:
    dictionary = _dictionary()
    ids: set[int] = set()
    pos_id = 0
    while (pos := dictionary.pos_of(pos_id)) is not None:
        if pos[0] in _DROPPED_POS or (pos[0], pos[1]) in _DROPPED_DEPENDENT:
            ids.add(pos_id)
        pos_id += 1
    return frozenset(ids)


_Raw = tuple[str, int, int, int, int]
"""(term, start, end, word start, word end); the word span is (-1, -1) for a whole word."""


def _bigrams(run: str, base: int) -> list[_Raw]:
    """Overlapping character bigrams (a lone character stays a unigram).

    Each bigram of a word longer than two characters carries the word's span, so a
    bigram can be told apart from a word of its own.
    """
    if len(run) <= 2:
        return [(run, base, base + len(run), -1, -1)]
    end = base + len(run)
    return [(run[i : i + 2], base + i, base + i + 2, base, end) for i in range(len(run) - 1)]


def _cjk_terms(run: str) -> list[_Raw]:
    """Segment a run of Han/kana with Sudachi; bigrams for what it does not know.

    Each run is analysed on its own (never together with neighbouring Latin text or
    other runs) so that a term analyses the same way wherever it appears.
    """
    tokenize = _tokenizer().tokenize
    dropped = _dropped_pos_ids()
    out: list[_Raw] = []
    append = out.append
    for base in range(0, len(run), _SUDACHI_MAX_CHARS):
        piece = run[base : base + _SUDACHI_MAX_CHARS]
        try:
            morphemes = tokenize(piece)
        except SudachiError:  # not seen in practice; the analyzer must not raise
            out.extend(_bigrams(piece, base))
            continue
        for m in morphemes:
            begin = base + m.begin()
            end = base + m.end()
            # Unknown words keep their bigrams whatever Sudachi guesses their part of
            # speech to be: it files rarer Han (𠮟, 𩸽) under symbols.
            if m.is_oov():
                out.extend(_bigrams(run[begin:end], begin))
            elif m.part_of_speech_id() not in dropped:
                for term in _form_terms(m.normalized_form()):
                    append((term, begin, end, -1, -1))
    return out


@lru_cache(maxsize=65536)
def _form_terms(form: str) -> tuple[str, ...]:
    """Terms of a Sudachi normalised form, cleaned like any other text.

    Forms are dictionary strings, not necessarily NFKC or free of separators, and
    they repeat constantly, hence the cache. Han/kana runs are kept whole: Sudachi
    has already segmented them.
    """
    return tuple(raw[0] for raw in _split(_fold(form), cjk=False))


def _split(text: str, *, cjk: bool = True) -> list[_Raw]:
    """Raw terms of already-normalised text, offsets into it (no settling).

    With ``cjk=False`` Han/kana runs are kept whole, which is used to clean up
    Sudachi's normalised forms without segmenting them a second time.
    """
    runs, _, marks = _patterns()
    out: list[_Raw] = []
    for m in runs.finditer(text):
        start, end = m.span()
        if m.lastgroup == "w":
            word = m.group()
            if not word.isascii():
                word = marks.sub("", word)
            out.append((_stem(word), start, end, -1, -1))
        elif cjk:
            out.extend(
                (t, start + s, start + e, start + ws if ws >= 0 else -1, start + we if ws >= 0 else -1)
                for t, s, e, ws, we in _cjk_terms(m.group())
            )
        else:
            out.append((m.group(), start, end, -1, -1))
    return out


def _settle(term: str, depth: int) -> tuple[str, ...]:
    raw = [r[0] for r in _split(_normalize_map(term)[0])]
    if raw == [term]:
        return (term,)
    if depth >= _MAX_SETTLE_DEPTH:
        return ()
    return tuple(s for t in raw for s in _settle(t, depth + 1))


@lru_cache(maxsize=65536)
def _stable(term: str) -> tuple[str, ...]:
    """The form(s) of ``term`` that analyse to themselves.

    Sudachi segments a word differently alone than in context, and its normalised
    form (``行っ`` -> ``行く``) or a bigram may itself analyse into something else.
    Replacing every term by its fixed point guarantees that analysing stored terms
    (or a query made of them) gives the same terms back.
    """
    return _settle(term, 0)


def tokens(text: str) -> list[Token]:
    """Search terms of ``text`` with their spans in the original string.

    NFKC + case folding, English split on non-alphanumerics with light stemming,
    Japanese segmented by Sudachi (normalised forms, so ネコ and 猫 agree), bigrams
    for unknown Han/kana words; punctuation, particles and auxiliaries are dropped.
    Never raises for any ``str``.
    """
    out: list[Token] = []
    append = out.append
    offset = 0
    for line in text.splitlines(keepends=True):
        norm, starts, ends = _normalize_map(line)
        for term, start, end, word_start, word_end in _split(norm):
            word: tuple[int, int] | None = None
            if starts is None or ends is None:
                start, end = offset + start, offset + end
                if word_start >= 0:
                    word = (offset + word_start, offset + word_end)
            else:
                start, end = offset + starts[start], offset + ends[end - 1]
                if word_start >= 0:
                    word = (offset + starts[word_start], offset + ends[word_end - 1])
            if term.isascii():
                append(Token(term, start, end))
            else:
                for settled in _stable(term):
                    append(Token(settled, start, end, word))
        offset += len(line)
    return out


def terms(text: str) -> list[str]:
    """The terms of :func:`tokens`, in order, duplicates kept."""
    return [token.term for token in tokens(text)]


def index_text(text: str) -> str:
    """Space-joined terms: the form stored in FTS5.

    Terms contain only characters unicode61 treats as token characters, so FTS5
    splits this string back into exactly these terms.
    """
    return " ".join(terms(text))
