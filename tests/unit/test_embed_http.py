"""The HTTP embedder against a real OpenAI-shaped server on the loopback interface."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from kbseek.embed import EmbedderSpec, make_embedder
from kbseek.embed.http import PROBE_TEXT, HttpEmbedder
from kbseek.errors import EmbedderUnavailable

DIM = 16


def hashed_vector(text: str, dim: int = DIM) -> list[float]:
    """Bag of hashed words, deliberately not normalised so the client must do it."""
    vector = [0.0] * dim
    for word in text.lower().split() or [""]:
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        vector[digest[0] % dim] += 1.0 + digest[1] / 255
    return vector


@dataclass
class Behaviour:
    """What the fake server does next; tests change it between calls."""

    status: int = 200
    body: bytes | None = None  # sent verbatim instead of embeddings when set
    dim: int = DIM
    failures_before_success: int = 0
    failure_status: int = 503
    requests: list[dict[str, Any]] = field(default_factory=list)


class FakeEmbeddingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), EmbeddingHandler)
        self.behaviour = Behaviour()

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


class EmbeddingHandler(BaseHTTPRequestHandler):
    server: FakeEmbeddingServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        behaviour = self.server.behaviour
        length = int(self.headers.get("Content-Length", "0"))
        payload = json.loads(self.rfile.read(length))
        behaviour.requests.append({"path": self.path, "headers": dict(self.headers), "json": payload})
        if behaviour.failures_before_success > 0:
            behaviour.failures_before_success -= 1
            self._send(behaviour.failure_status, b'{"error": {"message": "busy"}}', {"Retry-After": "0"})
            return
        if behaviour.body is not None:
            self._send(behaviour.status, behaviour.body)
            return
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_vector(text, behaviour.dim)}
            for i, text in enumerate(payload["input"])
        ]
        data.reverse()  # the client must order by "index", not by position
        body = {"object": "list", "data": data, "model": payload["model"]}
        self._send(behaviour.status, json.dumps(body).encode())

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEmbeddingServer]:
    # A proxy configured in the environment must not intercept loopback traffic.
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    srv = FakeEmbeddingServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def embedder_for(server: FakeEmbeddingServer, **overrides: Any) -> HttpEmbedder:
    options: dict[str, Any] = {"provider": "http", "url": server.base_url, "model": "hash-16"}
    options.update(overrides)
    embedder = make_embedder(EmbedderSpec(**options))
    assert isinstance(embedder, HttpEmbedder)
    return embedder


def unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)


def test_loading_learns_the_dimension_from_a_probe(server: FakeEmbeddingServer) -> None:
    embedder = embedder_for(server)
    assert not embedder.loaded
    embedder.load()
    embedder.load()
    assert embedder.dim == DIM
    assert [r["json"]["input"] for r in server.behaviour.requests] == [[PROBE_TEXT]]
    assert server.behaviour.requests[0]["path"] == "/v1/embeddings"
    assert server.behaviour.requests[0]["json"]["model"] == "hash-16"


def test_documents_and_queries_come_back_normalised_float32_in_input_order(
    server: FakeEmbeddingServer,
) -> None:
    embedder = embedder_for(server)
    texts = ["roll back the deploy", "feed the cat", "ロールバック 手順"]
    vectors = embedder.embed_documents(texts)
    assert vectors.shape == (3, DIM) and vectors.dtype == np.float32
    assert np.allclose(vectors, np.stack([unit(hashed_vector(t)) for t in texts]), atol=1e-6)
    query = embedder.embed_query("roll back")
    assert query.shape == (DIM,) and query.dtype == np.float32
    assert np.isclose(np.linalg.norm(query), 1.0, atol=1e-6)


def test_documents_are_sent_in_batches_of_the_configured_size(server: FakeEmbeddingServer) -> None:
    embedder = embedder_for(server, batch_size=2)
    texts = [f"text number {i}" for i in range(5)]
    vectors = embedder.embed_documents(texts)
    sent = [r["json"]["input"] for r in server.behaviour.requests[1:]]  # after the probe
    assert sent == [texts[0:2], texts[2:4], texts[4:5]]
    assert np.allclose(vectors[4], unit(hashed_vector(texts[4])), atol=1e-6)


def test_an_empty_text_is_sent_as_a_space_because_openai_refuses_empty_input(
    server: FakeEmbeddingServer,
) -> None:
    embedder_for(server).embed_documents([""])
    assert server.behaviour.requests[-1]["json"]["input"] == [" "]


def test_the_api_key_from_the_named_variable_is_sent_as_a_bearer_token(
    server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-test-123")
    embedder_for(server, api_key_env="TEST_EMBED_KEY").load()
    assert server.behaviour.requests[-1]["headers"]["Authorization"] == "Bearer sk-test-123"


def test_no_authorization_header_is_sent_without_a_key(server: FakeEmbeddingServer) -> None:
    embedder_for(server).load()
    assert "Authorization" not in server.behaviour.requests[-1]["headers"]


def test_an_unset_key_variable_is_named_in_the_error(
    server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEST_EMBED_KEY", raising=False)
    with pytest.raises(EmbedderUnavailable, match="TEST_EMBED_KEY"):
        embedder_for(server, api_key_env="TEST_EMBED_KEY").load()
    assert server.behaviour.requests == []


def test_a_key_with_a_line_break_is_refused_before_anything_is_sent(
    server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-one\nsk-two")
    with pytest.raises(EmbedderUnavailable, match="cannot be sent in an HTTP header"):
        embedder_for(server, api_key_env="TEST_EMBED_KEY").load()
    assert server.behaviour.requests == []


def test_credentials_in_the_url_become_basic_auth_and_stay_out_of_the_model_id(
    server: FakeEmbeddingServer,
) -> None:
    url = server.base_url.replace("http://", "http://alice:s%40cret@")
    embedder = embedder_for(server, url=url)
    embedder.load()
    basic = "Basic YWxpY2U6c0BjcmV0"  # base64 of "alice:s@cret"
    assert server.behaviour.requests[-1]["headers"]["Authorization"] == basic
    assert "alice" not in embedder.model_id and "cret" not in embedder.model_id
    assert embedder.model_id == f"http:hash-16@{server.base_url}"


def test_an_http_500_reports_the_status_and_the_servers_message_truncated(
    server: FakeEmbeddingServer,
) -> None:
    detail = "model exploded " + "x" * 1000
    server.behaviour.status = 500
    server.behaviour.body = json.dumps({"error": {"message": detail, "type": "server_error"}}).encode()
    with pytest.raises(EmbedderUnavailable) as caught:
        embedder_for(server).load()
    message = str(caught.value)
    assert "HTTP 500" in message and "model exploded" in message and server.base_url in message
    assert len(message) < 600


def test_an_unauthorised_answer_points_at_the_api_key_setting(server: FakeEmbeddingServer) -> None:
    server.behaviour.status = 401
    server.behaviour.body = b'{"error": {"message": "Incorrect API key provided"}}'
    with pytest.raises(EmbedderUnavailable, match=r"HTTP 401.*Incorrect API key.*api_key_env"):
        embedder_for(server).load()


def test_a_busy_server_is_retried_until_it_answers(server: FakeEmbeddingServer) -> None:
    server.behaviour.failures_before_success = 2
    embedder = embedder_for(server)
    embedder.load()
    assert embedder.dim == DIM
    assert len(server.behaviour.requests) == 3


def test_a_server_that_stays_busy_is_reported_after_the_retries(server: FakeEmbeddingServer) -> None:
    server.behaviour.failures_before_success = 10
    with pytest.raises(EmbedderUnavailable, match=r"HTTP 503.*busy"):
        embedder_for(server).load()
    assert len(server.behaviour.requests) == 3


def test_a_refused_connection_says_so_and_names_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with socket.socket() as probe:  # find a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = EmbedderSpec(provider="http", url=f"http://127.0.0.1:{port}/v1", model="m")
    with pytest.raises(EmbedderUnavailable, match=r"connection refused.*embedding url") as caught:
        make_embedder(spec).load()
    assert f"127.0.0.1:{port}" in str(caught.value)


def test_a_body_that_is_not_json_is_reported_as_malformed(server: FakeEmbeddingServer) -> None:
    server.behaviour.body = b"<html>gateway</html>"
    with pytest.raises(EmbedderUnavailable, match=r"malformed response.*not JSON.*gateway"):
        embedder_for(server).load()


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"object": "list"}, "no 'data' list"),
        ({"data": []}, "0 embeddings for 1 input"),
        ({"data": [{"index": 0}]}, "has no 'embedding'"),
        ({"data": [{"index": 0, "embedding": ["a", "b"]}]}, "not a list of numbers"),
        ({"data": [{"index": 3, "embedding": [1.0]}]}, "not 0..n-1"),
        ({"error": {"message": "quota exceeded"}}, "quota exceeded"),
    ],
)
def test_json_of_the_wrong_shape_is_reported_as_malformed(
    server: FakeEmbeddingServer, body: dict, fragment: str
) -> None:
    server.behaviour.body = json.dumps(body).encode()
    with pytest.raises(EmbedderUnavailable, match="malformed response") as caught:
        embedder_for(server).load()
    assert fragment in str(caught.value)


def test_a_dimension_change_between_batches_is_refused(server: FakeEmbeddingServer) -> None:
    embedder = embedder_for(server)
    embedder.load()
    server.behaviour.dim = DIM * 2
    with pytest.raises(EmbedderUnavailable, match=rf"{DIM * 2}-dimensional.*but {DIM}"):
        embedder.embed_documents(["a", "b"])


def test_a_slow_server_times_out_with_a_message_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    listener = socket.socket()  # accepts the connection but never answers
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        port = listener.getsockname()[1]
        spec = EmbedderSpec(provider="http", url=f"http://127.0.0.1:{port}", model="m", timeout_s=0.3)
        with pytest.raises(EmbedderUnavailable, match=r"did not answer within 0.3 s.*timeout_s"):
            make_embedder(spec).load()
    finally:
        listener.close()


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        ("http://h:8000", "http://h:8000/v1/embeddings"),
        ("http://h:8000/", "http://h:8000/v1/embeddings"),
        ("http://h:8000/v1/", "http://h:8000/v1/embeddings"),
        ("http://h:8000/v1/embeddings", "http://h:8000/v1/embeddings"),
        ("https://h/openai/x?api-version=1", "https://h/openai/x/embeddings?api-version=1"),
    ],
)
def test_the_request_url_is_derived_from_the_base_url(url: str, endpoint: str) -> None:
    embedder = make_embedder(EmbedderSpec(provider="http", url=url, model="m"))
    assert isinstance(embedder, HttpEmbedder)
    assert embedder.endpoint == endpoint
