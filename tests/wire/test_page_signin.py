"""The web page signs in: the installed server runs the authorization-code flow with PKCE against an
issuer made in the test (``tests/auth_issuer.py``), keeps the token, and gives the browser an
HttpOnly session cookie that ``/api`` takes as it takes a bearer token (docs/decisions/0056).

Everything goes over real HTTP: the server is ``kbseek serve --http`` in a subprocess, the issuer
serves its metadata, keys, authorization and token endpoints on loopback, and the "browser" is an
HTTP client that follows the redirects by hand, so each step's answer can be read.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

from tests.auth_issuer import Issuer, running_issuer
from tests.conftest import NOTES, installed_script, write_notes
from tests.wire.serving import chromium, free_port, serving, wait_healthy
from tests.wire.test_http_auth import Served as SignedIn

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CLIENT = "kbseek-page"
STATIC = "ci-static-secret-0123"
DOCUMENT_TEXT = (
    "Deploy runbook", "load balancer", "Nightly snapshots", "descaling", "障害", "runbooks/deploy.md", "bluebird",
)  # fmt: skip
"""Words from the knowledge base's documents (titles, text, paths): none may reach a browser that
has not signed in."""
API = (
    "/api/search?q=rollback", "/api/document?path=runbooks/deploy.md", "/api/related?path=runbooks/deploy.md",
    "/api/status", "/api/topics", "/api/collections",
)  # fmt: skip


class Served(SignedIn):
    def recorded(self, tool: str, path: str) -> list[dict[str, Any]]:
        """The record of reads' lines of ``tool`` reading ``path``, once one is written (the writer
        is a thread of its own)."""
        record = self.log.with_suffix(".reads.jsonl")
        deadline = time.monotonic() + 20
        while True:
            lines = record.read_text(encoding="utf-8").splitlines() if record.exists() else []
            found = [r for r in map(json.loads, lines) if r.get("tool") == tool and r.get("paths") == [path]]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def browser(self) -> httpx2.Client:
        """A client keeping cookies as a browser would, following no redirect by itself."""
        return httpx2.Client(base_url=self.base, follow_redirects=False, timeout=30)


@contextmanager
def serving_with_page(
    folder: Path, issuer: Issuer, *, resource: str | None = None, page_client: bool = True
) -> Iterator[Served]:
    """``serve --http`` whose page signs in as :data:`CLIENT`, with a static token beside it."""
    port = free_port()
    resource = resource or f"http://127.0.0.1:{port}/mcp"
    root = folder / "kb"
    if not root.exists():
        root.mkdir(parents=True)
        write_notes(root, NOTES)
        (root / ".kbseekignore").write_text("drafts/\n", encoding="utf-8")  # as the kb_root fixture
    config = folder / "kbseek.toml"
    page = f'page_client_id = "{CLIENT}"\n' if page_client else ""
    config.write_text(f'[auth]\nclock_skew = 0\ntokens = ["ci=KB_CI_TOKEN"]\n{page}', encoding="utf-8")
    log = folder / f"stderr-{port}.log"
    command = [
        installed_script(), "serve", "--kb", str(root), "--config", str(config), "--lexical-only", "--no-watch",
        "--http", "--port", str(port), "--auth-issuer", issuer.url, "--auth-resource", resource,
        "--audit-log", str(log.with_suffix(".reads.jsonl")),
    ]  # fmt: skip
    with log.open("wb") as stderr, subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=stderr, env={**os.environ, "KB_CI_TOKEN": STATIC}
    ) as proc:  # fmt: skip
        try:
            wait_healthy(port, proc)
            served = Served(port, resource, issuer, log)
            deadline = time.monotonic() + 30  # the first indexing pass runs in the background
            while (
                httpx2.get(f"{served.base}/api/status", headers=bearer(STATIC)).json().get("documents") != 4
            ):
                assert time.monotonic() < deadline, "the knowledge base was never indexed"
                time.sleep(0.05)
            yield served
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@pytest.fixture(scope="module")
def module_issuer() -> Iterator[Issuer]:
    with running_issuer() as issuer:
        issuer.register(CLIENT)
        yield issuer


@pytest.fixture(scope="module")
def served(module_issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving_with_page(tmp_path_factory.mktemp("page-signin"), module_issuer) as running:
        yield running


@pytest.fixture(autouse=True)
def fresh_issuer(module_issuer: Issuer) -> None:
    """Each test starts from an issuer that approves at once and issues what was asked for."""
    issuer = module_issuer
    issuer.audience, issuer.granted_scope, issuer.lifetime, issuer.deny = None, None, 600, False
    issuer.id_claims = {}
    issuer.authorized.clear()
    issuer.exchanges.clear()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def set_cookies(response: httpx2.Response) -> dict[str, str]:
    """Each ``Set-Cookie`` of ``response`` by the cookie's name, as the header says it."""
    return {value.split("=", 1)[0]: value for value in response.headers.get_list("set-cookie")}


