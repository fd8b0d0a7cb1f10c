"""Build the wheel and sdist, install the wheel into a fresh venv, and drive the installed command.

Why this exists: the test suite runs against the editable install in ``.venv``, which reads every
file straight from ``src/``. A file left out of the package data (a web-page asset, ``py.typed``,
the PDF child script) passes every test there and breaks only for someone who ran
``pip install kbseek``. So this script checks what a user actually gets:

1. ``python -m build`` makes ``dist/kbseek-<version>.tar.gz`` and the wheel (built from the sdist,
   so a file missing from either shows up in the wheel);
2. every file under ``src/kbseek`` that git tracks must be in the wheel, or the run fails naming it;
3. the wheel (not the checkout) is installed into a fresh venv under ``build/wheel-smoke/``;
4. that venv's ``kbseek`` indexes a copy of ``examples/kb``, answers one ``search`` over stdio
   through the real MCP client, and with ``serve --http`` serves ``/healthz``, ``/ui`` and every
   script and stylesheet the page links to;
5. ``uvx --from dist/<the wheel> kbseek --help`` runs.

Run by ``make wheel-smoke`` (and so by ``make test``). pytest does not collect it (the name does
not start with ``test_``); ``tests/package/test_wheel_contents.py`` covers its pure parts.
Progress goes to stdout; a failure goes to stderr saying what failed, what to do, and which log
under ``build/wheel-smoke/`` holds the details.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the tests' own stdlib-only helpers importable
    sys.path.insert(0, str(ROOT))

from tests.fixture_copies import EXAMPLE_KB, copy_fixture  # noqa: E402

PACKAGE = "kbseek"
DIST = ROOT / "dist"
WORK = ROOT / "build" / "wheel-smoke"
VENV = WORK / "venv"
QUERY, EXPECTED_PATH = "rollback", "runbooks/rollback.md"


class SmokeFailure(Exception):
    """One step failed; ``hint`` says what to do about it, ``log`` where the details are."""

    def __init__(self, message: str, hint: str, log: Path | None = None) -> None:
        super().__init__(message)
        self.hint = hint
        self.log = log
        self.step = ""


# --- the wheel's contents (pure, tested in test_wheel_contents.py) ---------------------------------


def wheel_paths_for(tracked: Iterable[str]) -> set[str]:
    """Map files tracked under ``src/`` to the paths they must have inside the wheel.

    ``__pycache__`` is left out: git should not track it, and the wheel must not carry it.
    """
    wanted = set()
    for path in tracked:
        parts = Path(path).parts
        if parts[:1] != ("src",) or "__pycache__" in parts:
            continue
        wanted.add("/".join(parts[1:]))
    return wanted


def missing_from_wheel(tracked: Iterable[str], wheel_names: Iterable[str]) -> list[str]:
    """The tracked package files that the wheel does not contain, as ``src/...`` paths, sorted."""
    present = set(wheel_names)
    return sorted(f"src/{p}" for p in wheel_paths_for(tracked) - present)


def git_files(*args: str, root: Path = ROOT) -> list[str]:
    """``git ls-files`` with ``args``, keeping the files that exist in this working tree.

    A file deleted in the working tree but not yet committed is neither built nor expected.
    """
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", *args], check=True, capture_output=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise SmokeFailure(
            f"could not list the checkout's files with git ({err})",
            "run this from a git checkout of kbseek with git installed",
        ) from None
    names = [n for n in out.decode().split("\0") if n]
    return [n for n in names if (root / n).is_file()]


def tracked_package_files(root: Path = ROOT) -> list[str]:
    """Files under ``src/kbseek`` that git tracks: each one must reach the wheel."""
    return git_files("--", f"src/{PACKAGE}", root=root)


# --- running things ---------------------------------------------------------------------------------


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without what would let the checkout or the caller's settings leak in."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("KBSEEK_")}
    return {**env, **extra}


def run(args: list[str], log: Path, hint: str, timeout: float, env: dict[str, str] | None = None) -> str:
    """Run a command from the work folder (never the checkout, so nothing imports from ``src/``).

    Its output goes to ``log`` and is returned; a non-zero exit or a timeout is a SmokeFailure.
    """
    shown = " ".join(str(a) for a in args)
    try:
        proc = subprocess.run(
            args, cwd=WORK, env=env or clean_env(), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired as err:
        log.write_text(f"$ {shown}\n--- output before the timeout\n{_text(err.stdout)}\n{_text(err.stderr)}")
        raise SmokeFailure(f"`{shown}` did not finish in {timeout:.0f} s", hint, log) from None
    except OSError as err:
        raise SmokeFailure(f"`{shown}` could not start: {err}", hint) from None
    log.write_text(f"$ {shown}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    if proc.returncode != 0:
        raise SmokeFailure(f"`{shown}` exited with status {proc.returncode}", hint, log)
    return proc.stdout


def _text(out: str | bytes | None) -> str:
    """What a timed-out process printed: bytes even under ``text=True`` on some Pythons."""
    return out.decode(errors="replace") if isinstance(out, bytes) else out or ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str) -> tuple[int, str, bytes]:
    """Status, content type and body; an HTTP error status is an answer here, not an exception."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.headers.get("content-type", ""), response.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.headers.get("content-type", ""), err.read()


