"""The ``http`` rerank provider against a real (fake) rerank server: both APIs, and every way it fails."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from kbseek.rerank import RerankFailed, RerankSpec, RerankStage
from kbseek.rerank.http import HttpReranker
from tests.rerank_server import FAVOURITE, RerankServer, rerank_server, word_score

TEXTS = ["the cat sat", f"a {FAVOURITE} dog", "", "cat and dog"]


@pytest.fixture
def server() -> Iterator[RerankServer]:
    with rerank_server() as s:
        yield s


def _reranker(url: str, **spec: object) -> HttpReranker:
    return HttpReranker(RerankSpec(provider="http", url=url, **spec))  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["", "/", "/rerank"])
def test_text_embeddings_inference(server: RerankServer, path: str) -> None:
    scores = _reranker(server.base + path).score("cat dog", TEXTS, timeout_s=5)
    assert scores == [word_score("cat dog", t or " ") for t in TEXTS]  # in input order, not the server's
    seen = server.requests[-1]
    assert seen.path == "/rerank"
    assert seen.body == {
        "query": "cat dog",
        "texts": [t or " " for t in TEXTS],
        "raw_scores": False,
        "truncate": True,
    }


@pytest.mark.parametrize("path", ["/v1", "/v1/rerank"])
def test_the_jina_style_api(server: RerankServer, path: str) -> None:
    scores = _reranker(server.base + path, model="bge-reranker").score("cat dog", TEXTS, timeout_s=5)
    assert scores == [word_score("cat dog", t or " ") for t in TEXTS]
    seen = server.requests[-1]
    assert seen.path == "/v1/rerank"
    assert seen.body == {
        "model": "bge-reranker",
        "query": "cat dog",
        "documents": [t or " " for t in TEXTS],
        "top_n": 4,
    }


def test_the_api_setting_outranks_the_url(server: RerankServer) -> None:
    _reranker(server.base, api="jina").score("q", ["a"], timeout_s=5)
    assert server.requests[-1].path == "/v1/rerank" and "model" not in server.requests[-1].body


def test_the_api_key_is_read_from_the_variable_the_config_names(
    server: RerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    reranker = _reranker(server.base, api_key_env="KBSEEK_TEST_RERANK_KEY")
    with pytest.raises(RerankFailed, match=r"environment variable KBSEEK_TEST_RERANK_KEY .* is not set"):
        reranker.score("q", ["a"], timeout_s=5)
    monkeypatch.setenv("KBSEEK_TEST_RERANK_KEY", "sekret")
    reranker.score("q", ["a"], timeout_s=5)
    assert server.requests[-1].headers["Authorization"] == "Bearer sekret"


def test_an_error_status_names_the_server_and_its_message(server: RerankServer) -> None:
    server.status = 500
    with pytest.raises(RerankFailed, match=r"rerank server at http://127\.0\.0\.1:\d+/rerank answered HTTP 500 "
                       r"Internal Server Error: the model crashed; check the rerank server"):  # fmt: skip
        _reranker(server.base).score("q", ["a"], timeout_s=5)


def test_a_wrong_route_says_which_urls_to_use(server: RerankServer) -> None:
    with pytest.raises(RerankFailed, match=r"HTTP 404.*check the rerank url and api"):
        _reranker(server.base + "/other/rerank").score("q", ["a"], timeout_s=5)


def test_malformed_json_is_a_clear_failure(server: RerankServer) -> None:
    server.malformed = True
    with pytest.raises(RerankFailed, match=r"malformed response from the rerank server .*: not JSON"):
        _reranker(server.base + "/v1").score("q", ["a"], timeout_s=5)


def test_an_answer_of_the_other_api_is_malformed(server: RerankServer) -> None:
    reranker = _reranker(server.base + "/v1/rerank", api="tei")  # TEI's client at a Jina-style route
    with pytest.raises(
        RerankFailed, match=r"a JSON object instead of a list.*/rerank of Text Embeddings Inference"
    ):
        reranker.score("q", ["a"], timeout_s=5)


def test_scores_missing_for_some_texts_are_malformed(server: RerankServer) -> None:
    reranker = _reranker(server.base + "/v1")
    original = server._answer
    server._answer = lambda path, body: original(path, {**body, "top_n": 1})  # type: ignore[method-assign]
    with pytest.raises(RerankFailed, match=r"1 score for 2 texts"):
        reranker.score("q", ["a", "b"], timeout_s=5)


def test_a_slow_server_times_out_with_the_setting_to_raise(server: RerankServer) -> None:
    server.delay_s = 5.0
    with pytest.raises(
        RerankFailed, match=r"did not answer within 0\.2 s; check the server or raise rerank budget_s"
    ):
        _reranker(server.base).score("q", ["a"], timeout_s=0.2)


def test_a_server_that_is_down_is_a_refused_connection() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free once closed: nothing listens there
    with pytest.raises(RerankFailed, match=r"could not connect to .*: connection refused; start the server"):
        _reranker(f"http://127.0.0.1:{port}").score("q", ["a"], timeout_s=2)


@pytest.mark.parametrize("trouble", ["slow", "500", "malformed"])
def test_through_the_stage_any_trouble_is_a_note(server: RerankServer, trouble: str) -> None:
    server.delay_s = 5.0 if trouble == "slow" else 0.0
    server.status = 500 if trouble == "500" else 200
    server.malformed = trouble == "malformed"
    outcome = RerankStage.from_spec(RerankSpec(provider="http", url=server.base, budget_s=0.3)).score(
        "q", ["a", "b"]
    )
    assert outcome.scores is None and outcome.note is not None
    assert outcome.note.startswith("not reranked: ") and outcome.note.endswith(
        "the hits are in the fused order"
    )
    expected = {"slow": "did not answer within", "500": "HTTP 500", "malformed": "not JSON"}[trouble]
    assert expected in outcome.note