def flags(header: str) -> set[str]:
    return {part.strip().split("=")[0].lower() for part in header.split(";")[1:]}


def cookie_value(header: str) -> str:
    return header.split(";", 1)[0].split("=", 1)[1]


def approve(login: httpx2.Response) -> str:
    """The issuer's answer to where ``/auth/login`` sent the browser: where it sends it back."""
    assert login.status_code == 303, login.text
    at_issuer = httpx2.get(login.headers["location"], follow_redirects=False, timeout=30)
    assert at_issuer.status_code == 302, at_issuer.text
    return str(at_issuer.headers["location"])


def sign_in(served: Served, browser: httpx2.Client, next_page: str | None = None) -> httpx2.Response:
    """The whole sign-in: the server's login, the issuer's approval, the server's callback."""
    login = browser.get("/auth/login", params={"next": next_page} if next_page else None)
    return browser.get(approve(login))


def test_a_browser_without_a_session_reads_no_document_and_is_told_where_to_sign_in(served: Served) -> None:
    with served.browser() as browser:
        answers = []
        for path in API:
            response = browser.get(path)
            assert response.status_code == 401, path
            assert response.json()["sign_in"] == "/auth/login", path
            answers.append(response)
        for path in ("/ui", "/ui/app.js", "/ui/messages.js", "/auth/session", "/auth/login", "/"):
            answers.append(browser.get(path))
        assert [a.status_code for a in answers[len(API) :]] == [200, 200, 200, 401, 303, 307]
        for response in answers:
            text = response.text + str(response.headers)
            assert not [w for w in DOCUMENT_TEXT if w in text], response.url
        mcp = browser.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert mcp.status_code == 401 and "sign_in" not in mcp.json()  # hosts are not sent to a page


def test_signing_in_runs_pkce_through_the_provider_and_the_cookie_reads(served: Served) -> None:
    issuer = served.issuer
    with served.browser() as browser:
        login = browser.get("/auth/login")
        flow_cookie = set_cookies(login)["kbseek-signin"]
        assert flags(flow_cookie) == {"max-age", "path", "httponly", "samesite"}  # no Secure over http
        assert "SameSite=Lax" in flow_cookie and "Path=/;" in flow_cookie
        target = urlsplit(login.headers["location"])
        assert f"{target.scheme}://{target.netloc}" == issuer.url and target.path == "/authorize"
        asked = {k: v[0] for k, v in parse_qs(target.query).items()}
        assert asked["response_type"] == "code" and asked["client_id"] == CLIENT
        assert asked["redirect_uri"] == f"{served.base}/auth/callback"
        assert asked["resource"] == served.resource
        assert asked["scope"].split() == ["openid", "kb:read"]
        assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
        assert len(asked["state"]) >= 32 and len(asked["nonce"]) >= 32

        callback = browser.get(approve(login))
        assert callback.status_code == 303 and callback.headers["location"] == "/ui"
        cookies = set_cookies(callback)
        session = cookies["kbseek-session"]
        assert flags(session) == {"max-age", "path", "httponly", "samesite"}
        assert "SameSite=Lax" in session and 0 < int(session.split("Max-Age=")[1].split(";")[0]) <= 600
        assert "Max-Age=0" in cookies["kbseek-signin"]  # the flow is spent
        exchanged = issuer.exchanges[-1]
        assert "error" not in exchanged and exchanged["resource"] == served.resource
        assert len(exchanged["code_verifier"]) >= 43 and exchanged["client_id"] == CLIENT

        search = browser.get("/api/search", params={"q": "rollback"})
        assert search.status_code == 200
        assert [hit["path"] for hit in search.json()["hits"]] == ["runbooks/deploy.md"]
        document = browser.get("/api/document", params={"path": "runbooks/deploy.md"})
        assert document.status_code == 200 and "load balancer" in document.json()["text"]
        assert browser.get("/auth/session").json()["subject"] == "alice"
        assert browser.get("/api/document", params={"path": "notes/plain.txt"}).status_code == 200
        (read,) = served.recorded("/api/document", "notes/plain.txt")  # the record of reads names the person
        assert (read["subject"], read["client"], read["method"], read["outcome"]) == (
            "alice",
            CLIENT,
            "jwt",
            "ok",
        )
        assert "eyJ" not in cookie_value(session)  # the browser holds an opaque id, never the token
        mcp = browser.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert mcp.status_code == 401  # /mcp takes bearer tokens only, never the page's cookie


