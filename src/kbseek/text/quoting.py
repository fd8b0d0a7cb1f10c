"""How much of a caller's own input comes back in a response or an error.

Every response is capped (T3), and input repeated in it counts too: a 1 MB query, id or path must not
return as a 1 MB answer, yet the caller must still recognise what it sent. The surfaces (the MCP
server's errors, the prompts) and the response shaping all cut echoes here, the same way.
"""

from __future__ import annotations

import reprlib

from kbseek.text.plurals import counted

ECHO_CHARS = 300
"""The most of a caller's own input (a query, an id, a path prefix) a response repeats: the caps bound
the whole response (T3), echoes included, so a 1 MB query does not come back as a 1 MB response."""


def bounded(text: str, most: int = ECHO_CHARS) -> str:
    """``text`` itself when it has at most ``most`` characters, else its start and ``…(N more characters)``."""
    if len(text) <= most:
        return text
    return f"{text[:most]}…({counted(len(text) - most, 'more character')})"


def bounded_middle(text: str, most: int) -> str:
    """``text`` cut in the middle to about ``most`` characters: a message quoting input keeps its advice."""
    if len(text) <= most:
        return text
    keep = max(most // 2, 1)
    return f"{text[:keep]}…({counted(len(text) - 2 * keep, 'more character')})…{text[-keep:]}"


_SHORT_REPR = reprlib.Repr()  # keyword arguments only from Python 3.12
_SHORT_REPR.maxlevel = 3
_SHORT_REPR.maxdict = _SHORT_REPR.maxlist = _SHORT_REPR.maxtuple = _SHORT_REPR.maxset = 6
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = 80


def shown_value(value: object) -> str:
    """A value a caller sent (a JSON object, a list, a string), as a message quotes it: nested three
    levels at most and cut to :data:`ECHO_CHARS`, so a value nested 100,000 deep or 1 MB long is still
    a short sentence and never a recursion error."""
    return bounded(_SHORT_REPR.repr(value))
