"""The MCP tools that write notes: ``write_note``, ``edit_note``, ``move_note``, ``delete_note``.

Registered only when writing is on (``[write] enabled``, ``serve --allow-write``), so a server that
only reads lists exactly the tools it listed before (docs/decisions/0058). What a write may touch,
how it is compared with the hash it was based on and how it is indexed is the knowledge base's
(``KnowledgeBase.write_note`` and the others, ``kbseek.write``); this module carries arguments in
and answers out, and answers every refusal as an ``isError`` result that says its ``code``, the
note's current hash when there is one, and what to do.

Agents guess argument names from the tools they have used elsewhere, so the common ones are taken
as aliases (:data:`ALIASES`), mapped before the arguments are checked: the schemas keep one name
each, and an alias never widens what a call can do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from kbseek import render
from kbseek.errors import InvalidArgument, WriteNotAllowed, WriteRefused
from kbseek.facade.notes import Notes
from kbseek.kb import KnowledgeBase
from kbseek.responses import NoteChange
from kbseek.server.audit.record import note_failure
from kbseek.server.auth.identity import current_identity
from kbseek.server.resources import KbServer
from kbseek.server.slots import slotted
from kbseek.server.tool_results import tool_errors, tool_result

_F = TypeVar("_F", bound=Callable[..., Any])

WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
"""A write that adds or changes text, never destroying what it cannot give back."""
REMOVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
"""A delete (into the trash) and a create that may replace a note (``overwrite``, with its hash): a
host should ask first."""

_HASH = {"checksum": "expected_hash", "expected_checksum": "expected_hash", "hash": "expected_hash",
         "base_hash": "expected_hash", "content_hash": "expected_hash"}  # fmt: skip
ALIASES: dict[str, dict[str, str]] = {
    "write_note": {**_HASH, "text": "content", "body": "content", "replace": "overwrite", "force": "overwrite"},
    "edit_note": {
        **_HASH, "text": "content", "new_text": "content", "replacement": "content", "replace_text": "content",
        "old_text": "find", "find_text": "find", "search": "find", "heading": "section",
        "count": "expected_replacements", "frontmatter": "fields", "dryRun": "dry_run",
    },
    "move_note": {**_HASH, "destination": "new_path", "destination_path": "new_path", "to": "new_path"},
    "delete_note": {**_HASH},
}  # fmt: skip
"""Per tool, the argument names agents use elsewhere, and the name each stands for here."""
for _names in ALIASES.values():
    _names.setdefault("dryRun", "dry_run")

Operation = Literal[
    "append", "prepend", "replace_section", "insert_before_section", "insert_after_section", "find_replace",
    "set_frontmatter",
]  # fmt: skip

PathArg = Annotated[str, Field(description="Relative to the knowledge-base root, e.g. inbox/idea.md.")]
HashArg = Annotated[str, Field(description="The note's hash from search, fetch or get_document.")]
DryRunArg = Annotated[bool, Field(description="Return the diff and change nothing.")]

_TOOLS: list[tuple[Callable[..., Any], str, str, ToolAnnotations]] = []


def _tool(title: str, description: str, annotations: ToolAnnotations) -> Callable[[_F], _F]:
    def register(fn: _F) -> _F:
        _TOOLS.append((fn, title, description, annotations))
        return fn

    return register


def with_aliases(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with each alias of ``tool``'s renamed to its own name; an alias given beside the
    name it stands for, with another value, is refused rather than one silently chosen."""
    aliases = ALIASES.get(tool)
    if not aliases or not isinstance(arguments, dict):
        return arguments
    out = dict(arguments)
    for alias, name in aliases.items():
        if alias in out and alias != name:
            value = out.pop(alias)
            if name in out and out[name] != value:
                raise ToolError(
                    f"{alias} and {name} name one argument of {tool}, with two values: send only {name}"
                )
            out[name] = value
    return out


def _writer(ctx: Context) -> Notes:
    """The knowledge base this caller writes in, once its credential may write."""
    server = ctx.mcp_server
    assert isinstance(server, KbServer)
    identity = current_identity()
    if identity is not None and not identity.may_write:
        raise WriteNotAllowed(
            "this credential may read but not write: writing needs the write scope of sign-in; ask the "
            "server's operator for it",
            "",
        )
    return server.caller_kb().notes


@contextmanager
def _refusals(tool: str) -> Iterator[list[CallToolResult]]:
    """A write's refusal as an ``isError`` result with its code and the note's current hash; any other
    error as every tool answers it (``tool_errors``)."""
    refused: list[CallToolResult] = []
    with tool_errors(tool):
        try:
            yield refused
        except WriteRefused as exc:
            note_failure(exc)  # the record of reads says how the call ended
            refused.append(refusal(exc))


def refusal(exc: WriteRefused) -> CallToolResult:
    current = f" The note's hash now is {exc.current_hash}." if exc.current_hash else ""
    said = str(exc).rstrip(".")
    data: dict[str, Any] = {"code": exc.code, "path": exc.path, "message": str(exc)}
    if exc.current_hash:
        data["current_hash"] = exc.current_hash
    return CallToolResult(
        content=[TextContent(type="text", text=f"{exc.code}: {said}.{current} Nothing was written.")],
        structured_content=data,
        is_error=True,
    )


def _answer(change: NoteChange) -> CallToolResult:
    return tool_result(change, render.note_change_text(change))


