"""The ``kbseek`` command: a thin skin over :class:`~kbseek.kb.KnowledgeBase`.

stdout carries data (results, JSON, the MCP protocol under ``serve``);
progress and logs go to stderr.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kbseek import Filters, IndexReport, KnowledgeBase, SearchQuery, __version__, render
from kbseek.cli.auth_options import audit_recorder, auth_gate, auth_options
from kbseek.cli.errors import KbseekGroup
from kbseek.cli.library import Library
from kbseek.cli.options import WHOLE_NUMBER, WholeNumberRange, kb_options
from kbseek.filters import where_from_text
from kbseek.library import collection_name
from kbseek.progress import ProgressSnapshot, describe_timing
from kbseek.server.http import MAX_BODY_BYTES, MAX_SESSIONS
from kbseek.text.plurals import counted


@click.group(cls=KbseekGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kbseek")
def cli() -> None:
    """Semantic search over a Markdown knowledge base, served to AI agents over MCP.

    \b
    Quick start:
        kbseek index --kb ~/notes          # build or update the index
        kbseek search --kb ~/notes "how do I roll back a release"
        kbseek serve --kb ~/notes          # MCP over stdio, for Claude Code, Cursor, …
    """


class _Display:
    """Progress of ``kbseek index``. This base shows nothing: ``--quiet`` and ``--json``."""

    def note(self, text: str) -> None:
        """Something slow that is not a phase of the pass (loading the model)."""

    def __call__(self, snap: ProgressSnapshot) -> None:
        """The pass moved; ``snap`` is the shared tracker's reading, the same one ``index_status`` gives."""

    def close(self) -> None:
        """The pass is over: leave the terminal clean for the summary."""


class _TerminalBar(_Display):
    """A tqdm bar on a terminal's stderr, one per phase, cleared when the phase ends.

    tqdm only draws the bar and the counts; rate and ETA come from the shared tracker, so the bar
    agrees with ``index_status``. Log records are routed through tqdm meanwhile, so a warning
    prints above the bar instead of through it.
    """

    def __init__(self) -> None:
        from tqdm import tqdm
        from tqdm.contrib.logging import logging_redirect_tqdm

        self._tqdm = tqdm
        self._bar: tqdm[Any] | None = None
        self._phase: str | None = None
        self._redirect = logging_redirect_tqdm()
        self._redirect.__enter__()

    def _new_bar(self, desc: str, total: int | None, unit: str, fmt: str) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar = self._tqdm(
            desc=desc, total=total, unit=unit, bar_format=fmt, file=sys.stderr, leave=False,
            dynamic_ncols=True,
        )  # fmt: skip

    def note(self, text: str) -> None:
        self._new_bar(text, None, "", "{desc}…")
        self._phase = None

    def __call__(self, snap: ProgressSnapshot) -> None:
        if snap.phase == "model":
            self.note(snap.describe_start())
            return
        if snap.phase != self._phase:
            self._phase = snap.phase
            counts = "{n_fmt}/{total_fmt} {unit}" if snap.total is not None else "{n_fmt} {unit}"
            bar = "{percentage:3.0f}%|{bar}| " if snap.total is not None else ""
            self._new_bar(snap.phase, snap.total, snap.unit, "{desc}: " + bar + counts + "{postfix}")
        assert self._bar is not None
        if snap.total is not None and self._bar.total != snap.total:
            self._bar.total = snap.total  # the scan learns its total only when it ends
        self._bar.set_postfix_str(describe_timing(snap.done, snap.total, snap.rate, snap.eta), refresh=False)
        self._bar.update(snap.done - self._bar.n)  # redraws at most every 0.1 s

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._redirect.__exit__(None, None, None)


