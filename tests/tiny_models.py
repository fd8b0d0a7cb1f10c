"""Tiny but real ONNX models, generated on the spot, for tests that must not touch the network.

A test of the model path (loading a folder, pulling from a Hub, checking what was downloaded,
ranking with a cross-encoder) needs a model that ONNX Runtime really runs and a tokenizer that
``tokenizers`` really loads, but not one worth gigabytes or a download. The models here are built
with the ``onnx`` package's helpers from seeded random weights: an embedding table (Gather), one
MatMul and a Tanh. They mean nothing, but they are deterministic, have the input and output names
and shapes of a BERT-shaped encoder, and load through the same code as a real one (fastembed's local
folders, a Hub snapshot).

- :func:`write_encoder` writes an encoder folder: inputs ``input_ids``, ``attention_mask``,
  ``token_type_ids`` (int64 ``[batch, seq]``), output ``last_hidden_state`` (float32
  ``[batch, seq, dim]``).
- :func:`write_cross_encoder` writes a cross-encoder folder: the same inputs, output ``logits``
  (float32 ``[batch, 1]``), the masked mean of the hidden states projected to one number.

Each folder holds ``model.onnx``, ``tokenizer.json`` (WordPiece, a few hundred words, ``[CLS]``,
``[SEP]``, ``[PAD]``, ``[UNK]``, ``[MASK]``, the BERT normaliser and pre-tokenizer and a
post-processor for single texts and pairs), and the config files fastembed reads beside them
(``config.json``, ``special_tokens_map.json``, ``tokenizer_config.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
"""In this order, so that ``[PAD]`` is 0, as BERT's vocabularies have it."""

#: Words the vocabulary knows, chosen so that the example knowledge base and the tests' sentences
#: are mostly in it; anything else is cut into characters (``##`` pieces) or becomes ``[UNK]``.
_WORD_TEXT = """
the a an and or of to in on for with by from at as is are was were be been being it its this that
these those there here what which who whom how why when where not no yes all any some each every
one two three four five first second last new old good bad big small long short high low more most
less least many much few other same own only also very just than then so such can could will would
should may might must do does did done have has had make made get got use used using run runs
search index note notes file files folder folders text texts word words query queries document
documents page pages model models embed embedding embeddings vector vectors server client tool tools
agent agents knowledge base markdown heading headings section sections chunk chunks link links
config setting settings install command commands python package packages test tests data cache
download pull hub offline online network local remote path paths name names key keys value values
time date day week month year today meeting meetings project projects plan plans team teams work
cat cats dog dogs bird birds fish animal animals pet pets food eat eats water drink tea coffee
rain sun snow weather cold warm hot city cities country house home room door window car train
book books read reads write writes writing reading language languages english japanese translation
learn learning teach school student students question questions answer answers help
error errors bug bugs fix fixes issue issues release version versions build builds deploy
database sql table tables row rows column columns store stores sqlite postgres lock locks
http https web api json yaml toml port host url urls request requests response responses
fast slow speed memory disk size bytes small large tiny
"""
WORDS: tuple[str, ...] = tuple(_WORD_TEXT.split())

ENCODER_DIM = 32
"""The width of the tiny encoder's vectors."""


def tokenizer(max_length: int = 128) -> Tokenizer:
    """A BERT-style WordPiece tokenizer over :data:`WORDS`, with truncation at ``max_length``."""
    vocab: dict[str, int] = {}
    for token in SPECIAL_TOKENS:
        vocab[token] = len(vocab)
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    # Single letters and digits, and their continuation pieces, so that an unknown word is spelled
    # out rather than lost whole: retrieval over the tiny model then still depends on the text.
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789":
        vocab.setdefault(ch, len(vocab))
        vocab.setdefault(f"##{ch}", len(vocab))
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    tok.enable_truncation(max_length=max_length)
    tok.enable_padding(pad_id=vocab["[PAD]"], pad_token="[PAD]")
    return tok


def _inputs() -> list[onnx.ValueInfoProto]:
    return [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]