class _AssetLinks(HTMLParser):
    """Collects the scripts and stylesheets a page loads, so a new asset is checked without an edit here."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "script" and attr.get("src"):
            self.links.append(str(attr["src"]))
        elif tag == "link" and attr.get("rel") == "stylesheet" and attr.get("href"):
            self.links.append(str(attr["href"]))


def asset_links(html: str) -> list[str]:
    """The ``src`` of every script and ``href`` of every stylesheet in ``html``, in page order."""
    parser = _AssetLinks()
    parser.feed(html)
    return parser.links


def venv_bin(name: str) -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin") / name


# --- the steps --------------------------------------------------------------------------------------


def build() -> Path:
    """Build the sdist and the wheel into dist/, replacing older kbseek artifacts there.

    The build runs on a copy of the checkout's files (tracked, plus untracked ones git does not
    ignore: what a clone holds once they are committed), not on the checkout itself, where a
    ``src/kbseek.egg-info/SOURCES.txt`` left by an earlier build or the editable install adds every
    file it once listed to the sdist, and so to the wheel, hiding a file that package-data no longer
    covers.
    """
    source = WORK / "source"
    if source.exists():
        shutil.rmtree(source)
    for name in git_files("--cached", "--others", "--exclude-standard"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    DIST.mkdir(exist_ok=True)
    for old in [*DIST.glob(f"{PACKAGE}-*.whl"), *DIST.glob(f"{PACKAGE}-*.tar.gz")]:
        old.unlink()
    run(
        [sys.executable, "-m", "build", "--outdir", str(DIST), str(source)],
        WORK / "build.log",
        "`python -m build` failed: read the log; `pip install build` if it is missing (it is in the dev extra)",
        timeout=600,
    )
    wheels = sorted(DIST.glob(f"{PACKAGE}-*.whl"))
    sdists = sorted(DIST.glob(f"{PACKAGE}-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise SmokeFailure(
            f"expected one wheel and one sdist in dist/, found {[p.name for p in wheels + sdists]}",
            "read the build log",
            WORK / "build.log",
        )
    print(f"    {wheels[0].relative_to(ROOT)}, {sdists[0].relative_to(ROOT)}")
    return wheels[0]


def check_contents(wheel: Path) -> None:
    tracked = tracked_package_files()
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    missing = missing_from_wheel(tracked, names)
    if missing:
        raise SmokeFailure(
            f"the wheel lacks {len(missing)} file(s) of the package: " + ", ".join(missing),
            "add them to [tool.setuptools.package-data] in pyproject.toml (non-Python files are left "
            "out unless listed there), then run `make wheel-smoke` again",
        )
    stray = sorted(n for n in names if "__pycache__" in n or n.endswith(".pyc"))
    if stray:
        raise SmokeFailure(
            f"the wheel carries compiled files: {', '.join(stray)}", "build from a clean checkout"
        )
    print(f"    all {len(wheel_paths_for(tracked))} tracked files under src/{PACKAGE} are in the wheel")


def install(wheel: Path) -> None:
    """A fresh venv every run, with the wheel installed as a user would (pip reuses its cache)."""
    if VENV.exists():
        shutil.rmtree(VENV)
    hint = "read the log: a dependency that cannot be installed from the package index is the usual cause"
    run([sys.executable, "-m", "venv", str(VENV)], WORK / "venv.log", hint, timeout=120)
    run(
        [str(venv_bin("python")), "-m", "pip", "install", "--disable-pip-version-check", str(wheel)],
        WORK / "install.log", hint, timeout=900,
    )  # fmt: skip
    where = run(
        [str(venv_bin("python")), "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
        WORK / "import.log", hint, timeout=60,
    ).strip()  # fmt: skip
    if not Path(where).resolve().is_relative_to(VENV.resolve()):
        raise SmokeFailure(
            f"the fresh venv imports {PACKAGE} from {where}, not from its own site-packages",
            "the wheel must be installed as a regular (not editable) package: check the install log",
            WORK / "install.log",
        )
    if not venv_bin(PACKAGE).exists():
        raise SmokeFailure(
            f"the wheel installed no `{PACKAGE}` command",
            "check [project.scripts] in pyproject.toml",
            WORK / "install.log",
        )


def index(kb: Path) -> None:
    if kb.exists():
        shutil.rmtree(kb)
    copy_fixture(EXAMPLE_KB, kb)
    out = run(
        [str(venv_bin(PACKAGE)), "index", "--kb", str(kb)],
        WORK / "index.log",
        "the installed command could not index the example KB: read the log (a missing model or "
        "dictionary file points at the wheel's dependencies)",
        timeout=600,
    )
    print("    " + (out.strip().splitlines() or ["(no output)"])[0])


def search_over_stdio(kb: Path) -> None:
    """One ``search`` through the MCP client over stdio, against the installed ``kbseek serve``."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import CallToolResult

    log = WORK / "serve-stdio.log"
    params = StdioServerParameters(
        command=str(venv_bin(PACKAGE)), args=["serve", "--kb", str(kb)], env=clean_env(), cwd=str(WORK)
    )

    async def converse() -> tuple[str, CallToolResult]:
        """The server's name and its first answer with hits (or the last one); judged outside the client."""
        with log.open("w") as errlog, anyio.fail_after(120):
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                for _ in range(100):  # the catch-up pass runs in the background; the index is already built
                    result = await session.call_tool("search", {"query": QUERY, "limit": 3})
                    if result.is_error or (result.structured_content or {}).get("hits"):
                        break
                    await anyio.sleep(0.2)
                return init.server_info.name, result

    try:
        name, result = anyio.run(converse)
    except Exception as err:  # the client's errors are many (and grouped by its task group); each is this
        while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
            err = err.exceptions[0]
        what = "no answer in 120 s" if isinstance(err, TimeoutError) else f"{type(err).__name__}: {err}"
        raise SmokeFailure(
            f"the MCP stdio conversation failed: {what}",
            "read the server log; anything the server prints to stdout corrupts the protocol stream",
            log,
        ) from None
    if name != PACKAGE:
        raise SmokeFailure(f"the server calls itself {name!r}, not {PACKAGE!r}", "check server/mcp.py", log)
    if result.is_error:
        raise SmokeFailure(f"search answered an error: {result.content}", "read the server log", log)
    hits = (result.structured_content or {}).get("hits", [])
    paths = [h.get("path") for h in hits]
    if EXPECTED_PATH not in paths:
        raise SmokeFailure(
            f"search {QUERY!r} found {paths}, not {EXPECTED_PATH}",
            "the installed server searches an index it cannot read, or examples/kb changed: read the log",
            log,
        )
    print(f"    search {QUERY!r} over stdio: {len(hits)} hit(s), first {paths[0]}")


