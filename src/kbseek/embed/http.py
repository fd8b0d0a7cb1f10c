"""Embedder that calls an OpenAI-compatible ``/v1/embeddings`` endpoint.

Why it exists: it lets a deployment use a bigger or shared model (a local
inference server, a hosted API) without kbseek depending on any client
library; it is written on the standard library alone (``urllib.request`` and
``json``), so choosing it adds nothing to install.

URL: ``url`` is the server's base URL. A bare host (``http://h:8000``) means
``http://h:8000/v1/embeddings``; a URL with a path gets ``/embeddings``
appended (``http://h:8000/v1`` → ``…/v1/embeddings``) unless it already ends
in ``/embeddings``. A query string is kept (some hosted APIs version by it).
``user:password@`` in the URL is sent as HTTP Basic auth and never appears in
``model_id`` or in messages.

Authentication: ``api_key_env`` names the environment variable holding the
key (sent as ``Authorization: Bearer …``). It is read on every request, so a
rotated key is picked up without a restart, and the key itself never enters
the configuration, ``model_id`` or any message.

Vectors: ``dim`` is learned at :meth:`HttpEmbedder.load` by embedding a probe
string; reading ``dim`` before that loads first (a network call). Every later
batch must have the same dimension, which catches the server swapping its
model under a live index. Vectors are normalised here because not every
server does. ``model_id`` is ``http:<model>@<base-url>``: it identifies the
endpoint and model *name* only, so if the server changes the model behind the
same name, the index cannot tell; rebuild it by hand then.

Failures (connection refused, DNS, timeout, an HTTP error status with the
server's own message, a malformed body) all raise
:class:`~kbseek.errors.EmbedderUnavailable` naming the URL and the setting to
fix. Statuses that mean "try again" (429, 502, 503, 504) are retried twice
with a short back-off, honouring a small ``Retry-After``.

Input: empty strings are sent as a single space, because the OpenAI API
refuses empty input and an empty chunk carries no meaning anyway. Length is
left to the server, which answers an over-long input with an error status
that is reported as such.

Thread safety: each request is independent, so concurrent calls are fine;
``load`` is serialised by a lock.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import numpy as np

from kbseek.embed.base import check_texts, query_vector, redact_url, unit_rows
from kbseek.errors import ConfigError, EmbedderUnavailable
from kbseek.remote import clip, error_text, refusal_detail, request_headers
from kbseek.text.plurals import counted

PROBE_TEXT = "kbseek embedding probe"

_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_RETRIES = 2
_MAX_RETRY_AFTER_S = 10.0
# A response is at most batch x dim floats as JSON text; anything far beyond
# that is a misbehaving server, and reading it whole would only exhaust memory.
_MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class HttpEmbedder:
    """:class:`~kbseek.embed.base.Embedder` for an OpenAI-compatible HTTP server."""

    def __init__(
        self,
        *,
        url: str,
        model: str,
        api_key_env: str | None,
        batch_size: int,
        timeout_s: float,
    ) -> None:
        self._endpoint, self._base, self._basic_auth = _resolve_endpoint(url)
        self._model_name = model
        self._api_key_env = api_key_env
        self._batch_size = max(1, int(batch_size))
        self._timeout_s = float(timeout_s)
        self._dim: int | None = None
        self._lock = threading.Lock()
        self._opener = urllib.request.build_opener()
        self._model_id = f"http:{model}@{self._base}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.load()
        assert self._dim is not None
        return self._dim

    @property
    def loaded(self) -> bool:
        """True once a probe succeeded and the dimension is known."""
        return self._dim is not None

    @property
    def endpoint(self) -> str:
        """The URL requests go to, without credentials (for status pages and logs)."""
        return redact_url(self._endpoint)

    def load(self) -> None:
        if self._dim is not None:
            return
        with self._lock:
            if self._dim is not None:
                return
            vectors = self._request([PROBE_TEXT])
            if vectors.shape[1] == 0:
                raise EmbedderUnavailable(
                    f"embedding server at {self._base} returned an empty vector for model "
                    f"{self._model_name!r}; check the embedding model setting"
                )
            self._dim = int(vectors.shape[1])

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        self.load()
        dim = self.dim
        out = np.empty((len(items), dim), dtype=np.float32)
        for start in range(0, len(items), self._batch_size):
            batch = items[start : start + self._batch_size]
            vectors = self._request(batch)
            if vectors.shape[1] != dim:
                raise EmbedderUnavailable(
                    f"embedding server at {self._base} returned {vectors.shape[1]}-dimensional vectors "
                    f"for model {self._model_name!r}, but {dim} when it was first loaded; the server "
                    "changed the model behind that name, so restart kbseek and rebuild the index"
                )
            out[start : start + len(batch)] = vectors
        return unit_rows(out, expected_dim=dim, source=f"embedding server at {self._base}")

    def embed_query(self, text: str) -> np.ndarray:
        return query_vector(self.embed_queries, text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several queries in one request (a search with alternative phrasings)."""
        return self.embed_documents(texts)

    # ------------------------------------------------------------------ wire

    def _headers(self) -> dict[str, str]:
        try:
            return request_headers(self._api_key_env, self._basic_auth, setting="embedding api_key_env")
        except ValueError as exc:
            raise EmbedderUnavailable(str(exc)) from None

    def _request(self, texts: list[str]) -> np.ndarray:
        """POST one batch and return its vectors as a raw (n, d) float32 array."""
        payload = json.dumps(
            {"model": self._model_name, "input": [t or " " for t in texts], "encoding_format": "float"},
            ensure_ascii=False,
        ).encode("utf-8")
        headers = self._headers()
        for attempt in range(_RETRIES + 1):
            request = urllib.request.Request(self._endpoint, data=payload, headers=headers, method="POST")
            try:
                with self._opener.open(request, timeout=self._timeout_s) as response:
                    body = response.read(_MAX_RESPONSE_BYTES + 1)
            except urllib.error.HTTPError as exc:
                try:
                    if exc.code in _RETRY_STATUSES and attempt < _RETRIES:
                        delay = _retry_delay(exc, attempt)
                    else:
                        raise EmbedderUnavailable(self._status_message(exc)) from None
                finally:
                    exc.close()
                time.sleep(delay)
                continue
            except urllib.error.URLError as exc:
                raise EmbedderUnavailable(self._reach_message(exc.reason)) from exc
            except (TimeoutError, OSError, http.client.HTTPException) as exc:
                raise EmbedderUnavailable(self._reach_message(exc)) from exc
            if len(body) > _MAX_RESPONSE_BYTES:
                raise EmbedderUnavailable(
                    f"embedding server at {self._base} sent a response over {_MAX_RESPONSE_BYTES} bytes; "
                    "lower the embedding batch_size"
                )
            return self._parse(body, len(texts))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _parse(self, body: bytes, expected: int) -> np.ndarray:
        try:
            document = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            start = clip(body[:200].decode("utf-8", "replace"))
            raise self._malformed(f"not JSON (starts with {start!r})") from None
        if not isinstance(document, dict):
            raise self._malformed(f"expected a JSON object, got {type(document).__name__}")
        data = document.get("data")
        if data is None and "error" in document:
            raise self._malformed(f"an error instead of embeddings: {error_text(document)}")
        if not isinstance(data, list):
            raise self._malformed("no 'data' list")
        if len(data) != expected:
            raise self._malformed(f"{counted(len(data), 'embedding')} for {counted(expected, 'input')}")
        items: list[tuple[int, Any]] = []
        for position, item in enumerate(data):
            if not isinstance(item, dict) or "embedding" not in item:
                raise self._malformed(f"data[{position}] has no 'embedding'")
            index = item.get("index", position)
            if isinstance(index, bool) or not isinstance(index, int):
                raise self._malformed(f"data[{position}].index is not an integer")
            items.append((index, item["embedding"]))
        items.sort(key=lambda pair: pair[0])
        if [index for index, _ in items] != list(range(expected)):
            raise self._malformed("the 'index' fields are not 0..n-1")
        rows = [self._vector(raw, index) for index, raw in items]
        dims = {len(row) for row in rows}
        if len(dims) != 1:
            raise self._malformed(f"vectors of different lengths {sorted(dims)} in one response")
        return np.stack(rows).astype(np.float32, copy=False)

    def _vector(self, raw: Any, index: int) -> np.ndarray:
        if isinstance(raw, str):  # encoding_format "base64": little-endian float32
            try:
                return np.frombuffer(base64.b64decode(raw, validate=True), dtype="<f4").astype(np.float32)
            except (binascii.Error, ValueError):
                raise self._malformed(f"embedding {index} is a string but not base64 float32") from None
        if not isinstance(raw, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in raw
        ):
            raise self._malformed(f"embedding {index} is not a list of numbers")
        return np.asarray(raw, dtype=np.float32)

    def _malformed(self, detail: str) -> EmbedderUnavailable:
        return EmbedderUnavailable(
            f"malformed response from embedding server at {self._base}: {detail}; check that the "
            "embedding url points at an OpenAI-compatible /v1/embeddings endpoint"
        )

    def _status_message(self, exc: urllib.error.HTTPError) -> str:
        detail = refusal_detail(exc)
        reason = f" {exc.reason}" if exc.reason else ""
        message = f"embedding server at {self._base} answered HTTP {exc.code}{reason}"
        if detail:
            message += f": {detail}"
        if exc.code in (401, 403):
            hint = (
                f"check the API key in environment variable {self._api_key_env}"
                if self._api_key_env
                else "set embedding api_key_env to the name of the environment variable holding the API key"
            )
        elif exc.code == 404:
            hint = "check the embedding url (the base URL, for example http://127.0.0.1:8000/v1) and model"
        elif exc.code in (400, 422):
            hint = "check the embedding model name; an input may also be too long for the server's model"
        else:
            hint = "check the embedding server"
        return f"{message}; {hint}"

    def _reach_message(self, reason: object) -> str:
        where = f"the embedding server at {self._base}"
        if isinstance(reason, ConnectionRefusedError):
            return (
                f"could not connect to {where}: connection refused; start the server "
                "or fix the embedding url setting"
            )
        if isinstance(reason, TimeoutError):
            return (
                f"{where} did not answer within {self._timeout_s:g} s; check the server "
                "or raise embedding timeout_s"
            )
        if isinstance(reason, socket.gaierror):
            host = urlsplit(self._endpoint).hostname
            return f"could not resolve host {host!r} of {where}; fix the embedding url setting"
        detail = clip(str(reason)) or type(reason).__name__
        return f"could not reach {where}: {detail}; check the embedding url"


def _resolve_endpoint(url: str) -> tuple[str, str, str | None]:
    """Return (request URL without credentials, display base for ids, ``user:password`` or None)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"embedding url {redact_url(url)!r} is not an http:// or https:// URL with a host; "
            "fix the embedding url setting"
        )
    basic = None
    if parts.username is not None:
        basic = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    clean = urlsplit(redact_url(urlunsplit(parts._replace(fragment=""))))
    path = clean.path.rstrip("/")
    if path.endswith("/embeddings"):
        base_path = path[: -len("/embeddings")]
    elif path:
        base_path = path
    else:
        base_path = "/v1"
    endpoint = urlunsplit(clean._replace(path=base_path + "/embeddings"))
    base = urlunsplit(clean._replace(path=base_path))
    return endpoint, base, basic


def _retry_delay(exc: urllib.error.HTTPError, attempt: int) -> float:
    header = exc.headers.get("Retry-After") if exc.headers is not None else None
    if header is not None:
        try:
            return min(max(float(header), 0.0), _MAX_RETRY_AFTER_S)
        except ValueError:
            pass  # an HTTP date; fall back to the back-off below
    return 0.5 * 2.0**attempt
