""":class:`~kbseek.rerank.base.Reranker` for an ONNX cross-encoder run in process by fastembed.

fastembed's ``TextCrossEncoder`` runs the model with ONNX Runtime and its tokenizer with
``tokenizers``: no PyTorch, and the same packages the ``models`` extra brings for the embedders.
It is imported when the model loads, never before, so a configuration without ``[rerank]`` (or
with another provider) never pays for it, and a missing package is a note naming the extra to
install rather than an import error at start-up.

``[rerank] model`` is either a folder or a name:

- a **folder** holding ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``, with the
  config files fastembed reads beside them (``tokenizer_config.json``, ``config.json``,
  ``special_tokens_map.json``): used where it is, never copied, never downloaded;
- a **name** fastembed knows (``TextCrossEncoder.list_supported_models()``, for example
  ``Xenova/ms-marco-MiniLM-L-6-v2``), read from kbseek's verified model cache, where
  ``kbseek model pull NAME`` puts it (``embed.hub``: the Hub's checksums checked, a manifest
  written), exactly as the ``fastembed`` embedder reads its models. fastembed is pointed at that
  snapshot and never downloads on its own. ``[rerank] allow_download = true`` lets the first load
  pull it through the same verified path; otherwise (or with ``HF_HUB_OFFLINE`` set) a model not
  pulled yet is a note naming the ``kbseek model pull`` command, because a search must never start
  a download of hundreds of megabytes nobody asked for (decisions 0038 and 0039).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbseek.embed import fastembed as catalogue
from kbseek.embed import hub
from kbseek.errors import ConfigError, EmbedderUnavailable
from kbseek.rerank.base import RerankFailed, RerankSpec

INSTALL_HINT = "install it with: pip install 'kbseek[models]'"

RETRY_AFTER_S = 30.0
"""How long a failed load is answered from memory before the model is looked for again (a model
put in place while the server runs is found within this time)."""

BATCH_SIZE = 32
"""Pairs per ONNX run: a search's candidates (30 by default) in one or two runs."""

_FOLDER_NAMES = "kbseek-folder:"
"""Prefix of the name a folder's model is registered under in fastembed's list of custom models."""

_register_lock = threading.Lock()

_opened: dict[tuple[str, int, str, bool], Any] = {}
"""Cross-encoders loaded in this process, by what was asked for: the collections a server holds
(``kbseek.library``) each build a reranker from the same ``[rerank]``, and one copy of the model
in memory serves them all (an ONNX Runtime session runs calls from several threads)."""
_opened_lock = threading.Lock()


