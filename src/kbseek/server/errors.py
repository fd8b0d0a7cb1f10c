"""How every surface answers an error: one table, looked up by the MCP tools, resources and prompts,
the web API and the CLI.

The core raises (:mod:`kbseek.errors`) and knows no protocol; this module is the one place that
turns an exception into a protocol's answer. Five surfaces each with their own ``except`` ladder
drifted apart (a bug once came back as HTTP 409, "change your request"); with one table a new
error class gets one row here, and a test fails until it has one.

A refusal (:class:`~kbseek.errors.KbError`) keeps its message, which says what to do. A bug
(:class:`~kbseek.errors.KbBug`, or any exception that is not a ``KbError``) gets the same generic
answer everywhere: the caller can do nothing about it but report it, its text may hold internals,
and an agent told "invalid input" would only retry with other input. Its traceback goes to the log.

This module imports neither the MCP SDK nor click, so the CLI reads it without loading either.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kbseek.errors import (
    BadResourceUri,
    ConfigError,
    DocumentNotFound,
    DocumentRefused,
    DocumentTooLarge,
    EmbedderUnavailable,
    IndexIncompatible,
    IndexLocked,
    IndexReadOnly,
    InvalidArgument,
    KbError,
    LinkRefused,
    NotARegularFile,
    NoteConflict,
    NoteExists,
    NoteNotFound,
    NoteTooLarge,
    NotServable,
    NotText,
    PathOutsideRoot,
    ServiceError,
    StoreUnavailable,
    TopicNotFound,
    UnknownField,
    UnsupportedExtension,
    WriteNotAllowed,
    WriteRefused,
    WritesReadOnly,
    WrittenElsewhere,
)

log = logging.getLogger(__name__)

INVALID_PARAMS: Final = -32602
"""JSON-RPC "invalid params". MCP answers a resource that does not exist with it too (SEP-2164)."""
INTERNAL_ERROR: Final = -32603
"""JSON-RPC "internal error": the server could not answer; the message says whether it is a bug."""
# The SDK's values, copied so the CLI can read this table without importing the SDK; a test pins them.

BUG_MESSAGE: Final = (
    "internal error: this is a bug in kbseek, not a problem with the request; "
    "please report it (the server's log has the details)"
)
"""What a caller of the MCP tools, resources, prompts or the web API is told about a bug."""

REFUSED_EXIT: Final = 1
BUG_EXIT: Final = 70
"""sysexits.h EX_SOFTWARE: a script can tell a bug from a refusal (1) and from a usage error (click's 2)."""


@dataclass(frozen=True)
class Answer:
    """One row of the table: what each surface says for an error class.

    The MCP tools answer every error with an ``isError`` result whose text is :meth:`text`;
    ``http`` is the status of the web API (``/api/*``), ``jsonrpc`` the error code of
    ``resources/read`` and ``prompts/get``, ``exit`` the CLI's exit status.
    """

    http: int
    jsonrpc: int
    exit: int
    bug: bool = False

    def text(self, exc: BaseException) -> str:
        """The refusal's own message, or for a bug the generic one (its own text may hold internals)."""
        return BUG_MESSAGE if self.bug else str(exc)


BAD_REQUEST: Final = Answer(http=400, jsonrpc=INVALID_PARAMS, exit=REFUSED_EXIT)
"""The caller passed something unusable: change the argument as the message says."""
NOT_FOUND: Final = Answer(http=404, jsonrpc=INVALID_PARAMS, exit=REFUSED_EXIT)
"""Nothing is there, or nothing kbseek offers: search again or list the topics."""
FORBIDDEN: Final = Answer(http=403, jsonrpc=INVALID_PARAMS, exit=REFUSED_EXIT)
"""Something is there, but the document guard will not serve it (a link, no parser, too large …)."""
CONFLICT: Final = Answer(http=409, jsonrpc=INTERNAL_ERROR, exit=REFUSED_EXIT)
"""The request clashes with how kbseek was started or what exists (read-only, a service's name)."""
UNAVAILABLE: Final = Answer(http=503, jsonrpc=INTERNAL_ERROR, exit=REFUSED_EXIT)
"""The setup stops kbseek from answering (config, index, model, lock, an unreachable database):
whoever runs it must act or wait, not the caller; the request itself was fine."""
BUG: Final = Answer(http=500, jsonrpc=INTERNAL_ERROR, exit=BUG_EXIT, bug=True)
"""A bug in kbseek: any exception that is not a refusal."""

TABLE: Final[Mapping[type[BaseException], Answer]] = MappingProxyType({
    KbError: CONFLICT,  # only a bare KbError, which kbseek no longer raises; every class has its row
    InvalidArgument: BAD_REQUEST,
    BadResourceUri: BAD_REQUEST,
    UnknownField: BAD_REQUEST,
    TopicNotFound: NOT_FOUND,
    ConfigError: UNAVAILABLE,
    IndexIncompatible: UNAVAILABLE,
    IndexLocked: UNAVAILABLE,
    WrittenElsewhere: UNAVAILABLE,
    IndexReadOnly: CONFLICT,
    StoreUnavailable: UNAVAILABLE,
    EmbedderUnavailable: UNAVAILABLE,
    ServiceError: CONFLICT,
    DocumentRefused: FORBIDDEN,
    PathOutsideRoot: BAD_REQUEST,
    DocumentNotFound: NOT_FOUND,
    NotARegularFile: FORBIDDEN,
    LinkRefused: FORBIDDEN,
    UnsupportedExtension: FORBIDDEN,
    DocumentTooLarge: FORBIDDEN,
    NotText: FORBIDDEN,
    NotServable: NOT_FOUND,
    WriteRefused: CONFLICT,
    NoteExists: CONFLICT,
    NoteConflict: CONFLICT,
    WriteNotAllowed: FORBIDDEN,
    NoteTooLarge: FORBIDDEN,
    NoteNotFound: NOT_FOUND,
    WritesReadOnly: CONFLICT,
})  # fmt: skip
"""Every refusal class, each by name (a test fails for a class without its own row), to its answer."""


def answer_for(exc: BaseException) -> Answer:
    """The row for ``exc``'s class, or the closest ancestor's; :data:`BUG` for anything not a refusal."""
    if isinstance(exc, KbError):
        for cls in type(exc).__mro__:
            if (found := TABLE.get(cls)) is not None:
                return found
    return BUG


def translate(exc: BaseException, where: str) -> tuple[Answer, str]:
    """The answer and the text to send for ``exc``, raised while serving ``where``.

    A bug is logged here with its traceback, so every surface leaves the same trail for the
    report the caller is asked to make; a refusal is the caller's business and is not logged.
    """
    answer = answer_for(exc)
    if answer.bug:
        log.error("%s failed: a bug in kbseek", where, exc_info=exc)
    return answer, answer.text(exc)
