"""The web page: ``/ui`` for people, ``/api/*`` for its script, both over the knowledge base MCP uses.

The page is static (``server/ui/``), so everything it shows comes from the same
``KnowledgeBase.search``/``status``/``read_document`` calls as the tools. It needs no
external asset and works offline; a Content-Security-Policy of ``'self'`` makes
that a rule the browser enforces, and the script renders document text with
``textContent`` only, so a note holding ``<script>`` is shown, never run.

It is served to loopback clients only unless ``--ui-allow-remote``: the page
reads the whole knowledge base, and Host/Origin checks alone do not stop a
neighbour on the network from opening it.
"""

from collections.abc import Callable
from importlib import resources
from typing import Any

import anyio.to_thread
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kbseek import KnowledgeBase
from kbseek.errors import DocumentNotFound, DocumentRefused, KbError, PathOutsideRoot

ASSETS = {
    "/ui": ("index.html", "text/html; charset=utf-8"),
    "/ui/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/ui/app.css": ("app.css", "text/css; charset=utf-8"),
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


class BadParameter(ValueError):
    """A query-string parameter the API cannot use; the message says which and why."""


def _asset(name: str) -> bytes:
    return resources.files("kbseek.server").joinpath("ui", name).read_bytes()


def _int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise BadParameter(f"{name} must be a whole number, not {raw!r}") from None


def _json(model: BaseModel) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"), headers=SECURITY_HEADERS)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=SECURITY_HEADERS)


async def _answer(call: Callable[[], BaseModel]) -> JSONResponse:
    """Run a blocking knowledge-base call off the event loop; kbseek's refusals become 4xx with their message."""
    try:
        return _json(await anyio.to_thread.run_sync(call))
    except (BadParameter, PathOutsideRoot) as exc:
        return _error(400, str(exc))
    except DocumentNotFound as exc:
        return _error(404, str(exc))
    except DocumentRefused as exc:  # a link, an unsupported or oversize file: there, but not served
        return _error(403, str(exc))
    except KbError as exc:
        return _error(409, str(exc))


def build_web_app(kb: KnowledgeBase) -> Starlette:
    async def asset(request: Request) -> Response:
        name, media_type = ASSETS[request.url.path]
        return Response(_asset(name), media_type=media_type, headers=SECURITY_HEADERS)

    async def search(request: Request) -> Response:
        query = request.query_params.get("q", "")
        if not query.strip():
            return _error(
                400, "q is empty: pass the words or question to search for, e.g. /api/search?q=rollback"
            )

        def call() -> BaseModel:
            return kb.search(
                query,
                limit=_int_param(request, "limit"),
                path_prefix=request.query_params.get("path_prefix") or None,
                tags=[t for t in request.query_params.getlist("tag") if t.strip()],
                snippet_chars=_int_param(request, "snippet_chars"),
            )

        return await _answer(call)

    async def status(_: Request) -> Response:
        return await _answer(kb.status)

    async def topics(_: Request) -> Response:
        return await _answer(kb.topics)

    async def document(request: Request) -> Response:
        path = request.query_params.get("path", "")
        if not path:
            return _error(400, "path is empty: pass a document path from a search hit")

        def call() -> BaseModel:
            offset = _int_param(request, "offset") or 0
            return kb.read_document(path, offset=offset, max_chars=_int_param(request, "max_chars"))

        return await _answer(call)

    routes: list[Any] = [Route(path, asset) for path in ASSETS]
    routes += [
        Route("/api/search", search),
        Route("/api/status", status),
        Route("/api/topics", topics),
        Route("/api/document", document),
    ]
    return Starlette(routes=routes)
