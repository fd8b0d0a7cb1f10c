"""Models from the Hugging Face Hub: pulled on request into kbseek's cache, verified, then used offline.

Why kbseek downloads itself rather than letting fastembed do it on first use: a server or an
indexing run that starts a multi-gigabyte download on its own is a surprise (a metered link, an
air-gapped machine, a CI job that hangs), and a download that nobody checked can load a truncated or
tampered file. So the download is a command of its own, ``kbseek model pull NAME``, and everything
else only *reads* what that command left (decision 0039):

- :func:`pull` fetches the files a model needs with ``huggingface_hub.snapshot_download`` (resume,
  the Hub's cache layout, ``HF_ENDPOINT`` and tokens as every Hugging Face tool reads them) into
  :func:`models_cache`, with its progress bar on stderr. It then checks every file against the
  checksum the Hub publishes in the repository's tree: the sha256 of an LFS file (the same value the
  Hub sends as its ``ETag``), the git blob id (sha1) of a small one. A file that does not match is
  deleted, so running the command again downloads it afresh, and the pull fails saying so.
- Only then is a manifest written beside the snapshots: the repository, the exact commit, and each
  file's size and sha256. :func:`installed` reads it; a model without one was never pulled to the
  end, and loading it refuses with the command to run.
- :func:`check_files` compares the files on disk with the manifest: sizes only when a model loads
  (instant), every byte hashed when ``kbseek doctor`` asks (:func:`describe`).

Nothing here reads the network unless :func:`pull` is called, and :func:`pull` refuses when
``HF_HUB_OFFLINE`` is set, naming what to do instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from kbseek.errors import EmbedderUnavailable

MANIFESTS = "kbseek-manifests"
"""The folder, inside :func:`models_cache`, of one manifest per pulled model."""

_OFFLINE_VALUES = frozenset({"1", "true", "yes", "on"})
_CHUNK = 1 << 20


def models_cache() -> Path:
    """Where pulled models live: ``<user cache>/kbseek/models/hub``, in the Hub's own cache layout.

    The user cache directory is where kbseek keeps everything it can rebuild (e5's int8 graph, the
    index of a read-only knowledge base); a model can be pulled again, so it belongs there too.
    ``XDG_CACHE_HOME`` (Linux) moves it, as it moves the rest.
    """
    return Path(platformdirs.user_cache_dir("kbseek")) / "models" / "hub"


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids the network, read now (huggingface_hub reads it at import)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _OFFLINE_VALUES


@dataclass(frozen=True)
class HubSource:
    """A model's files in a Hub repository: what :func:`pull` fetches and :func:`installed` finds."""

    repo_id: str
    files: tuple[str, ...]
    """The repository paths the model needs (weights, tokenizer, configs), exact names."""
    revision: str = "main"
    optional: tuple[str, ...] = ()
    """Paths fetched when the repository has them and skipped when it has not (a config file some
    repositories leave out)."""


@dataclass(frozen=True)
class FileRecord:
    """One pulled file as verified: its size and sha256."""

    size: int
    sha256: str


@dataclass(frozen=True)
class PulledModel:
    """A model :func:`pull` fetched and verified, as its manifest records it."""

    repo_id: str
    revision: str
    commit: str
    """The commit the files came from: it names the exact weights, so it goes into the model id."""
    folder: Path
    """The snapshot folder the files are in (the Hub cache's ``snapshots/<commit>``)."""
    files: dict[str, FileRecord] = field(default_factory=dict)

    def size(self) -> int:
        """The bytes the model's files take, as recorded."""
        return sum(f.size for f in self.files.values())


