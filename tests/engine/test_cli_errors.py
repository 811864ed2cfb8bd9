"""A misconfigured LLM backend is an error the user fixes: `marag ask` exits 2 with one line on
stderr naming the problem, never a traceback (4-bit without CUDA, a missing local model file, an
OpenAI-compatible server that cannot be reached or answers with an HTTP error)."""

from __future__ import annotations

import http.server
import socket
import threading
from pathlib import Path

import pytest

from engine import cli
from engine.config import Config
from engine.llm import backends

QUERY = "How did patient 3 change?"


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Chroma KB of the bundled sample (hashing embeddings, no model)."""
    from kb_store.ingest import load_sources
    from kb_store.synth import default_sample_path

    path = tmp_path_factory.mktemp("cli_errors") / "kb"
    cfg = Config.load({"kb_dir": str(path), "embedding": "hashing"}, env={})
    cfg.kb.build(load_sources([default_sample_path()]).sessions)
    return path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, kb_dir: Path, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in ("MARAG_MODEL", "MARAG_LOAD_IN_4BIT", "MARAG_DEVICE", "MARAG_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MARAG_KB_DIR", str(kb_dir))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    monkeypatch.setenv("MARAG_AUDIT_DB", str(tmp_path / "audit.sqlite3"))
    backends.clear_cache()
    yield monkeypatch
    backends.clear_cache()


def one_error_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the CLI in-process; assert exit 2 and exactly one stderr line, return it."""
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("marag: error: ")
    return lines[0]


def test_4bit_without_cuda(env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present: 4-bit loading is valid here")
    env.setenv("MARAG_LOAD_IN_4BIT", "true")
    line = one_error_line(["ask", QUERY, "--llm", "local"], capsys)
    assert "MARAG_LOAD_IN_4BIT" in line and "CUDA" in line


def test_missing_local_model_file(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nonexistent.gguf"
    env.setenv("MARAG_MODEL", str(missing))
    line = one_error_line(["ask", QUERY, "--llm", "local"], capsys)
    assert "MARAG_MODEL" in line and "nonexistent.gguf" in line and "no such model" in line


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_openai_server(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env.setenv("MARAG_OPENAI_BASE_URL", url)
    line = one_error_line(["ask", QUERY, "--llm", "openai"], capsys)
    assert url in line and "cannot be reached" in line and "MARAG_OPENAI_BASE_URL" in line


class _Unauthorized(http.server.BaseHTTPRequestHandler):
    """Answers every request with HTTP 401 and an OpenAI-style error body."""

    def _deny(self) -> None:
        body = b'{"error": {"message": "invalid api key", "type": "auth"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _deny

    def log_message(self, *_args) -> None:  # keep the test output quiet
        return None


def test_openai_server_http_error(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        env.setenv("MARAG_OPENAI_BASE_URL", url)
        line = one_error_line(["ask", QUERY, "--llm", "openai"], capsys)
    finally:
        server.shutdown()
        server.server_close()
    assert url in line and "HTTP 401" in line and "invalid api key" in line