class _LogLines(_Display):
    """Progress for a pipe or a log file: plain lines on stderr, no carriage returns or colours.

    One line about every ``interval`` seconds and one when a phase starts, but nothing during the
    first ``interval`` of the pass: a pass that short prints only its summary, so a cron log of
    quick incremental runs stays quiet while a long first index says what it is doing.
    """

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._started = self._last = clock()
        self._phase: str | None = None

    def _say(self, line: str) -> None:
        self._last = self._clock()
        click.echo(f"kbseek: {line}", err=True)

    def _quiet_yet(self) -> bool:
        return self._clock() - self._started < self.interval

    def note(self, text: str) -> None:
        if not self._quiet_yet():
            self._say(text)

    def __call__(self, snap: ProgressSnapshot) -> None:
        new_phase, self._phase = snap.phase != self._phase, snap.phase
        if self._quiet_yet():
            return
        if new_phase:
            self._say(snap.describe_start())
        elif self._clock() - self._last >= self.interval:
            self._say(snap.describe())


def _progress_display(*, silent: bool, interval: float) -> _Display:
    """A bar on a terminal, plain lines on a pipe or in a log, nothing when asked for silence."""
    if silent:
        return _Display()
    if sys.stderr.isatty():
        return _TerminalBar()
    return _LogLines(interval)


def _summary(report: IndexReport, kb: KnowledgeBase) -> str:
    docs, chunks = (s := kb.summary()).documents, s.chunks
    lines = [
        f"indexed {counted(docs, 'document')}, {counted(chunks, 'chunk')} in {report.seconds:.2f}s "
        f"({kb.index_path})",
        f"  added {len(report.added)}, updated {len(report.updated)}, renamed {len(report.renamed)}, "
        f"deleted {len(report.deleted)}, unchanged {report.unchanged}, skipped {len(report.skipped)}"
        + (f", embedded {counted(report.chunks_embedded, 'chunk')}" if report.chunks_embedded else ""),
    ]
    lines.extend(f"  renamed {old} → {new}" for old, new in report.renamed)
    lines.extend(f"  skipped {path}: {reason}" for path, reason in report.skipped)
    lines.extend(f"  warning {path}: {message}" for path, message in report.warnings)
    if docs == 0:
        lines.append(kb.nothing_found_note())  # what to do next, not just "indexed 0 documents"
    return "\n".join(lines)


@cli.command()
@kb_options
@click.option(
    "--reembed", is_flag=True, help="Drop every vector and embed all chunks again (after a model change)."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print only the summary, as JSON on stdout (no progress)."
)
@click.option("-q", "--quiet", is_flag=True, help="Show no progress; print only the summary.")
@click.option(
    "--take-over", "take_over", is_flag=True,
    help="Make this folder the source of a shared (--store) knowledge base recorded as written from another.",
)  # fmt: skip
@click.option(
    "--progress-interval", type=click.FloatRange(min=0), default=5.0, envvar="KBSEEK_PROGRESS_INTERVAL",
    hidden=True, help="Seconds between progress lines when stderr is not a terminal.",
)  # fmt: skip
def index(
    kb: KnowledgeBase, reembed: bool, as_json: bool, quiet: bool, take_over: bool, progress_interval: float
) -> None:
    """Build or update the index (incremental: only changed files are read).

    Progress goes to stderr, phase by phase (scan, parse, embed) with counts, rate and ETA: a bar
    on a terminal; on a pipe or in a log, a plain line about every 5 seconds and when a phase
    starts (a pass shorter than that prints only its summary).

    \b
    Example:
        kbseek index --kb examples/kb
    """
    progress = _progress_display(silent=quiet or as_json, interval=progress_interval)
    try:
        # The model loads inside the pass (its ``model`` phase), and only when the pass will embed:
        # a pass that finds nothing to do never waits seconds for it.
        report = kb.index(progress=progress, reembed=reembed, take_over=take_over)
    finally:
        progress.close()
    if report.took_over_from is not None:
        click.echo(f"took over {kb.index_path} from {report.took_over_from}", err=True)
    if kb.settings.semantic and kb.semantic_error is not None and not (reembed and kb.model_mismatch):
        raise click.ClickException(
            f"semantic search unavailable: {kb.semantic_error}; the pass indexed keywords only "
            "(fix the model, or pass --lexical-only)"
        )
    if as_json:
        click.echo(report.model_dump_json(indent=2))
    else:
        click.echo(_summary(report, kb))


