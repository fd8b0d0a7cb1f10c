"""``text.names``: which words of a query are names, judged by how they are written."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbseek.text.analyzer import terms
from kbseek.text.names import names


def surfaces(text: str) -> list[str]:
    return [n.surface for n in names(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("how do I configure Tailwind CSS in a React project", ["Tailwind", "CSS", "React"]),
        ("encrypt a whole disk partition with LUKS", ["LUKS"]),
        ("why does useEffect run twice", ["useEffect"]),
        ("deploy to k8s over ipv6", ["k8s", "ipv6"]),
        ("turn on 2FA for the 1Password vault", ["2FA", "1Password"]),
        ("Cypress で E2E テストを書く方法", ["Cypress", "E2E"]),
        ("Ｔａｉｌｗｉｎｄ の設定", ["Ｔａｉｌｗｉｎｄ"]),  # full width is the same name
        ("Markdown ファイルを PDF に変換したい", ["Markdown", "PDF"]),
        # a pasted error banner in capitals names nothing; the names around it still count
        ("ssh to Bastion says REMOTE HOST IDENTIFICATION HAS CHANGED", ["Bastion"]),
        ("the SQL and DNS tiers", ["SQL", "DNS"]),  # two acronyms are not a banner
    ],
)
def test_names_are_what_the_writing_marks_as_names(text: str, expected: list[str]) -> None:
    assert surfaces(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "How do I roll back a deployment",  # a capital that only opens the sentence
        "It failed. Then it worked",  # ... or the next one
        "should I add more pods",  # the pronoun
        "a 40mg dose every 100ms for 50s",  # quantities
        "show a badge only when there are unread messages",  # ordinary words
        "障害対応の手順を教えて",  # a Japanese name in kana or kanji is not judged
    ],
)
def test_ordinary_words_are_not_names(text: str) -> None:
    assert surfaces(text) == []


def test_each_name_is_given_once_in_order() -> None:
    assert surfaces("use Redis and Postgres, then Redis again") == ["Redis", "Postgres"]


@given(st.text(max_size=200))
def test_names_never_raise_and_point_into_the_text(text: str) -> None:
    found = names(text)
    known = set(terms(text))
    for name in found:
        assert name.surface in text
        assert name.term in known  # what the index is asked about is the analyzer's own term
        assert name.surface != "I" and not re.fullmatch(r"[0-9]+[a-z]{0,3}", name.surface)
    assert len({n.term for n in found}) == len(found)
