"""One record per authenticated call, built from what the call answered; nothing for anyone else.

The surfaces call :class:`Recorder` at one place each: the MCP server's request middleware (tools,
resource reads, prompts: :meth:`Recorder.mcp_middleware`), the HTTP JSON API's answer
(``server/web.py``), and the gate's refusals (``server/auth/gate.py``). The record is made from the
answer's data (the paths of a search's hits, of fetched passages, of a read document, of related
documents), never from retrieval internals, and never holds a token or document text. A call
without a verified caller (stdio, a server without sign-in) returns at the first line.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from mcp import MCPError
from pydantic import BaseModel

from kbseek.server.audit.writer import AuditWriter, now
from kbseek.server.auth.identity import KbAccessToken, current_identity
from kbseek.uris import parse_collection_uri, parse_uri

log = logging.getLogger("kbseek.audit")

RECORDED_METHODS = ("tools/call", "resources/read", "prompts/get")
"""The MCP requests that read the knowledge base; listing tools or pinging reads nothing."""
QUERY_ARGUMENTS = ("query", "question", "topic")
"""The arguments that hold what a caller asked, recorded only with ``[audit].queries``."""
MAX_QUERY_CHARS = 1000
"""A recorded query is cut here: the record is for reading by people, and a line stays short."""

_failure: ContextVar[list[str] | None] = ContextVar("kbseek_audit_failure", default=None)
"""The class of the error a tool's body raised, noted by ``tool_results.tool_errors``: the SDK turns
it into an ``isError`` result before the middleware sees the answer."""


def note_failure(exc: BaseException) -> None:
    """Note ``exc``'s class for the record of the call being served (a no-op when none is kept)."""
    noted = _failure.get()
    if noted is not None:
        noted.append(type(exc).__name__)


