""":class:`~kbseek.rerank.base.Reranker` for the rerank APIs local servers already expose.

Two shapes, chosen by ``[rerank] api`` (or by the url's path, ``RerankSpec.http_api``):

- ``tei``: Hugging Face Text Embeddings Inference, ``POST /rerank`` with
  ``{"query", "texts", "raw_scores": false, "truncate": true}``, answering a JSON list of
  ``{"index", "score"}``. ``truncate`` lets the server cut a long chunk to its model's length
  instead of refusing the whole request (a chunk may be longer than a cross-encoder reads).
- ``jina``: the Jina/Cohere-style ``POST /v1/rerank`` that llama.cpp's server and others implement,
  with ``{"model", "query", "documents", "top_n"}``, answering
  ``{"results": [{"index", "relevance_score"}, ...]}``. ``top_n`` is every document, so that each
  one gets a score; ``model`` is sent when it is configured.

It is written like the HTTP embedder (``embed.http``): the standard library only, an API key read
from the environment variable ``api_key_env`` names, and every failure (refused connection,
timeout, an error status with the server's own message, a malformed body) a
:class:`~kbseek.rerank.base.RerankFailed` naming the URL and the setting to fix. Unlike the
embedder it never retries: a search waits at most ``[rerank] budget_s`` for it, and a retry after
a busy status would only spend that budget to end in the fused order anyway.

Thread safety: requests are independent, so concurrent calls are fine; there is nothing to load.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from kbseek.embed.base import redact_url
from kbseek.remote import clip, error_text, refusal_detail, request_headers
from kbseek.rerank.base import RerankFailed, RerankSpec
from kbseek.text.plurals import counted

# One score per candidate is a few dozen bytes; a reply far beyond that is a misbehaving server.
_MAX_RESPONSE_BYTES = 4 * 1024 * 1024


class HttpReranker:
    """Scores candidates with a rerank server (:mod:`kbseek.rerank.http`)."""

    def __init__(self, spec: RerankSpec) -> None:
        assert spec.url is not None  # RerankSpec requires it for provider "http"
        self._api = spec.http_api
        self._endpoint, self._basic_auth = _resolve_endpoint(spec.url, self._api)
        self._model = spec.model
        self._api_key_env = spec.api_key_env
        self._opener = urllib.request.build_opener()

    @property
    def name(self) -> str:
        model = f" (model {self._model})" if self._model else ""
        return f"rerank server at {redact_url(self._endpoint)}{model}"

    @property
    def endpoint(self) -> str:
        """The URL requests go to, without credentials."""
        return redact_url(self._endpoint)

    def load(self) -> None:
        """Nothing to load: the server holds the model, and the first search is the probe."""

    def score(self, query: str, texts: Sequence[str], *, timeout_s: float) -> list[float]:
        if not texts:
            return []
        body = self._post(self._payload(query, list(texts)), timeout_s)
        return self._parse(body, len(texts))

    # ------------------------------------------------------------------ wire

    def _payload(self, query: str, texts: list[str]) -> bytes:
        documents = [t or " " for t in texts]  # servers refuse an empty input; it means nothing anyway
        payload: dict[str, Any]
        if self._api == "tei":
            payload = {"query": query, "texts": documents, "raw_scores": False, "truncate": True}
        else:
            payload = {"query": query, "documents": documents, "top_n": len(documents)}
            if self._model is not None:
                payload = {"model": self._model, **payload}
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")

    def _headers(self) -> dict[str, str]:
        try:
            return request_headers(self._api_key_env, self._basic_auth, setting="rerank api_key_env")
        except ValueError as exc:
            raise RerankFailed(str(exc)) from None

    def _post(self, payload: bytes, timeout_s: float) -> bytes:
        request = urllib.request.Request(self._endpoint, data=payload, headers=self._headers(), method="POST")
        try:
            with self._opener.open(request, timeout=timeout_s) as response:
                body: bytes = response.read(_MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            try:
                raise RerankFailed(self._status_message(exc)) from None
            finally:
                exc.close()
        except urllib.error.URLError as exc:
            raise RerankFailed(self._reach_message(exc.reason, timeout_s)) from exc
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            raise RerankFailed(self._reach_message(exc, timeout_s)) from exc
        if len(body) > _MAX_RESPONSE_BYTES:
            raise self._malformed(f"a response over {_MAX_RESPONSE_BYTES} bytes")
        return body

    def _parse(self, body: bytes, expected: int) -> list[float]:
        try:
            document = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self._malformed(
                f"not JSON (starts with {clip(body[:200].decode('utf-8', 'replace'))!r})"
            ) from None
        if self._api == "tei":
            items, key = document, "score"
            if isinstance(document, dict):
                raise self._malformed(error_text(document) or "a JSON object instead of a list of scores")
            if not isinstance(items, list):
                raise self._malformed(f"expected a JSON list, got {type(document).__name__}")
        else:
            key = "relevance_score"
            if not isinstance(document, dict):
                raise self._malformed(f"expected a JSON object, got {type(document).__name__}")
            items = document.get("results")
            if items is None and ("error" in document or "detail" in document):
                raise self._malformed(f"an error instead of results: {error_text(document)}")
            if not isinstance(items, list):
                raise self._malformed("no 'results' list")
        scores: dict[int, float] = {}
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise self._malformed(f"item {position} is not an object")
            index, value = item.get("index"), item.get(key)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected:
                raise self._malformed(f"item {position} has no 'index' between 0 and {expected - 1}")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self._malformed(f"item {position} has no numeric {key!r}")
            if index in scores:
                raise self._malformed(f"index {index} is scored twice")
            scores[index] = float(value)
        if len(scores) != expected:
            raise self._malformed(f"{counted(len(scores), 'score')} for {counted(expected, 'text')}")
        return [scores[i] for i in range(expected)]

    def _malformed(self, detail: str) -> RerankFailed:
        shape = (
            "/rerank of Text Embeddings Inference" if self._api == "tei" else "a Jina/Cohere-style /v1/rerank"
        )
        return RerankFailed(
            f"malformed response from the rerank server at {self.endpoint}: {detail}; check that the "
            f"rerank url points at {shape} endpoint, or set rerank api to the API the server speaks"
        )

    def _status_message(self, exc: urllib.error.HTTPError) -> str:
        detail = refusal_detail(exc)
        reason = f" {exc.reason}" if exc.reason else ""
        message = f"the rerank server at {self.endpoint} answered HTTP {exc.code}{reason}"
        if detail:
            message += f": {detail}"
        if exc.code in (401, 403):
            hint = (
                f"check the API key in environment variable {self._api_key_env}"
                if self._api_key_env
                else "set rerank api_key_env to the name of the environment variable holding the API key"
            )
        elif exc.code in (404, 405):
            hint = "check the rerank url and api (tei: .../rerank, jina: .../v1/rerank)"
        elif exc.code in (400, 413, 422):
            hint = "check the rerank model name; the query or a chunk may also be too long for the server"
        else:
            hint = "check the rerank server"
        return f"{message}; {hint}"

    def _reach_message(self, reason: object, timeout_s: float) -> str:
        where = f"the rerank server at {self.endpoint}"
        if isinstance(reason, ConnectionRefusedError):
            return f"could not connect to {where}: connection refused; start the server or fix the rerank url"
        if isinstance(reason, TimeoutError):
            return (
                f"{where} did not answer within {timeout_s:.2g} s; check the server or raise rerank budget_s"
            )
        if isinstance(reason, socket.gaierror):
            return f"could not resolve the host of {where}; fix the rerank url"
        detail = clip(str(reason)) or type(reason).__name__
        return f"could not reach {where}: {detail}; check the rerank url"


def _resolve_endpoint(url: str, api: str) -> tuple[str, str | None]:
    """The URL to POST to (credentials removed) and ``user:password`` from the URL, or ``None``.

    A URL ending in ``/rerank`` is taken as it is; otherwise it is the server's base: TEI's route
    is ``/rerank`` under it, the Jina-style one ``/v1/rerank`` (``/rerank`` under a ``/v1`` base).
    """
    parts = urlsplit(url.strip())
    basic = None
    if parts.username is not None:
        basic = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    clean = urlsplit(redact_url(urlunsplit(parts._replace(fragment=""))))
    path = clean.path.rstrip("/")
    if not path.endswith("/rerank"):
        path += "/rerank" if api == "tei" or path.endswith("/v1") else "/v1/rerank"
    return urlunsplit(clean._replace(path=path)), basic
