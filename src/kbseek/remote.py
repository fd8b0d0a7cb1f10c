"""What every client of a model server shares: the request's headers with its credentials, and
the human message out of a refusal.

The embedding and rerank clients (``embed/http.py``, ``rerank/http.py``) talk to the same servers
(OpenAI-compatible, Text Embeddings Inference, llama.cpp, FastAPI apps). Both send a key named by
an environment variable, never written in the config file, and both quote a server's own words in
their errors, because "HTTP 400" alone sends a user guessing while "input is too long for the
model" does not. Written once here, so the two cannot drift apart.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import urllib.error
from typing import Any

MAX_CHARS = 300
"""A server's message is quoted up to this many characters: enough for a reason, never a page."""


def clip(text: str) -> str:
    """``text`` on one line, cut to :data:`MAX_CHARS` with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_CHARS else flat[: MAX_CHARS - 1] + "…"


def error_text(document: dict[str, Any]) -> str:
    """The human message in the usual error shapes (OpenAI's ``error.message``, TEI's ``error``,
    FastAPI's ``detail``, a plain ``message``), or ``""``."""
    error = document.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return clip(error["message"])
    for value in (error, document.get("detail"), document.get("message")):
        if isinstance(value, str):
            return clip(value)
        if value is not None:
            return clip(json.dumps(value, ensure_ascii=False))
    return ""


def refusal_detail(exc: urllib.error.HTTPError) -> str:
    """What the body of an HTTP error answer says: its message if it is JSON in a known shape, else
    its first characters; ``""`` for an empty or unreadable body."""
    try:
        raw = exc.read(64 * 1024)
    except (OSError, http.client.HTTPException):
        raw = b""
    detail = clip(raw.decode("utf-8", "replace"))
    try:
        parsed = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        parsed = None
    if isinstance(parsed, dict):
        detail = error_text(parsed) or detail
    return detail


def request_headers(api_key_env: str | None, basic_auth: str | None, *, setting: str) -> dict[str, str]:
    """JSON headers, with ``Authorization``: a bearer key from the environment variable
    ``api_key_env`` names, else the ``user:password`` a URL carried (``basic_auth``).

    Raises :class:`ValueError` with the words for the user (``setting`` names the config key, as
    "rerank api_key_env"); each client raises it again as its own kind of failure.
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "kbseek"}
    if api_key_env is not None:
        key = os.environ.get(api_key_env, "").strip()
        if not key:
            raise ValueError(
                f"environment variable {api_key_env} (named by {setting}) is not set or empty; export "
                "the API key in it before starting kbseek, or remove api_key_env"
            )
        if not key.isascii() or not key.isprintable():
            raise ValueError(
                f"the API key in environment variable {api_key_env} contains characters that cannot be "
                "sent in an HTTP header (non-ASCII, or a line break); check its value"
            )
        headers["Authorization"] = f"Bearer {key}"
    elif basic_auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(basic_auth.encode("utf-8")).decode("ascii")
    return headers
