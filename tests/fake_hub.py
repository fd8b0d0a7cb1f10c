"""A local Hugging Face Hub: real HTTP on 127.0.0.1, serving real files, for download tests offline.

``huggingface_hub`` (what fastembed and ``kbseek model pull`` download with) talks to
``HF_ENDPOINT`` over a small part of the Hub's API. This server answers that part, from folders on
disk, so a test exercises the whole download path (the requests, the Hub cache, resuming,
checksums) without the network:

- ``GET /api/models/{repo}/revision/{rev}``: the model info, with ``sha`` (the commit) and
  ``siblings`` (every file, with its size, blob id and LFS sha256);
- ``GET /api/models/{repo}/tree/{rev}?recursive=…``: the tree, entries as the Hub gives them
  (``type``, ``path``, ``size``, ``oid``, and ``lfs`` with ``oid`` = sha256 for large files);
- ``HEAD`` and ``GET /{repo}/resolve/{rev}/{path}``: the file, with ``X-Repo-Commit``, ``ETag`` (the
  sha256 for an LFS file, the git blob id otherwise), ``X-Linked-Etag``, ``X-Linked-Size`` and
  ``Content-Length``, and ``Range`` requests for a resumed download.

``rev`` is ``main`` or the repository's commit id. :attr:`FakeHub.corrupt` names files served with
one byte changed (the headers still describe the true file), as a damaged or tampered download
would be; :attr:`FakeHub.requests` logs every request, so a test can prove nothing was fetched.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".onnx", ".onnx_data", ".bin", ".safetensors")
"""Files stored in LFS on the fake Hub, as model weights are on the real one."""


@dataclass
class HubFile:
    """One file of a repository, with the ids the Hub publishes for it."""

    path: str
    data: bytes
    lfs: bool

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def blob_id(self) -> str:
        return hashlib.sha1(b"blob %d\0" % len(self.data) + self.data, usedforsecurity=False).hexdigest()

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.blob_id

    def tree_entry(self) -> dict[str, object]:
        entry: dict[str, object] = {
            "type": "file",
            "path": self.path,
            "size": len(self.data),
            "oid": self.blob_id,
        }
        if self.lfs:
            entry["lfs"] = {"oid": self.sha256, "size": len(self.data), "pointerSize": 134}
        return entry


@dataclass
class Repo:
    """A model repository at one commit."""

    repo_id: str
    files: dict[str, HubFile]
    commit: str

    @classmethod
    def from_folder(cls, repo_id: str, folder: Path) -> Repo:
        """Every file under ``folder``, LFS by suffix; the commit id is derived from the contents."""
        files = {
            p.relative_to(folder).as_posix(): HubFile(
                p.relative_to(folder).as_posix(), p.read_bytes(), p.name.endswith(LFS_SUFFIXES)
            )
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }
        digest = hashlib.sha1(usedforsecurity=False)
        for name, f in files.items():
            digest.update(name.encode() + b"\0" + f.etag.encode())
        return cls(repo_id, files, digest.hexdigest())


@dataclass
class FakeHub:
    """The server's state: its repositories, files to corrupt, and the requests it saw."""

    repos: dict[str, Repo] = field(default_factory=dict)
    corrupt: set[str] = field(default_factory=set)
    requests: list[str] = field(default_factory=list)
    url: str = ""

    def add(self, repo_id: str, folder: Path) -> Repo:
        repo = Repo.from_folder(repo_id, folder)
        self.repos[repo_id] = repo
        return repo

    def downloads(self) -> list[str]:
        """The ``GET …/resolve/…`` requests: the file downloads proper."""
        return [r for r in self.requests if r.startswith("GET ") and "/resolve/" in r]


_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")
_API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/(?P<kind>revision|tree)/(?P<rev>[^/]+)(?:/.*)?$")


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # quiet: pytest shows failures
            pass

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def _answer(self, *, body: bool) -> None:
            hub.requests.append(f"{self.command} {self.path}")
            path = unquote(urlsplit(self.path).path)
            if m := _API.match(path):
                repo = self._repo(m["repo"], m["rev"])
                if repo is None:
                    return
                if m["kind"] == "tree":
                    self._json([f.tree_entry() for f in repo.files.values()], body)
                else:
                    siblings = [
                        {
                            "rfilename": f.path,
                            "size": len(f.data),
                            "blobId": f.blob_id,
                            **(
                                {"lfs": {"sha256": f.sha256, "size": len(f.data), "pointerSize": 134}}
                                if f.lfs
                                else {}
                            ),
                        }
                        for f in repo.files.values()
                    ]
                    info = {
                        "id": repo.repo_id,
                        "modelId": repo.repo_id,
                        "sha": repo.commit,
                        "private": False,
                        "siblings": siblings,
                    }
                    self._json(info, body)
                return
            if m := _RESOLVE.match(path):
                repo = self._repo(m["repo"], m["rev"])
                if repo is None:
                    return
                f = repo.files.get(m["path"])
                if f is None:
                    self._error(404, "EntryNotFound", f"{m['path']} is not in {repo.repo_id}")
                    return
                self._file(repo, f, body)
                return
            self._error(404, "RepoNotFound", f"no route for {path}")

        def _repo(self, repo_id: str, rev: str) -> Repo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "RepoNotFound", f"Repository Not Found for url: {self.path}")
                return None
            if rev not in ("main", repo.commit):
                self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
                return None
            return repo

        def _file(self, repo: Repo, f: HubFile, body: bool) -> None:
            data = f.data
            if f.path in hub.corrupt and data:
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            start = 0
            status = 200
            if (rng := self.headers.get("Range")) and (m := re.match(r"bytes=(\d+)-", rng)):
                start, status = int(m[1]), 206
            chunk = data[start:]
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(chunk)))
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("ETag", f'"{f.etag}"')
            self.send_header("X-Linked-Etag", f'"{f.etag}"')
            self.send_header("X-Linked-Size", str(len(f.data)))
            self.send_header("Accept-Ranges", "bytes")
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if body:
                self.wfile.write(chunk)

        def _json(self, data: object, body: bool) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            if body:
                self.wfile.write(raw)

        def _error(self, status: int, code: str, message: str) -> None:
            raw = json.dumps({"error": message}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", message)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(raw)

    return Handler


@contextmanager
def serve_hub(hub: FakeHub | None = None) -> Iterator[FakeHub]:
    """Run a fake Hub on a free port of 127.0.0.1 in a thread; ``hub.url`` is its ``HF_ENDPOINT``."""
    hub = hub or FakeHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-hub", daemon=True)
    thread.start()
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