@contextmanager
def serving_http(kb: Path) -> Iterator[str]:
    """The installed ``kbseek serve --http`` on a free loopback port; yields its base URL once healthy."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = WORK / "serve-http.log"
    with log.open("w") as out, subprocess.Popen(
        [str(venv_bin(PACKAGE)), "serve", "--kb", str(kb), "--http", "--port", str(port)],
        cwd=WORK, env=clean_env(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
    ) as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    status, _, body = http_get(f"{base}/healthz")
                    if status == 200 and json.loads(body).get("status") == "ok":
                        break
                    raise SmokeFailure(
                        f"/healthz answered {status} {body[:200]!r}", "read the server log", log
                    )
                except OSError:
                    if proc.poll() is not None:
                        raise SmokeFailure(
                            f"`kbseek serve --http` exited with status {proc.returncode} before answering",
                            "read the server log (another process may have taken the port: run again)",
                            log,
                        ) from None
                    if time.monotonic() > deadline:
                        raise SmokeFailure(
                            "`kbseek serve --http` did not answer /healthz in 60 s", "read the log", log
                        ) from None
                    time.sleep(0.1)
            print(f"    {base}/healthz: 200")
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def web_page(base: str) -> None:
    """``/ui`` and each asset it links to answer 200 with the right kind of content."""
    log = WORK / "serve-http.log"
    hint = (
        "add the file to [tool.setuptools.package-data] in pyproject.toml, or fix the route in server/web.py"
    )
    status, ctype, body = http_get(f"{base}/ui")
    if status != 200 or not ctype.startswith("text/html"):
        raise SmokeFailure(f"/ui answered {status} ({ctype or 'no content type'})", hint, log)
    links = asset_links(body.decode("utf-8", "replace"))
    kinds = {".js": "text/javascript", ".css": "text/css"}
    if not {Path(link).suffix for link in links} >= set(kinds):
        raise SmokeFailure(
            f"/ui links no script or no stylesheet (found {links})", "check server/ui/index.html"
        )
    for link in links:
        status, ctype, asset = http_get(f"{base}{link}" if link.startswith("/") else f"{base}/ui/{link}")
        want = kinds.get(Path(link).suffix, "")
        if status != 200 or not asset or not ctype.startswith(want):
            raise SmokeFailure(
                f"{link} answered {status} ({ctype or 'no content type'}, {len(asset)} bytes)", hint, log
            )
    print(f"    /ui: 200, and its assets {', '.join(links)}: 200")


def uvx_help(wheel: Path) -> None:
    beside = Path(sys.executable).parent / "uvx"
    uvx = str(beside) if beside.exists() else shutil.which("uvx")
    if not uvx:
        raise SmokeFailure(
            "uvx is not installed", "`pip install uv` (it is in the dev extra: `make test` installs it)"
        )
    out = run(
        # --python: this interpreter, so uv never tries to download one; --isolated: ignore installed tools
        [uvx, "--isolated", "--python", sys.executable, "--from", str(wheel), PACKAGE, "--help"],
        WORK / "uvx.log",
        "uvx could not run the wheel: read the log (uv resolves the dependencies from PyPI itself)",
        timeout=900,
        env=clean_env(UV_PYTHON_DOWNLOADS="never"),
    )
    if "serve" not in out:
        raise SmokeFailure(
            "`kbseek --help` under uvx does not list `serve`", "read the log", WORK / "uvx.log"
        )
    print(f"    uvx --from dist/{wheel.name} {PACKAGE} --help: ok")


# --- the run ----------------------------------------------------------------------------------------


@contextmanager
def step(title: str) -> Iterator[None]:
    """Print a step's title and how long it took; a failure inside it is reported under that title."""
    print(f"==> {title}")
    started = time.monotonic()
    try:
        yield
    except SmokeFailure as failure:
        failure.step = failure.step or title
        raise
    print(f"    ({time.monotonic() - started:.1f} s)")


