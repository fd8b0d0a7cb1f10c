"""Embedder for the models users bring: any model fastembed runs, by name or from a local folder.

Why: the bundled model is small and the optional e5 is one model; a user with a multilingual
corpus, a domain model or a bigger machine wants to pick (multilingual-e5-large,
paraphrase-multilingual-mpnet, bge, …) without running a server for it (provider ``http``).
fastembed runs ONNX models in process with ONNX Runtime, and ships a catalogue of them; it comes
with the ``models`` extra (``pip install 'kbseek[models]'``) and is imported only when this
provider loads.

``[embed] model`` is either

- a name from fastembed's catalogue (``TextEmbedding.list_supported_models()``), in full
  (``intfloat/multilingual-e5-large``) or by the part after the slash, or by a prefix of it that
  names one model (``paraphrase-multilingual-mpnet``). Its files come from the Hugging Face Hub,
  but only through ``kbseek model pull NAME`` (or ``[embed] allow_download = true``), into kbseek's
  cache, verified (``embed.hub``). fastembed is then pointed at that folder and never downloads.
- a local folder holding ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json`` with
  ``tokenizer_config.json`` beside it: a model exported by the user, used as it is. Its vectors are
  mean-pooled unless the folder's sentence-transformers pooling config (``1_Pooling/config.json``)
  says CLS, and always normalised.

The same cache holds the cross-encoders of ``[rerank] provider = "local"``
(``TextCrossEncoder.list_supported_models()``): :func:`reranker_catalogue`, :func:`find_reranker`
and :func:`ready_copy` serve ``rerank.local`` as they serve the embedder, so both kinds of model
arrive one way, through ``kbseek model pull``, verified (decisions 0038 and 0039).

``model_id`` names the exact weights, so an index notices when they change: the catalogue name and
the commit the files were pulled from, or for a folder the sha256 of its ONNX file and the pooling.
e5 models are given their ``query: `` / ``passage: `` prefixes, which fastembed leaves to the caller.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kbseek.embed import hub
from kbseek.embed.base import check_texts, query_vector, unit_rows
from kbseek.errors import ConfigError, EmbedderUnavailable

INSTALL = "pip install 'kbseek[models]'"
"""What brings fastembed and ONNX Runtime, for messages."""

CONFIG_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
"""The files fastembed reads beside the weights; ``config.json`` and the special tokens map are optional."""

_PROBE = "kbseek embedding probe"

_OWN_NAMES = "kbseek-"
"""Prefix of the names kbseek registers folders under in fastembed's lists (``kbseek-local/``,
``kbseek-folder:``): those are the user's folders, not models anyone can pull."""

Kind = Literal["embedding", "reranker"]
"""What a catalogue model is for: ``[embed]`` (a text-embedding model) or ``[rerank]`` (a cross-encoder)."""


@dataclass(frozen=True)
class CatalogueModel:
    """A model fastembed's catalogue knows: its name, where its files are, and its vectors' width."""

    name: str
    source: hub.HubSource
    dim: int
    """The width of its vectors; 0 for a cross-encoder, which gives one score per pair."""
    size_bytes: int
    """fastembed's estimate of the download, for ``kbseek model list``."""
    kind: Kind = "embedding"

    @property
    def what(self) -> str:
        """What the messages call it."""
        return "embedding model" if self.kind == "embedding" else "cross-encoder"

    @property
    def table(self) -> str:
        """The config table that uses it."""
        return "[embed]" if self.kind == "embedding" else "[rerank]"


def is_folder(model: str) -> bool:
    """Whether ``[embed] model`` names a local folder rather than a catalogue model.

    A catalogue name is ``org/name``, which is also a relative path; it counts as a folder only
    when that folder exists, or when it is written as a path (absolute, ``./``, ``~``).
    """
    return model.startswith(("/", "./", "../", "~", ".\\")) or Path(model).expanduser().is_dir()


def catalogue() -> list[CatalogueModel]:
    """Every text-embedding model fastembed knows that comes from the Hub, in its own order."""
    return _described(_fastembed().TextEmbedding._list_supported_models(), "embedding")


def reranker_catalogue() -> list[CatalogueModel]:
    """Every cross-encoder fastembed knows that comes from the Hub (``[rerank] provider = "local"``)."""
    return _described(_cross_encoder_class()._list_supported_models(), "reranker")


def _described(descriptions: Any, kind: Kind) -> list[CatalogueModel]:
    out: list[CatalogueModel] = []
    for desc in descriptions:
        if not desc.sources.hf or desc.model.startswith(_OWN_NAMES):
            continue  # a Google Cloud Storage archive (nothing to verify against the Hub), or a folder
        files = (desc.model_file, *desc.additional_files, "tokenizer.json", "tokenizer_config.json")
        source = hub.HubSource(desc.sources.hf, files, optional=("config.json", "special_tokens_map.json"))
        size = int(float(desc.size_in_GB or 0.0) * 1e9)
        dim = int(getattr(desc, "dim", 0) or 0) if kind == "embedding" else 0
        out.append(CatalogueModel(desc.model, source, dim, size, kind))
    return out