class LocalReranker:
    """Scores candidates with a cross-encoder in this process (:mod:`kbseek.rerank.local`)."""

    def __init__(self, spec: RerankSpec, *, cache_dir: Path | None = None) -> None:
        """``cache_dir`` is the model cache to read named models from; unset, ``hub.models_cache()``."""
        assert spec.model is not None  # RerankSpec requires it for provider "local"
        self._model = spec.model
        self._allow_download = spec.allow_download
        self._threads = spec.threads or 1
        self._cache_dir = cache_dir
        self._encoder: Any = None
        self._failed: tuple[float, RerankFailed] | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"local reranker {self._model!r}"

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    def load(self) -> None:
        """Load the model, or raise why not. A failure is kept for :data:`RETRY_AFTER_S`: each search
        tries to load a model that failed, and a missing one would otherwise be looked for (and
        fastembed would log that it is not there) on every search."""
        if self._encoder is not None:
            return
        with self._lock:
            if self._failed is not None and time.monotonic() - self._failed[0] < RETRY_AFTER_S:
                raise self._failed[1]
            try:
                self._load()
            except RerankFailed as exc:
                self._failed = (time.monotonic(), exc)
                raise
            self._failed = None

    def _load(self) -> None:
        """Take the process's copy of this model (``_opened``), opening it if nobody has yet."""
        key = (self._model, self._threads, str(self._cache_dir or hub.models_cache()), self._allow_download)
        with _opened_lock:
            if key not in _opened:
                _opened[key] = self._open()
            self._encoder = _opened[key]

    def score(self, query: str, texts: Sequence[str], *, timeout_s: float) -> list[float]:
        """Scores for ``texts``; ``timeout_s`` is not needed here (nothing waits on a network)."""
        self.load()
        try:
            return [float(s) for s in self._encoder.rerank(query, list(texts), batch_size=BATCH_SIZE)]
        except Exception as exc:  # ONNX Runtime and tokenizers raise their own types
            raise RerankFailed(f"{self.name} failed to score: {exc}") from exc

    def _open(self) -> Any:
        try:
            from fastembed.rerank.cross_encoder import TextCrossEncoder
        except ImportError as exc:
            raise RerankFailed(
                f"rerank provider 'local' needs the fastembed package, which is not installed ({exc}); "
                f"{INSTALL_HINT}, or use rerank provider 'http'"
            ) from None
        if not catalogue.is_folder(self._model):
            return self._open_named(TextCrossEncoder)
        folder = Path(self._model).expanduser()
        if not folder.is_dir():
            raise RerankFailed(
                f"rerank model folder {self._model!r} does not exist; give the folder holding model.onnx "
                "and tokenizer.json (an absolute path), or a fastembed model name"
            )
        return self._open_folder(TextCrossEncoder, folder.resolve())

    def _open_folder(self, encoder_class: Any, folder: Path) -> Any:
        from fastembed.common.model_description import ModelSource

        weights = catalogue.onnx_weights(folder)
        missing = [
            what
            for what, present in (("model.onnx", weights is not None), ("tokenizer.json", (folder / "tokenizer.json").is_file()))
            if not present
        ]  # fmt: skip
        if missing:
            raise RerankFailed(
                f"rerank model folder {folder} has no {' and no '.join(missing)}; give a folder holding "
                "an ONNX cross-encoder (model.onnx) and its tokenizer (tokenizer.json, with "
                "tokenizer_config.json beside it)"
            )
        assert weights is not None
        model_file = weights.relative_to(folder).as_posix()
        name = f"{_FOLDER_NAMES}{folder}/{model_file}"
        with _register_lock:  # fastembed's list of custom models is global and refuses a name twice
            known = {m["model"] for m in encoder_class.list_supported_models()}
            if name not in known:
                # The source is never used: a specific_model_path is loaded where it is.
                encoder_class.add_custom_model(name, sources=ModelSource(hf=name), model_file=model_file)
        try:
            return encoder_class(
                name, specific_model_path=str(folder), threads=self._threads, local_files_only=True,
                cuda=False,
            )  # fmt: skip
        except Exception as exc:
            raise RerankFailed(f"could not load the cross-encoder in {folder}: {exc}") from exc

    def _open_named(self, encoder_class: Any) -> Any:
        """A named cross-encoder from the verified cache (pulled first when ``allow_download``)."""
        try:
            found = catalogue.find_reranker(self._model)
            pulled = catalogue.ready_copy(
                found, requested=self._model, cache=self._cache_dir, allow_download=self._allow_download
            )
        except (ConfigError, EmbedderUnavailable) as exc:
            raise RerankFailed(str(exc)) from exc
        cache = self._cache_dir or hub.models_cache()
        try:
            # specific_model_path and local_files_only: the verified files, and never a download.
            return encoder_class(
                found.name, cache_dir=str(cache), threads=self._threads, cuda=False,
                specific_model_path=str(pulled.folder), local_files_only=True,
            )  # fmt: skip
        except Exception as exc:
            raise RerankFailed(
                f"the cross-encoder {found.name} in {pulled.folder} does not load: {type(exc).__name__}: "
                f"{exc}; run `{catalogue.pull_command(self._model)}` to fetch it again"
            ) from exc
