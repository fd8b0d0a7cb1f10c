"""Topic groups: documents grouped by their first one or two folders (D2)."""

from __future__ import annotations


def topic_prefix(path: str) -> str:
    """``a.md`` → ``""``, ``a/b.md`` → ``"a/"``, ``a/b/c/d.md`` → ``"a/b/"``.

    Two levels keep a large tree's listing short while still separating,
    say, ``runbooks/database/`` from ``runbooks/network/``.
    """
    folders = path.split("/")[:-1]
    return "".join(f + "/" for f in folders[:2])
