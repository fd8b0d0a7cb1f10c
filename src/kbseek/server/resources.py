"""MCP resources: ``kb://doc/{+path}`` documents and ``kb://topic/<prefix>`` groups (D2–D4).

The listing is the topic groups, not one entry per document, so a large
knowledge base does not flood a host's ``@`` menu. Every listing, topic body
and read comes from the knowledge base's one servable predicate, so what is offered is
exactly what a read accepts.
"""

import functools
from collections.abc import Iterable
from typing import Any

from mcp import MCPError
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.types import Resource as MCPResource
from mcp.types import ResourceTemplate as MCPResourceTemplate
from mcp.types import Tool as MCPTool
from pydantic import AnyUrl

from kbseek import IndexReport, KnowledgeBase
from kbseek.errors import TopicNotFound
from kbseek.library import Library
from kbseek.server.auth.collections import readable
from kbseek.server.errors import translate
from kbseek.server.notify import ListChangedNotifier, declare_list_changed
from kbseek.server.slots import in_slot
from kbseek.uris import DOC_PREFIX, parse_collection_uri, parse_uri, topic_uri

DOC_TEMPLATE = DOC_PREFIX + "{+path}"


def describe(template: str, library: Library) -> str:
    """A tool description naming ``library``'s collections and its default."""
    return template.format(names=", ".join(library.names), default=library.default)


class KbServer(MCPServer[Any]):
    """The MCP server with resources served from the index instead of a static registry."""

    def __init__(self, kb: KnowledgeBase, **kwargs: Any) -> None:
        self.kb = kb
        self.library: Library | None = None
        """Several collections (set by ``build_server``): URIs then carry the collection's name."""
        self.templates: dict[str, str] = {}
        """Tool descriptions that name the collections, by tool: ``{names}`` and ``{default}``."""
        super().__init__(**kwargs)
        self.notifier = ListChangedNotifier(self._subscriptions)
        self._lowlevel_server.middleware.append(self.notifier)
        declare_list_changed(self._lowlevel_server)
        kb.on_index_change(self._index_changed)

    def readable(self) -> Library | None:
        """The collections the caller of this request may read (``server/auth/collections.py``);
        ``None`` for a server of one knowledge base, whose caller the gate has already let in."""
        return None if self.library is None else readable(self.library)

    def caller_kb(self, name: str | None = None) -> KnowledgeBase:
        """The knowledge base a read without a collection, or naming ``name``, addresses for this
        caller: the first it may read when the server's default is not one of them."""
        library = self.readable()
        if library is None:
            return self.kb
        return library[library.pick_one(name)]

    def described_for_caller(self, tools: list[MCPTool]) -> list[MCPTool]:
        """``tools`` with their descriptions naming only the collections this caller may read: a
        collection it may not read is not named in the tool list either."""
        library = self.readable()
        if library is None or library is self.library:
            return tools
        return [
            t.model_copy(update={"description": describe(self.templates[t.name], library)})
            if t.name in self.templates else t
            for t in tools
        ]  # fmt: skip

    def _index_changed(self, report: IndexReport) -> None:
        if report.listing_changed:
            self.notifier.broadcast_from_thread()

    async def list_resources(self) -> list[MCPResource]:
        library = self.readable()
        if library is None:
            return self._topics(None, await in_slot(self.kb.topic_groups))
        return [r for name, kb in library for r in self._topics(name, await in_slot(kb.topic_groups))]

    @staticmethod
    def _topics(kb: str | None, groups: list[tuple[str, int]]) -> list[MCPResource]:
        where = f"{kb}: " if kb is not None else ""
        return [
            MCPResource(
                uri=topic_uri(prefix, kb),
                name=f"{where}topic {prefix or '(root)'}",
                title=where + (prefix.rstrip("/") or "Knowledge base root"),
                description=f"{count} document{'s' if count != 1 else ''}",
                mime_type="text/markdown",
            )
            for prefix, count in groups
        ]

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        return [
            MCPResourceTemplate(
                uri_template=DOC_TEMPLATE if self.library is None else "kb://{kb}/doc/{+path}",
                name="document",
                title="Knowledge-base document",
                description=(
                    "A document by its path relative to the knowledge-base root, as indexed; "
                    "the uri field of search hits and topic listings gives it."
                ),
            )
        ]

    async def read_resource(self, uri: AnyUrl | str, context: Any = None) -> Iterable[ReadResourceContents]:
        return await in_slot(functools.partial(self._read, str(uri), self.readable()))

    def _read(self, uri: str, library: Library | None) -> list[ReadResourceContents]:
        """Read one resource from ``library`` (the caller's collections; ``None``: the one knowledge
        base); any error is answered with the error table's JSON-RPC code and text."""
        try:
            return self._contents(uri, library)
        except Exception as exc:
            answer, text = translate(exc, f"resources/read {uri!r}")
            raise MCPError(code=answer.jsonrpc, message=text, data={"uri": uri}) from exc

    def _contents(self, uri: str, library: Library | None) -> list[ReadResourceContents]:
        ref = parse_uri(uri) if library is None else parse_collection_uri(uri)
        kb = self.kb if library is None else library[library.pick_one(ref.kb)]
        if ref.kind == "topic":
            body = kb.topic_body(ref.path)
            if body is None:
                raise TopicNotFound(f"no topic {uri!r}: resources/list shows the topics there are")
            return [ReadResourceContents(content=body, mime_type="text/markdown")]
        doc = kb.read_resource_document(ref.path)
        meta = {"hash": doc.hash} if doc.hash else None  # only where agents may write (decision 0058)
        return [ReadResourceContents(content=doc.text, mime_type=doc.media_type, meta=meta)]
