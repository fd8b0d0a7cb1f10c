"""The issuer's metadata and keys, fetched over HTTP with bounds on time and size.

An issuer publishes its metadata at a well-known URL: RFC 8414 inserts
``/.well-known/oauth-authorization-server`` between the host and the issuer's path, OpenID Connect
Discovery appends ``/.well-known/openid-configuration`` to it (and some providers serve that one
inserted too). They are tried in the order the MCP specification has clients try them; the first
that answers with a document whose ``issuer`` is exactly the configured one is taken (RFC 8414
§3.3: anything else may be an attacker's document).

The fetch is blocking ``urllib`` in a worker thread, as kbseek's other HTTP clients are; it happens
once per key set refresh, never per request.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kbseek.server.auth.reasons import Reason, Rejected

TIMEOUT_S = 5.0
"""A request to the issuer that takes longer fails; the caller is answered ``503`` and retries."""
MAX_BYTES = 1024 * 1024
"""Metadata and key sets are a few kilobytes; more is not one."""


class IssuerAnswered(Rejected):
    """The issuer answered with an HTTP error: ``status`` tells wrong client credentials (``401``)
    from an endpoint that is missing or down, which ``kbseek doctor --auth`` words differently."""

    def __init__(self, detail: str, status: int) -> None:
        super().__init__(Reason.UNAVAILABLE, detail)
        self.status = status


class NoMetadata(Rejected):
    """No well-known URL gave the issuer's metadata; ``named`` holds the issuers the documents found
    did name, so ``kbseek doctor --auth`` can call out an issuer configured with or without the
    trailing slash its provider writes."""

    def __init__(self, detail: str, named: list[str]) -> None:
        super().__init__(Reason.UNAVAILABLE, detail)
        self.named = named


def metadata_urls(issuer: str) -> list[str]:
    """Where ``issuer``'s metadata may be, in the order tried."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(p: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, p, "", ""))

    if not path:
        return [at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")]
    return [
        at(f"/.well-known/oauth-authorization-server{path}"),
        at(f"/.well-known/openid-configuration{path}"),
        at(f"{path}/.well-known/openid-configuration"),
    ]


def fetch_json(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    """The JSON document at ``url`` (POSTing ``data`` when given); :class:`Rejected` with
    ``unavailable`` when it cannot be had, naming the URL and why (never a credential)."""
    request = urllib.request.Request(
        url, data=data, headers={"Accept": "application/json", **(headers or {})},
        method="POST" if data is not None else "GET",
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            raw = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise IssuerAnswered(f"{url} answered HTTP {exc.code}", exc.code) from None
    except (OSError, ValueError) as exc:
        raise Rejected(Reason.UNAVAILABLE, f"{url} could not be reached: {exc}") from None
    if len(raw) > MAX_BYTES:
        raise Rejected(Reason.UNAVAILABLE, f"{url} answered more than {MAX_BYTES} bytes")
    try:
        return json.loads(raw)
    except ValueError:
        raise Rejected(Reason.UNAVAILABLE, f"{url} did not answer JSON") from None


def discover(issuer: str) -> dict[str, Any]:
    """``issuer``'s metadata document (blocking); :class:`NoMetadata` (``unavailable``) if none of its
    well-known URLs answers one that names it."""
    failures, named = [], []
    for url in metadata_urls(issuer):
        try:
            document = fetch_json(url)
        except Rejected as exc:
            failures.append(exc.detail)
            continue
        if not isinstance(document, dict):
            failures.append(f"{url} is not a JSON object")
        elif document.get("issuer") != issuer:
            if isinstance(document.get("issuer"), str):
                named.append(document["issuer"])
            failures.append(f"{url} names the issuer {document.get('issuer')!r}, not {issuer!r}")
        else:
            return document
    raise NoMetadata("no issuer metadata: " + "; ".join(failures), named)


async def discover_async(issuer: str) -> dict[str, Any]:
    return await asyncio.to_thread(discover, issuer)
