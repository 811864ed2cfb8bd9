"""Load test: N concurrent sessions against the running dashboard, then against the CLI.

Bounded and loopback only: the dashboard is started here on 127.0.0.1 (a free port, facts backend,
hashing KB of the shipped sample), and the load generator speaks Streamlit's own websocket protocol
(`/_stcore/stream`, BackMsg / ForwardMsg protobufs), so no browser is needed. Each session opens a
deep link that runs the pipeline on open (`?patient=P&run=1`, a comparison, a cohort question),
waits for `script_finished`, records the run latency and whether the page showed an error or an
exception, and closes; each of the N workers repeats that until the duration is over. The dashboard
server's resident memory is sampled before (after one warm-up run) and after.

The CLI phase runs N workers that each call `marag ask ... --llm facts --json` in a loop for the same
duration (latency includes interpreter start-up).

Usage (repository root):
    HF_HUB_OFFLINE=1 .venv/bin/python bench/load_test.py --sessions 20 --seconds 120
Prints p50 / p95 / max latency, runs, errors and memory (right after the load, and again after
--idle-seconds, once Streamlit has dropped the closed sessions); --json-out writes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEEP_LINKS = [
    ("", "patient={p}&run=1"),
    ("compare", "patients={p}&patients={q}&run=1"),
    ("cohort", "question=Which+patient%27s+motor+score+is+worsening+fastest%3F&run=1"),
]


def rss_mb(pid: int) -> float:
    import psutil

    try:
        proc = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20
    except psutil.NoSuchProcess:
        return float("nan")


async def one_session(url: str, page: str, query: str, timeout: float) -> tuple[float, str | None]:
    """Open one session on a deep link; (seconds to script_finished, error or None)."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    t0 = time.perf_counter()
    error: str | None = None
    done = False
    async with websockets.connect(
        ws_url, subprotocols=["streamlit"], origin=url, max_size=None, open_timeout=timeout
    ) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        await ws.send(msg.SerializeToString())
        deadline = time.monotonic() + timeout
        while True:
            raw = await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic()))
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            dkind = fm.delta.WhichOneof("type") if kind == "delta" else None
            if dkind == "new_element":
                el = fm.delta.new_element
                if el.WhichOneof("type") == "exception":
                    error = f"exception: {el.exception.type}: {el.exception.message[:120]}"
            elif dkind == "add_block" and fm.delta.add_block.WhichOneof("type") == "expandable":
                label = fm.delta.add_block.expandable.label  # the st.status of the run step
                if label.startswith("Done in"):
                    done = True
                elif label.startswith("The run stopped"):
                    error = error or "the run stopped (st.status error)"
            elif kind == "page_not_found":
                error = f"page not found: {page}"
            elif kind == "script_finished":
                # 0 FINISHED_SUCCESSFULLY; 2 FINISHED_EARLY_FOR_RERUN (a rerun follows: wait for it)
                if fm.script_finished == 0:
                    break
                if fm.script_finished in (2, 3):
                    continue
                error = error or f"script_finished status {fm.script_finished}"
                break
    if error is None and not done:
        error = "the page finished without a completed run"
    return time.perf_counter() - t0, error


async def dashboard_load(url: str, sessions: int, seconds: float, seed: int) -> dict:
    rng = random.Random(seed)
    lat: list[float] = []
    errors: list[str] = []
    stop = time.monotonic() + seconds

    async def worker(i: int) -> None:
        while time.monotonic() < stop:
            page, q = DEEP_LINKS[rng.randrange(len(DEEP_LINKS))]
            p, q2 = rng.sample(range(1, 45), 2)
            try:
                dt, err = await one_session(url, page, q.format(p=p, q=q2), timeout=300)
            except Exception as exc:  # noqa: BLE001 - counted
                errors.append(f"{type(exc).__name__}: {exc}"[:160])
                continue
            lat.append(dt)
            if err:
                errors.append(err)

    await asyncio.gather(*(worker(i) for i in range(sessions)))
    return summarise(lat, errors)


