"""A real `chroma run` server on loopback for the server-mode tests (one per test module)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    """The URL of a Chroma server started for this module (the venv's `chroma`, else PATH's)."""
    exe = Path(sys.executable).with_name("chroma")
    exe = str(exe) if exe.exists() else shutil.which("chroma")
    if exe is None:
        pytest.skip("no `chroma` executable (chromadb CLI) to start a server")
    port = _free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen(
        [exe, "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail("chroma server exited at start")
                time.sleep(0.2)
        else:
            pytest.fail("chroma server did not answer within 30 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
