"""The web page: ``/ui`` for people, ``/api/*`` for its script, both over the knowledge base MCP uses.

The page is static (``server/ui/``), so everything it shows comes from the same
``KnowledgeBase.search``/``status``/``read_document`` calls as the tools. It needs no
external asset and works offline; a Content-Security-Policy of ``'self'`` makes
that a rule the browser enforces, and the script renders document text with
``textContent`` only, so a note holding ``<script>`` is shown, never run.

When the server holds several collections (``kbseek serve --kb A --kb B``), ``/api/collections``
names them, ``/api/search`` takes ``kb=`` (repeatable; all by default) and answers one ranking
through :meth:`Library.search`, each hit naming its ``kb``, and the document, related, status and
topics endpoints take ``kb=`` to address one collection (the default when omitted). With one
knowledge base every answer is the one it gave before.

It is served to loopback clients only unless ``--ui-allow-remote``: the page
reads the whole knowledge base, and Host/Origin checks alone do not stop a
neighbour on the network from opening it.
"""

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kbseek import Filters, KnowledgeBase
from kbseek.errors import InvalidArgument
from kbseek.facade.page import for_the_page
from kbseek.filters import where_from_text
from kbseek.library import Library, collection_name
from kbseek.numbers import whole_number_argument
from kbseek.responses import StatusResponse
from kbseek.search_query import SearchQuery
from kbseek.server.audit.record import Recorder
from kbseek.server.auth.collections import readable
from kbseek.server.errors import translate
from kbseek.server.slots import in_slot
from kbseek.server.tool_results import ERROR_CHARS
from kbseek.text.quoting import ECHO_CHARS, bounded_middle, shown_value

