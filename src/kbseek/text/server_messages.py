"""What a model server said when it refused: the human message out of an error answer, short.

The embedding and rerank clients both quote a server's own words in their errors, because "HTTP
400" alone sends a user guessing while "input is too long for the model" does not. The servers
they talk to (OpenAI-compatible, Text Embeddings Inference, llama.cpp, FastAPI apps) put that
message in a handful of shapes; this reads all of them, and keeps it to one short line.
"""

from __future__ import annotations

import http.client
import json
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
