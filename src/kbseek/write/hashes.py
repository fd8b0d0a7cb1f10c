"""The hash a note is known by: what every read carries and every edit sends back.

The first :data:`HASH_CHARS` hex digits of the SHA-256 of the file's bytes, as the index already
records it for each document (``content_hash``, the whole digest). Sixty-four bits find any change
an edit could race with, and are short enough to ride on every search hit (docs/decisions/0058).
"""

from __future__ import annotations

import hashlib

HASH_CHARS = 16


def note_hash(data: bytes) -> str:
    """The hash of a note whose bytes are ``data``."""
    return hashlib.sha256(data).hexdigest()[:HASH_CHARS]


def shown_hash(digest: str) -> str:
    """The hash of a note whose whole SHA-256 (hex) is ``digest``, as the index records it."""
    return digest[:HASH_CHARS]
