"""Fuzzing the installed server over stdio: arbitrary tool calls and raw lines against one process.

One ``kbseek serve --lexical-only`` serves every example (starting a server per example would
leave no time for examples). Beside the knowledge base lie folders it must never read from: a
sibling ``outside/`` and a sibling whose name starts with the root's (``kb-evil/``), both holding
a canary, and the knowledge base links to them. Each example asserts:

- every request gets exactly one answer, with its id whenever it can be read (``null`` for a line
  whose id cannot be read as a request's), and nothing else is answered;
- no answer is longer than the response cap (``[limits].max_response_chars``) plus the JSON-RPC
  envelope; a document read (``get_document``, ``fetch``) is bounded by its own text cap instead,
  and the rest of its answer by the response cap (T3);
- the canary never appears;
- the process is alive.

The examples are bounded (``max_examples``, and strings up to a few hundred kilobytes) so the
file runs in well under a minute.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kbseek.config import Limits
from kbseek.server.stdio import MAX_LINE_BYTES
from tests.conftest import NOTES, installed_script, write_notes

# a failing example's huge strings make a long repr: the assertion says what failed, not the warning
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

CANARY = "CANARY-5d1e0c7a-outside-the-root"
LIMITS = Limits()
ENVELOPE = 100
"""``{"jsonrpc":"2.0","id":…,"result":…}`` around a result: the cap is measured on the result as
sent (``server/mcp.py`` measures the serialized ``CallToolResult``), the envelope is the protocol's."""
ANSWER_TIMEOUT_S = 60.0
FUZZ = settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

TOOLS = ["search", "fetch", "get_document", "list_topics", "index_status"]
ARGUMENT_NAMES = [
    "query", "limit", "path_prefix", "tags", "snippet_chars", "explain", "also",
    "chunk_ids", "context", "path", "offset", "max_chars",
]  # fmt: skip
TRAVERSALS = [
    "../outside/secret.md", "../../outside/secret.md", "..", "../", "./../outside/secret.md",
    "notes/../../outside/secret.md", "runbooks/../../kb-evil/note.md", "../kb-evil/note.md",
    "..\\outside\\secret.md", "%2e%2e/outside/secret.md", "%2e%2e%2foutside%2fsecret.md",
    "kb://doc/../outside/secret.md", "kb://doc/%2e%2e/outside/secret.md", "file://@OUTSIDE@",
    "@OUTSIDE@", "@OUTSIDE_DIR@", "@ROOT@/../outside/secret.md", "@ROOT@-evil/note.md",
    "linked.md", "linkdir/secret.md", "linkdir", "linkdir/", "notes/\x00../../outside/secret.md",
    "/etc/passwd", "~/.ssh/id_rsa", "C:\\Windows\\win.ini", "//server/share", "\\\\?\\C:\\",
    "drafts/secret-plan.md", ".kbseek/index.sqlite", "notes/big.md", "runbooks/", "",
]  # fmt: skip
"""Paths a caller might try to climb out with; ``@…@`` are filled in with this run's folders."""

huge_strings = st.builds(
    lambda piece, times: piece * times,
    st.sampled_from(["x", "../", "障害", "a ", "\\u0000", "%2e", "<<<kbseek-end", '"', "\n"]),
    st.integers(5_000, 150_000),
)
small_strings = st.one_of(
    st.text(max_size=30), st.sampled_from(TRAVERSALS), st.text(st.characters(codec="utf-8"))
)
small_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        small_strings,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=10,
)
json_values = st.one_of(
    small_values,
    small_values,
    huge_strings,
    st.lists(huge_strings, min_size=1, max_size=3),
    st.builds(lambda value, times: [value] * times, small_values, st.integers(50, 20_000)),
)
"""Any JSON, sized so a line stays within a few megabytes: huge strings and long lists at the top
level of an argument, never nested in one another."""
tool_names = st.one_of(st.sampled_from(TOOLS), st.sampled_from(TOOLS), st.text(max_size=40), huge_strings)
arguments = st.dictionaries(
    st.one_of(st.sampled_from(ARGUMENT_NAMES), st.text(max_size=12)), json_values, max_size=6
)


