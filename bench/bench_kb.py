"""KB build benchmark: time and peak memory of `marag kb build` stages for a synthetic cohort.

Each measurement runs in a fresh subprocess (so ru_maxrss is that build's peak resident memory):
generate the cohort (kb_store.synth), write the CSV, ingest it (kb_store.ingest.load_sources), build
the KB (kb_store.settings.KBSettings.build -> kb_store.chroma_kb.build_kb), rebuild unchanged data, then rebuild after one changed item.

Usage (from the repository root):
    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_kb.py                      # default scenarios
    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_kb.py --scenario 44:minilm --scenario 10000:hashing
Prints a Markdown table and writes the raw numbers as JSON (--json-out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SCENARIOS = ("44:hashing", "44:minilm", "10000:hashing")


def child(patients: int, embedding: str, seed: int) -> dict:
    sys.path.insert(0, str(REPO))
    from kb_store.offline import apply_offline_environment

    apply_offline_environment()
    from kb_store import synth
    from kb_store.ingest import load_sources
    from kb_store.settings import KBSettings

    out: dict = {"patients": patients, "embedding": embedding}

    def note(msg: str) -> None:  # progress on stderr; stdout carries the JSON result
        print(f"[{patients}:{embedding}] {msg} {json.dumps(out)}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        df = synth.generate(patients=patients, seed=seed)
        csv = synth.write_csv(df, Path(tmp) / "cohort.csv")
        out["synth_s"] = round(time.perf_counter() - t, 2)
        out["rows"] = len(df)
        t = time.perf_counter()
        res = load_sources([csv], "generic")
        out["ingest_s"] = round(time.perf_counter() - t, 2)
        out["sessions"] = len(res.sessions)
        out["ingest_errors"] = sum(i.severity == "error" for i in res.issues)
        kb = Path(tmp) / "kb"
        store = KBSettings(kb, embedding=embedding)
        if embedding == "minilm":  # load the model outside the timed build, report it apart
            from kb_store.minilm import load_minilm

            t = time.perf_counter()
            load_minilm()
            out["model_load_s"] = round(time.perf_counter() - t, 2)
        note("before st")
        st = store.build(res.sessions)
        out.update(
            documents=st.total,
            build_s=round(st.seconds, 2),
            embedded=st.embedded,
            docs_per_s=round(st.total / st.seconds, 1),
        )
        note("before st2")
        st2 = store.build(res.sessions)
        out.update(rebuild_unchanged_s=round(st2.seconds, 2), rebuild_embedded=st2.embedded)
        s = next(x for x in res.sessions if x.instrument == "updrs")
        s.items["NP3GAIT"] = 4.0 if s.items["NP3GAIT"] != 4.0 else 3.0
        note("before st3")
        st3 = store.build(res.sessions)
        out.update(
            rebuild_one_change_s=round(st3.seconds, 2),
            one_change_updated=st3.updated,
            one_change_embedded=st3.embedded,
        )
        note("before reader")
        reader = store.open()
        t = time.perf_counter()
        for pid in reader.patient_ids()[:20]:
            reader.session_docs(pid)
        out["session_docs_ms"] = round((time.perf_counter() - t) / 20 * 1000, 1)
        out["kb_mb"] = round(sum(f.stat().st_size for f in kb.rglob("*") if f.is_file()) / 2**20, 1)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)
    return out


def run_scenario(spec: str, seed: int) -> dict:
    patients, embedding = spec.split(":")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, __file__, "--child", patients, embedding, "--seed", str(seed)],
        stdout=subprocess.PIPE,  # the JSON result; progress goes to our stderr
        text=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"scenario {spec} failed (exit {proc.returncode}); see stderr above")
    return json.loads(proc.stdout.strip().splitlines()[-1])


COLUMNS = [
    ("patients", "patients"),
    ("embedding", "embedding"),
    ("documents", "docs"),
    ("ingest_s", "ingest s"),
    ("build_s", "build s"),
    ("docs_per_s", "docs/s"),
    ("rebuild_unchanged_s", "rebuild unchanged s"),
    ("rebuild_embedded", "re-embedded"),
    ("rebuild_one_change_s", "rebuild 1 change s"),
    ("one_change_embedded", "1-change embedded"),
    ("session_docs_ms", "session_docs ms"),
    ("kb_mb", "KB MB"),
    ("peak_rss_mb", "peak RSS MB"),
]


def table(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(h for _, h in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(k, "")) for k, _ in COLUMNS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--scenario", action="append", help="PATIENTS:EMBEDDING, e.g. 44:minilm (repeatable)"
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json-out", default=None, help="write raw results here")
    ap.add_argument("--child", nargs=2, metavar=("PATIENTS", "EMBEDDING"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1], args.seed)))
        return 0
    rows = []
    for spec in args.scenario or DEFAULT_SCENARIOS:
        r = run_scenario(spec, args.seed)
        print(json.dumps(r), flush=True)
        rows.append(r)
    print(
        f"\nmachine: {os.cpu_count()} CPUs, {platform.platform()}, python {platform.python_version()}\n"
    )
    print(table(rows))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
