"""kbseek's ONNX Runtime engine for multilingual-e5-small against its NumPy engine.

The graph is checked twice: unquantised on the tiny random network of ``test_numpy_e5`` (it must
compute what the NumPy engine computes, to float tolerance, however texts are windowed and
batched), and int8 on the real model (``slow``: close to the float vectors, the cached file reused,
a broken one rebuilt). Skipped where ONNX Runtime or ``onnx`` is not installed.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kbseek.embed import e5_onnx
from kbseek.embed.e5 import E5Embedder
from kbseek.embed.e5_onnx import OnnxE5
from kbseek.embed.e5_weights import E5Weights, ModelFile
from kbseek.embed.encoder import NumpyE5
from kbseek.errors import EmbedderUnavailable
from tests.embed.test_numpy_e5 import TOY_TEXTS, VARIED, _model_file, _toy_model

pytest.importorskip("onnxruntime", reason="the e5 extra (ONNX Runtime) is not installed")
pytest.importorskip("onnx", reason="the e5 extra (onnx) is not installed")


def test_onnx_runtime_imports_in_a_process_that_imported_usearch_first() -> None:
    """ONNX Runtime 1.23 and later crash at import after usearch (every kbseek process loads it
    first); the pin in pyproject.toml moves only with this test passing (docs/decisions/0023)."""
    code = "import kbseek, usearch.index; import onnxruntime, onnx; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])


def test_onnx_runtime_accepts_an_exported_graph_in_a_process_that_imported_kbseek_first(
    tmp_path: Path,
) -> None:
    """Scalar constants of two types (int64 axes, a float epsilon), as torch.onnx.export writes in
    every BERT and XLM-R graph. With usearch's static libstdc++ bound first, ONNX Runtime's
    ConstantSharing printed every constant's key as the same empty number and merged them across
    types ("Type 'tensor(float)' of input parameter (epsilon) of operator (Unsqueeze) ... is
    invalid"); ``kbseek.search.ann`` now shares the system libstdc++ before usearch loads."""
    from onnx import TensorProto, helper, numpy_helper, save

    graph = helper.make_graph(
        [
            helper.make_node("Unsqueeze", ["x", "axis_last"], ["x3"]),
            helper.make_node("ReduceSum", ["x3", "axis_one"], ["summed"], keepdims=0),
            helper.make_node("Add", ["summed", "epsilon"], ["y"]),
        ],
        "exported_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1])],
        [
            numpy_helper.from_array(np.array([-1], dtype=np.int64), "axis_last"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axis_one"),
            numpy_helper.from_array(np.array([1e-9], dtype=np.float32), "epsilon"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    save(model, str(tmp_path / "model.onnx"))
    code = (
        "import sys, kbseek, onnxruntime as ort; "
        "ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider']); print('ok')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "model.onnx")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])


def test_making_the_embedder_does_not_import_onnx_runtime() -> None:
    """The import takes about 0.6 s, and an embedder is made when a server starts, before any load."""
    code = (
        "import sys; from kbseek.embed import EmbedderSpec, make_embedder; "
        "e = make_embedder(EmbedderSpec(provider='use+e5')); "
        "print('+e5-ort' in e.model_id, 'onnxruntime' in sys.modules, 'onnx' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "False", "False"], done.stderr[-2000:]


def test_an_onnx_runtime_that_does_not_import_is_refused_at_load_with_the_numpy_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _model_file()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # installed, but its import fails
    with pytest.raises(EmbedderUnavailable, match='set \\[embed\\] engine = "numpy"'):
        OnnxE5.load_onnx()


def _toy_pair(*, quantise: bool) -> tuple[NumpyE5, OnnxE5]:
    reference = _toy_model(budget=40)
    return reference, OnnxE5.from_weights(reference._w, reference.tokenizer, quantise=quantise)


def test_the_float_graph_computes_what_the_numpy_engine_computes() -> None:
    reference, onnx_engine = _toy_pair(quantise=False)
    for query in (False, True):
        np.testing.assert_allclose(
            onnx_engine.embed(TOY_TEXTS, query=query), reference.embed(TOY_TEXTS, query=query), atol=1e-4
        )
    assert onnx_engine.passages([]).shape == (0, 64)


def test_the_int8_graph_stays_close_to_the_float_vectors() -> None:
    reference, onnx_engine = _toy_pair(quantise=True)
    cos = np.einsum("ij,ij->i", onnx_engine.passages(TOY_TEXTS), reference.passages(TOY_TEXTS))
    assert cos.min() > 0.97, cos.round(4).tolist()


def test_the_engine_decides_the_model_id_so_an_index_is_never_mixed(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = E5Embedder(model="original", threads=None, batch_size=8)
    plain = E5Embedder(model="original", threads=None, batch_size=8, engine="numpy")
    assert fast.engine == "onnx" and fast.model_id.startswith("e5-ort") and "-int8:" in fast.model_id
    assert plain.engine == "numpy" and plain.model_id.startswith("e5-numpy:")
    monkeypatch.setattr(e5_onnx, "available", lambda: False)  # ONNX Runtime missing: the NumPy engine
    fallback = E5Embedder(model="original", threads=None, batch_size=8)
    assert fallback.engine == "numpy" and fallback.model_id == plain.model_id
    with pytest.raises(ValueError, match="choose 'onnx' or 'numpy'"):
        E5Embedder(model="original", threads=None, batch_size=8, engine="gpu")


# ---------------------------------------------------------------------------- slow: the real network


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _model_file()
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def engines(cache: Path) -> tuple[NumpyE5, OnnxE5]:
    return NumpyE5.load(), OnnxE5.load_onnx(cache=cache)


@pytest.mark.slow
@pytest.mark.parametrize("query", [False, True], ids=["passage", "query"])
def test_int8_vectors_agree_with_the_numpy_engine(engines: tuple[NumpyE5, OnnxE5], query: bool) -> None:
    reference, onnx_engine = engines
    cos = np.einsum("ij,ij->i", onnx_engine.embed(VARIED, query=query), reference.embed(VARIED, query=query))
    assert cos.min() >= 0.99, dict(zip(VARIED, cos.round(5).tolist(), strict=True))
    ranked = onnx_engine.queries(["database backups"])[0] @ onnx_engine.passages(VARIED[2:4]).T
    assert ranked[0] > ranked[1]


@pytest.mark.slow
def test_the_graph_is_built_once_and_a_broken_file_is_built_again(
    engines: tuple[NumpyE5, OnnxE5],
    cache: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (built,) = cache.glob("e5-int8-*.onnx")
    stamp = built.stat().st_mtime_ns
    dequantised: list[bool] = []
    read = ModelFile.weights

    def counted(self: ModelFile, *, layers: bool = True) -> E5Weights:
        dequantised.append(layers)
        return read(self, layers=layers)

    monkeypatch.setattr(ModelFile, "weights", counted)
    OnnxE5.load_onnx(cache=cache)
    assert built.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert dequantised == [False]  # and the float32 layers, which only a build needs, never made
    built.write_bytes(b"not a model")
    with caplog.at_level(logging.WARNING, logger="kbseek.embed.e5_onnx"):
        again = OnnxE5.load_onnx(cache=cache)
    assert dequantised == [False, True, False]
    assert "does not load" in caplog.text and built.stat().st_size > 1_000_000
    np.testing.assert_allclose(again.passages(VARIED[:3]), engines[1].passages(VARIED[:3]), atol=1e-6)
    assert [p.name for p in cache.iterdir()] == [built.name]  # no temporary file left behind


@pytest.mark.slow
def test_a_cache_folder_that_cannot_be_made_still_gives_a_working_engine(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kbseek.embed.e5_onnx"):
        engine = OnnxE5.load_onnx(cache=blocked / "models")
    assert "rebuilt at each start" in caplog.text
    assert engine.passages(["kbseek"]).shape == (1, 384)