def manifest_path(source: HubSource, cache: Path | None = None) -> Path:
    """The manifest of ``source`` in ``cache`` (default :func:`models_cache`), whether or not it exists."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "-", f"{source.repo_id.replace('/', '--')}@{source.revision}")
    return (cache or models_cache()) / MANIFESTS / f"{safe}.json"


def installed(source: HubSource, cache: Path | None = None) -> PulledModel | None:
    """The pulled model's record, or ``None`` when it was never pulled to the end (or its record is
    unreadable).

    A record that lacks one of ``source.files`` counts as not pulled: two models can share a
    repository with different weights (fastembed's ``bge-reranker-v2-m3`` and its int8 variant), and
    the record one pull left must not vouch for the other's files.
    """
    model = _read_manifest(manifest_path(source, cache))
    if model is None or any(name not in model.files for name in source.files):
        return None
    return model


def _read_manifest(path: Path) -> PulledModel | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return PulledModel(
            repo_id=str(data["repo_id"]),
            revision=str(data["revision"]),
            commit=str(data["commit"]),
            folder=Path(data["folder"]),
            files={
                name: FileRecord(size=int(rec["size"]), sha256=str(rec["sha256"]))
                for name, rec in data["files"].items()
            },
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def check_files(model: PulledModel, *, hash_files: bool) -> list[str]:
    """What is wrong with the files on disk, compared with the manifest; empty when all is well.

    Sizes catch a deleted or truncated file at no cost, which is what loading checks; hashing
    every byte (``hash_files``) also catches a changed one and takes about a second per gigabyte,
    which is what ``kbseek doctor`` spends.
    """
    problems: list[str] = []
    for name, record in sorted(model.files.items()):
        path = model.folder / name
        try:
            size = path.stat().st_size
        except OSError:
            problems.append(f"{name} is missing")
            continue
        if size != record.size:
            problems.append(f"{name} has {size} bytes, {record.size} were pulled")
        elif hash_files and sha256_of(path) != record.sha256:
            problems.append(f"{name} changed since it was pulled (its sha256 differs)")
    return problems


def pull(source: HubSource, *, cache: Path | None = None, command: str) -> PulledModel:
    """Download ``source`` into ``cache`` with a progress bar on stderr, verify it, record it.

    ``command`` is the command line that pulls this model, for the messages. Already-present files
    are not downloaded again (the Hub cache keeps them by content), but every file is verified again.
    Raises :class:`EmbedderUnavailable` with what went wrong and what to do.
    """
    if hub_offline():
        raise EmbedderUnavailable(
            f"HF_HUB_OFFLINE is set, so {source.repo_id} cannot be downloaded; unset it "
            f"(HF_HUB_OFFLINE=0 {command}) on a machine with network access, or copy the model's "
            "folder here and give its path as [embed] model"
        )
    hf = _huggingface_hub()
    cache = cache or models_cache()
    endpoint = os.environ.get("HF_ENDPOINT") or None  # read now: the library reads it once, at import
    api = hf.HfApi(endpoint=endpoint)
    try:
        info = api.model_info(source.repo_id, revision=source.revision)
        commit = info.sha
        if not commit:
            raise EmbedderUnavailable(f"the Hub gave no commit for {source.repo_id}@{source.revision}")
        tree = {
            entry.path: entry
            for entry in api.list_repo_tree(source.repo_id, revision=commit, recursive=True)
            if isinstance(entry, hf.hf_api.RepoFile)
        }
        absent = [name for name in source.files if name not in tree]
        if absent:
            raise EmbedderUnavailable(
                f"{source.repo_id} at {commit[:12]} has no {', '.join(absent)}; it is not a model kbseek "
                "can load (fastembed needs the ONNX weights and tokenizer.json)"
            )
        wanted = [*source.files, *(name for name in source.optional if name in tree)]
        print(
            f"kbseek: pulling {source.repo_id} ({_megabytes(tree[n].size for n in wanted)})", file=sys.stderr
        )
        folder = Path(
            hf.snapshot_download(
                source.repo_id, revision=commit, allow_patterns=wanted, cache_dir=cache, endpoint=endpoint
            )
        )
    except EmbedderUnavailable:
        raise
    except hf.errors.RepositoryNotFoundError as exc:
        raise EmbedderUnavailable(
            f"the Hub has no model repository {source.repo_id!r} (or it needs a token: `hf auth login`)"
        ) from exc
    except hf.errors.RevisionNotFoundError as exc:
        raise EmbedderUnavailable(f"{source.repo_id} has no revision {source.revision!r}") from exc
    except (OSError, hf.errors.HfHubHTTPError, ValueError) as exc:
        where = endpoint or "https://huggingface.co"
        raise EmbedderUnavailable(
            f"downloading {source.repo_id} from {where} failed: {type(exc).__name__}: {exc}; check the "
            f"network (and HF_ENDPOINT), then run `{command}` again: finished files are kept"
        ) from exc

    files = {name: _verified(source.repo_id, folder, name, tree[name], command=command) for name in wanted}
    earlier = _read_manifest(manifest_path(source, cache))
    if earlier is not None and earlier.commit == commit and earlier.folder == folder:
        # Another model of the same repository and commit was pulled before: keep its files on record.
        files = {**earlier.files, **files}
    model = PulledModel(source.repo_id, source.revision, commit, folder, files)
    _write_manifest(manifest_path(source, cache), model)
    return model


def _verified(repo_id: str, folder: Path, name: str, entry: Any, *, command: str) -> FileRecord:
    """``name``'s record once it matches the Hub's checksum; a mismatch deletes the file and raises."""
    path = folder / name
    size = path.stat().st_size
    sha256 = sha256_of(path)
    lfs = getattr(entry, "lfs", None)
    if lfs is not None:
        expected, got, kind = str(lfs.sha256), sha256, "sha256"
    else:
        expected, got, kind = str(entry.blob_id), git_blob_id(path), "git blob id"
    if size != entry.size or got != expected:
        _remove(path)
        raise EmbedderUnavailable(
            f"{name} downloaded from {repo_id} does not match the Hub's checksum "
            f"({kind} {got[:16]}…, {size} bytes; expected {expected[:16]}…, {entry.size} bytes): the "
            f"download was damaged or altered, and the file was deleted; run `{command}` again"
        )
    return FileRecord(size=size, sha256=sha256)


def _remove(path: Path) -> None:
    """Delete a snapshot file and the blob it links to, so the Hub cache does not offer it again."""
    target = path.resolve()
    for p in {path, target}:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _write_manifest(path: Path, model: PulledModel) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "repo_id": model.repo_id,
        "revision": model.revision,
        "commit": model.commit,
        "folder": str(model.folder),
        "files": {name: {"size": r.size, "sha256": r.sha256} for name, r in sorted(model.files.items())},
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # a reader sees the old manifest or the new one, never half of one


def remove(source: HubSource, cache: Path | None = None) -> bool:
    """Forget a pulled model: its manifest and its folder in the Hub cache. Whether there was one."""
    cache = cache or models_cache()
    manifest = manifest_path(source, cache)
    repo_folder = cache / ("models--" + source.repo_id.replace("/", "--"))
    found = manifest.exists() or repo_folder.exists()
    manifest.unlink(missing_ok=True)
    shutil.rmtree(repo_folder, ignore_errors=True)
    return found


def sha256_of(path: Path) -> str:
    """The file's sha256, read in 1 MiB pieces so a large model never sits in memory whole."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_id(path: Path) -> str:
    """The file's git blob id (sha1 of ``blob <size>\\0`` and the bytes): the Hub's id of a non-LFS file."""
    digest = hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob %d\0" % path.stat().st_size)
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def folder_size(paths: Iterable[Path]) -> int:
    """The bytes the files take (a link counts as what it points to, as the Hub cache links blobs)."""
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total


def human_size(size: int) -> str:
    """``1.2 GB``, ``54 kB``: sizes as a person reads them, decimal as disks are sold."""
    value = float(size)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit in ("bytes", "kB") else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"  # pragma: no cover - the loop returns at GB


def _megabytes(sizes: Iterable[int]) -> str:
    return human_size(sum(sizes))


def _huggingface_hub() -> Any:
    """The ``huggingface_hub`` package, which fastembed brings; its absence says what to install."""
    try:
        import huggingface_hub
        import huggingface_hub.errors
        import huggingface_hub.hf_api
    except ImportError as exc:
        raise EmbedderUnavailable(
            "downloading a model needs huggingface_hub, which comes with the models extra: "
            "pip install 'kbseek[models]'"
        ) from exc
    return huggingface_hub
