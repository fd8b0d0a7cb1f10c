"""The public boundary: ``kbseek.__all__`` names everything a library caller receives or catches."""

from __future__ import annotations

import inspect
import json

import pydantic
import pytest

import kbseek
from kbseek import errors, responses


def _public_classes(module: object, base: type) -> dict[str, type]:
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and inspect.isclass(value)
        and issubclass(value, base)
        and value is not base
    }


def test_every_name_in_all_exists() -> None:
    assert len(kbseek.__all__) == len(set(kbseek.__all__))
    missing = [name for name in kbseek.__all__ if not hasattr(kbseek, name)]
    assert not missing, f"named in kbseek.__all__ but not defined: {missing}"


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from kbseek import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(kbseek.__all__)


def test_every_public_error_is_exported() -> None:
    found = _public_classes(errors, BaseException)
    assert {"KbError", "ConfigError", "DocumentRefused", "KbBug"} <= set(found)
    missing = sorted(name for name in found if name not in kbseek.__all__)
    assert not missing, f"errors a caller may catch but cannot import from kbseek: {missing}"
    assert all(getattr(kbseek, name) is cls for name, cls in found.items())


def test_every_response_model_is_exported() -> None:
    found = _public_classes(responses, pydantic.BaseModel)
    assert {"SearchResponse", "StatusResponse", "IndexReport"} <= set(found)
    missing = sorted(name for name in found if name not in kbseek.__all__)
    assert not missing, f"answers a caller receives but cannot import from kbseek: {missing}"
    assert all(getattr(kbseek, name) is cls for name, cls in found.items())


@pytest.mark.parametrize(
    "name", ["KnowledgeBase", "Library", "Settings", "Limits", "ProgressSnapshot", "IndexReport"]
)
def test_the_facade_and_its_values_are_exported(name: str) -> None:
    assert name in kbseek.__all__


def test_index_report_is_frozen_and_prints_as_index_json() -> None:
    report = kbseek.IndexReport(
        added=["a.md"], renamed=[("old.md", "new.md")], skipped=[("b.md", "too large")],
        warnings=[("c.md", "unclosed fence")], seconds=1.23456, elsewhere=True,
    )  # fmt: skip
    with pytest.raises(pydantic.ValidationError):
        report.unchanged = 3  # type: ignore[misc]
    assert report.skipped == [("b.md", "too large")] and report.changed
    assert json.loads(report.model_dump_json()) == {
        "added": ["a.md"], "updated": [], "renamed": [["old.md", "new.md"]], "deleted": [],
        "unchanged": 0, "skipped": [{"path": "b.md", "reason": "too large"}],
        "warnings": [{"path": "c.md", "message": "unclosed fence"}],
        "chunks_written": 0, "chunks_embedded": 0, "seconds": 1.235, "took_over_from": None,
    }  # fmt: skip