def _hidden_nodes(
    vocab_size: int, dim: int, seed: int
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes computing ``hidden`` = tanh((word + token type embeddings) @ W), ``[batch, seq, dim]``."""
    rng = np.random.default_rng(seed)
    initializers = [
        numpy_helper.from_array(rng.normal(0, 1, (vocab_size, dim)).astype(np.float32), "word_embeddings"),
        numpy_helper.from_array(rng.normal(0, 0.1, (2, dim)).astype(np.float32), "type_embeddings"),
        numpy_helper.from_array((rng.normal(0, 1, (dim, dim)) / np.sqrt(dim)).astype(np.float32), "dense"),
    ]
    nodes = [
        helper.make_node("Gather", ["word_embeddings", "input_ids"], ["words"], axis=0),
        helper.make_node("Gather", ["type_embeddings", "token_type_ids"], ["types"], axis=0),
        helper.make_node("Add", ["words", "types"], ["embedded"]),
        helper.make_node("MatMul", ["embedded", "dense"], ["projected"]),
        helper.make_node("Tanh", ["projected"], ["hidden"]),
    ]
    return nodes, initializers


def encoder_model(vocab_size: int, dim: int = ENCODER_DIM, seed: int = 0) -> onnx.ModelProto:
    """The tiny encoder's graph: ``last_hidden_state`` = tanh(embeddings @ W).

    ``attention_mask`` is an input, as in BERT, but the graph leaves masking to the pooling that
    reads its output (fastembed's mean pooling uses the mask), so it is passed through an Identity
    to keep it a used input.
    """
    nodes, initializers = _hidden_nodes(vocab_size, dim, seed)
    nodes.append(helper.make_node("Identity", ["hidden"], ["last_hidden_state"]))
    graph = helper.make_graph(
        nodes,
        "tiny_encoder",
        _inputs(),
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", dim])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def cross_encoder_model(vocab_size: int, dim: int = ENCODER_DIM, seed: int = 1) -> onnx.ModelProto:
    """The tiny cross-encoder's graph: ``logits`` = (masked mean of the hidden states) @ v, ``[batch, 1]``."""
    nodes, initializers = _hidden_nodes(vocab_size, dim, seed)
    rng = np.random.default_rng(seed + 1000)
    initializers += [
        numpy_helper.from_array(rng.normal(0, 1, (dim, 1)).astype(np.float32), "classifier"),
        numpy_helper.from_array(np.array([1e-9], dtype=np.float32), "epsilon"),
    ]
    # Opset 12, where Unsqueeze and ReduceSum take their axes as attributes: with the axes as int64
    # initializers (opset 13 and later), ONNX Runtime 1.22 refused the graph ("Add bound to different
    # types") in a process that had imported kbseek first, though it loaded alone.
    nodes += [
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f"], ["mask3"], axes=[-1]),  # [batch, seq, 1]
        helper.make_node("Mul", ["hidden", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked"], ["summed"], axes=[1], keepdims=0),
        helper.make_node("ReduceSum", ["mask_f"], ["count"], axes=[1], keepdims=1),
        helper.make_node("Add", ["count", "epsilon"], ["count_safe"]),
        helper.make_node("Div", ["summed", "count_safe"], ["pooled"]),  # [batch, dim]
        helper.make_node("MatMul", ["pooled", "classifier"], ["logits"]),  # [batch, 1]
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        _inputs(),
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])


def _write_model(model: onnx.ModelProto, path: Path) -> None:
    # IR 8 loads in every ONNX Runtime kbseek supports.
    model.producer_name = "kbseek-tests"
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def _write_configs(
    folder: Path, tok: Tokenizer, *, architecture: str, max_length: int, extra: dict[str, object]
) -> None:
    """``tokenizer.json`` and the JSON files a loader reads beside a model (fastembed, transformers)."""
    tok.save(str(folder / "tokenizer.json"))
    config: dict[str, object] = {
        "architectures": [architecture],
        "model_type": "bert",
        "vocab_size": tok.get_vocab_size(),
        "hidden_size": ENCODER_DIM,
        "max_position_embeddings": max_length,
        "pad_token_id": 0,
        **extra,
    }
    special = {
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "mask_token": "[MASK]",
    }
    tokenizer_config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": True,
        "model_max_length": max_length,
        **special,
    }
    for name, data in (
        ("config.json", config),
        ("special_tokens_map.json", special),
        ("tokenizer_config.json", tokenizer_config),
    ):
        (folder / name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def write_encoder(folder: Path, *, dim: int = ENCODER_DIM, seed: int = 0, max_length: int = 128) -> Path:
    """Write the tiny encoder and its tokenizer and config files into ``folder`` (created); return it."""
    folder.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(max_length)
    _write_model(encoder_model(tok.get_vocab_size(), dim, seed), folder / "model.onnx")
    _write_configs(folder, tok, architecture="BertModel", max_length=max_length, extra={"hidden_size": dim})
    return folder


def write_cross_encoder(folder: Path, *, seed: int = 1, max_length: int = 128) -> Path:
    """Write the tiny cross-encoder and its tokenizer and config files into ``folder``; return it."""
    folder.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(max_length)
    _write_model(cross_encoder_model(tok.get_vocab_size(), ENCODER_DIM, seed), folder / "model.onnx")
    _write_configs(
        folder,
        tok,
        architecture="BertForSequenceClassification",
        max_length=max_length,
        extra={"num_labels": 1, "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}},
    )
    return folder
