"""A real OpenID provider for the sign-in tests: the certified ``oidc-provider`` package from npm,
unmodified, configured by ``oidc/provider.js`` and run as a subprocess on a loopback port.

Nothing of it is imitated here: tokens are issued by the provider after a real authorization-code
flow with PKCE and a resource indicator, driven over HTTP through the provider's own development
login and consent pages (their HTML forms are read and submitted as a browser would). The package is
pinned in ``oidc/package-lock.json`` and installed by ``make test``; where Node or the package is
missing the tests that need it are skipped, saying how to install it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx2

from tests.wire.serving import free_port

OIDC = Path(__file__).resolve().parents[1] / "oidc"
SCRIPT = OIDC / "provider.js"
PACKAGE = OIDC / "node_modules" / "oidc-provider" / "package.json"
ACCOUNT = "alice"
"""The provider's one account (``oidc/provider.js``), with ``groups`` in its tokens."""
GROUPS = ["engineering", "kb-readers"]
REDIRECT_URI = "http://127.0.0.1:9/callback"
"""Where the provider sends the browser back; nothing listens there: the flow stops at the redirect."""
MAX_STEPS = 12
"""Redirects and form posts one sign-in may take (login and consent take eight)."""


def missing() -> str | None:
    """Why the provider cannot run here, or ``None`` when it can."""
    if shutil.which("node") is None:
        return "Node.js is not installed: the real OpenID provider (oidc/provider.js) needs it"
    if not PACKAGE.exists():
        return "the OpenID provider is not installed: `npm ci --prefix oidc` (make test does)"
    return None


class _Forms(HTMLParser):
    """The forms of a page: each one's action, method and inputs (name, type, value)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(
                {"action": attributes.get("action", ""), "method": attributes.get("method", "get").lower(),
                 "inputs": []}
            )  # fmt: skip
        elif tag == "input" and self.forms:
            self.forms[-1]["inputs"].append(attributes)


def _filled(page: str, login: str) -> tuple[str, dict[str, str]]:
    """The page's form, filled in: its hidden values kept, the login and a password typed in."""
    parser = _Forms()
    parser.feed(page)
    posting = [f for f in parser.forms if f["method"] == "post"]
    if not posting:
        raise AssertionError(f"the provider's page has no form to submit: {page[:500]}")
    form = posting[0]
    fields = {}
    for field in form["inputs"]:
        name = field.get("name")
        if not name:
            continue
        if field.get("type") == "password":
            fields[name] = "any password"  # the development login takes any
        elif name == "login":
            fields[name] = login
        else:
            fields[name] = field.get("value", "")
    return form["action"], fields


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def claims_of(token: str) -> dict[str, Any]:
    """A JWT's header and payload merged under ``header`` and the payload's own names, read
    without checking (the server under test does the checking)."""
    header, payload = (json.loads(base64.urlsafe_b64decode(part + "==")) for part in token.split(".")[:2])
    return {"header": header, **payload}


@dataclass
class Provider:
    """The running provider: its issuer URL and what it printed."""

    url: str
    log: Path

    def said(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def sign_in(
        self, authorization_url: str, *, redirect_uri: str = REDIRECT_URI, login: str = ACCOUNT
    ) -> str:
        """Follow ``authorization_url`` as a browser would, signing in as ``login`` and consenting on
        the provider's pages; the URL the provider finally redirects to at ``redirect_uri`` (with
        ``code``, ``state`` and ``iss``, or an ``error``)."""
        with httpx2.Client(timeout=10, follow_redirects=False) as browser:
            response = browser.get(authorization_url)
            for _ in range(MAX_STEPS):
                if response.is_redirect:
                    location = urljoin(str(response.url), response.headers["location"])
                    if location.startswith(redirect_uri):
                        return location
                    response = browser.get(location)
                elif response.status_code == 200 and "<form" in response.text:
                    action, fields = _filled(response.text, login)
                    response = browser.post(urljoin(str(response.url), action), data=fields)
                else:
                    raise AssertionError(
                        f"the provider answered {response.status_code} at {response.url}: {response.text[:500]}"
                    )
        raise AssertionError(f"no redirect to {redirect_uri} after {MAX_STEPS} steps")

    def register(self, *, redirect_uri: str = REDIRECT_URI) -> str:
        """A public client registered dynamically (RFC 7591): its ``client_id``."""
        answer = httpx2.post(
            f"{self.url}/reg", timeout=10,
            json={"redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none",
                  "grant_types": ["authorization_code"], "response_types": ["code"], "application_type": "native"},
        )  # fmt: skip
        assert answer.status_code == 201, answer.text
        return str(answer.json()["client_id"])

    def token(self, resource: str, *, scope: str = "kb:read") -> dict[str, Any]:
        """The token endpoint's answer for ``resource`` (RFC 8707, in both the authorization and the
        token request) after the authorization-code flow with PKCE, signed in as the account."""
        client_id = self.register()
        verifier, challenge = pkce()
        state = secrets.token_urlsafe(16)
        query = urlencode({
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "scope": scope,
            "state": state, "code_challenge": challenge, "code_challenge_method": "S256", "resource": resource,
        })  # fmt: skip
        back = parse_qs(urlsplit(self.sign_in(f"{self.url}/auth?{query}")).query)
        assert back.get("state") == [state] and back.get("iss") == [self.url], back
        answer = httpx2.post(
            f"{self.url}/token", timeout=10,
            data={"grant_type": "authorization_code", "code": back["code"][0], "redirect_uri": REDIRECT_URI,
                  "client_id": client_id, "code_verifier": verifier, "resource": resource},
        )  # fmt: skip
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


@contextmanager
def running_provider(
    log: Path, *, jwt: Sequence[str] = (), opaque: Sequence[str] = (), introspector: tuple[str, str] | None = None,
    timeout: float = 30,
) -> Iterator[Provider]:  # fmt: skip
    """``oidc/provider.js`` on a free loopback port, issuing JWT access tokens for the resources in
    ``jwt`` and opaque ones for those in ``opaque``, with ``introspector`` (client id, secret) as a
    client that may introspect them; its output in ``log``. Yielded once its discovery document
    answers, stopped at the end."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = ["node", str(SCRIPT), "--port", str(port)]
    command += [arg for resource in jwt for arg in ("--resource", resource)]
    command += [arg for resource in opaque for arg in ("--opaque-resource", resource)]
    env = dict(os.environ)
    if introspector is not None:
        command += ["--introspector", introspector[0]]
        env["INTROSPECTOR_SECRET"] = introspector[1]
    with (
        log.open("wb") as output,
        subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env) as proc,
    ):
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    answer = httpx2.get(f"{url}/.well-known/openid-configuration", timeout=2)
                    if answer.status_code == 200 and answer.json().get("issuer") == url:
                        break
                except httpx2.TransportError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    said = log.read_text(encoding="utf-8", errors="replace")
                    raise RuntimeError(f"the OpenID provider did not come up on {url}:\n{said}")
                time.sleep(0.05)
            yield Provider(url, log)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
