"""``kb://`` resource URIs: building them, and parsing them as untrusted input."""

from __future__ import annotations

from urllib.parse import quote

DOC_PREFIX = "kb://doc/"
TOPIC_PREFIX = "kb://topic/"


def document_uri(path: str) -> str:
    """Keep ``/``, percent-encode everything else, so any path gives a valid ASCII URI that round-trips."""
    return DOC_PREFIX + quote(path, safe="/")


def topic_uri(prefix: str) -> str:
    return TOPIC_PREFIX + quote(prefix, safe="/")
