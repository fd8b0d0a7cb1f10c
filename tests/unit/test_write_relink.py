"""Links to a moved note, written again as they were written, naming where it went."""

from __future__ import annotations

import pytest

from kbseek.ingest.links import markdown_links
from kbseek.write.relink import relinked


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("[a](deploy.md)", "[a](../inbox/deploy-v2.md)"),
        ("[a](./deploy.md#rollback)", "[a](../inbox/deploy-v2.md#rollback)"),
        ("[a](/runbooks/deploy.md?x=1)", "[a](/inbox/deploy-v2.md?x=1)"),
        ("[a](deploy)", "[a](../inbox/deploy-v2)"),
        ("[a](<deploy.md>)", "[a](<../inbox/deploy-v2.md>)"),
        ("![img](deploy.md)", "![img](../inbox/deploy-v2.md)"),
        ("[ref]: deploy.md", "[ref]: ../inbox/deploy-v2.md"),
        ("[[deploy]] and [[deploy|the deploy]]", "[[deploy-v2]] and [[deploy-v2|the deploy]]"),
        ("`[a](deploy.md)` and `[[deploy]]`", "`[a](deploy.md)` and `[[deploy]]`"),
        ("```\n[a](deploy.md)\n```\n", "```\n[a](deploy.md)\n```\n"),
        ("[b](deployment.md) [c](https://x/deploy.md) [d](other/deploy.md)", None),
    ],
)
def test_each_link_to_the_moved_note_is_rewritten_as_it_was_written(before: str, after: str | None) -> None:
    text, count = relinked(before, "runbooks/index.md", "runbooks/deploy.md", "inbox/deploy-v2.md")
    assert text == (before if after is None else after)
    assert count == (0 if after is None or after == before else after.count("deploy-v2"))


def test_a_rewritten_link_resolves_to_the_new_path_as_the_index_reads_it() -> None:
    for note in ("runbooks/index.md", "a/b/c.md", "top.md"):
        text, _ = relinked(
            "[x](/runbooks/deploy.md) [y](../../runbooks/deploy.md)",
            note,
            "runbooks/deploy.md",
            "z/new one.md",
        )
        targets = {link.target for link in markdown_links(note, text)}
        assert "z/new one.md" in targets
