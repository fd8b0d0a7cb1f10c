"""Whether a token was issued for this server: its audience compared with the resource URL.

RFC 8707 and RFC 9068 have the issuer put the resource the client asked for in ``aud``; the MCP
specification has the server accept a token only when that is its own URL. One rule, here, used by
every verifier (docs/decisions/0054):

- **the same string, after removing at most one trailing slash from each.** Issuers and clients
  disagree on ``https://kb.example.com`` against ``https://kb.example.com/`` (a URL parser adds the
  slash to an empty path; Auth0 writes audiences with one), and it names the same resource.
- **nothing else is tolerated**: not another scheme (a token for ``http://`` was asked for over
  clear text), not another path (``/mcp`` and ``/other/mcp`` are different servers behind one
  proxy), not another host, port, case or percent-encoding. Loosening any of these lets a token
  made for one server open another; a mismatch is fixed in configuration, and the log says which.

``aud`` may be one string or a list (Keycloak's is a list); a list matches when any entry does.

Some providers never write the URL: Microsoft Entra's v2 access tokens carry the application's
client ID (a GUID) in ``aud``, whatever identifier the client asked for. ``[auth].audiences`` names
such values; each must equal an entry exactly (:func:`issued_for`).
"""

from __future__ import annotations

from collections.abc import Sequence


def _without_one_slash(url: str) -> str:
    return url[:-1] if url.endswith("/") else url


def audience_matches(audience: object, resource: str) -> bool:
    """Whether ``audience`` (a token's ``aud``: a string, a list of them, or anything a token may
    hold) names ``resource``. Entries that are not strings never match; an empty resource matches
    nothing."""
    if not resource:
        return False
    expected = _without_one_slash(resource)
    if not expected:
        return False
    if isinstance(audience, str):
        return _without_one_slash(audience) == expected
    if isinstance(audience, Sequence) and not isinstance(audience, bytes | bytearray):
        return any(isinstance(a, str) and _without_one_slash(a) == expected for a in audience)
    return False


def issued_for(audience: object, resource: str, also: Sequence[str] = ()) -> bool:
    """Whether a token's ``aud`` names this server: the resource URL by :func:`audience_matches`,
    or one of ``also`` (``[auth].audiences``), exactly."""
    if audience_matches(audience, resource):
        return True
    entries = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
    return any(isinstance(a, str) and a in also for a in entries)