@cli.command()
@kb_options
@click.option(
    "--no-watch", is_flag=True, help="Do not watch the files; rely on the stat scan before each call."
)
@click.option("--http", "http", is_flag=True, help="Serve Streamable HTTP at /mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind with --http.")
@click.option("--port", default=8765, show_default=True, type=WHOLE_NUMBER, help="Port to bind with --http.")
@click.option("--allow-remote", is_flag=True, help="Allow binding a non-loopback address with --http.")
@click.option(
    "--allow-host", "allow_hosts", multiple=True, help="Extra allowed Host header value (repeatable)."
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    help="Extra allowed Origin header value, e.g. https://notes.example (repeatable).",
)
@auth_options
@click.option(
    "--max-sessions",
    default=MAX_SESSIONS,
    show_default=True,
    type=WholeNumberRange(min=1),
    help="Open MCP sessions at once; more are answered 429 with Retry-After.",
)
@click.option(
    "--max-body-bytes",
    default=MAX_BODY_BYTES,
    show_default=True,
    type=WholeNumberRange(min=1),
    help="Largest request body accepted; larger ones are answered 413.",
)
@click.option("--ui-allow-remote", is_flag=True, help="Offer the /ui web page to other machines too.")
@click.option(
    "--read-only", "read_only", is_flag=True,
    help="Only serve the index another process writes (no --kb needed with --store): follow its passes.",
)  # fmt: skip
@click.option(
    "--allow-write", "allow_write", is_flag=True,
    help="Let agents create, edit, move and delete notes in [write] folders (default inbox/).",
)  # fmt: skip
@click.option(
    "--take-over", "take_over", is_flag=True,
    help="Make this folder the source of a shared (--store) knowledge base recorded as written from another.",
)  # fmt: skip
def serve(
    kb: KnowledgeBase, no_watch: bool, http: bool, host: str, port: int, allow_remote: bool,
    allow_hosts: tuple[str, ...], allow_origins: tuple[str, ...], token_env: str | None,
    auth_issuer: str | None, auth_resource: str | None, auth_tokens: tuple[str, ...], audit_log: str | None,
    max_sessions: int, max_body_bytes: int, ui_allow_remote: bool, read_only: bool, take_over: bool,
    allow_write: bool = False, library: Library | None = None,
) -> None:  # fmt: skip
    """Serve the knowledge base over MCP: stdio by default, or Streamable HTTP with --http.

    Indexing catches up in the background; the handshake never waits for it
    or for the embedding model. Edits are indexed as they happen (a file
    watcher), with a periodic rescan for what it misses; without a watcher,
    a stat scan before each call.
    Logs go to stderr: stdout is the protocol.

    With --http, one warm server answers every host at http://HOST:PORT/mcp
    and a search page for people is at http://HOST:PORT/ui.

    \b
    Claude Code:
        claude mcp add kb -- kbseek serve --kb ~/notes
    \b
    One server for several hosts:
        kbseek serve --kb ~/notes --http --port 8765
        claude mcp add --transport http kb http://127.0.0.1:8765/mcp
    \b
    A team: one writer beside the files, readers anywhere (no files needed):
        kbseek serve --kb ~/docs --store postgresql://kb@db/kbseek --kb-name docs
        kbseek serve --http --read-only --store postgresql://kb@db/kbseek --kb-name docs
    """
    from kbseek.server.library_tools import build_server

    # One writer per shared knowledge base for as long as it serves: a second one stops here, at once.
    replaced = (library or kb).claim_writer(take_over=take_over)
    if replaced is not None:
        click.echo(f"took over {kb.index_path} from {replaced}", err=True)
    if read_only and (why := (library or kb).readiness()) is not None:  # a mistyped name, say: not silent
        click.echo(f"warning: not ready to serve: {why}", err=True)
    if not no_watch or read_only:  # a read-only server follows the writer's passes instead of files
        (library or kb).start_watching()
    if not http:
        from kbseek.server.stdio import run_stdio

        run_stdio(build_server(kb, background=True, library=library))  # every malformed line answered
        return
    from kbseek.server.connection import serve_http
    from kbseek.server.http import HttpPolicy, build_http_app, is_loopback, mcp_url
    from kbseek.server.web import build_web_app

    # A remote host without --allow-remote, or an empty --token-env, is a ConfigError: answered as a refusal.
    policy = HttpPolicy.from_flags(
        host=host, port=port, allow_remote=allow_remote, allow_hosts=allow_hosts, allow_origins=allow_origins,
        token_env=token_env, max_sessions=max_sessions, max_body_bytes=max_body_bytes,
        ui_allow_remote=ui_allow_remote,
    )  # fmt: skip
    if not is_loopback(host):
        click.echo(f"warning: serving on {host}:{port}, reachable from other machines", err=True)
    name = (
        library.default if library else collection_name(kb.root) if kb.root else kb.settings.kb_name or "kb"
    )
    gate = auth_gate(
        kb.settings.auth, issuer=auth_issuer, resource=auth_resource, tokens=auth_tokens, token_env=token_env,
        port=port, allowed_hosts=policy.allowed_hosts, allowed_origins=policy.allowed_origins,
        served=library.names if library else (name,),
    )  # fmt: skip
    audit = audit_recorder(
        kb.settings.audit, gate, path=audit_log, collection=name, several=bool(library and library.several)
    )
    (library or kb).start_background()
    served = library or kb
    app = build_http_app(
        build_server(kb, library=library, audit=audit), policy, build_web_app(kb, library, audit),
        served.readiness, gate,
    )  # fmt: skip
    click.echo(f"kbseek: MCP at {mcp_url(host, port)}, web page at /ui", err=True)
    try:
        serve_http(app, policy, host)  # with header, body and keep-alive deadlines and a connection cap
    finally:
        if audit is not None:
            audit.writer.close()  # what is queued is written before the process ends