def summarise(lat: list[float], errors: list[str]) -> dict:
    qs = (
        statistics.quantiles(lat, n=100, method="inclusive")
        if len(lat) >= 2
        else [float("nan")] * 99
    )
    return {
        "runs": len(lat),
        "errors": len(errors),
        "error_examples": sorted(set(errors))[:5],
        "p50_s": round(statistics.median(lat), 3) if lat else None,
        "p95_s": round(qs[94], 3) if lat else None,
        "max_s": round(max(lat), 3) if lat else None,
    }


def cli_load(kb: Path, sessions: int, seconds: float, seed: int) -> dict:
    import threading

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MARAG_")},
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "MARAG_KB_DIR": str(kb),
        "MARAG_EMBEDDING": "hashing",
        "MARAG_LLM": "facts",
    }
    lat: list[float] = []
    errors: list[str] = []
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def worker(i: int) -> None:
        rng = random.Random(seed + i)
        while time.monotonic() < stop:
            p, q = rng.sample(range(1, 45), 2)
            query = rng.choice(
                [
                    f"How has patient {p} changed?",
                    f"Compare patients {p} and {q}",
                    "Which patient's motor score is worsening fastest?",
                ]
            )
            t0 = time.perf_counter()
            r = subprocess.run(
                [sys.executable, "-m", "engine.cli", "ask", query, "--json"],
                env=env,
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=600,
            )
            with lock:
                lat.append(time.perf_counter() - t0)
                if r.returncode != 0 or '"summary"' not in r.stdout:
                    errors.append(f"exit {r.returncode}: {r.stderr.strip()[-160:]}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summarise(lat, errors)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument(
        "--idle-seconds", type=float, default=150, help="wait, then sample memory again (0: no)"
    )
    ap.add_argument("--json-out", default=None)
    a = ap.parse_args()
    if a.sessions > 50 or a.seconds > 600:
        ap.error("bounded: at most 50 sessions and 600 s")
    from tools.screenshots import build_demo_kb, serve

    out: dict = {"sessions": a.sessions, "seconds": a.seconds}
    with tempfile.TemporaryDirectory() as d:
        kb = Path(d) / "kb"
        build_demo_kb(kb)
        log = Path(d) / "streamlit.log"
        with serve(kb, log=log) as url:
            import psutil

            server = next(
                p
                for p in psutil.process_iter(["cmdline"])
                if p.info["cmdline"]
                and "streamlit" in " ".join(p.info["cmdline"])
                and url.rsplit(":", 1)[1] in " ".join(p.info["cmdline"])
            )
            warm = asyncio.run(one_session(url, "", "patient=3&run=1", timeout=300))
            rss0 = rss_mb(server.pid)
            t0 = time.perf_counter()
            dash = asyncio.run(dashboard_load(url, a.sessions, a.seconds, a.seed))
            dash["wall_s"] = round(time.perf_counter() - t0, 1)
            rss1 = rss_mb(server.pid)
            dash.update(
                warmup_s=round(warm[0], 2),
                warmup_error=warm[1],
                rss_start_mb=round(rss0, 1),
                rss_end_mb=round(rss1, 1),
                rss_growth_mb=round(rss1 - rss0, 1),
            )
            if a.idle_seconds:
                # Streamlit keeps a closed session's state until server.disconnectedSessionTTL
                # (120 s): sample again once they have expired
                time.sleep(a.idle_seconds)
                asyncio.run(one_session(url, "", "patient=3&run=1", timeout=300))
                rss2 = rss_mb(server.pid)
                dash.update(
                    rss_after_idle_mb=round(rss2, 1),
                    rss_growth_after_idle_mb=round(rss2 - rss0, 1),
                    idle_s=a.idle_seconds,
                )
            out["dashboard"] = dash
            print(f"dashboard: {json.dumps(dash)}")
        if not a.skip_cli:
            cli = cli_load(kb, a.sessions, a.seconds, a.seed)
            out["cli"] = cli
            print(f"cli: {json.dumps(cli)}")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