def find_model(name: str) -> CatalogueModel:
    """The catalogue model ``name`` means: the full name, the part after the slash, or a unique prefix
    of either, case ignored. Anything else is a :class:`ConfigError` naming the candidates."""
    found = _match(catalogue(), name, "embedding model")
    if found is None:
        raise ConfigError(
            f"fastembed does not know a text-embedding model {name!r}; `kbseek model list` shows the ones "
            "it knows, or give the path of a folder holding model.onnx and tokenizer.json"
        )
    return found


def find_reranker(name: str) -> CatalogueModel:
    """The cross-encoder ``name`` means, matched as :func:`find_model` matches embedding models."""
    found = _match(reranker_catalogue(), name, "cross-encoder")
    if found is None:
        raise ConfigError(
            f"fastembed knows no cross-encoder named {name!r}; `kbseek model list` shows the ones it knows "
            "(kind reranker), or give the path of a folder holding model.onnx and tokenizer.json"
        )
    return found


def find_any(name: str) -> CatalogueModel:
    """The model of either kind ``name`` means, for ``kbseek model pull``; a name both kinds could
    match is a :class:`ConfigError` listing them, as an ambiguous prefix is."""
    found = _match([*catalogue(), *reranker_catalogue()], name, "model")
    if found is None:
        raise ConfigError(
            f"fastembed knows no embedding model or cross-encoder {name!r}; `kbseek model list` shows the "
            "ones it knows, or give the path of a folder holding model.onnx and tokenizer.json as the "
            "model setting"
        )
    return found


def _match(models: list[CatalogueModel], name: str, what: str) -> CatalogueModel | None:
    """The one model ``name`` means at the first level that matches any, or ``None`` if none does."""
    wanted = name.strip().lower()
    for matches in (
        [m for m in models if m.name.lower() == wanted],
        [m for m in models if m.name.lower().split("/")[-1] == wanted],
        [
            m
            for m in models
            if m.name.lower().startswith(wanted) or m.name.lower().split("/")[-1].startswith(wanted)
        ],
    ):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ConfigError(
                f"{what} {name!r} could be any of {', '.join(m.name for m in matches)}; give the full name"
            )
    return None


def pull_command(name: str) -> str:
    """The command that downloads ``name``, as the messages quote it."""
    return f"kbseek model pull {name}"


class FastembedEmbedder:
    """:class:`~kbseek.embed.base.Embedder` over fastembed's ``TextEmbedding``, offline by default."""

    def __init__(
        self,
        model: str,
        *,
        threads: int | None = None,
        batch_size: int = 32,
        allow_download: bool = False,
        cache: Path | None = None,
    ) -> None:
        self._name = model
        self._threads = threads or 1
        self._batch_size = batch_size
        self._allow_download = allow_download
        self._cache = cache
        self._lock = threading.Lock()
        self._model: Any = None
        self._model_id = ""
        self._dim = 0
        self._prefixes = ("", "")
        self.origin = ""
        """Where the loaded model came from: ``cache <folder>`` or ``folder <path>``, for doctor."""

    @property
    def model_id(self) -> str:
        self.load()
        return self._model_id

    @property
    def dim(self) -> int:
        self.load()
        return self._dim

    def load(self) -> None:
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            fastembed = _fastembed()
            if is_folder(self._name):
                folder = Path(self._name).expanduser().resolve()
                model, model_id = _load_folder(fastembed, folder, self._threads, self._cache)
                self.origin = f"folder {folder}"
            else:
                try:
                    found = find_model(self._name)
                except ConfigError as exc:  # a load reports every failure one way (Embedder.load)
                    raise EmbedderUnavailable(str(exc)) from exc
                pulled = self._pulled(found)
                model = _open(
                    fastembed, found.name, pulled.folder, self._threads, self._cache or hub.models_cache()
                )
                model_id = f"fastembed:{found.name}@{pulled.commit[:12]}"
                self.origin = f"cache {pulled.folder}"
                if "e5" in found.name.lower().split("/")[-1].split("-"):
                    self._prefixes = ("query: ", "passage: ")
            self._model = model
            vector = self._run([_PROBE])
            self._dim = int(vector.shape[1])
            self._model_id = model_id

    def _pulled(self, found: CatalogueModel) -> hub.PulledModel:
        """The verified files of ``found``: from the cache, or pulled now when that is allowed."""
        return ready_copy(found, requested=self._name, cache=self._cache, allow_download=self._allow_download)

    def _run(self, texts: list[str]) -> np.ndarray:
        try:
            rows = list(self._model.embed(texts, batch_size=self._batch_size))
        except Exception as exc:  # ONNX Runtime's errors have no common base
            raise EmbedderUnavailable(
                f"embedding model {self._name} failed: {type(exc).__name__}: {exc}"
            ) from exc
        arr = np.asarray(rows, dtype=np.float32)
        if arr.ndim != 2:
            raise EmbedderUnavailable(f"embedding model {self._name} returned vectors of shape {arr.shape}")
        return arr

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        items = check_texts(texts)
        self.load()
        if not items:
            return np.empty((0, self._dim), dtype=np.float32)
        # An empty text gives a tokenizer nothing but the special tokens; a space keeps the rows aligned.
        vectors = self._run([prefix + (t if t.strip() else " ") for t in items])
        return unit_rows(vectors, expected_dim=self._dim, source=f"embedding model {self._name}")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self._prefixes[1])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self._prefixes[0])

    def embed_query(self, text: str) -> np.ndarray:
        return query_vector(self.embed_queries, text)


