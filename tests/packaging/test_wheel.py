"""The built wheel installs into a fresh virtualenv and its `marag` works from
outside the source tree (contexts/ and the shipped sample are in the wheel).

The fresh venv sees the dependencies of the project venv through a .pth line (so torch & co. are
not downloaded); the .pth adds that site-packages as a plain path, so the project's editable
install there (whose finder is itself a .pth) is not activated: `engine` comes from the wheel."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def run(cmd: list[str], cwd: Path, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_wheel_installs_and_marag_ask_runs(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MARAG_", "PYTHON"))}
    env.update(HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
    # build from a clean copy of the tracked files (pip builds in-tree otherwise)
    files = run(["git", "ls-files", "-co", "--exclude-standard"], REPO, env).stdout.split()
    src = tmp_path / "src"
    for f in files:
        if (REPO / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, src / f)
    wheels = tmp_path / "wheels"
    r = run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["-w", str(wheels), str(src)],
        tmp_path,
        env,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = wheels.glob("marag-*.whl")

    venv = tmp_path / "venv"
    r = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    assert r.returncode == 0, r.stderr
    vpy = venv / "bin" / "python"
    purelib = Path(
        run(
            [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            tmp_path,
            env,
        ).stdout.strip()
    )
    deps = site.getsitepackages()[0] if site.getsitepackages() else sysconfig.get_paths()["purelib"]
    (purelib / "zz_project_deps.pth").write_text(deps + "\n")
    r = run(
        [sys.executable, "-m", "pip", "--python", str(vpy), "install", "-q", "--no-deps"]
        + ["--no-index", str(wheel)],
        tmp_path,
        env,
    )
    assert r.returncode == 0, r.stderr[-2000:]

    work = tmp_path / "elsewhere"  # not the source tree: nothing found by relative paths
    work.mkdir()
    where = run(
        [str(vpy), "-c", "import engine, contexts; print(engine.__file__)"], work, env
    ).stdout
    assert where.startswith(str(venv)), where
    marag = str(venv / "bin" / "marag")
    kb = ["--kb-dir", str(work / "kb"), "--embedding", "hashing"]
    r = run([marag, "kb", "build", *kb], work, env)
    assert r.returncode == 0, r.stderr[-2000:]
    r = run(
        [marag, "ask", "How has patient 3 changed?", "--llm", "facts", "--json", *kb], work, env
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert '"plan"' in r.stdout and '"summary"' in r.stdout

    # `marag dashboard` serves the installed app with the packaged configuration
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (work / "dashboard.log").open("wb")
    denv = {**env, "MARAG_KB_DIR": str(work / "kb"), "MARAG_EMBEDDING": "hashing"}
    proc = subprocess.Popen(
        [marag, "dashboard", "--port", str(port)], cwd=work, env=denv, stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, (work / "dashboard.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, (work / "dashboard.log").read_text()[-2000:]
                time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
    text = (work / "dashboard.log").read_text()
    assert f"marag dashboard: {venv}" in text and "with streamlit_config.toml" in text, text[:500]