@_tool(
    "Create a note",
    "Create a Markdown or text note. An existing file is refused (code exists) unless overwrite=true "
    "with its expected_hash. Answers the note's hash and the diff; try dry_run first for a large note.",
    REMOVES,
)
@slotted
def write_note(
    ctx: Context,
    path: PathArg,
    content: Annotated[str, Field(description="The whole note.")],
    overwrite: Annotated[bool, Field(description="Replace an existing note (needs expected_hash).")] = False,
    expected_hash: Annotated[str | None, Field(description="The replaced note's hash.")] = None,
    dry_run: DryRunArg = False,
) -> Annotated[CallToolResult, NoteChange]:
    with _refusals("write_note") as refused:
        change = _writer(ctx).write(
            path, content, overwrite=overwrite, expected_hash=expected_hash, dry_run=dry_run
        )
        return _answer(change)
    return refused[0]


@_tool(
    "Edit a note",
    "Change part of a note read with its hash: append, prepend, replace_section or insert_before/after_"
    "section (section: a heading path as search shows it), find_replace (find, content, "
    "expected_replacements), set_frontmatter (fields; null deletes a key). A stale hash is refused "
    "(code conflict) with the current one: read the note again, then retry.",
    WRITES,
)
@slotted
def edit_note(
    ctx: Context,
    path: PathArg,
    expected_hash: HashArg,
    operation: Operation,
    content: Annotated[str | None, Field(description="Text to add, or the replacement.")] = None,
    section: Annotated[str | None, Field(description="Heading path, e.g. 'Deploy > Rollback'.")] = None,
    find: Annotated[str | None, Field(description="Exact text to replace.")] = None,
    expected_replacements: Annotated[int, Field(ge=1, description="How many times find occurs.")] = 1,
    fields: Annotated[dict[str, Any] | None, Field(description="Front-matter keys to set.")] = None,
    dry_run: DryRunArg = False,
) -> Annotated[CallToolResult, NoteChange]:
    with _refusals("edit_note") as refused:
        change = _writer(ctx).edit(
            path, expected_hash=expected_hash, operation=operation, content=content, section=section, find=find,
            expected_replacements=expected_replacements, fields=fields, dry_run=dry_run,
        )  # fmt: skip
        return _answer(change)
    return refused[0]


@_tool(
    "Move or rename a note",
    "Move a note to new_path (never over an existing file); links to it in other notes are rewritten, "
    "each as a guarded edit, and listed in links_rewritten.",
    WRITES,
)
@slotted
def move_note(
    ctx: Context,
    path: PathArg,
    new_path: Annotated[str, Field(description="Where it goes, relative to the root.")],
    expected_hash: HashArg,
    dry_run: DryRunArg = False,
) -> Annotated[CallToolResult, NoteChange]:
    with _refusals("move_note") as refused:
        change = _writer(ctx).move(path, new_path, expected_hash=expected_hash, dry_run=dry_run)
        return _answer(change)
    return refused[0]


@_tool(
    "Delete a note",
    "Move a note to kbseek's trash (restorable by a person with `kbseek notes restore`); never a "
    "permanent delete.",
    REMOVES,
)
@slotted
def delete_note(
    ctx: Context, path: PathArg, expected_hash: HashArg, dry_run: DryRunArg = False
) -> Annotated[CallToolResult, NoteChange]:
    with _refusals("delete_note") as refused:
        change = _writer(ctx).delete(path, expected_hash=expected_hash, dry_run=dry_run)
        return _answer(change)
    return refused[0]


def save_text(what: str, folder: str) -> str:
    """The ``save_to_kb`` prompt: the read → hash → edit loop, with the search for a note that says
    it already first, so the knowledge base gains an edit rather than a near-duplicate."""
    return f"""\
Save this to the knowledge base, where the next person or agent will find it:

{what}

1. Call search(query=...) with its key terms. If a note already covers it, read it with get_document(path) \
and note its `hash`; change it with edit_note(path, expected_hash=hash, operation=...) (append, \
replace_section, find_replace …) rather than writing a second note.
2. Otherwise call write_note(path=..., content=...) with a path under {folder}/ named for the subject, \
in Markdown: a heading, then the content, with the sources it came from.
3. For a large change, call it first with dry_run=true and check the diff.
4. If a call answers `conflict`, the note changed since you read it: read it again, redo the change on what it \
holds now, and send the new hash. If it answers `exists`, choose another path or edit that note. Nothing is \
written when a call is refused.
"""


def register_note_tools(server: MCPServer[Any], kb: KnowledgeBase) -> None:
    """Add the write tools and the ``save_to_kb`` prompt to ``server`` (a server whose knowledge base
    ``kb`` lets agents write), and have the trail of writes name the caller of each."""
    for fn, title, description, hints in _TOOLS:
        server.tool(title=title, annotations=hints, description=description)(fn)
    kb.notes.client = caller_name
    folder = (kb.settings.write.root_folders or ("inbox",))[0] or "the knowledge base's root"

    @server.prompt(
        name="save_to_kb",
        title="Save to the knowledge base",
        description="Save something worked out (a fix, a decision, an answer) as a note, or into the note "
        "that already covers it, without losing anyone's edits.",
    )
    def save_to_kb(what: Annotated[str, Field(description="What to save, in a sentence or more.")]) -> str:
        if not what.strip():
            raise InvalidArgument("what is empty: say what to save")
        return save_text(what.strip(), folder)


def caller_name() -> str | None:
    """Who is writing, as the trail names them: the signed-in subject, else the static token's name,
    else the OAuth client; ``None`` on a server without sign-in (stdio, a local HTTP server)."""
    identity = current_identity()
    if identity is None:
        return None
    return identity.subject or (f"token:{identity.credential}" if identity.credential else identity.client_id)
