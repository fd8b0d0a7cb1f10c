"""``kb://`` resource URIs: building them, and parsing them as untrusted input (T8).

Paths keep ``/`` and percent-encode everything else, so a Japanese or
space-containing path gives a valid ASCII URI that round-trips exactly: a name
with a leading blank, ``#``, ``?``, ``%`` or a backslash (``%5C``; a bare
backslash is not a URI character and is refused) decodes to the very path
search returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from kbseek.errors import BadResourceUri as BadResourceUri  # raised here, kept importable from here

DOC_PREFIX = "kb://doc/"
TOPIC_PREFIX = "kb://topic/"

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


@dataclass(frozen=True)
class ResourceRef:
    kind: str  # "doc" | "topic"
    path: str
    """Root-relative POSIX path (a document) or a topic prefix ending in ``/`` (``""`` for the root)."""
    kb: str | None = None
    """The collection, in a server holding several (``kb://NAME/doc/…``); ``None`` in a one-KB URI."""


COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A collection's name: what a ``kb://NAME/…`` URI, a ``--kb NAME=PATH`` and a ``[[kb]]`` table carry."""


def document_uri(path: str, kb: str | None = None) -> str:
    """``kb://doc/<path>``, or ``kb://<kb>/doc/<path>`` in a server holding several collections."""
    return (DOC_PREFIX if kb is None else f"kb://{kb}/doc/") + quote(path, safe="/")


def topic_uri(prefix: str, kb: str | None = None) -> str:
    return (TOPIC_PREFIX if kb is None else f"kb://{kb}/topic/") + quote(prefix, safe="/")


def parse_collection_uri(uri: str) -> ResourceRef:
    """Decode ``kb://NAME/doc/…`` or ``kb://NAME/topic/…``: the collection, then the one-KB rules."""
    rest = uri.removeprefix("kb://") if uri.startswith("kb://") else None
    name, slash, tail = (rest or "").partition("/")
    if rest is None or not slash or not COLLECTION_NAME.fullmatch(name):
        raise BadResourceUri(
            f"{uri!r} is not a kbseek resource: use kb://<collection>/doc/<path> or kb://<collection>/topic/<prefix>"
        )
    ref = parse_uri("kb://" + tail)
    return ResourceRef(ref.kind, ref.path, kb=name)


def parse_uri(uri: str) -> ResourceRef:
    """Decode a ``kb://doc/…`` or ``kb://topic/…`` URI, refusing anything that could escape or confuse."""
    if uri.startswith(DOC_PREFIX):
        kind, raw = "doc", uri[len(DOC_PREFIX) :]
    elif uri.startswith(TOPIC_PREFIX):
        kind, raw = "topic", uri[len(TOPIC_PREFIX) :]
    else:
        raise BadResourceUri(f"{uri!r} is not a kbseek resource: use kb://doc/<path> or kb://topic/<prefix>")
    if _BAD_ESCAPE.search(raw):
        raise BadResourceUri(f"{uri!r} has a malformed percent-escape")
    if "?" in raw or "#" in raw:
        raise BadResourceUri(f"{uri!r} has a query or fragment; kb:// URIs name a path only")
    if "\\" in raw:
        raise BadResourceUri(f"{uri!r} contains a backslash; paths use '/' (a backslash in a name is %5C)")
    try:
        path = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise BadResourceUri(f"{uri!r} does not decode to UTF-8 text") from None
    if "\x00" in path:
        raise BadResourceUri(f"{uri!r} contains a NUL character")
    segments = path.split("/")
    if any(s in ("..", ".") for s in segments) or ".." in path.replace("\\", "/").split("/"):
        raise BadResourceUri(f"{uri!r} contains a '.' or '..' segment; resource paths never climb")
    if path.startswith("/") or "//" in path:
        raise BadResourceUri(f"{uri!r} has an empty path segment")
    if kind == "doc" and (not path or path.endswith("/")):
        raise BadResourceUri(f"{uri!r} names a folder, not a document; read kb://topic/ for a listing")
    if kind == "topic" and path and not path.endswith("/"):
        path += "/"
    return ResourceRef(kind, path)
