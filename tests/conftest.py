"""Shared pytest fixtures. Keep each group together under its banner."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

# ---------------------------------------------------------------------------------------------------------------
# Corpus and a fake Hugging Face Hub (used by test_hub.py, test_batch.py, test_hook.py)
#
# ``fake_hub`` is a real HTTP server speaking the part of the Hub protocol ``hf_hub_download`` uses:
# HEAD/GET ``/{repo_id}/resolve/{revision}/{filename}`` answered with ``X-Repo-Commit``, ``ETag`` and
# ``Content-Length`` (a ``Range`` with 206), the listing ``/api/models/{repo_id}/tree/{revision}``, and the Hub's error codes (``X-Error-Code``: RepoNotFound, GatedRepo, RevisionNotFound,
# EntryNotFound). ``hub_env`` points both this process (huggingface_hub reads its settings at import, so its
# ``constants`` module is reloaded) and subprocesses (``hub_env.run``) at it, with a fresh HF cache.
# ---------------------------------------------------------------------------------------------------------------

CORPUS = Path(__file__).parents[1].parent / "shared" / "corpus"
REPO_ROOT = Path(__file__).parents[1]


def corpus_template(name: str) -> str:
    """The text of ``<corpus>/templates/<name>.jinja``; skips the test when the corpus is absent."""
    path = CORPUS / "templates" / f"{name}.jinja"
    if not path.is_file():
        pytest.skip(f"corpus template {path} not available (the shared corpus sits next to the project in CI)")
    return path.read_text(encoding="utf-8")


class FakeHub:
    """Model repos served over HTTP. ``requests`` logs ``(method, path)`` of every call."""

    def __init__(self):
        self.repos: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []
        self.ranges = True  # answer Range requests (False: a server that ignores them and sends the whole file)
        self.sent = 0  # bytes of file bodies sent
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_HEAD(self):
                hub._answer(self, body=False)

            def do_GET(self):
                hub._answer(self, body=True)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, repo_id: str, files: dict[str, str | bytes | dict], gated: bool = False) -> str:
        """Publish a repo (dict values are written as JSON); returns its commit hash."""
        blobs = {}
        for name, value in files.items():
            if isinstance(value, dict):
                value = json.dumps(value, indent=2)
            blobs[name] = value.encode("utf-8") if isinstance(value, str) else value
        h = hashlib.sha1(repo_id.encode() + b"\0")
        for name in sorted(blobs):  # the files' digests, not their repr: a test's model file may be many MB
            h.update(name.encode() + b"\0" + hashlib.sha1(blobs[name]).digest())
        commit = h.hexdigest()
        self.repos[repo_id] = {"files": blobs, "gated": gated, "commit": commit}
        return commit

    def downloads(self, repo_id: str | None = None) -> list[str]:
        """Paths fetched with GET (file bodies actually transferred)."""
        return [p for m, p in self.requests if m == "GET" and (repo_id is None or p.startswith(f"/{repo_id}/"))]

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, h: BaseHTTPRequestHandler, body: bool):
        self.requests.append((h.command, h.path))
        tree = re.fullmatch(r"/api/models/(?P<repo>.+?)/tree/(?P<rev>[^/?]+)(\?.*)?", h.path)
        if tree:  # the listing ``list_repo_files`` asks for (one page)
            repo = self.repos.get(unquote(tree["repo"]))
            if repo is None:
                return self._send(h, 404, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"})
            listing = [{"type": "file", "path": n, "size": len(d), "oid": hashlib.sha1(d).hexdigest()} for n, d in repo["files"].items()]
            return self._send(h, 200, {"Content-Type": "application/json"}, json.dumps(listing).encode(), body)
        m = re.fullmatch(r"/(?P<repo>.+?)/resolve/(?P<rev>[^/]+)/(?P<file>[^?]+)(\?.*)?", h.path)
        repo = self.repos.get(unquote(m["repo"])) if m else None
        if repo is None:
            return self._send(h, 404, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"})
        if repo["gated"]:
            msg = "Access to this model is restricted. You must have access to it and be authenticated to access it."
            return self._send(h, 401, {"X-Error-Code": "GatedRepo", "X-Error-Message": msg})
        if unquote(m["rev"]) not in ("main", repo["commit"]):
            return self._send(h, 404, {"X-Error-Code": "RevisionNotFound", "X-Error-Message": "Invalid rev id"})
        data = repo["files"].get(unquote(m["file"]))
        if data is None:
            headers = {"X-Error-Code": "EntryNotFound", "X-Error-Message": "Entry not found", "X-Repo-Commit": repo["commit"]}
            return self._send(h, 404, headers)
        etag = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # what the Hub uses: the git blob id
        headers = {"X-Repo-Commit": repo["commit"], "ETag": f'"{etag}"', "Content-Type": "text/plain; charset=utf-8"}
        span = re.fullmatch(r"bytes=(\d+)-(\d+)", h.headers.get("Range") or "")
        if span and self.ranges:  # a byte range, as the Hub's file servers answer one
            start, end = int(span[1]), min(int(span[2]), len(data) - 1)
            if start >= len(data):
                return self._send(h, 416, {"Content-Range": f"bytes */{len(data)}"})
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            self.sent += end + 1 - start
            return self._send(h, 206, headers, data[start:end + 1], body)
        self.sent += len(data) if body else 0
        self._send(h, 200, headers, data, body)

    @staticmethod
    def _send(h, status: int, headers: dict, data: bytes = b"", body: bool = True):
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if body and data:
            try:
                h.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # a client that read what it needed and hung up
                h.close_connection = True


@pytest.fixture
def fake_hub():
    hub = FakeHub()
    yield hub
    hub.stop()


@pytest.fixture
def closed_port():
    """An endpoint whose connections are refused: the port was bound, then let go."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def silent_hub():
    """An endpoint that accepts connections (the kernel queues them) and never answers a request."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()


class HubEnv:
    """Environment pointing at ``fake_hub`` with a private HF cache and autoparser cache."""

    def __init__(self, hub: FakeHub, root: Path, mp: pytest.MonkeyPatch):
        self.hub, self.root, self._mp = hub, root, mp
        self.hf_home = root / "hf-home"
        self.cache_dir = root / "autoparser-cache"
        for key in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE", "HF_XET_CACHE",
                    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            mp.delenv(key, raising=False)
        mp.setenv("HF_ENDPOINT", hub.url)
        mp.setenv("HF_HOME", str(self.hf_home))
        mp.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        mp.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        mp.setenv("AUTOPARSER_CACHE_DIR", str(self.cache_dir))
        mp.setenv("TOKENIZERS_PARALLELISM", "false")
        # A Hub that gave no answer is remembered by its endpoint; a hub stopped by an earlier test may have
        # had this one's port (the OS reuses them), which made a live hub look silent (a flake in CI).
        from autoparser.sources import hub as hub_source

        mp.setattr(hub_source, "_silent", {})
        _reload_hf_constants()

    def offline(self, on: bool = True):
        """Switch HF_HUB_OFFLINE for this process and later subprocesses."""
        if on:
            self._mp.setenv("HF_HUB_OFFLINE", "1")
        else:
            self._mp.delenv("HF_HUB_OFFLINE", raising=False)
        _reload_hf_constants()

    def point_at(self, url: str):
        """Send this process and later subprocesses to another Hub endpoint (one that never answers, say)."""
        self._mp.setenv("HF_ENDPOINT", url)
        _reload_hf_constants()

    def run(self, *args: str, input: str | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
        """``python -m autoparser ARGS`` in a subprocess with this environment."""
        return subprocess.run([sys.executable, "-m", "autoparser", *args], input=input, capture_output=True, text=True,
                              env=dict(os.environ), cwd=self.root, timeout=timeout)


def _reload_hf_constants():
    import huggingface_hub.constants

    importlib.reload(huggingface_hub.constants)


@pytest.fixture
def hub_env(fake_hub, tmp_path):
    with pytest.MonkeyPatch.context() as mp:
        yield HubEnv(fake_hub, tmp_path, mp)
    _reload_hf_constants()  # back to the real environment's settings


SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]


def make_tokenizer(chat_template, response_template=None):
    """A real fast tokenizer: WordLevel over a tiny vocabulary plus the template's special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[UNK]", *SPECIALS, *"abcdefghijklmnopqrstuvwxyz?."]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  unk_token="[UNK]", additional_special_tokens=SPECIALS)
    tok.chat_template = chat_template
    if response_template is not None:
        tok.response_template = response_template
    return tok
