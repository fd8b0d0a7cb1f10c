"""The package's import graph: no cycle, no upward import, no oversized module.

Every ``import`` statement in every module under ``kbseek`` counts: at module level, inside a
function, or under ``if TYPE_CHECKING:``. A deferred or type-only import is still a dependency of
the design; it only hides a cycle from the interpreter, not from the reader.

The layers, lowest first. A module may import modules of its own layer or of a lower one, never
of a higher one::

    0 foundation  errors, documents, uris, progress, filters, dates, text/*
                  values and pure functions that know nothing of the rest
    1 domain      ingest/*, store/*, embed/*, search/*, rerank/*
                  files → documents → chunks → index → hits; each knows its inputs, not its callers
    2 settings    config, auth_spec, audit_spec
                  reads kbseek.toml into the option types the domain defines
    3 facade      kbseek (the package, the public API), kb, library, responses and facade/*
                  (the parts KnowledgeBase delegates to)
    4 surfaces    cli/*, __main__, server/*, render
                  the ways in: CLI (with evaluation and diagnostics), MCP, HTTP/web

Surfaces go through the facade: besides their own layer they import only the facade, the
settings, the foundation and the public package ``kbseek.embed``, never a domain module itself
(``SURFACE_EXCEPTIONS`` lists the deliberate exceptions, each with its reason).

Layers are matched by module name patterns, so a module added later either matches a pattern
or fails ``test_every_module_has_a_layer`` until it is placed in the table on purpose; a pattern
left behind by a module that was removed or renamed fails ``test_every_layer_pattern_names_a_module``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path

import kbseek

PACKAGE_DIR = Path(kbseek.__file__).resolve().parent

MAX_MODULE_LINES = 600
MAX_FACADE_LINES = 320
"""``kb.py`` is a thin facade: its methods delegate, so it stays under this many lines (300 until
``keyword_scale`` joined the public API; docs/development.md)."""


def _package(name: str) -> tuple[str, str]:
    """Patterns matching the package ``name`` and every module below it."""
    return name, name + ".*"


LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", (
        "kbseek.errors", "kbseek.documents", "kbseek.uris", "kbseek.progress", "kbseek.remote", "kbseek.filters",
        "kbseek.dates", "kbseek.globs", "kbseek.numbers", "kbseek.folding", "kbseek.search_query",
        *_package("kbseek.text"),
    )),
    ("domain", (
        *_package("kbseek.ingest"), *_package("kbseek.store"), *_package("kbseek.embed"),
        *_package("kbseek.search"), *_package("kbseek.rerank"), *_package("kbseek.write"),
    )),
    ("settings", ("kbseek.config", "kbseek.auth_spec", "kbseek.audit_spec", "kbseek.write_spec")),
    ("facade", ("kbseek", "kbseek.kb", "kbseek.library", "kbseek.responses", *_package("kbseek.facade"))),
    ("surfaces", ("kbseek.__main__", *_package("kbseek.cli"), *_package("kbseek.server"), "kbseek.render")),
)  # fmt: skip

SURFACE_REACH = ("foundation", "settings", "facade", "surfaces")
"""The layers a surface may import from."""

PUBLIC_PACKAGES = ("kbseek.embed",)
"""Domain packages whose ``__init__`` is public API a surface may use (the embedder spec and factory)."""

SURFACE_EXCEPTIONS: dict[str, dict[str, str]] = {
    "kbseek.cli.doctor.sqlite_index": {
        "kbseek.store.sqlite.schema": "doctor compares the on-disk schema version without opening a knowledge base",
        "kbseek.store.lock": "doctor names the writer lock's holder without taking the lock",
    },
    "kbseek.cli.doctor.postgres_store": {
        "kbseek.store.postgres.schema": "doctor reads the schema's version, name and lock key without opening "
        "a store, whose setup would create the schema and the extension",
        "kbseek.store.meta": "doctor reads the meta rows of a PostgreSQL index as the store would",
        "kbseek.store.postgres.lock": "doctor names the holder of the lock a writer holds for a whole pass",
    },
    "kbseek.cli.doctor.runner": {
        "kbseek.store.opening": "doctor names the knowledge base's schema as the store would, from the folder",
    },
    "kbseek.cli.doctor.reranker": {
        "kbseek.rerank": "doctor builds the configured reranker and scores two texts itself: the search's "
        "stage would turn any failure into a note, and the facade builds a reranker only inside a search",
    },
}
"""Surface → domain imports made on purpose. Doctor is read-only and runs when something is already
wrong: it must not build the facade (which prepares the index folder), so it reads these itself."""


# -- the graph -------------------------------------------------------------------------------------


def module_files(package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    out: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source.

    ``from a.b import c`` is an edge to the module ``a.b.c`` when that is a module, else to ``a.b``;
    parent packages that Python runs on the way are not edges (they are not a design dependency).
    """
    modules = set(known)
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                out.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source)
    return {m for m in out if m in modules and m != name}