def ready_copy(
    found: CatalogueModel, *, requested: str, cache: Path | None = None, allow_download: bool = False
) -> hub.PulledModel:
    """The verified files of ``found`` in the cache, or pulled now (through :func:`hub.pull`, verified)
    when ``allow_download`` is set and ``HF_HUB_OFFLINE`` is not.

    The one way a model is read, for the embedder and the local reranker alike: a copy whose record
    is missing, or whose files are not the recorded sizes, is never loaded. ``requested`` is the name
    as configured, for the ``kbseek model pull`` command the refusal quotes.
    """
    command = pull_command(requested)
    pulled = hub.installed(found.source, cache)
    problems = hub.check_files(pulled, hash_files=False) if pulled is not None else ["it was never pulled"]
    if not problems and pulled is not None:
        return pulled
    where = cache or hub.models_cache()
    if not allow_download or hub.hub_offline():
        why = "HF_HUB_OFFLINE is set" if allow_download else "downloads happen only on request"
        who = "indexing and the server" if found.kind == "embedding" else "the first search"
        raise EmbedderUnavailable(
            f"{found.what} {found.name} is not ready in {where} ({'; '.join(problems)}) and "
            f"{why}: run `{command}` (with network access), then try again; or set "
            f"{found.table} allow_download = true to let {who} download it"
        )
    return hub.pull(found.source, cache=cache, command=command)


def _cross_encoder_class() -> Any:
    """fastembed's ``TextCrossEncoder``, imported when first needed; its absence says what to install."""
    try:
        from fastembed.rerank.cross_encoder import TextCrossEncoder
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"rerank provider 'local' needs the fastembed package ({exc.name or exc} is missing): {INSTALL}"
        ) from exc
    return TextCrossEncoder


def _fastembed() -> Any:
    """The ``fastembed`` package, imported when a model loads; its absence says what to install."""
    try:
        import fastembed
        import fastembed.common.model_description
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"embedding provider 'fastembed' needs the fastembed package ({exc.name or exc} is missing): "
            f"{INSTALL}"
        ) from exc
    return fastembed


def _open(fastembed: Any, name: str, folder: Path, threads: int, cache: Path) -> Any:
    """fastembed's model over files already on disk: ``specific_model_path`` and ``local_files_only``
    keep it from looking anywhere else, so it can never start a download of its own."""
    try:
        return fastembed.TextEmbedding(
            model_name=name,
            cache_dir=str(cache),
            threads=threads,
            specific_model_path=str(folder),
            local_files_only=True,
        )
    except Exception as exc:  # fastembed and ONNX Runtime raise many kinds; all mean the same here
        raise EmbedderUnavailable(
            f"embedding model {name} in {folder} does not load: {type(exc).__name__}: {exc}"
        ) from exc