@cli.command()
@kb_options(reader=True)
@click.argument("query", default="")
@click.option("-n", "--limit", type=WHOLE_NUMBER, default=None, help="Number of hits (default 5).")
@click.option("--path-prefix", default=None, help="Only documents under this folder.")
@click.option("--tag", "tags", multiple=True, help="Only documents with this tag (repeatable: all of them).")
@click.option(
    "--tag-any", "tags_any", multiple=True, help="Only documents with one of these tags (repeatable)."
)
@click.option(
    "--glob", "globs", multiple=True, help="Only paths matching this glob, e.g. 'runbooks/**' (repeatable)."
)
@click.option("--type", "types", multiple=True, help="Only this file type: md, pdf, docx … (repeatable).")
@click.option("--after", default=None, help="Dated on or after: YYYY-MM-DD, or an age such as 7d, 2w, 1y.")
@click.option("--before", default=None, help="Dated on or before: YYYY-MM-DD, or an age such as 7d, 2w, 1y.")
@click.option(
    "--where", "where", multiple=True, metavar="FIELD=VALUE",
    help="Front matter: FIELD=VALUE (repeat a field for any of its values), FIELD (it exists), !FIELD (absent).",
)  # fmt: skip
@click.option(
    "--sort", type=click.Choice(["relevance", "newest"]), default="relevance", show_default=True,
    help="newest: newest documents first; without a query, list what changed most recently.",
)  # fmt: skip
@click.option("--snippet-chars", type=WHOLE_NUMBER, default=None, help="Snippet length in characters.")
@click.option("--explain", is_flag=True, help="Show per-leg ranks and scores.")
@click.option(
    "--also", "also", multiple=True, metavar="TEXT",
    help="Another phrasing of the question, searched with it (repeatable, up to 3): the other language, "
    "keywords, or a one-sentence answer.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")
