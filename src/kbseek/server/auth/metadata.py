"""What the server publishes about its sign-in: the RFC 9728 document and the challenges of its
``401`` and ``403`` answers.

A host that is refused reads ``WWW-Authenticate``: ``resource_metadata`` says where the document is,
``scope`` what to ask for. The document names the issuer (``authorization_servers``), the resource
URL tokens must be issued for, and the scopes. It is served at the path-suffixed well-known URI
(``/.well-known/oauth-protected-resource/mcp``, which the header names and clients try first) and
at the root one (which older clients try), with the values from configuration only: the ``resource``
in it is the configured URL, never the one a request arrived on.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit, urlunsplit

from kbseek.server.auth.settings import MCP_PATH, AuthConfig

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_url(resource: str) -> str:
    """Where the document for ``resource`` is (RFC 9728 §3.1: the well-known path inserted between
    the host and the resource's path)."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN + path, "", ""))


def metadata_paths(resource: str) -> frozenset[str]:
    """The request paths the document is answered at: the root, the one for ``/mcp``, and the one
    for the resource URL's own path when a proxy maps another path to ``/mcp``."""
    path = urlsplit(resource).path.rstrip("/")
    return frozenset({WELL_KNOWN, WELL_KNOWN + MCP_PATH, WELL_KNOWN + path})


def document(config: AuthConfig) -> bytes:
    """The RFC 9728 Protected Resource Metadata, as JSON."""
    assert config.issuer is not None and config.resource is not None
    return json.dumps(
        {
            "resource": config.resource,
            "authorization_servers": [config.issuer],
            "scopes_supported": list(config.scopes),
            "bearer_methods_supported": ["header"],
            "resource_name": "kbseek",
        }
    ).encode()


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(config: AuthConfig, *, error: str | None = None, scope: str | None = None) -> str:
    """A ``WWW-Authenticate`` value (RFC 6750 §3, RFC 9728 §5.1).

    No ``error`` when the request had no token (RFC 6750 asks for none then); ``invalid_token`` for
    a refused one; ``insufficient_scope`` with the ``scope`` needed. With static tokens only there is
    no document to point to, and the challenge is the bare ``Bearer`` it always was.
    """
    params = []
    if error is not None:
        params.append(f"error={_quoted(error)}")
    if config.issuer is not None and config.resource is not None:
        params.append(f"resource_metadata={_quoted(metadata_url(config.resource))}")
        params.append(f"scope={_quoted(scope or config.read_scope)}")
    elif scope is not None:
        params.append(f"scope={_quoted(scope)}")
    return "Bearer " + ", ".join(params) if params else "Bearer"
