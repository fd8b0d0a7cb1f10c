"""What the Markdown parser reads as links to other notes (``kbseek.ingest.links``), and how the
store's names resolve them (``kbseek.store.links``)."""

from __future__ import annotations

from kbseek.documents import Link
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.links import MAX_LINKS, markdown_links, resolve_target
from kbseek.ingest.parsers.markdown import MarkdownParser
from kbseek.store.links import document_names, link_key, resolve


def test_relative_links_resolve_against_the_folder_and_root_absolute_ones_against_the_root() -> None:
    text = "[a](b.md) [up](../c/d.md#part) [root](/learn/state) [dot](./e.md?x=1) [sp](f%20g.md)"
    assert markdown_links("notes/x.md", text) == (
        Link("path", "notes/b.md"), Link("path", "c/d.md"), Link("path", "learn/state"),
        Link("path", "notes/e.md"), Link("path", "notes/f g.md"),
    )  # fmt: skip


def test_external_urls_anchors_and_paths_out_of_the_root_are_dropped() -> None:
    text = "[w](https://x.org/a.md) [m](mailto:a@b) [p](//host/a.md) [h](#here) [o](../../out.md) [e]()"
    assert markdown_links("notes/x.md", text) == ()
    assert resolve_target("", "..") is None and resolve_target("a", "<b c.md>") == "a/b c.md"


def test_wiki_links_keep_their_name_without_alias_or_heading() -> None:
    text = "[[Deploy Runbook]] and [[On-call|the rotation]], [[Design#Goals]], ![[diagram]] [[ ]]"
    assert markdown_links("x.md", text) == (
        Link("wiki", "Deploy Runbook"), Link("wiki", "On-call"), Link("wiki", "Design"), Link("wiki", "diagram"),
    )  # fmt: skip


def test_links_in_code_are_not_links_and_each_link_is_kept_once_in_order() -> None:
    text = (
        "[b](b.md) `[not](code.md)` [[B]]\n\n```md\n[not](fenced.md) [[fenced]]\n```\n\n"
        "  - item\n    ~~~\n    [not](listed.md)\n    ~~~\n[a](a.md) [b again](b.md)\n\n[ref]: ./r.md\n"
    )
    assert markdown_links("x.md", text) == (
        Link("path", "b.md"), Link("wiki", "B"), Link("path", "a.md"), Link("path", "r.md"),
    )  # fmt: skip
    assert markdown_links("x.md", "```\n[open](fence.md)\n") == ()  # an unclosed fence runs to the end


def test_a_link_to_itself_is_left_out_and_a_page_of_links_keeps_the_first_ones() -> None:
    assert markdown_links("a/x.md", "[me](x.md) [me](/a/x.md)") == ()
    many = " ".join(f"[{i}](n{i}.md)" for i in range(MAX_LINKS + 50))
    links = markdown_links("x.md", many)
    assert len(links) == MAX_LINKS and links[0] == Link("path", "n0.md")


def test_the_parser_reads_links_from_the_body_not_the_frontmatter() -> None:
    text = "---\ntitle: T\nsee: '[[front]]'\n---\n# T\n\nSee [[Body]] and [b](b.md).\n"
    parsed = MarkdownParser().parse("x.md", text, ChunkOptions())
    assert parsed.links == (Link("wiki", "Body"), Link("path", "b.md"))
    assert MarkdownParser.links("x.md", text) == parsed.links


def test_names_a_link_may_call_a_document_by() -> None:
    names = document_names("learn/index.md", "Learn React")
    assert names["p:learn/index.md"] == 0 and names["p:learn/index"] == 1 and names["p:learn"] == 2
    assert names["w:index"] == names["w:index.md"] == names["w:learn/index"] == 0
    assert names["w:learn react"] == 1
    assert link_key(Link("wiki", " Learn React ")) == "w:learn react"
    assert link_key(Link("path", "learn")) == "p:learn"


def test_an_ambiguous_name_prefers_rank_then_the_linkers_folder_then_the_shortest_path() -> None:
    assert resolve("a/x.md", [("b/t.md", 0), ("a/t.md", 1)]) == "b/t.md"
    assert resolve("a/x.md", [("t.md", 0), ("a/deep/t.md", 0), ("a/t.md", 0)]) == "a/t.md"
    assert resolve("c/x.md", [("a/t.md", 0), ("b/t.md", 0), ("t.md", 0)]) == "t.md"
    assert resolve("c/x.md", []) is None