def import_graph(package_dir: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    files = module_files(package_dir)
    return {name: imports_of(name, path, files) for name, path in files.items()}


def find_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One cycle per strongly connected component that has one, as a path ``a → … → a``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm; the package is far too small to need iteration
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(component)

    for v in sorted(graph):
        if v not in index:
            connect(v)

    cycles: list[list[str]] = []
    for component in components:
        members = set(component)
        start = min(component)
        if len(component) == 1 and start not in set(graph.get(start, ())):
            continue
        cycles.append(_path_back(graph, start, members))
    return sorted(cycles)


def _path_back(graph: Mapping[str, Iterable[str]], start: str, members: set[str]) -> list[str]:
    """The shortest path from ``start`` back to itself inside one strongly connected component."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for v in frontier:
            for w in sorted(set(graph.get(v, ())) & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in previous:
                    previous[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{start} is in a cycle but no path leads back to it")


def layer_of(module: str) -> int | None:
    for rank, (_, patterns) in enumerate(LAYERS):
        if any(fnmatchcase(module, p) for p in patterns):
            return rank
    return None


def layer_name(rank: int) -> str:
    return LAYERS[rank][0]


GRAPH = import_graph()


# -- the checks on the graph -----------------------------------------------------------------------


def test_the_graph_sees_module_level_and_function_level_imports() -> None:
    """Guards the walker itself, so the checks below cannot pass on an empty graph."""
    assert "kbseek.ingest.guard" in GRAPH["kbseek.ingest.indexer"]  # module level
    assert "kbseek.embed.use" in GRAPH["kbseek.embed.factory"]  # inside a function
    assert {"kbseek.embed.base", "kbseek.embed.factory"} <= GRAPH["kbseek.embed"]  # a package's __init__


def test_the_cycle_finder_reports_the_path() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in GRAPH if layer_of(m) is None)
    assert not unplaced, f"modules in no layer (add them to LAYERS in this file on purpose): {unplaced}"


def test_every_layer_pattern_names_a_module() -> None:
    """A name left in the table after its module went away reads as part of the design: remove it."""
    stale = [p for _, patterns in LAYERS for p in patterns if not any(fnmatchcase(m, p) for m in GRAPH)]
    stale = [p for p in stale if not (p.endswith(".*") and p[:-2] in GRAPH)]  # a package with no modules yet
    assert not stale, f"layer patterns that match no module: {stale}"


def test_the_import_graph_has_no_cycle() -> None:
    cycles = find_cycles(GRAPH)
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for module, targets in sorted(GRAPH.items()):
        own = layer_of(module)
        for target in sorted(targets):
            theirs = layer_of(target)
            if own is not None and theirs is not None and theirs > own:
                upward.append(f"{module} ({layer_name(own)}) imports {target} ({layer_name(theirs)})")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_surfaces_reach_the_core_only_through_the_facade() -> None:
    surfaces = LAYERS.index(next(layer for layer in LAYERS if layer[0] == "surfaces"))
    reach = {rank for rank, (name, _) in enumerate(LAYERS) if name in SURFACE_REACH}
    bypassing = []
    for module, targets in sorted(GRAPH.items()):
        if layer_of(module) != surfaces:
            continue
        allowed = SURFACE_EXCEPTIONS.get(module, {})
        for target in sorted(targets):
            if layer_of(target) in reach or target in PUBLIC_PACKAGES or target in allowed:
                continue
            bypassing.append(f"{module} imports {target}")
    assert not bypassing, "surfaces that bypass the facade:\n" + "\n".join(bypassing)


def test_the_surface_exceptions_are_still_needed() -> None:
    """An exception nobody uses any more is a door left open: remove it."""
    stale = [
        f"{module} → {target}"
        for module, targets in SURFACE_EXCEPTIONS.items()
        for target in targets
        if target not in GRAPH.get(module, set())
    ]
    assert not stale, f"exceptions no longer used: {stale}"


# -- module sizes ----------------------------------------------------------------------------------


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_600_lines() -> None:
    files = module_files()
    too_long = sorted(
        f"{name}: {_lines(path)}" for name, path in files.items() if _lines(path) > MAX_MODULE_LINES
    )
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {too_long}"


def test_the_facade_is_under_300_lines() -> None:
    path = PACKAGE_DIR / "kb.py"
    assert _lines(path) < MAX_FACADE_LINES, (
        f"kb.py has {_lines(path)} lines; move behaviour to a collaborator"
    )
