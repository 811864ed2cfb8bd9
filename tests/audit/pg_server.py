"""A throwaway PostgreSQL server for tests: initdb in a temporary folder, `pg_ctl start` on
127.0.0.1 and a free port (trust authentication, loopback only), stopped and removed afterwards.
Uses Debian's postgresql binaries (/usr/lib/postgresql/<version>/bin; `make test` installs them).
initdb refuses to run as root, so as root the cluster runs as the `postgres` system user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def pg_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if found:
        return Path(found[0]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Yield a SQLAlchemy URL (postgresql+psycopg://...) of a fresh server and database."""
    bindir = pg_bindir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL binaries not found (apt-get install postgresql)")
    tmp = Path(tempfile.mkdtemp(prefix="marag-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
        os.chmod(tmp, 0o700)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, log = tmp / "data", tmp / "server.log"
    port = _free_port()
    run = lambda *cmd: subprocess.run(  # noqa: E731
        [*prefix, *cmd], check=True, capture_output=True, text=True, cwd=tmp
    )
    try:
        run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "marag", "-E", "UTF8")
        opts = f"-h 127.0.0.1 -p {port} -k {tmp} -c fsync=off -c max_connections=60"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts, "-w", "start")
        try:
            yield f"postgresql+psycopg://marag@127.0.0.1:{port}/postgres"
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
