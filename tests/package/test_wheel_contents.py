"""The pure parts of the wheel smoke test (``smoke_wheel.py``), which itself runs by ``make wheel-smoke``.

These pin what the check compares, so a wrong mapping cannot make a broken wheel look complete.
"""

from __future__ import annotations

from tests.package.smoke_wheel import asset_links, missing_from_wheel, tracked_package_files, wheel_paths_for

WHEEL = [
    "kbseek/__init__.py",
    "kbseek/py.typed",
    "kbseek/server/ui/index.html",
    "kbseek-0.1.0.dist-info/RECORD",
]


def test_tracked_files_under_src_map_to_package_paths_without_pycache() -> None:
    tracked = ["src/kbseek/py.typed", "src/kbseek/__pycache__/cli.cpython-311.pyc", "README.md"]
    assert wheel_paths_for(tracked) == {"kbseek/py.typed"}


def test_a_complete_wheel_misses_nothing() -> None:
    tracked = ["src/kbseek/__init__.py", "src/kbseek/py.typed", "src/kbseek/server/ui/index.html"]
    assert missing_from_wheel(tracked, WHEEL) == []


def test_files_left_out_of_the_wheel_are_named_as_checkout_paths() -> None:
    tracked = [
        "src/kbseek/py.typed",
        "src/kbseek/server/ui/app.js",
        "src/kbseek/ingest/parsers/_pdf_child.py",
    ]
    assert missing_from_wheel(tracked, WHEEL) == [
        "src/kbseek/ingest/parsers/_pdf_child.py",
        "src/kbseek/server/ui/app.js",
    ]


def test_the_checkout_tracks_the_runtime_files_the_wheel_must_carry() -> None:
    tracked = set(tracked_package_files())
    assert {
        "src/kbseek/py.typed",
        "src/kbseek/server/ui/index.html",
        "src/kbseek/ingest/parsers/_pdf_child.py",
        "src/kbseek/ingest/parsers/_extract_child.py",
    } <= tracked


def test_the_page_assets_are_read_from_script_and_stylesheet_tags() -> None:
    html = (
        '<link rel="stylesheet" href="/ui/app.css"><link rel="icon" href="/favicon.ico">'
        '<script src="/ui/app.js"></script><script>inline()</script>'
    )
    assert asset_links(html) == ["/ui/app.css", "/ui/app.js"]