class Recorder:
    """Builds records and hands them to the :class:`AuditWriter`."""

    def __init__(self, writer: AuditWriter, *, queries: bool, collection: str, several: bool) -> None:
        self.writer = writer
        self.queries = queries
        self.collection = collection
        """The collection a call that names none reads: the one served, or a library's default."""
        self.several = several

    def record(
        self, identity: KbAccessToken | None, *, tool: str, outcome: str, paths: list[str] | None = None,
        collection: str | list[str] | None = None, query: str | None = None,
    ) -> None:  # fmt: skip
        """Write one record for ``identity``'s call (or for a refused one: ``identity`` may be ``None``)."""
        record: dict[str, Any] = {
            "time": now(),
            "subject": identity.subject if identity else None,
            "client": identity.client_id if identity else None,
            "credential": identity.credential if identity else None,
            "method": identity.method if identity else None,
            "tool": tool,
            "collection": collection,
            "paths": paths or [],
            "outcome": outcome,
        }
        if self.queries and query:
            record["query"] = query[:MAX_QUERY_CHARS]
        self.writer.put(record)

    def answered(
        self, identity: KbAccessToken, tool: str, data: Mapping[str, Any] | BaseModel | None, *,
        outcome: str, asked: Mapping[str, Any] | None = None,
    ) -> None:  # fmt: skip
        """Record a tool's or a route's answer ``data`` (a model, or its JSON as sent); ``asked``: the
        call's arguments or query parameters (a collection named, the query)."""
        if isinstance(data, BaseModel):
            data = data.model_dump(mode="json")
        paths, kbs = _read_paths(data or {})
        named = (asked or {}).get("kb")
        if kbs:
            collection: str | list[str] | None = kbs[0] if len(kbs) == 1 else kbs
        elif isinstance(named, str) and named:
            collection = named
        elif isinstance(named, list) and named:
            collection = [str(n) for n in named]
        else:
            collection = None if self.several and tool == "fetch" else self._default_for(identity)
        if self.several and len(kbs) > 1:  # one answer over several: each path says its collection
            paths = [f"{kb}:{path}" for kb, path in _labelled(data or {})]
        query = next((str(asked[k]) for k in QUERY_ARGUMENTS if asked and asked.get(k)), None)
        self.record(identity, tool=tool, outcome=outcome, paths=paths, collection=collection, query=query)

    async def mcp_middleware(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """Server middleware: records each tool call, resource read and prompt of a verified caller."""
        method = str(getattr(ctx, "method", ""))
        identity = current_identity() if method in RECORDED_METHODS else None
        if identity is None:
            return await call_next(ctx)
        params: Mapping[str, Any] = getattr(ctx, "params", None) or {}
        noted: list[str] = []
        reset = _failure.set(noted)
        try:
            result = await call_next(ctx)
        except MCPError as exc:
            self._call(identity, method, params, type(exc.__cause__ or exc).__name__)
            raise
        except Exception as exc:
            self._call(identity, method, params, type(exc).__name__)
            raise
        finally:
            _failure.reset(reset)
        try:
            self._mcp_answer(identity, method, params, result, noted)
        except Exception:  # the record must never break an answer
            log.exception("audit record: could not record %s", method)
        return result

    def _mcp_answer(
        self, identity: KbAccessToken, method: str, params: Mapping[str, Any], result: Any, noted: list[str]
    ) -> None:
        if method == "tools/call":
            arguments = params.get("arguments") or {}
            if isinstance(result, dict):  # the result as JSON (what the SDK's handler hands on)
                data, failed = result.get("structuredContent"), bool(result.get("isError"))
            else:  # a CallToolResult
                data, failed = (
                    getattr(result, "structured_content", None),
                    bool(getattr(result, "is_error", False)),
                )
            outcome = (noted[-1] if noted else "ToolError") if failed else "ok"
            self.answered(
                identity, str(params.get("name")), None if failed else data, outcome=outcome, asked=arguments
            )
        elif method == "resources/read":
            self._call(identity, method, params, "ok")
        else:
            arguments = params.get("arguments") or {}
            query = next((str(arguments[k]) for k in QUERY_ARGUMENTS if arguments.get(k)), None)
            self.record(
                identity, tool=f"prompts/get {params.get('name')}", outcome="ok",
                collection=self._default_for(identity), query=query,
            )  # fmt: skip

    def _default_for(self, identity: KbAccessToken) -> str:
        """The collection a prompt or a read without one reads for ``identity``: the server's default,
        or the first of the caller's when the default is not one of them (``Library.only``)."""
        mine = identity.collections
        return self.collection if not mine or self.collection in mine else mine[0]

    def _call(self, identity: KbAccessToken, method: str, params: Mapping[str, Any], outcome: str) -> None:
        """A resource read's record (answered or not), or the record of any other MCP call that raised."""
        if method != "resources/read":
            name = params.get("name")
            self.record(
                identity, tool=f"{method} {name}" if method == "prompts/get" else str(name), outcome=outcome
            )
            return
        uri = str(params.get("uri", ""))
        paths: list[str] = []
        collection: str | None = self.collection
        try:
            ref = parse_collection_uri(uri) if self.several else parse_uri(uri)
            collection = ref.kb or self.collection
            if ref.kind == "doc" and outcome == "ok":  # as for a tool: paths read, not paths asked for
                paths = [ref.path]
        except Exception:  # a malformed uri: recorded without a path
            pass
        self.record(identity, tool=method, outcome=outcome, paths=paths, collection=collection)

    @contextmanager
    def route(self, tool: str, asked: Mapping[str, Any]) -> Iterator[Callable[[BaseModel | None, str], None]]:
        """For an HTTP JSON API handler: yields ``done(answer, outcome)``, a no-op without a caller."""
        identity = current_identity()

        def done(answer: BaseModel | None, outcome: str) -> None:
            if identity is not None:
                try:
                    self.answered(identity, tool, answer, outcome=outcome, asked=asked)
                except Exception:
                    log.exception("audit record: could not record %s", tool)

        yield done


def _read_paths(data: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The document paths an answer returned or read, and the collections its items name."""
    items = data.get("hits") if isinstance(data.get("hits"), list) else data.get("passages")
    if isinstance(items, list):
        paths = [str(i["path"]) for i in items if isinstance(i, dict) and "path" in i]
        kbs = sorted({str(i["kb"]) for i in items if isinstance(i, dict) and i.get("kb")})
        return list(dict.fromkeys(paths)), kbs
    if "text" in data and isinstance(data.get("path"), str):  # a document read
        return [data["path"]], []
    return [], []


def _labelled(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    items = data.get("hits") or []
    pairs = [(str(i.get("kb")), str(i["path"])) for i in items if isinstance(i, dict) and "path" in i]
    return list(dict.fromkeys(pairs))
