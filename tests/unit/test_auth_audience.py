"""``audience_matches``: a token's ``aud`` against the resource URL, one trailing slash tolerated and
nothing else (docs/decisions/0054)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kbseek.server.auth.audience import audience_matches, issued_for

RESOURCE = "https://kb.example.com/mcp"

hosts = st.from_regex(r"[a-z][a-z0-9-]{0,12}(\.[a-z]{2,6}){1,2}", fullmatch=True)
paths = st.lists(st.from_regex(r"[A-Za-z0-9._~-]{1,8}", fullmatch=True), max_size=3).map(
    lambda segments: "".join("/" + s for s in segments)
)
schemes = st.sampled_from(["http", "https"])
ports = st.sampled_from(["", ":443", ":8765"])


@st.composite
def urls(draw: st.DrawFn) -> str:
    return f"{draw(schemes)}://{draw(hosts)}{draw(ports)}{draw(paths)}"


@given(urls(), st.booleans(), st.booleans())
def test_a_url_matches_itself_with_or_without_one_trailing_slash(
    url: str, slash_a: bool, slash_r: bool
) -> None:
    assert audience_matches(url + "/" * slash_a, url + "/" * slash_r)


@given(urls(), urls())
def test_two_urls_match_only_when_equal_but_for_a_trailing_slash(a: str, b: str) -> None:
    assert audience_matches(a, b) == (a.rstrip("/") == b.rstrip("/"))


@given(urls())
def test_another_scheme_never_matches(url: str) -> None:
    other = (
        url.replace("https://", "http://", 1)
        if url.startswith("https")
        else url.replace("http://", "https://", 1)
    )
    assert not audience_matches(other, url)


@given(urls(), st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True))
def test_another_path_never_matches(url: str, segment: str) -> None:
    assert not audience_matches(url + "/" + segment, url)
    assert not audience_matches(url.rstrip("/") + "//", url)  # two slashes are another path


@given(urls(), st.lists(urls(), max_size=4), st.integers(min_value=0, max_value=4))
def test_a_list_matches_when_any_entry_does(url: str, others: list[str], at: int) -> None:
    audience = [o for o in others if o.rstrip("/") != url.rstrip("/")]
    assert not audience_matches(audience, url)
    audience.insert(min(at, len(audience)), url + "/")
    assert audience_matches(audience, url)


@given(st.one_of(st.none(), st.integers(), st.binary(), st.dictionaries(st.text(), st.text())))
def test_what_is_not_a_string_or_a_list_of_them_never_matches(audience: object) -> None:
    assert not audience_matches(audience, RESOURCE)


def test_case_and_encoding_differences_are_other_resources() -> None:
    assert not audience_matches("https://KB.example.com/mcp", RESOURCE)
    assert not audience_matches("https://kb.example.com/MCP", RESOURCE)
    assert not audience_matches("https://kb.example.com/%6Dcp", RESOURCE)
    assert not audience_matches("https://kb.example.com:443/mcp", RESOURCE)
    assert not audience_matches([1, None, b"https://kb.example.com/mcp"], RESOURCE)
    assert not audience_matches("", "")
    assert not audience_matches("/", "/")


GUID = "6f1d2c3b-0a9e-4b8d-9c7f-2e5a1b3c4d5e"


@given(urls(), st.lists(st.text(min_size=1, max_size=40), max_size=3))
def test_another_accepted_audience_matches_only_exactly(url: str, also: list[str]) -> None:
    assert issued_for(GUID, url, (*also, GUID)) and issued_for(["account", GUID], url, (GUID,))
    assert issued_for(url, url, also)  # the resource URL is still taken
    for near in (GUID.upper(), GUID + "/", " " + GUID, "api://" + GUID):
        assert not issued_for(near, url, (GUID,)) or near in also
    assert not issued_for({"aud": GUID}, url, (GUID,))
