"""Shared fixtures: tiny fake corpora on disk, a local HTTP server, the real corpora if present.

Every test is small (tiny models, the synthetic corpus, a few lines of text) so the whole
suite runs in seconds on two CPU cores. Nothing here touches the network beyond 127.0.0.1.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import os
import socket
import threading
from pathlib import Path

import pytest
import torch

from mlm.data import corpora
from mlm.data.corpora import CorpusFile, CorpusSpec

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# A ptb-like corpus: one sentence per line, words separated by spaces, "<unk>" included,
# every valid/test word also in train (PTB is closed-vocabulary).
FAKE_PTB = {
    "train": "the cat sat on the mat\n a dog <unk> barked \nthe end\n",
    "valid": "the dog sat\nthe cat barked on the mat\n",
    "test": "a cat\n\nthe <unk> end\n",
}
FAKE_NAMES = {"train": "ptb.train.txt", "valid": "ptb.valid.txt", "test": "ptb.test.txt"}


@pytest.fixture(autouse=True)
def _one_thread():
    """Keep torch on one thread: the machine is shared with a long training job."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def no_data_env(monkeypatch, tmp_path):
    """Hide the user's data directory, download switch and cache (used by the data and training tests;
    not autouse, so tests that run chapters in subprocesses keep MLM_DATA_DIR)."""
    monkeypatch.delenv(corpora.ENV_DATA_DIR, raising=False)
    monkeypatch.delenv(corpora.ENV_NO_DOWNLOAD, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fake_spec(urls: dict[str, tuple[str, ...]] | None = None, name: str = "ptb") -> CorpusSpec:
    """A CorpusSpec for FAKE_PTB whose checksums match the fake files."""
    urls = urls or {}
    files = tuple(CorpusFile(split, FAKE_NAMES[split], sha256_text(FAKE_PTB[split]), urls.get(split, ("",)))
                  for split in ("train", "valid", "test"))
    return CorpusSpec(name=name, folder="ptb", description="fake PTB for tests", files=files)


@pytest.fixture
def write_fake_corpus(tmp_path):
    """``write(gz=False, splits=...)`` writes ``ptb/ptb.<split>.txt[.gz]`` under a fresh data dir.

    Returns the data directory (the folder that contains ``ptb/``).
    """

    def write(gz: bool = False, splits=("train", "valid", "test"), root: Path | None = None) -> Path:
        root = root or tmp_path / "data"
        folder = root / "ptb"
        folder.mkdir(parents=True, exist_ok=True)
        for split in splits:
            data = FAKE_PTB[split].encode("utf-8")
            if gz:
                (folder / (FAKE_NAMES[split] + ".gz")).write_bytes(gzip.compress(data))
            else:
                (folder / FAKE_NAMES[split]).write_bytes(data)
        return root

    return write


@pytest.fixture
def fake_registry(monkeypatch):
    """Replace the registry's "ptb" entry by one whose checksums match FAKE_PTB.

    Returns a function ``install(urls=None) -> CorpusSpec`` so download tests can add URLs.
    """

    def install(urls=None) -> CorpusSpec:
        spec = fake_spec(urls)
        monkeypatch.setitem(corpora.REGISTRY, "ptb", spec)
        return spec

    install()
    return install


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files. ``/truncated/<name>`` announces the full length but sends half and hangs up;
    ``/chunked-truncated/<name>`` starts a chunked (HTTP/1.1) response and hangs up inside a chunk."""

    def do_GET(self):
        if self.path.startswith("/chunked-truncated/"):
            data = (Path(self.directory) / self.path[len("/chunked-truncated/"):]).read_bytes()
            self.protocol_version = "HTTP/1.1"
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n" % len(data) + data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if self.path.startswith("/truncated/"):
            data = (Path(self.directory) / self.path[len("/truncated/"):]).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        super().do_GET()

    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def http_root(tmp_path):
    """A local HTTP server on 127.0.0.1 serving the folder it returns (stopped after the test).

    Yields ``(folder, base_url)``.
    """
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def closed_port_url():
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/x"


def _shared_data_dir() -> Path | None:
    env = os.environ.get(corpora.ENV_DATA_DIR)
    if env and (Path(env) / "ptb").is_dir():
        return Path(env)
    if (SHARED_DATA / "ptb").is_dir():
        return SHARED_DATA
    return None


_SHARED = _shared_data_dir()  # read at import, before no_data_env clears MLM_DATA_DIR


@pytest.fixture
def shared_data() -> Path:
    """The real corpora (PTB, WikiText-2): $MLM_DATA_DIR if it holds ptb/, else ../shared/data."""
    if _SHARED is None:
        pytest.skip("real corpora not available (set MLM_DATA_DIR to a folder holding ptb/)")
    return _SHARED


def fake_lock(run_dir: Path, pid: int, host: str | None = None, heartbeat: float | None = None,
              job: str | None = None) -> None:
    """A run folder's lock as another process (``pid``, on ``host``, this one by default) left it."""
    import json
    import time

    from mlm import launch

    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / launch.LOCK).write_text(json.dumps({"pid": pid, "host": host or socket.gethostname(), "job": job,
                                                   "heartbeat": time.time() if heartbeat is None else heartbeat}))