def search(
    kb: KnowledgeBase, query: str, limit: int | None, path_prefix: str | None, tags: tuple[str, ...],
    tags_any: tuple[str, ...], globs: tuple[str, ...], types: tuple[str, ...], after: str | None,
    before: str | None, where: tuple[str, ...], sort: str, snippet_chars: int | None, explain: bool,
    also: tuple[str, ...], as_json: bool,
) -> None:  # fmt: skip
    """Search the knowledge base (updates the index first if files changed).

    Without --kb, on a machine that has only the database (--store URL --kb-name NAME), it searches
    the index the writer keeps there, as a read-only server does.

    \b
    Examples:
        kbseek search --kb examples/kb "rollback a release"
        kbseek search --kb examples/kb "障害対応" --json
        kbseek search --kb examples/kb "how do we roll back" --also "ロールバック 手順"
        kbseek search --kb examples/kb "feature flags" --where status=accepted --after 2025-01-01
        kbseek search --kb examples/kb --sort newest --after 30d
    """
    filters = Filters(
        path_prefix=path_prefix, tags=tags, tags_any=tags_any, path_globs=globs, types=types, after=after,
        before=before, where=where_from_text(where) or None,
    )  # fmt: skip
    asked = SearchQuery(
        query,
        also=also,
        filters=filters,
        sort=sort,
        limit=limit,
        snippet_chars=snippet_chars,
        explain=explain,
    )
    r = kb.search(asked)
    click.echo(r.model_dump_json(indent=2) if as_json else render.search_text(r))


@cli.command()
@kb_options(reader=True)
@click.argument("chunk_ids", metavar="CHUNK_ID...", nargs=-1, required=True)
@click.option(
    "--context", type=WHOLE_NUMBER, default=None, help="Neighbouring chunks on each side (default 1)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")
def fetch(kb: KnowledgeBase, chunk_ids: tuple[str, ...], context: int | None, as_json: bool) -> None:
    """Print the full passages of search hits by chunk id, with neighbouring chunks joined.

    An id from before a document was edited is reported as stale: search again for current ids.

    \b
    Example:
        kbseek fetch --kb examples/kb c_3f2a9c1e0b7d4a55 --context 2
    """
    r = kb.fetch(list(chunk_ids), context=context)
    click.echo(r.model_dump_json(indent=2) if as_json else render.fetch_text(r))


@cli.command()
@kb_options(reader=True)
@click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")
def topics(kb: KnowledgeBase, as_json: bool) -> None:
    """List what the knowledge base covers, by first one or two folders (narrow a search: --path-prefix)."""
    r = kb.topics()
    click.echo(r.model_dump_json(indent=2) if as_json else render.topics_text(r))


@cli.command()
@kb_options(read_only=True)
@click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")
def status(kb: KnowledgeBase, as_json: bool) -> None:
    """Show what is indexed, what was skipped and why, and where the index lives."""
    r = kb.status()
    click.echo(r.model_dump_json(indent=2) if as_json else render.status_text(r))


@cli.group()
def store() -> None:
    """Move an index between a SQLite file and PostgreSQL."""


@store.command("copy")
@kb_options(read_only=True)
@click.option("--to", "to", required=True, metavar="URL|FILE",
              help="An empty index: a postgresql:// URL, a SQLite file, or an index folder (as --index-dir).")  # fmt: skip
