"""The reranker contract, its configuration (``[rerank]``) and the registry of providers.

A reranker is a second retrieval stage: the fused ranking (``search.fusion``) is cheap and looks at
each chunk alone, a cross-encoder reads the query and a chunk together and judges the pair, which
ranks better and costs far more. So it sees only the top candidates (:attr:`RerankSpec.candidates`)
and only within a time budget (:attr:`RerankSpec.budget_s`); ``rerank.stage`` runs it so that a
reranker that is down, slow or wrong leaves the fused order as it was (docs/decisions/0038).

Construction is cheap and touches neither the network nor model weights, as for embedders
(``embed.base``): the knowledge base builds its reranker when a search first needs one, and the
stage loads it in a worker thread. Every failure a provider can foresee is a :class:`RerankFailed`
whose message says what was wrong and what to change; the stage turns it into a note of the search.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from kbseek.embed.base import Registry, redact_url
from kbseek.errors import ConfigError

MAX_CANDIDATES = 200
"""More candidates than this would put every search's cost in the reranker: the fused ranking's
depth per leg is 100 (``search.pipeline.CANDIDATES_PER_LEG``), and a cross-encoder reads each one."""

MAX_BUDGET_S = 60.0
"""A search that may wait longer than this for a second opinion has stopped being a search."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

HTTP_APIS = ("tei", "jina")
"""The rerank APIs the ``http`` provider speaks: Hugging Face Text Embeddings Inference's
``POST /rerank``, and the Jina/Cohere-style ``POST /v1/rerank`` that llama.cpp's server implements."""


class RerankFailed(Exception):
    """The reranker could not score the candidates; the message says why and what to change.

    Not a :class:`~kbseek.errors.KbError`: no caller ever sees it raised. The stage catches it and
    the search answers in the fused order, with the message in its notes.
    """


class Reranker(Protocol):
    """Scores (query, text) pairs with one fixed model: a higher score is a better match.

    Scores need only be comparable within one call: the stage uses them to order one search's
    candidates, never as a threshold. ``load`` is idempotent, safe to call from several threads, and
    raises :class:`RerankFailed`; ``score`` loads on first use if nobody called ``load`` yet.
    """

    @property
    def name(self) -> str:
        """What the notes call this reranker: the provider and its model or endpoint."""
        ...

    def load(self) -> None: ...

    def score(self, query: str, texts: Sequence[str], *, timeout_s: float) -> list[float]:
        """One score per text, in the order of ``texts``; ``timeout_s`` bounds any network wait."""
        ...