def smoke() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    kb = WORK / "kb"
    with step("build the sdist and the wheel (python -m build)"):
        wheel = build()
    with step(f"check the wheel carries every file git tracks under src/{PACKAGE}"):
        check_contents(wheel)
    with step("install the wheel into a fresh venv"):
        install(wheel)
    with step("kbseek index --kb <copy of examples/kb>"):
        index(kb)
    with step("one search over stdio MCP with the installed kbseek serve"):
        search_over_stdio(kb)
    with step("kbseek serve --http: /healthz, /ui and its assets"), serving_http(kb) as base:
        web_page(base)
    with step(f"uvx --from dist/{wheel.name} kbseek --help"):
        uvx_help(wheel)


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # keeps order with stderr in CI logs
    started = time.monotonic()
    try:
        smoke()
    except SmokeFailure as failure:
        print(f"\nwheel smoke test FAILED at: {failure.step}", file=sys.stderr)
        print(f"  what failed: {failure}", file=sys.stderr)
        print(f"  what to do: {failure.hint}", file=sys.stderr)
        if failure.log is not None:
            print(f"  details: {failure.log.relative_to(ROOT)}", file=sys.stderr)
            _tail(failure.log)
        return 1
    print(f"wheel smoke test passed in {time.monotonic() - started:.0f} s")
    return 0


def _tail(log: Path, lines: int = 30) -> None:
    """The end of a step's log, so a CI report shows the cause without opening the file."""
    if log.is_file():
        text = log.read_text(errors="replace").splitlines()
        print(f"  --- last {min(lines, len(text))} lines of {log.name}", file=sys.stderr)
        for line in text[-lines:]:
            print(f"  | {line}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