def test_the_person_comes_back_to_the_page_address_they_left_and_nowhere_else(served: Served) -> None:
    with served.browser() as browser:
        back = sign_in(served, browser, "/ui?q=rollback#doc=runbooks%2Fdeploy.md")
        assert back.headers["location"] == "/ui?q=rollback#doc=runbooks%2Fdeploy.md"
    for elsewhere in ("https://evil.example.com/", "//evil.example.com/ui", "/api/search?q=x", "/ui\\@evil"):
        with served.browser() as browser:
            assert sign_in(served, browser, elsewhere).headers["location"] == "/ui", elsewhere


def test_over_https_the_cookies_are_secure_and_bound_to_the_host(
    module_issuer: Issuer, tmp_path: Path
) -> None:
    """Behind a TLS proxy: the resource URL is https, so the cookies are ``Secure`` and ``__Host-``;
    the proxy is played by sending its requests to the server by hand."""
    with serving_with_page(tmp_path, module_issuer, resource="https://kb.example.com/mcp") as s:
        with s.browser() as browser:
            login = browser.get("/auth/login")
            flow_cookie = set_cookies(login)["__Host-kbseek-signin"]
            assert flags(flow_cookie) == {"max-age", "path", "httponly", "samesite", "secure"}
            back = urlsplit(approve(login))
            assert f"{back.scheme}://{back.netloc}{back.path}" == "https://kb.example.com/auth/callback"
            callback = httpx2.get(
                f"{s.base}{back.path}?{back.query}", follow_redirects=False, timeout=30,
                headers={"Cookie": f"__Host-kbseek-signin={cookie_value(flow_cookie)}"},
            )  # fmt: skip
        assert callback.status_code == 303, callback.text
        session = set_cookies(callback)["__Host-kbseek-session"]
        assert flags(session) == {"max-age", "path", "httponly", "samesite", "secure"}
        assert "SameSite=Lax" in session and "Path=/;" in session and "domain" not in flags(session)
        with_cookie = {"Cookie": f"__Host-kbseek-session={cookie_value(session)}"}
        assert httpx2.get(f"{s.base}/api/search?q=rollback", headers=with_cookie).status_code == 200
        without_prefix = {"Cookie": f"kbseek-session={cookie_value(session)}"}  # not the name it was given
        assert httpx2.get(f"{s.base}/api/search?q=rollback", headers=without_prefix).status_code == 401
        assert "the web page signs in as a public client 'kbseek-page'" in s.said()
        assert "https://kb.example.com/auth/callback" in s.said()
        assert "add --allow-origin https://kb.example.com" in s.said()  # or signing out is refused


def test_a_callback_that_is_not_this_browsers_sign_in_is_refused(served: Served) -> None:
    with served.browser() as browser:
        back = urlsplit(approve(browser.get("/auth/login")))
        code = parse_qs(back.query)["code"][0]
        for query in (f"code={code}&state=forged", f"code={code}", f"code={code}&state=a&state=b"):
            refused = browser.get(f"/auth/callback?{query}")
            assert refused.status_code == 400, query
            assert "kbseek-session" not in set_cookies(refused), query
    with served.browser() as stranger:  # the right code and state, in a browser that did not start it
        refused = stranger.get(f"{back.path}?{back.query}")
        assert refused.status_code == 400 and "kbseek-session" not in set_cookies(refused)
        assert "sign in again" in refused.text.lower() and stranger.get("/api/status").status_code == 401
    assert served.issuer.exchanges == []  # no code was ever sent to the provider
    assert "page sign-in refused (flow)" in served.said()


