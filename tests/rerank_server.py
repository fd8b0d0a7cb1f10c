"""A real rerank HTTP server for tests, and the deterministic scorer it shares with an in-process fake.

:class:`RerankServer` is a stdlib ``http.server`` on a free port of 127.0.0.1, in a thread, that
answers both rerank APIs kbseek's ``http`` provider speaks: Text Embeddings Inference's
``POST /rerank`` (a JSON list of ``{"index", "score"}``) and the Jina/Cohere-style
``POST /v1/rerank`` (``{"results": [{"index", "relevance_score"}]}``). A test can make it slow
(:attr:`RerankServer.delay_s`), fail (:attr:`RerankServer.status`) or answer malformed JSON
(:attr:`RerankServer.malformed`), and reads what it was sent in :attr:`RerankServer.requests`.

:func:`word_score` is its scoring: deterministic, and easy to steer from a test (a text scores by
how many of the query's words it holds, with a bonus per :data:`FAVOURITE` word), so a test can
predict the reranked order. :class:`FakeReranker` scores with it in process, for tests of the
stage and the search that need no socket; it is registered through ``register_reranker`` like
any provider.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kbseek.rerank import RERANKERS, RerankFailed, RerankSpec, register_reranker

FAVOURITE = "favourite"
"""A text holding this word scores 10 more per occurrence: how a test moves a chunk to the top."""

_WORD = re.compile(r"\w+")


def word_score(query: str, text: str) -> float:
    """The share of the query's distinct words the text holds, plus 10 per :data:`FAVOURITE`."""
    words = set(_WORD.findall(query.lower()))
    held = set(_WORD.findall(text.lower()))
    share = len(words & held) / len(words) if words else 0.0
    return share + 10.0 * text.lower().count(FAVOURITE)


@dataclass
class Seen:
    """One request the server received."""

    path: str
    body: Any
    headers: dict[str, str]


class RerankServer:
    """The fake server; use it through :func:`rerank_server`."""

    def __init__(self) -> None:
        self.delay_s = 0.0
        """Seconds to wait before answering (released at once when the server closes)."""
        self.status = 200
        """An error status to answer with instead of scores (with a TEI-style error body)."""
        self.malformed = False
        """Answer with a body that is not JSON."""
        self.scorer: Callable[[str, str], float] = word_score
        self.requests: list[Seen] = []
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-rerank", daemon=True
        )

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``, no path."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _answer(self, path: str, body: Any) -> tuple[int, bytes]:
        if self._closing.wait(self.delay_s):
            return 503, b'{"error": "closing"}'
        if self.status != 200:
            return self.status, json.dumps({"error": "the model crashed", "error_type": "Backend"}).encode()
        if self.malformed:
            return 200, b'{"results": [{"index": 0, "relevance_score": 0.5'
        # Either body is read on either route, so that a client of the other API gets the answer
        # shape of this route (as a real server of this API would give it), not an error.
        texts = body.get("texts", body.get("documents", []))
        if path == "/rerank":
            scored = [{"index": i, "score": self.scorer(body["query"], t)} for i, t in enumerate(texts)]
            scored.sort(key=lambda s: -s["score"])  # TEI answers best first
            return 200, json.dumps(scored).encode()
        if path == "/v1/rerank":
            results = [
                {"index": i, "relevance_score": self.scorer(body["query"], d)} for i, d in enumerate(texts)
            ]
            results.sort(key=lambda r: -r["relevance_score"])
            top = results[: body.get("top_n", len(results))]
            return 200, json.dumps({"model": body.get("model"), "results": top}).encode()
        return 404, b'{"error": "no such route"}'

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw.decode("utf-8"))
                server.requests.append(Seen(self.path, body, dict(self.headers.items())))
                status, answer = server._answer(self.path, body)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a test of the budget)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output clean

        return Handler


@contextmanager
def rerank_server() -> Iterator[RerankServer]:
    """A started :class:`RerankServer`, closed after the block."""
    server = RerankServer()
    server.start()
    try:
        yield server
    finally:
        server.close()


@dataclass
class FakeReranker:
    """A :class:`~kbseek.rerank.base.Reranker` scoring with :func:`word_score` in process.

    ``fail`` makes each call raise :class:`RerankFailed` with that message; ``wait`` is an event
    each call waits for first (a slow reranker a test releases); ``calls`` records what was asked.
    """

    fail: str | None = None
    wait: threading.Event | None = None
    calls: list[tuple[str, list[str]]] = field(default_factory=list)
    loads: int = 0

    @property
    def name(self) -> str:
        return "fake reranker"

    def load(self) -> None:
        self.loads += 1

    def score(self, query: str, texts: Sequence[str], *, timeout_s: float) -> list[float]:
        self.calls.append((query, list(texts)))
        if self.wait is not None:
            self.wait.wait(10)
        if self.fail is not None:
            raise RerankFailed(self.fail)
        return [word_score(query, t) for t in texts]


@contextmanager
def fake_reranker(name: str = "fake") -> Iterator[list[FakeReranker]]:
    """Register ``name`` as a rerank provider building a fresh :class:`FakeReranker`, for the block.

    Yields the rerankers made, in order, so a test can steer or inspect them.
    """
    made: list[FakeReranker] = []

    def build(spec: RerankSpec) -> FakeReranker:
        made.append(FakeReranker())
        return made[-1]

    register_reranker(name, build)
    try:
        yield made
    finally:
        RERANKERS.unregister(name)