ASSETS = {
    "/ui": ("index.html", "text/html; charset=utf-8"),
    "/ui/messages.js": ("messages.js", "text/javascript; charset=utf-8"),
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


def _asset(name: str) -> bytes:
    return resources.files("kbseek.server").joinpath("ui", name).read_bytes()


def _int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    return whole_number_argument(name, raw)


def _flag(request: Request, name: str) -> bool:
    """A true-or-false parameter, as strictly as a number is read (decision 0048): absent is false."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return False
    if raw in ("true", "1"):
        return True
    if raw in ("false", "0"):
        return False
    raise InvalidArgument(f"{name} must be true or false (or 1 or 0), not {shown_value(raw)}")


def query_text_error(query_string: bytes) -> str | None:
    """Why a query string's parameters are not text, or ``None`` when each one is UTF-8.

    The query string is percent-encoded UTF-8 (``%E6%97%A5`` for 日). Decoded as Starlette does, an
    invalid sequence becomes U+FFFD, so ``q=%ED%A0%80`` (a UTF-16 surrogate encoded as if it were a
    character) or ``q=%FF`` would be searched for as replacement characters; it is a 400 saying so
    instead, naming the parameter.
    """
    for pair in query_string.split(b"&"):
        name, _, value = pair.partition(b"=")
        for is_value, part in ((False, name), (True, value)):
            raw = unquote_to_bytes(part.replace(b"+", b" "))
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                label = bounded_middle(unquote_to_bytes(name).decode("utf-8", "replace"), ECHO_CHARS)
                where = f"parameter {label!r}" if is_value else "a parameter name"
                if _is_surrogate(raw):
                    return (
                        f"{where} holds a UTF-16 surrogate encoded as UTF-8 (%ED%A0%80 to %ED%BF%BF), which is "
                        "not text: send the text percent-encoded as UTF-8"
                    )
                return f"{where} is not UTF-8 text: send the text percent-encoded as UTF-8"
    return None


def _is_surrogate(raw: bytes) -> bool:
    """Whether ``raw``'s only fault as UTF-8 is that it encodes UTF-16 surrogates."""
    try:
        raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return False
    return True


def _json(model: BaseModel) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"), headers=SECURITY_HEADERS)


def _error(status: int, message: str) -> JSONResponse:
    """An error answer, its message cut in the middle to :data:`ERROR_CHARS` as the MCP surface cuts
    its own (T3): a refusal quoting a long parameter must not come back as long as the request."""
    return JSONResponse(
        {"error": bounded_middle(message, ERROR_CHARS)}, status_code=status, headers=SECURITY_HEADERS
    )


async def _answer(
    request: Request, call: Callable[[], BaseModel], audit: Recorder | None = None
) -> JSONResponse:
    """Run a blocking knowledge-base call off the event loop; any error is answered with the error
    table's status and text (a refusal's own message, a bug's generic one). A query string whose
    parameters are not UTF-8 text is answered 400 before anything runs. With ``audit``, a signed-in
    caller's call is recorded here, the one place every ``/api`` answer passes."""
    if audit is None:
        return await _run(request, call, _unrecorded)
    params = request.query_params
    asked = {"query": params.get("q"), "kb": [n for n in params.getlist("kb") if n.strip()]}
    with audit.route(request.url.path, asked) as done:
        return await _run(request, call, done)


def _unrecorded(answer: BaseModel | None, outcome: str) -> None:
    """What :func:`_run` reports to when nothing is recorded."""


async def _run(
    request: Request, call: Callable[[], BaseModel], done: Callable[[BaseModel | None, str], None]
) -> JSONResponse:
    if (problem := query_text_error(request.scope.get("query_string", b""))) is not None:
        done(None, "InvalidArgument")
        return _error(400, problem)
    try:
        answer = await in_slot(call)
    except Exception as exc:
        done(None, type(exc).__name__)
        status, text = translate(exc, f"GET {request.url.path}")
        return _error(status.http, text)
    done(answer, "ok")
    return _json(answer)


class Collection(BaseModel):
    name: str
    root: str | None
    """The folder's name (never its full path), or ``None`` for a server reading a database index."""
    documents: int


class Collections(BaseModel):
    """What ``/api/collections`` answers: the page shows a picker when it lists more than one."""

    default: str
    collections: list[Collection]


def _collection(name: str, kb: KnowledgeBase) -> Collection:
    return Collection(name=name, root=kb.root.name if kb.root else None, documents=kb.summary().documents)


def without_machine_paths(status: StatusResponse, root: Path | None) -> StatusResponse:
    """The status as a caller over the network may see it: the knowledge base named by its folder's
    name, the index by its path within the knowledge base (or its file name when it lives elsewhere),
    and those paths written the same way wherever a note or error quotes them.

    Where the server keeps its files is not the caller's business, and on a server opened to a team
    (``--ui-allow-remote``) it tells a neighbour the account's name and the folder layout. A database
    index's location is a URL already shown without its password, and is kept.
    """
    swaps: list[tuple[str, str]] = []
    index = Path(status.index_path)
    if index.is_absolute():
        shown = index.name
        if root is not None and index.is_relative_to(root):
            shown = index.relative_to(root).as_posix()
        swaps.append((status.index_path, shown))
    if root is not None:
        swaps += [(f"{root}/", ""), (str(root), root.name)]

    def scrub(text: str | None) -> str | None:
        for absolute, shown in swaps:
            text = text.replace(absolute, shown) if text else text
        return text

    return status.model_copy(
        update={
            "root": root.name if root is not None else None,
            "index_path": scrub(status.index_path),
            "notes": [scrub(note) for note in status.notes],
            "last_error": scrub(status.last_error),
            "skipped": [f.model_copy(update={"reason": scrub(f.reason)}) for f in status.skipped],
            "warnings": [f.model_copy(update={"reason": scrub(f.reason)}) for f in status.warnings],
        }
    )


def _filters(request: Request) -> Filters:
    """A search's filters from the query string, each as the page's URL keeps it: repeated ``tag``,
    ``tag_any``, ``glob``, ``type`` and ``where`` (``field=value``, ``field``, ``!field``)."""
    params = request.query_params

    def listed(name: str) -> list[str]:
        return [v for v in params.getlist(name) if v.strip()]

    return Filters(
        path_prefix=params.get("path_prefix") or None, tags=listed("tag"), tags_any=listed("tag_any"),
        path_globs=listed("glob"), types=listed("type"), after=params.get("after") or None,
        before=params.get("before") or None, where=where_from_text(listed("where")) or None,
    )  # fmt: skip


def build_web_app(
    kb: KnowledgeBase, library: Library | None = None, audit: Recorder | None = None
) -> Starlette:
    """The page and its API over ``kb``, or over ``library``'s collections when it is given (``kb`` is
    then its default); ``audit`` records a signed-in caller's calls."""

    served = collection_name(kb.root) if kb.root else "kb"
    """The name of the one knowledge base served without a library, as ``/api/collections`` gives it."""

    def only_served(names: list[str]) -> None:
        """With one knowledge base, a ``kb=`` naming another is refused as a library refuses it: a
        caller that believed it had chosen a collection would otherwise read this one's answer."""
        unknown = [n for n in names if n != served]
        if unknown:
            raise InvalidArgument(
                f"no collection {', '.join(map(repr, unknown))}: the collections are {served}"
            )

    def chosen(request: Request) -> KnowledgeBase:
        """The one knowledge base a read addresses: ``kb=``, or the caller's default."""
        name = request.query_params.get("kb") or None
        if library is not None:
            mine = readable(library)
            return mine[mine.pick_one(name)]
        only_served([name] if name else [])
        return kb

    def collections_answer() -> BaseModel:
        if library is None:
            return Collections(default=served, collections=[_collection(served, kb)])
        mine = readable(library)
        return Collections(default=mine.default, collections=[_collection(n, k) for n, k in mine])

    async def asset(request: Request) -> Response:
        name, media_type = ASSETS[request.url.path]
        return Response(_asset(name), media_type=media_type, headers=SECURITY_HEADERS)

    async def search(request: Request) -> Response:
        query = request.query_params.get("q", "")

        def call() -> BaseModel:
            sort = request.query_params.get("sort") or "relevance"
            if not query.strip() and sort == "relevance":  # another sort is checked, and named, by the search
                raise InvalidArgument(
                    "q is empty: pass the words or question to search for, e.g. /api/search?q=rollback, "
                    "or sort=newest to list the newest documents"
                )
            names = [n for n in request.query_params.getlist("kb") if n.strip()]
            asked = SearchQuery(
                query, also=request.query_params.getlist("also"), filters=_filters(request), sort=sort,
                limit=_int_param(request, "limit"), snippet_chars=_int_param(request, "snippet_chars"),
                explain=_flag(request, "explain"),
            )  # fmt: skip
            if library is not None:  # several, or one: the library answers as the knowledge base would
                return for_the_page(
                    readable(library).search(asked, kb=names or None), ranked=sort == "relevance"
                )
            only_served(names)
            return for_the_page(kb.search(asked), ranked=sort == "relevance")

        return await _answer(request, call, audit)

    async def status(request: Request) -> Response:
        def call() -> BaseModel:
            core = chosen(request)
            return without_machine_paths(core.status(), core.root)

        return await _answer(request, call, audit)

    async def topics(request: Request) -> Response:
        return await _answer(request, lambda: chosen(request).topics(), audit)

    async def collections(request: Request) -> Response:
        return await _answer(request, collections_answer, audit)

    async def document(request: Request) -> Response:
        path = request.query_params.get("path", "")

        def call() -> BaseModel:
            if not path:
                raise InvalidArgument("path is empty: pass a document path from a search hit")
            offset = _int_param(request, "offset") or 0
            return chosen(request).read_document(
                path, offset=offset, max_chars=_int_param(request, "max_chars")
            )

        return await _answer(request, call, audit)

    async def related(request: Request) -> Response:
        """The documents related to one, shown beside it on the page."""
        path = request.query_params.get("path") or None
        chunk_id = request.query_params.get("chunk_id") or None
        return await _answer(
            request,
            lambda: chosen(request).related(path, chunk_id=chunk_id, limit=_int_param(request, "limit")),
            audit,
        )

    routes: list[Any] = [Route(path, asset) for path in ASSETS]
    routes += [
        Route("/api/search", search),
        Route("/api/status", status),
        Route("/api/topics", topics),
        Route("/api/document", document),
        Route("/api/related", related),
        Route("/api/collections", collections),
    ]
    api = sorted(r.path for r in routes if r.path.startswith("/api/"))

    async def unrouted(request: Request, exc: Exception) -> Response:
        """The router's 404 and 405 as JSON, like every other answer, naming what would have worked."""
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            answer = _error(
                405, f"{request.method} is not answered on {request.url.path}: send GET (or HEAD)"
            )
            answer.headers.update(exc.headers or {})
            return answer
        return _error(
            exc.status_code, f"nothing is at {request.url.path}: the API's routes are {', '.join(api)}"
        )

    return Starlette(routes=routes, exception_handlers={404: unrouted, 405: unrouted})