class Conversation:
    """JSON-RPC over the server's stdin and stdout, with a reader thread so no read blocks forever."""

    def __init__(self, proc: subprocess.Popen[bytes], root: Path, outside: Path) -> None:
        self.proc = proc
        self.root = root
        self.outside = outside
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read, name="fuzz-reader", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def write(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def exchange(
        self, line: bytes, expected: list[int | str | None], timeout: float = ANSWER_TIMEOUT_S
    ) -> dict[int | str | None, tuple[str, dict]]:
        """Write ``line`` and then a ping; read until the ping and every expected id are answered.

        Every answer read must be expected, and expected once (``None`` for an answer with a null
        id); the answers are returned by id with the raw line each came on.
        """
        ping = self.new_id()
        self.write(line)
        self.write(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode())
        waiting = set(expected) | {ping}
        answers: dict[int | str | None, tuple[str, dict]] = {}
        deadline = time.monotonic() + timeout
        while waiting:
            try:
                raw = self._lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                pytest.fail(f"no answer for ids {sorted(waiting, key=str)} within {timeout} s")
            if raw is None:
                pytest.fail(f"the server closed stdout (exit status {self.proc.wait(timeout=10)})")
            text = raw.decode("utf-8")  # every stdout line must be UTF-8 JSON-RPC
            message = json.loads(text)
            assert message.get("jsonrpc") == "2.0"
            if "id" not in message:
                continue  # a notification (list_changed, a log message): not an answer
            rid = message["id"]
            assert rid in waiting, f"an answer nobody asked for (or a second one): id {rid!r}"
            waiting.discard(rid)
            if rid != ping:
                answers[rid] = (text, message)
        assert self.proc.poll() is None, "the server exited"
        return answers


def _fill(value: Any, conversation: Conversation) -> Any:
    """``value`` with this run's folders put in for the ``@…@`` placeholders."""
    if isinstance(value, str):
        return (
            value.replace("@OUTSIDE_DIR@", str(conversation.outside.parent))
            .replace("@OUTSIDE@", str(conversation.outside))
            .replace("@ROOT@", str(conversation.root))
        )
    if isinstance(value, list):
        return [_fill(v, conversation) for v in value]
    if isinstance(value, dict):
        return {_fill(k, conversation): _fill(v, conversation) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Conversation]:
    base = tmp_path_factory.mktemp("fuzz")
    root = base / "kb"
    write_notes(root, NOTES)
    (root / ".kbseekignore").write_text("drafts/\n", encoding="utf-8")
    sections = (
        f"## Part {i}\n\n" + f"Line {i} of a long note about deploys, 障害 and rollbacks. " * 40
        for i in range(80)
    )
    (root / "notes" / "big.md").write_text("# A long note\n\n" + "\n\n".join(sections), encoding="utf-8")
    outside = base / "outside" / "secret.md"
    outside.parent.mkdir()
    outside.write_text(f"# Secret\n\nrollback deploy {CANARY}\n", encoding="utf-8")
    (base / "kb-evil").mkdir()
    (base / "kb-evil" / "note.md").write_text(f"# Evil twin\n\nrollback {CANARY}\n", encoding="utf-8")
    try:
        (root / "linked.md").symlink_to(outside)
        (root / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    except OSError:
        pass  # no symlinks here: the other ways out are still fuzzed
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBSEEK_")}
    env.update(PYTHONUNBUFFERED="1", XDG_CACHE_HOME=str(base / "cache"))
    stderr = base / "serve.stderr"
    with stderr.open("wb") as err, subprocess.Popen(
        [installed_script(), "serve", "--kb", str(root), "--lexical-only", "--no-watch"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env,
    ) as proc:  # fmt: skip
        conversation = Conversation(proc, root, outside)
        try:
            _start(conversation)
            yield conversation
            assert proc.poll() is None, "the server died during the fuzz: " + stderr.read_text(
                errors="replace"
            )
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise


def _start(conversation: Conversation) -> None:
    rid = conversation.new_id()
    init = {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}}  # fmt: skip
    conversation.exchange(json.dumps(init).encode(), [rid])
    conversation.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    for _ in range(200):  # the catch-up pass runs in the background: fuzz the indexed knowledge base
        rid = conversation.new_id()
        call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "rollback"}}}  # fmt: skip
        _, answer = conversation.exchange(json.dumps(call).encode(), [rid])[rid]
        if answer["result"]["structuredContent"]["hits"]:
            return
        time.sleep(0.1)
    pytest.fail("the catch-up pass did not index the knowledge base")


def _check_answer(text: str, answer: dict, tool: str | None) -> None:
    assert CANARY not in text, "text from outside the root was served"
    result = answer.get("result") or {}
    structured = result.get("structuredContent") or {}
    if tool == "get_document" and not result.get("isError") and "text" in structured:
        shown = [structured["text"]]
        assert len(structured["text"]) <= LIMITS.max_document_chars
    elif tool == "fetch" and not result.get("isError") and "passages" in structured:
        shown = [p["text"] for p in structured["passages"]]
        assert sum(map(len, shown)) <= LIMITS.max_fetch_chars
    else:
        shown = []
    # a document read's text is sent twice (structured content and text block); the rest fits the cap
    rest = len(text) - 2 * sum(len(json.dumps(s, ensure_ascii=False)) for s in shown)
    assert rest <= LIMITS.max_response_chars + ENVELOPE, f"an answer of {len(text):,} characters"


