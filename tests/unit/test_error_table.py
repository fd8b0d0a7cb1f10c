"""The one error table: every refusal class has its own row, and a bug is never answered as a refusal."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import mcp.types
import pytest

import kbseek
from kbseek import errors
from kbseek.server.errors import (
    BUG,
    BUG_EXIT,
    BUG_MESSAGE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    TABLE,
    answer_for,
    translate,
)

ROOT = Path(__file__).resolve().parents[2]


def _all_refusal_classes() -> list[type[errors.KbError]]:
    """Every ``KbError`` subclass in the package, wherever it is defined: each module is imported first,
    so a class added in any module is found."""
    for info in pkgutil.walk_packages(kbseek.__path__, "kbseek."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found: list[type[errors.KbError]] = []
    todo: list[type[errors.KbError]] = [errors.KbError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: c.__name__)


REFUSALS = _all_refusal_classes()


@pytest.mark.parametrize("cls", REFUSALS, ids=lambda c: c.__name__)
def test_every_refusal_class_has_its_own_row_and_lives_in_the_errors_module(
    cls: type[errors.KbError],
) -> None:
    assert cls in TABLE, f"{cls.__name__} needs a row in kbseek.server.errors.TABLE"
    assert cls.__module__ == "kbseek.errors", f"{cls.__name__} belongs in kbseek/errors.py, with the tree"
    assert cls.__name__ in (errors.__doc__ or ""), f"{cls.__name__} is missing from the tree in errors.py"
    answer = TABLE[cls]
    assert not answer.bug and answer.exit != BUG_EXIT and answer.http != 500


def test_the_table_holds_refusal_classes_only() -> None:
    assert set(TABLE) == set(REFUSALS)


def _refusal(cls: type[errors.KbError], message: str) -> errors.KbError:
    return (
        cls(message, "a.md")
        if issubclass(cls, errors.DocumentRefused | errors.WriteRefused)
        else cls(message)
    )


@pytest.mark.parametrize("cls", REFUSALS, ids=lambda c: c.__name__)
def test_a_refusal_is_answered_with_its_own_row_and_its_own_message(cls: type[errors.KbError]) -> None:
    exc = _refusal(cls, "what was wrong; what to do")
    answer, text = translate(exc, "a test")
    assert answer is TABLE[cls] and text == "what was wrong; what to do"


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("internal-1"),
        errors.KbBug("internal-2"),
        KeyError("internal-3"),
        ValueError("internal-4"),
    ],
)
def test_anything_that_is_not_a_refusal_is_a_bug(exc: Exception, caplog: pytest.LogCaptureFixture) -> None:
    assert not isinstance(errors.KbBug("x"), errors.KbError)  # no `except KbError` can swallow a bug
    try:
        raise exc
    except Exception as raised:
        answer, text = translate(raised, "a test")
    assert answer is BUG and (answer.http, answer.jsonrpc, answer.exit) == (500, INTERNAL_ERROR, 70)
    assert text == BUG_MESSAGE and str(exc) not in text
    assert "a test failed: a bug in kbseek" in caplog.text and "Traceback" in caplog.text


def test_a_subclass_without_a_row_falls_back_to_its_closest_ancestor() -> None:
    class Later(errors.DocumentNotFound):
        pass

    assert answer_for(Later("gone", "a.md")) is TABLE[errors.DocumentNotFound]


def test_the_json_rpc_codes_are_the_sdks() -> None:
    assert (INVALID_PARAMS, INTERNAL_ERROR) == (mcp.types.INVALID_PARAMS, mcp.types.INTERNAL_ERROR)


@pytest.mark.parametrize("page", ["docs/tools.md", "docs/ja/tools.md"])
def test_the_documented_table_says_what_the_table_says(page: str) -> None:
    """The tools page's error table, in each language, names every class in a row with the same HTTP
    status, JSON-RPC code and exit status as the table in the code, so it cannot drift from it."""
    readme = page
    text = (ROOT / page).read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    documented = {cls.__name__: answer for cls, answer in TABLE.items() if cls is not errors.KbError}
    documented["KbBug"] = BUG  # the row for bugs; a bare KbError (never raised now) has none
    for name, answer in documented.items():
        row = next((r for r in rows if f"`{name}`" in r.split("|")[1]), None)
        assert row is not None, f"{readme}: no table row names `{name}`"
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        assert cells[-3:] == [str(answer.http), str(answer.jsonrpc), str(answer.exit)], row