def _load_folder(fastembed: Any, folder: Path, threads: int, cache: Path | None) -> tuple[Any, str]:
    """Register a local folder with fastembed under a name derived from its weights, and open it."""
    if not folder.is_dir():
        raise EmbedderUnavailable(
            f"embedding model folder {folder} does not exist; give the folder that holds model.onnx"
        )
    weights = onnx_weights(folder)
    missing = [n for n in ("tokenizer.json", "tokenizer_config.json") if not (folder / n).is_file()]
    if weights is None or missing:
        what = ", ".join((["model.onnx (or onnx/model.onnx)"] if weights is None else []) + missing)
        raise EmbedderUnavailable(
            f"embedding model folder {folder} has no {what}; export the model to ONNX with its tokenizer "
            "(for example `optimum-cli export onnx --model NAME FOLDER`)"
        )
    digest = hub.sha256_of(weights)
    desc = fastembed.common.model_description
    mode = "cls" if _cls_pooling(folder) else "mean"
    pooling = desc.PoolingType.CLS if mode == "cls" else desc.PoolingType.MEAN
    # The pooling is part of the name and the id: it changes the vectors as much as the weights do.
    name = f"kbseek-local/{digest[:16]}-{mode}"
    data = weights.with_name(weights.name + "_data")
    known = {m.model for m in fastembed.TextEmbedding._list_supported_models()}
    if name not in known:  # the same weights may have been registered earlier in this process
        fastembed.TextEmbedding.add_custom_model(
            model=name,
            pooling=pooling,
            normalization=True,
            sources=desc.ModelSource(hf=name),
            dim=0,  # learned from the first vector: fastembed only reports it
            model_file=weights.relative_to(folder).as_posix(),
            additional_files=[data.relative_to(folder).as_posix()] if data.is_file() else [],
        )
    cache_dir = cache or hub.models_cache()
    return _open(fastembed, name, folder, threads, cache_dir), f"fastembed:folder:{digest[:16]}:{mode}"


def onnx_weights(folder: Path) -> Path | None:
    """A model folder's ONNX weights: ``model.onnx``, or ``onnx/model.onnx`` as the Hub's exports lay
    them out; ``None`` when it has neither. One rule for embedders and cross-encoders."""
    return next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.is_file()), None)


def _cls_pooling(folder: Path) -> bool:
    """Whether the folder's sentence-transformers pooling config asks for the CLS token's vector."""
    path = folder / "1_Pooling" / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(isinstance(config, dict) and config.get("pooling_mode_cls_token"))


def folder_files(folder: Path) -> list[Path]:
    """The files of a local model folder that a load reads, for doctor's size and completeness."""
    names = ("model.onnx", "model.onnx_data", "onnx/model.onnx", "onnx/model.onnx_data", *CONFIG_FILES)
    return [folder / n for n in names if (folder / n).is_file()]


def pull_model(name: str) -> tuple[CatalogueModel, hub.PulledModel]:
    """``kbseek model pull NAME``: download an embedding model or a cross-encoder fastembed knows into
    the cache and verify it."""
    if is_folder(name):
        raise ConfigError(
            f"{name} is a local folder: use it as it is (model = {name!r} in [embed] or [rerank]); "
            "nothing to pull"
        )
    found = find_any(name)
    return found, hub.pull(found.source, command=pull_command(name))


@dataclass(frozen=True)
class ModelReport:
    """What doctor says about the configured model's files, without loading it."""

    origin: str
    """``cache <folder>`` or ``folder <path>``."""
    size_bytes: int
    problems: tuple[str, ...]
    """Empty when every file is present (and, for a pulled model, matches its recorded sha256)."""
    fix: str = ""


def inspect_model(name: str, *, kind: Kind = "embedding") -> ModelReport:
    """Where ``[embed] model`` (or, with ``kind="reranker"``, ``[rerank] model``) comes from, its size
    on disk, and whether it is complete and verified.

    A pulled model's every byte is hashed against its manifest (about a second per gigabyte); a
    folder is checked for the files a load reads. Never downloads.
    """
    if is_folder(name):
        folder = Path(name).expanduser().resolve()
        files = folder_files(folder)
        has_weights = any(p.name == "model.onnx" for p in files)
        problems = [
            f"{what} is missing"
            for what, ok in (
                ("model.onnx", has_weights),
                ("tokenizer.json", (folder / "tokenizer.json").is_file()),
                ("tokenizer_config.json", (folder / "tokenizer_config.json").is_file()),
            )
            if not ok
        ]
        fix = "export the model to ONNX with its tokenizer into that folder" if problems else ""
        if not folder.is_dir():
            problems, fix = ["the folder does not exist"], "give the path of the folder holding model.onnx"
        return ModelReport(f"folder {folder}", hub.folder_size(files), tuple(problems), fix)
    found = find_model(name) if kind == "embedding" else find_reranker(name)
    pulled = hub.installed(found.source)
    command = pull_command(name)
    if pulled is None:
        where = hub.models_cache()
        return ModelReport(f"cache {where} (not pulled)", 0, ("it was never pulled",), f"run `{command}`")
    problems = hub.check_files(pulled, hash_files=True)
    fix = f"run `{command}` to download the damaged files again" if problems else ""
    return ModelReport(f"cache {pulled.folder}", pulled.size(), tuple(problems), fix)


def pulled_copy(found: CatalogueModel) -> hub.PulledModel | None:
    """The cached copy of a catalogue model, if one was pulled to the end (not re-verified)."""
    return hub.installed(found.source)