def test_a_code_slipped_into_another_sign_in_fails_its_pkce_check_at_the_provider(served: Served) -> None:
    """A code from one sign-in (an attacker's, say) brought to another browser's callback with that
    browser's own state: the server sends that browser's verifier, which is not the code's."""
    with served.browser() as attacker, served.browser() as victim:
        stolen = parse_qs(urlsplit(approve(attacker.get("/auth/login"))).query)["code"][0]
        victims_state = parse_qs(urlsplit(approve(victim.get("/auth/login"))).query)["state"][0]
        refused = victim.get("/auth/callback", params={"code": stolen, "state": victims_state})
        assert refused.status_code == 401
        assert "kbseek-session" not in set_cookies(refused) and victim.get("/api/status").status_code == 401
    assert served.issuer.exchanges[-1]["error"] == "invalid_grant"
    assert "page sign-in refused (code): the token endpoint answered 400 'invalid_grant'" in served.said()
    wrong = httpx2.post(
        f"{served.issuer.url}/token",
        data={
            "grant_type": "authorization_code",
            "code": "x",
            "client_id": CLIENT,
            "code_verifier": "y" * 43,
        },
    )  # the issuer itself: an unknown code, or a verifier that is not the code's, is invalid_grant
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"


def test_signing_out_ends_the_session_and_only_a_same_origin_post_does(served: Served) -> None:
    with served.browser() as browser:
        session = cookie_value(set_cookies(sign_in(served, browser))["kbseek-session"])
        old = {"Cookie": f"kbseek-session={session}"}
        assert browser.get("/auth/logout").status_code == 405
        foreign = browser.post("/auth/logout", headers={"Origin": "https://evil.example.com"})
        assert foreign.status_code == 403 and browser.get("/api/status").status_code == 200
        out = browser.post("/auth/logout", headers={"Origin": served.base})
        assert out.status_code == 200 and "Max-Age=0" in set_cookies(out)["kbseek-session"]
        assert browser.get("/api/status").status_code == 401
    again = httpx2.get(f"{served.base}/api/search?q=rollback", headers=old)  # the old cookie, kept by hand
    assert again.status_code == 401 and again.json()["sign_in"] == "/auth/login"


def test_an_expired_session_is_refused_and_the_page_is_told_to_sign_in_again(served: Served) -> None:
    served.issuer.lifetime = 2
    with served.browser() as browser:
        session = cookie_value(set_cookies(sign_in(served, browser))["kbseek-session"])
    kept = {"Cookie": f"kbseek-session={session}"}  # sent by hand: a browser would drop it at Max-Age
    assert httpx2.get(f"{served.base}/api/status", headers=kept).status_code == 200
    time.sleep(3.1)  # past the token's exp; this server's clock skew is 0
    refused = httpx2.get(f"{served.base}/api/search?q=rollback", headers=kept)
    assert refused.status_code == 401 and refused.json()["sign_in"] == "/auth/login"
    assert not [w for w in DOCUMENT_TEXT if w in refused.text]
    assert httpx2.get(f"{served.base}/auth/session", headers=kept).status_code == 401


@pytest.mark.parametrize(
    ("knob", "value", "status", "logged"),
    [
        ("audience", "http://127.0.0.1:1/mcp", 401, "page sign-in refused (token): the access token is refused (audience)"),
        ("granted_scope", "openid profile", 403, "page sign-in refused (scope)"),
        ("id_claims", {"nonce": "another sign-in's"}, 401, "page sign-in refused (token): the ID token's nonce"),
        ("deny", True, 403, "page sign-in refused (provider): the provider answered error='access_denied'"),
    ],
)  # fmt: skip
def test_what_the_provider_issues_is_checked_before_a_session_opens(
    served: Served, knob: str, value: object, status: int, logged: str
) -> None:
    """A token for another audience, without the read scope, an ID token of another sign-in, or the
    provider saying no: no session, and the log says which."""
    setattr(served.issuer, knob, value)
    with served.browser() as browser:
        refused = sign_in(served, browser)
        assert refused.status_code == status, refused.text
        assert "kbseek-session" not in set_cookies(refused)
        assert "Max-Age=0" in set_cookies(refused)["kbseek-signin"]  # the spent flow is removed
        assert browser.get("/api/status").status_code == 401
    assert logged in served.said()


