"""English function words, as the analyzer's terms.

They stay in the index (a query made only of them still finds its phrase by BM25), but two places
must look past them: a snippet, where a mark on every "a" and "do" hides the words that matter, and
the bilingual bridge (``text.lexicon``), where "to" or "the" would translate into noise.
"""

from __future__ import annotations

from functools import cache

from kbseek.text.analyzer import terms as analyze

__all__ = ["stop_terms"]

_STOP_WORDS = """a an the and or but nor if then else so than as of to in on at by for with from into onto
about over under up down out off again all any both each few more most other some such only own too very
is are was were be been being am do does did doing done have has had having i me my we our you your he him
his she her it its they them their this that these those there here what which who whom whose when where
why how not no can could will would shall should might must also just"""


@cache
def stop_terms() -> frozenset[str]:
    """The stop words as the analyzer's terms (stemmed: ``does`` is ``doe``)."""
    return frozenset(analyze(_STOP_WORDS))
