"""Methods written in both stores, and how alike they are once their SQL is masked.

    python scripts/store_twins.py            # a summary and the pairs at least 70 % alike
    python scripts/store_twins.py --all      # every pair

Each backend package (``kbseek/store/sqlite/``, ``kbseek/store/postgres/``) is read with ``ast``; a
method defined in both (by name, in any class of the package) is a twin. Its body is compared as a
token sequence in which every string constant is one token and comments and docstrings are gone,
so two methods that differ only in their SQL text count as the same: that is the repetition a shared
core removes, since the SQL is what a backend is for.
"""

from __future__ import annotations

import argparse
import ast
import difflib
from collections.abc import Iterator
from pathlib import Path

STORE = Path(__file__).resolve().parent.parent / "src" / "kbseek" / "store"
ALIKE = 0.70


def methods(package: Path) -> dict[str, list[str]]:
    """Every method in the package's classes, by name, as masked tokens."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        found[item.name] = list(_tokens(item))
    return found


def _tokens(function: ast.FunctionDef) -> Iterator[str]:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield "<str>"
            elif isinstance(node, ast.JoinedStr):
                yield "<fstr>"
            elif isinstance(node, ast.Name):
                yield node.id
            elif isinstance(node, ast.Attribute):
                yield "." + node.attr
            elif isinstance(node, ast.Constant):
                yield repr(node.value)
            else:
                yield type(node).__name__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="List every pair, not only the alike ones.")
    args = parser.parse_args()
    sqlite, postgres = methods(STORE / "sqlite"), methods(STORE / "postgres")
    shared = sorted(sqlite.keys() & postgres.keys())
    ratios = {
        name: difflib.SequenceMatcher(None, sqlite[name], postgres[name], autojunk=False).ratio()
        for name in shared
    }
    alike = [n for n in shared if ratios[n] >= ALIKE]
    print(f"methods in both stores: {len(shared)}; at least {ALIKE:.0%} alike: {len(alike)};"
          f" at least 90 % alike: {sum(r >= 0.9 for r in ratios.values())}")  # fmt: skip
    for name in sorted(shared, key=lambda n: -ratios[n]):
        if args.all or ratios[name] >= ALIKE:
            print(f"  {ratios[name]:5.2f}  {name}")


if __name__ == "__main__":
    main()