@click.option(
    "--to-name", metavar="NAME", help="The knowledge base's name there (default: from the folder's name)."
)
def store_copy(kb: KnowledgeBase, to: str, to_name: str | None) -> None:
    """Copy the index, vectors included, without reading the files or embedding again.

    \b
    Example:
        kbseek store copy --kb ~/work/docs --to postgresql://kb@db.internal/kbseek
    """
    r = kb.copy_index(to, kb_name=to_name)
    click.echo(f"copied {counted(r.documents, 'document')}, {counted(r.chunks, 'chunk')} and "
               f"{counted(r.vectors, 'vector')} to {r.location}"
               + ("; built its approximate vector index" if r.vector_index else ""))  # fmt: skip
    if r.warmed is not None:
        click.echo(f"kbseek: {r.warmed}", err=True)  # what the database read into its memory, and how


@cli.command("get")
@kb_options(read_only=True)
@click.argument("path")
@click.option("--offset", type=WHOLE_NUMBER, default=0, help="Character offset to start at.")
@click.option("--max-chars", type=WHOLE_NUMBER, default=None, help="Characters to return.")
@click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")
def get_document(kb: KnowledgeBase, path: str, offset: int, max_chars: int | None, as_json: bool) -> None:
    """Print a document by its path relative to the knowledge-base root (through the same guard as MCP)."""
    r = kb.read_document(path, offset=offset, max_chars=max_chars)
    click.echo(r.model_dump_json(indent=2) if as_json else render.document_text(r))


@cli.command("eval")
@kb_options(reader=True)
@click.option("--golden", type=click.Path(path_type=Path, dir_okay=False, exists=True), required=True,
              help="YAML file of queries with their expected documents.")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", help="Output format.")
@click.option(
    "--fail-under",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit 1 if an overall metric is below VALUE, e.g. --fail-under recall@5=0.9 (repeatable).",
)
def eval_command(kb: KnowledgeBase, golden: Path, fmt: str, fail_under: tuple[str, ...]) -> None:
    """Measure retrieval quality on a golden set (recall@1/5/10, MRR, nDCG@10, per kind and tag).

    The run is stored beside the index and compared with the previous one. Without --kb (a reader
    of a database index, --store URL --kb-name NAME) it measures the index as the writer left it.

    \b
    Example:
        kbseek eval --kb examples/kb --golden examples/golden.yml
    """
    from kbseek.cli.eval import compare_with_last, format_text, load_golden, run_eval, summarize
    from kbseek.facade.paths import prepare_index_dir

    floors = {}
    for item in fail_under:
        metric, _, value = item.partition("=")
        try:
            floors[metric] = float(value)
        except ValueError:
            raise click.BadParameter(f"{item!r} is not METRIC=NUMBER", param_hint="--fail-under") from None
    queries = load_golden(golden)
    if kb.read_only:  # a reader: no files to index, and no folder of its own until something writes
        prepare_index_dir(kb.index_dir)
    else:
        kb.index()
    summary = summarize(run_eval(kb, queries))
    delta = compare_with_last(summary, kb.index_dir, golden)
    if fmt == "json":
        click.echo(json.dumps({**summary, "change": delta}, indent=2, ensure_ascii=False))
    else:
        click.echo(format_text(summary, delta))
    failed = [f"{m} {summary['overall'].get(m, 0.0):.3f} < {v}" for m, v in floors.items()
              if summary["overall"].get(m, 0.0) < v]  # fmt: skip
    if failed:
        raise click.ClickException("below the floor: " + "; ".join(failed))


from kbseek.cli.audit import audit as _audit  # noqa: E402 - kept beside its registration
from kbseek.cli.doctor_command import doctor as _doctor  # noqa: E402 - kept beside its registration
from kbseek.cli.model import model as _model  # noqa: E402 - kept beside its registration
from kbseek.cli.notes import notes as _notes  # noqa: E402 - kept beside its registration
from kbseek.cli.related import related_command  # noqa: E402 - kept beside its registration
from kbseek.cli.service import service as _service  # noqa: E402 - kept beside its registration

cli.add_command(_doctor)
cli.add_command(_service)
cli.add_command(_model)
cli.add_command(_audit)
cli.add_command(_notes)
cli.add_command(related_command(kb_options(reader=True)))


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