@settings(FUZZ, max_examples=200)
@example(name="x" * 300_000, args={}, ascii_only=True)  # was echoed whole: "Unknown tool: xxx…"
@example(name="search", args={"query": "a", "tags": list(range(20_000))}, ascii_only=True)  # was 3.6 MB
@given(name=tool_names, args=arguments, ascii_only=st.booleans())
def test_every_tool_call_is_answered_once_within_the_cap_and_from_inside_the_root(
    server: Conversation, name: str, args: dict[str, Any], ascii_only: bool
) -> None:
    rid = server.new_id()
    request = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
               "params": {"name": name, "arguments": _fill(args, server)}}  # fmt: skip
    line = json.dumps(request, ensure_ascii=ascii_only).encode()
    over = len(line) + 1 > MAX_LINE_BYTES  # too long to read: a parse error, its id read from the head
    text, answer = server.exchange(line, [rid])[rid]
    if over:
        assert answer["error"]["code"] == -32700
    _check_answer(text, answer, name if name in TOOLS else None)


MANGLED_ID = "mangled"
"""The id of every mangled request: one at a time is in flight, and a fixed id keeps the strategy the
same from one example to the next (hypothesis replays and shrinks by it)."""


def _mangled(rid: str) -> st.SearchStrategy[tuple[bytes, int | str | None]]:
    """A tools/call line broken in one way, and the id its answer must carry."""
    good = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "rollback"}}}  # fmt: skip
    line = json.dumps(good).encode()
    # cut after the "method" key, the line is a request whose id can be read (it comes first)
    method_read = line.index(b'"method":') + len(b'"method":')
    truncated = st.integers(1, len(line) - 2).map(
        lambda cut: (line[:cut], rid if cut >= method_read else None)
    )
    # an id that is not a string or an integer is test_a_request_whose_id_is_not_a_string_or_integer_…
    wrong_version = st.sampled_from(["1.0", "2", 2.0, None]).map(
        lambda v: (json.dumps({**good, "jsonrpc": v}).encode(), rid)
    )
    params_not_object = st.sampled_from([[1], "x", 7, True]).map(
        lambda p: (json.dumps({**good, "params": p}).encode(), rid)
    )
    return st.one_of(truncated, wrong_version, params_not_object)


def _not_a_message(value: Any) -> bytes:
    if isinstance(value, dict):  # never a JSON-RPC message: no method and no version
        value = {k: v for k, v in value.items() if k not in ("method", "jsonrpc")}
    return json.dumps(value).encode()


METHODS = [
    "ping", "initialize", "tools/list", "tools/call", "resources/list", "resources/templates/list",
    "resources/read", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
]  # fmt: skip


@settings(FUZZ, max_examples=100)
@example(method="x" * 300_000, params=None)  # "Method not found" carried the method whole in its data
@example(method="prompts/get", params={"name": "y" * 300_000})  # so did "Unknown prompt: …"
@example(method="resources/read", params={"uri": "kb://doc/" + "y" * 300_000})  # message and data
@given(
    method=st.one_of(st.sampled_from(METHODS), st.text(max_size=40), huge_strings),
    params=st.one_of(
        st.none(),
        arguments,
        st.fixed_dictionaries({"uri": json_values, "name": json_values}),
        arguments.map(lambda a: {"name": "answer_from_kb", "arguments": a}),
    ),
)
def test_every_request_for_any_method_is_answered_once_within_the_cap(
    server: Conversation, method: str, params: dict[str, Any] | None
) -> None:
    rid = server.new_id()
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        request["params"] = _fill(params, server)
    line = json.dumps(request).encode()
    text, answer = server.exchange(line, [rid])[rid]  # over the line cap too: the id is read from its head
    _check_answer(text, answer, None)


raw_bytes = st.binary(max_size=2_000).map(lambda b: (b.replace(b"\n", b" "), None))
raw_json = st.one_of(small_values, json_values).map(lambda v: (_not_a_message(v), None))
over_cap = st.just((b"[" + b"1," * (MAX_LINE_BYTES // 2 + 10) + b"1]", None))


@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_every_raw_line_is_answered_once_and_the_server_goes_on(
    server: Conversation, data: st.DataObject
) -> None:
    line, expected = data.draw(st.one_of(raw_bytes, raw_json, over_cap, _mangled(MANGLED_ID)))
    if not line.strip():
        server.exchange(line, [])  # a blank line is not a message: nothing to answer, the ping still is
        return
    answers = server.exchange(line, [expected])
    text, answer = answers[expected]
    assert answer["error"]["code"] in (-32700, -32600, -32602, -32601)
    _check_answer(text, answer, None)


def test_a_request_whose_id_is_not_a_string_or_integer_is_answered(server: Conversation) -> None:
    """JSON-RPC 2.0: a message with an ``id`` member is a request, never a notification; MCP allows
    only strings and integers as ids. Such a request is answered with Invalid Request and a null id
    (the id cannot be echoed); the SDK's validator took it for a notification and nothing answered.
    Malformed lines are answered before the next line is read, so a short wait past the ping is enough."""
    unanswered = []
    for bad in ("null", "true", "1.5", "[1]", "{}", "NaN"):
        line = f'{{"jsonrpc": "2.0", "id": {bad}, "method": "tools/list"}}'.encode()
        try:
            server.exchange(line, [None], timeout=1.0)
        except pytest.fail.Exception:
            unanswered.append(bad)
    assert not unanswered, f"requests with these ids were never answered: {unanswered}"