def test_the_api_changes_nothing_so_a_cross_site_request_has_nothing_to_do(served: Served) -> None:
    """The cookie is ``SameSite=Lax``: a cross-site request carries it only as a top-level ``GET``
    navigation, and every ``/api`` route is a read answered to ``GET`` only; anything else is 405."""
    with served.browser() as browser:
        sign_in(served, browser)
        for path in API:
            for method in ("POST", "PUT", "DELETE", "PATCH"):
                assert browser.request(method, path).status_code == 405, (method, path)
            assert browser.get(path).status_code == 200, path
            assert browser.get(path, headers={"Origin": "https://evil.example.com"}).status_code == 403


def test_a_server_whose_page_does_not_sign_in_is_as_it_was(module_issuer: Issuer, tmp_path: Path) -> None:
    """``/auth/*`` is no route of theirs: it goes where any unknown path went (behind the gate, a
    ``401``; without sign-in, a ``404``), no cookie is set, and ``/api`` names no sign-in."""
    with serving_with_page(tmp_path, module_issuer, page_client=False) as s:
        login = httpx2.get(f"{s.base}/auth/login")
        assert login.status_code == 401 and "set-cookie" not in login.headers
        refused = httpx2.get(f"{s.base}/api/search?q=rollback")
        assert refused.status_code == 401 and "sign_in" not in refused.json()
        assert "web page signs in" not in s.said()
    root = tmp_path / "kb"
    with serving(root, "--no-watch") as port:
        login = httpx2.get(f"http://127.0.0.1:{port}/auth/login")
        assert login.status_code == 404 and "set-cookie" not in login.headers
        assert httpx2.get(f"http://127.0.0.1:{port}/api/status").status_code == 200


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as browser:
        yield browser


@pytest.mark.parametrize(
    ("locale", "said"),
    [
        ("en-US", {"sign_in": "Sign in", "asked": "Sign in to search", "who": "Signed in as alice", "out": "Sign out"}),
        ("ja-JP", {"sign_in": "サインイン", "asked": "サインインしてください", "who": "alice としてサインイン中",
                   "out": "サインアウト"}),
    ],
)  # fmt: skip
def test_in_chromium_the_page_signs_in_searches_and_signs_out(
    browser: object, served: Served, locale: str, said: dict[str, str]
) -> None:
    """A person opens a shared search, is asked to sign in in their language, goes through the
    provider and comes back to that search, signed in; the script never sees a token."""
    page = browser.new_page(viewport={"width": 1100, "height": 760}, locale=locale)  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{served.base}/ui?q=rollback")
    page.wait_for_selector("#sign-in:not([hidden])")
    assert page.text_content("#sign-in-link") == said["sign_in"] and said["asked"] in page.text_content(
        "#message"
    )
    assert not page.is_visible("#token-form") and page.query_selector(".hit") is None
    page.click("#sign-in-link")
    page.wait_for_selector(".hit h3:has-text('Deploy runbook')")  # back at the search, which now runs
    assert page.url == f"{served.base}/ui?q=rollback"
    page.wait_for_selector("#account:not([hidden])")
    assert page.text_content("#account-name") == said["who"] and page.text_content("#sign-out") == said["out"]
    assert page.evaluate("document.cookie") == ""  # HttpOnly: the script sees no cookie at all
    assert page.evaluate("JSON.stringify(sessionStorage) + JSON.stringify(localStorage)") == "{}{}"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"ui-signed-in-{locale.split('-')[0]}.png"), full_page=True)
    page.click("#sign-out")
    page.wait_for_selector("#sign-in:not([hidden])")
    assert page.is_hidden("#account")
    assert errors == []
    page.close()