@dataclass(frozen=True)
class RerankSpec:
    """What ``[rerank]`` says, validated on creation so that a typo fails at start-up, naming the key.

    ``provider`` ``None`` (the default) turns reranking off: searches rank exactly as without the
    table. Otherwise it is one of :data:`RERANKERS` (``http``, ``local``, or one a plugin registered).

    - ``url`` (``http``): the rerank endpoint, or the server's base URL. ``api`` says which API it
      speaks (:data:`HTTP_APIS`); unset, a URL whose path ends in ``/v1`` or ``/v1/rerank`` is
      ``jina`` and any other ``tei``.
    - ``model``: for ``http``, sent as the request's ``model`` (the ``jina`` API; TEI serves one
      model and ignores it); for ``local``, a fastembed cross-encoder's name or a folder holding
      ``model.onnx`` and ``tokenizer.json``. Required for ``local``.
    - ``api_key_env`` (``http``): the *name* of the environment variable holding a bearer token, so
      the key itself stays out of config files.
    - ``candidates``: how many of the fused ranking's best chunks are reranked; the rest keep their
      fused places below them.
    - ``budget_s``: how long a search waits for the reranker before it answers in the fused order.
    - ``allow_download`` (``local``): let the first search that needs a named model pull it, through
      ``kbseek model pull``'s verified cache. Off, the model must have been pulled or be a folder: a
      search never downloads unasked.
    - ``threads`` (``local``): ONNX Runtime threads; unset, one.
    """

    provider: str | None = None
    """``"http"`` (a rerank server), ``"local"`` (an ONNX cross-encoder in process; ``kbseek[models]``)
    or a name a plugin registered; unset, no reranking: searches rank exactly as without the table."""
    url: str | None = None
    """``http`` only, and required there: the rerank endpoint or the server's base URL, such as
    ``http://127.0.0.1:8080`` (TEI) or ``http://127.0.0.1:8012/v1`` (llama.cpp's server)."""
    api: str | None = None
    """``http`` only: ``"tei"`` (``POST /rerank``) or ``"jina"`` (the Jina/Cohere-style
    ``POST /v1/rerank``); unset, a URL path ending in ``/v1`` or ``/v1/rerank`` means ``jina``, any
    other ``tei``."""
    model: str | None = None
    """``local`` (required): a fastembed cross-encoder's name or a folder with ``model.onnx`` and
    ``tokenizer.json``; ``http``: sent as the request's ``model`` (TEI serves one model and ignores it)."""
    api_key_env: str | None = None
    """``http`` only: the *name* of the environment variable holding a bearer token, so the key itself
    stays out of config files."""
    candidates: int = 30
    """How many of the fused ranking's best chunks are reranked, 1 to 200; the rest keep their fused
    places below them. A search's time grows with it."""
    budget_s: float = 1.5
    """Seconds a search waits for the reranker, above 0 and at most 60; past it (or while the reranker
    is down or loading) the search answers in the fused order, with a note. Also an ``http`` request's
    timeout."""
    allow_download: bool = False
    """``local`` only: let the first search that needs a named model download it into ``kbseek model
    pull``'s verified cache; off, it must have been pulled or be a folder."""
    threads: int | None = None
    """``local`` only: ONNX Runtime threads; unset, one."""

    def __post_init__(self) -> None:
        for name in ("provider", "url", "api", "model", "api_key_env"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, str):
                raise ConfigError(f"rerank {name} must be a string, got {type(value).__name__} {value!r}")
            value = value.strip()
            if not value:
                raise ConfigError(f"rerank {name} is empty; remove the setting or give it a value")
            object.__setattr__(self, name, value.lower() if name in ("provider", "api") else value)
        _check_number("candidates", self.candidates, low=1, high=MAX_CANDIDATES, integer=True)
        _check_number("budget_s", self.budget_s, low=0.0, high=MAX_BUDGET_S, integer=False)
        object.__setattr__(self, "budget_s", float(self.budget_s))
        if not isinstance(self.allow_download, bool):
            raise ConfigError(f"rerank allow_download must be true or false, not {self.allow_download!r}")
        if self.threads is not None:
            _check_number("threads", self.threads, low=1, high=1024, integer=True)
        if self.provider is None:
            self._check_off()
        elif self.provider not in RERANKERS:
            raise ConfigError(
                f"unknown rerank provider {self.provider!r}; choose one of {RERANKERS.choices()}"
            )
        elif self.provider == "http":
            self._check_http()
        elif self.provider == "local":
            self._check_local()

    @property
    def enabled(self) -> bool:
        """Whether searches rerank at all."""
        return self.provider is not None

    @property
    def http_api(self) -> str:
        """The API an ``http`` reranker speaks: the configured one, else the one its URL suggests."""
        if self.api is not None:
            return self.api
        path = urlsplit(self.url or "").path.rstrip("/")
        return "jina" if path.endswith(("/v1", "/v1/rerank")) else "tei"

    def _check_off(self) -> None:
        given = [n for n in ("url", "api", "model", "api_key_env", "threads") if getattr(self, n) is not None]
        if self.allow_download:
            given.append("allow_download")
        if given:
            raise ConfigError(
                f"rerank {', '.join(given)} set but no rerank provider: add provider = 'http' or 'local' "
                "to [rerank] to turn reranking on, or remove those keys"
            )

    def _only(self, names: Sequence[str], provider: str) -> None:
        for name in names:
            value = getattr(self, name)
            if value is not None and value is not False:
                raise ConfigError(
                    f"rerank {name} applies only to provider {provider!r}, not {self.provider!r}; remove it"
                )

    def _check_http(self) -> None:
        self._only(("allow_download", "threads"), "local")
        if self.url is None:
            raise ConfigError(
                "rerank provider 'http' needs a url: the rerank endpoint, for example "
                "http://127.0.0.1:8080/rerank (Text Embeddings Inference) or "
                "http://127.0.0.1:8080/v1/rerank (llama.cpp's server and other Jina/Cohere-style servers)"
            )
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"rerank url {redact_url(self.url)!r} is not an http:// or https:// URL with a host; fix it"
            )
        if self.api is not None and self.api not in HTTP_APIS:
            raise ConfigError(
                f"unknown rerank api {self.api!r}; choose one of {', '.join(repr(a) for a in HTTP_APIS)} "
                "(or remove it to take the one the url's path suggests)"
            )
        if self.api_key_env is not None and not _ENV_NAME.match(self.api_key_env):
            raise ConfigError(
                f"rerank api_key_env must be the name of an environment variable (letters, digits, _), "
                f"not {self.api_key_env!r}; put the key itself in that variable, not in the config file"
            )

    def _check_local(self) -> None:
        self._only(("url", "api", "api_key_env"), "http")
        if self.model is None:
            raise ConfigError(
                "rerank provider 'local' needs a model: a fastembed cross-encoder's name (for example "
                "'Xenova/ms-marco-MiniLM-L-6-v2') or a folder holding model.onnx and tokenizer.json"
            )


def _check_number(name: str, value: object, *, low: float, high: float, integer: bool) -> None:
    """An integer in ``[low, high]``, or a finite number in ``(low, high]``; a bool is neither."""
    if integer:
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        wanted = f"a whole number from {low:g} to {high:g}"
    else:
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and low < value <= high
        )
        wanted = f"a number of seconds above {low:g} and at most {high:g}"
    if not ok:
        raise ConfigError(f"rerank {name} must be {wanted}, not {value!r}")


RerankerFactory = Callable[[RerankSpec], Reranker]
"""Builds the reranker a validated spec describes, cheaply: loading waits for :meth:`Reranker.load`."""

#: The rerank providers by name. The built-ins are registered by ``rerank.factory``, which the
#: package ``kbseek.rerank`` imports, so they are in place before this module is used; this module
#: cannot register them itself, since their factories import the providers, which import it.
RERANKERS: Registry[RerankerFactory] = Registry("rerank provider")


def register_reranker(name: str, factory: RerankerFactory, *, replace: bool = False) -> RerankerFactory:
    """Make ``name`` a valid ``[rerank] provider`` built by ``factory`` (see ``embed.base.Registry``)."""
    return RERANKERS.register(name, factory, replace=replace)


def make_reranker(spec: RerankSpec) -> Reranker:
    """Build the reranker ``spec`` describes, without loading it (``spec`` must be enabled)."""
    if spec.provider is None:
        raise ValueError("reranking is off in this spec: there is no reranker to build")
    return RERANKERS.lookup(spec.provider)(spec)
