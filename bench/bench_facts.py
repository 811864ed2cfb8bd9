"""Facts-path benchmark: the session table at 44 and 10,000 patients.

Two phases, one command:

1. **build** (one fresh subprocess per cohort size, so ru_maxrss is that build's peak): generate
   the synthetic cohort (kb_store.synth), ingest it, build the KB with hashing embeddings (Chroma
   collection + session table, one generation), rebuild unchanged, rebuild after one changed item.
   Skipped for a size whose KB already exists under --workdir when --reuse is given.
2. **query** (one process, both KBs): `open_kb` + `Engine` (facts backend). Every question
   (three cohort questions, one trajectory, one comparison, and a spread of 20 trajectories and
   20 comparisons over every n/20-th patient) is asked once per round, for --rounds rounds after
   one warm-up run each; a question's engine time is the median of its rounds (the sum of the
   result trace's node times: retrieve, route, agents, final; plans are given, so no planner
   node), with its p90 and maximum. Its samples are thus a round (1-3 s) apart and span the
   phase: the VM's speed flips between fast and about half speed every few seconds, and samples
   taken back to back fall in one phase (`sample_rounds`). Beside each fixed question the same
   numbers computed directly with pandas on the same table frame, in the same rounds ("raw").
   The machine's pace (a fixed pure-Python loop, `_pace_ms`) is sampled between rounds. Then the
   Cohort page of the dashboard under Streamlit's AppTest: one Run, then the median time of
   --repeat reruns without a new run (what a widget change costs), beside the raw pandas
   computation of the page's tables. Also the cohort answer's ledger size and claim-check time
   (point 4).
   Every row counts the runs whose released summary failed its own check (`failed_checks`,
   which must be 0: a fast wrong answer is no answer).

Usage (from the repository root):
    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_facts.py --workdir /tmp/bench-facts \
        --rounds 15 --json-out /tmp/bench_facts.json
Prints the raw numbers as JSON (and writes them to --json-out); bench/README.md has the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIZES = (44, 10000)
COHORT_QUERIES = {
    "cohort: highest total burden": "Which patient has the highest total UPDRS burden?",
    "cohort: fastest motor worsening": "Which patient's motor score is worsening fastest?",
    "cohort: average motor": "What is the average motor score?",
}
UPDRS = ("nonmotor", "adl", "motor")
BURDEN = "cohort: highest total burden"


# ------------------------------------------------------------------------------------ build


def build_child(patients: int, kb_dir: Path, seed: int) -> dict:
    from kb_store import synth
    from kb_store.chroma_kb import build_kb
    from kb_store.embeddings import HashingEmbeddingFunction
    from kb_store.ingest import load_sources

    out: dict = {"patients": patients}
    t = time.perf_counter()
    df = synth.generate(patients=patients, seed=seed)
    csv = synth.write_csv(df, kb_dir.parent / f"cohort-{patients}.csv")
    out["synth_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    res = load_sources([csv], "generic")
    out["ingest_s"] = round(time.perf_counter() - t, 2)
    out["sessions"] = len(res.sessions)
    out["ingest_errors"] = sum(i.severity == "error" for i in res.issues)
    st = build_kb(res.sessions, kb_dir, embedding="hashing")
    out.update(documents=st.total, build_s=round(st.seconds, 2), embedded=st.embedded)
    ef = HashingEmbeddingFunction()
    st2 = build_kb(res.sessions, kb_dir, embedding_function=ef)
    out.update(rebuild_unchanged_s=round(st2.seconds, 2), rebuild_unchanged_embedded=ef.embedded)
    s = next(x for x in res.sessions if x.instrument == "updrs")
    s.items["NP3GAIT"] = 4.0 if s.items["NP3GAIT"] != 4.0 else 3.0
    ef = HashingEmbeddingFunction()
    st3 = build_kb(res.sessions, kb_dir, embedding_function=ef)
    gen = kb_dir / (kb_dir / "CURRENT").read_text().strip()
    table = gen / "sessions.parquet"
    out.update(
        rebuild_one_change_s=round(st3.seconds, 2),
        one_change_updated=st3.updated,
        one_change_embedded=ef.embedded,
        generation=st3.generation,
        table_rows=json.loads((gen / "manifest.json").read_text())["fact_table"]["rows"],
        table_mb=round(table.stat().st_size / 1e6, 2),
        kb_mb=round(sum(p.stat().st_size for p in kb_dir.rglob("*") if p.is_file()) / 1e6, 1),
    )
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def build(sizes: list[int], workdir: Path, reuse: bool, seed: int) -> list[dict]:
    rows = []
    for n in sizes:
        kb_dir = workdir / f"kb{n}"
        if reuse and (kb_dir / "CURRENT").is_file():
            rows.append({"patients": n, "reused": True})
            continue
        if kb_dir.exists():
            import shutil

            shutil.rmtree(kb_dir)
        kb_dir.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, __file__, "--child-build", str(n), "--kb", str(kb_dir)]
        cmd += ["--seed", str(seed)]
        env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if p.returncode != 0:
            raise SystemExit(f"build of {n} patients failed:\n{p.stderr[-3000:]}")
        row = json.loads(p.stdout.strip().splitlines()[-1])
        row["wall_s"] = round(time.perf_counter() - t, 1)
        print(f"built {n}: {row}", file=sys.stderr, flush=True)
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------ raw pandas


def raw_off(df, instrument: str):
    d = df[(df["instrument"] == instrument) & (df["condition"].str.upper() != "ON")]
    return d.sort_values(["proj_id", "visit"])


def raw_latest_total(df):
    d = raw_off(df, "updrs").dropna(subset=[f"score_{x}" for x in UPDRS])
    d = d.assign(total=d["score_nonmotor"] + d["score_adl"] + d["score_motor"])
    latest = d.groupby("proj_id").tail(1).sort_values(["total", "proj_id"], ascending=[False, True])
    return latest, (latest["total"].max(), latest["total"].min(), round(latest["total"].mean(), 2))


def raw_slopes(df, domain: str):
    d = raw_off(df, "updrs" if domain != "qol" else "pdq8").dropna(subset=[f"score_{domain}"])
    x, y = d["visit"].astype(float), d[f"score_{domain}"]
    g = d.groupby("proj_id")
    mx, my = g["visit"].transform("mean"), g[f"score_{domain}"].transform("mean")
    sxy = ((x - mx) * (y - my)).groupby(d["proj_id"]).sum()
    sxx = ((x - mx) ** 2).groupby(d["proj_id"]).sum()
    slope = (sxy / sxx.where(sxx > 0)).round(2).dropna()
    return slope.sort_values(ascending=False)


def raw_latest_mean(df, domain: str):
    d = raw_off(df, "updrs").dropna(subset=[f"score_{domain}"])
    latest = d.groupby("proj_id").tail(1)
    return round(latest[f"score_{domain}"].mean(), 2), latest[f"score_{domain}"].max()


def raw_patient_series(df, patients):
    d = df[df["proj_id"].isin(patients) & (df["condition"].str.upper() != "ON")]
    out = {}
    for dom in ("motor", "adl", "nonmotor", "qol"):
        s = d.dropna(subset=[f"score_{dom}"]).sort_values(["proj_id", "visit"])
        g = s.groupby("proj_id")[f"score_{dom}"]
        out[dom] = s.assign(delta=g.diff(), cumulative=s[f"score_{dom}"] - g.transform("first"))
    return out


def raw_visit_filtered(df, domain: str, visit_filter: str):
    """The cohort mean and max of one domain over the sessions a visit filter keeps: baseline and
    latest per patient and instrument (its own assessments), visit N by the shared index."""
    d = raw_off(df, "updrs").dropna(subset=[f"score_{domain}"])
    if visit_filter == "baseline":
        d = d.groupby("proj_id").head(1)
    elif visit_filter == "latest_visit":
        d = d.groupby("proj_id").tail(1)
    else:
        d = d[d["visit"] == int(visit_filter.split("_")[1])]
    return round(d[f"score_{domain}"].mean(), 2), d[f"score_{domain}"].max()


#: visit-filtered cohort questions: (query, visit filter)
FILTERED_QUERIES = {
    "cohort: average motor at the latest visit": (
        "What is the average motor score at the latest visit?",
        "latest_visit",
    ),
    "cohort: average motor at baseline": (
        "What is the average motor score at baseline?",
        "baseline",
    ),
    "cohort: average motor at visit 2": ("What is the average motor score at visit 2?", "visit_2"),
}

RAW = {
    **{
        name: (lambda df, vf=vf: raw_visit_filtered(df, "motor", vf))
        for name, (_q, vf) in FILTERED_QUERIES.items()
    },
    "cohort: highest total burden": raw_latest_total,
    "cohort: fastest motor worsening": lambda df: raw_slopes(df, "motor"),
    "cohort: average motor": lambda df: raw_latest_mean(df, "motor"),
}


# ------------------------------------------------------------------------------------ query


def _median_ms(fn, repeat: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms of this process) over `repeat` calls after a warm-up."""
    fn()  # warm-up
    times, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    return round(statistics.median(times), 2), round(statistics.median(cpu), 2)


def _p90(xs: list[float]) -> float:
    return sorted(xs)[int(0.9 * (len(xs) - 1))]


@dataclass
class Probe:
    """One question of the query phase and its samples (one per round)."""

    name: str
    plan: object
    raw: object = None  # the same numbers straight from the table frame, or None
    ms: list[float] = field(default_factory=list)  # engine time (sum of the trace's nodes)
    wall: list[float] = field(default_factory=list)  # the whole `eng.run` call, result included
    cpu: list[float] = field(default_factory=list)  # CPU time of the run
    raw_ms: list[float] = field(default_factory=list)
    raw_cpu: list[float] = field(default_factory=list)
    nodes: dict = field(default_factory=dict)
    chars: int = 0  # the summary's length
    failed: int = 0  # runs whose released summary failed its own check (must stay 0)
    keep: bool = False  # keep the last result (the cohort claim check reads it)
    result: object = None

    def sample(self, eng, df) -> None:
        c, w = time.process_time(), time.perf_counter()
        res = eng.run(self.plan)
        self.wall.append((time.perf_counter() - w) * 1000)
        self.cpu.append((time.process_time() - c) * 1000)
        self.ms.append(sum(t.ms for t in res.trace))
        # only what the tables need: results kept alive (a 10,000-row cohort ranking each)
        # would grow the collector's generations, and a full collection paused whichever
        # question came next by 40-80 ms in every round
        self.nodes = {t.node: round(t.ms, 2) for t in res.trace}
        self.chars = len(res.summary)
        self.failed += not res.verification["summary_passed"]
        self.result = res if self.keep else None
        if self.raw is not None:
            t, c = time.perf_counter(), time.process_time()
            self.raw(df)
            self.raw_ms.append((time.perf_counter() - t) * 1000)
            self.raw_cpu.append((time.process_time() - c) * 1000)

    @property
    def median(self) -> float:
        return round(statistics.median(self.ms), 2)


def sample_rounds(eng, df, probes: list[Probe], rounds: int) -> list[float]:
    """Every probe once per round, `rounds` times, after one warm-up run each; the machine's
    pace (`_pace_ms`) between rounds, returned. The VM's speed flips between fast and about
    half speed every few seconds (bench/README.md, "The machine's pace"): a question's samples
    taken back to back (under a second) fall in one phase, so its median is that phase's. Here
    each question's samples are one round apart and span the whole phase, so its median is the
    machine's typical time and its p90 shows the slow phases."""
    for p in probes:
        eng.run(p.plan)  # warm-up
    pace = []
    for r in range(rounds):
        pace.append(_pace_ms())
        k = r % len(probes)  # each round starts at another probe: no question always first
        for p in probes[k:] + probes[:k]:
            p.sample(eng, df)
    pace.append(_pace_ms())
    return pace


def _pace_ms() -> float:
    """`_speed_ms` on a sixth of its loop, scaled to its ms (about 110 ms at the VM's fast
    pace): the pace right now, short enough to take between rounds."""
    return round(_loop_s(100_000) * 6000, 1)


def _pace_summary(pace: list[float]) -> dict:
    return {
        "min": min(pace),
        "median": round(statistics.median(pace), 1),
        "p90": _p90(pace),
        "max": max(pace),
        "slow_share": round(sum(x > 160 for x in pace) / len(pace), 2),  # rounds at < ~2/3 speed
    }


def query(sizes: list[int], workdir: Path, repeat: int, rounds: int) -> dict:
    from engine.config import Config
    from engine.engine_factory import settle_heap
    from engine.grounding.guard import check_numbers
    from engine.pipeline import Engine
    from engine.types import Plan
    from kb_store.chroma_reader import open_kb

    out: dict = {"rows": [], "ledger": [], "page": [], "speed_loop_ms_start": _speed_ms()}
    out["rounds"] = rounds
    for n in sizes:
        kb_dir = workdir / f"kb{n}"
        t = time.perf_counter()
        kb = open_kb(kb_dir, embedding="hashing")
        table = kb.fact_table()
        df = table.frame()
        load_ms = round((time.perf_counter() - t) * 1000, 1)
        cfg = Config.load({"kb_dir": kb_dir, "embedding": "hashing"}, env={})
        eng = Engine(cfg, kb, None)
        settle_heap()  # as the dashboard does once its cached engine is open
        ids = kb.patient_ids()
        p1, p2 = ids[len(ids) // 2], ids[len(ids) // 3]
        print(f"[{n}] KB open + table load {load_ms} ms", file=sys.stderr, flush=True)
        fixed = [
            Probe(name, Plan((), "cohort", query=q), RAW[name], keep=name == BURDEN)
            for name, q in COHORT_QUERIES.items()
        ]
        fixed += [
            Probe(name, Plan((), "cohort", visit_filter=vf, query=q), RAW[name])
            for name, (q, vf) in FILTERED_QUERIES.items()
        ]
        fixed += [
            Probe(
                "trajectory (1 patient)",
                Plan((p1,), "trajectory"),
                lambda d, ps=(p1,): raw_patient_series(d, list(ps)),
            ),
            Probe(
                "comparison (2 patients)",
                Plan((p1, p2), "comparison"),
                lambda d, ps=(p1, p2): raw_patient_series(d, list(ps)),
            ),
        ]
        spread = spread_probes(ids)
        pace = sample_rounds(eng, df, fixed + [p for _, ps in spread for p in ps], rounds)
        out.setdefault("pace", {})[n] = {**_pace_summary(pace), "samples": pace}
        print(f"[{n}] pace {out['pace'][n]}", file=sys.stderr, flush=True)
        for p in fixed:
            row = {
                "patients": n,
                "case": p.name,
                "engine_ms": p.median,
                "engine_p90_ms": round(_p90(p.ms), 2),
                "engine_max_ms": round(max(p.ms), 2),
                # the whole call: result assembly and the collection the run deferred included
                "engine_wall_ms": round(statistics.median(p.wall), 2),
                "raw_ms": round(statistics.median(p.raw_ms), 2),
                "engine_cpu_ms": round(statistics.median(p.cpu), 2),
                "raw_cpu_ms": round(statistics.median(p.raw_cpu), 2),
                "nodes": p.nodes,
                "failed_checks": p.failed,
                "samples_ms": [round(x, 2) for x in p.ms],
            }
            row["ratio"] = round(row["engine_ms"] / row["raw_ms"], 1)
            row["wall_ratio"] = round(row["engine_wall_ms"] / row["raw_ms"], 1)
            row["cpu_ratio"] = round(row["engine_cpu_ms"] / row["raw_cpu_ms"], 1)
            out["rows"].append(row)
            print({k: v for k, v in row.items() if k != "samples_ms"}, file=sys.stderr, flush=True)
            if p.name == BURDEN:
                res = p.result
                t = time.perf_counter()
                c = time.process_time()
                for _ in range(repeat):
                    rec = check_numbers(res.summary, res.ledger, res.plan.patients)
                check_ms = (time.perf_counter() - t) * 1000 / repeat
                check_cpu = (time.process_time() - c) * 1000 / repeat
                out["ledger"].append(
                    {
                        "patients": n,
                        "ledger_values": len(res.ledger),
                        "ledger_patients": len({v.patient for v in res.ledger if v.patient}),
                        "result_facts": len(res.facts),
                        "summary_chars": len(res.summary),
                        "numbers_checked": rec["numbers"],
                        "unsupported": len(rec["unsupported"]),
                        "check_ms": round(check_ms, 2),
                        "check_cpu_ms": round(check_cpu, 2),
                        "ranking_rows": len(res.cohort["ranking"]),
                    }
                )
        out.setdefault("spread", []).extend(spread_rows(n, spread))
        out["page"].append(page_bench(n, kb, eng, df, repeat))
        out.setdefault("load_ms", {})[n] = load_ms
    out["speed_loop_ms_end"] = _speed_ms()
    return out


def spread_probes(ids: list[int], sample: int = 20) -> list[tuple[str, list[Probe]]]:
    """Single-patient questions over a spread of patients, not one: the engine time follows the
    length of the summary (a patient with many severe items and red flags has a longer text to
    check), so the fixed patient of the main table may sit anywhere in the distribution."""
    from engine.types import Plan

    step = max(1, len(ids) // sample)
    picks = ids[::step][:sample]
    traj = [Probe("trajectory (1 patient)", Plan((p,), "trajectory")) for p in picks]
    comp = [
        Probe("comparison (2 patients)", Plan((p, picks[(i + 1) % len(picks)]), "comparison"))
        for i, p in enumerate(picks)
    ]
    return [("trajectory (1 patient)", traj), ("comparison (2 patients)", comp)]


def spread_rows(n: int, spread: list[tuple[str, list[Probe]]]) -> list[dict]:
    """Per question type: the distribution of the sampled patients' medians, and every sample."""
    rows = []
    for name, probes in spread:
        per = [p.median for p in probes]
        every = [x for p in probes for x in p.ms]
        chars = [p.chars for p in probes]
        row = {
            "patients": n,
            "case": name,
            "sampled": len(probes),
            "median_ms": round(statistics.median(per), 1),
            "p90_ms": round(_p90(per), 1),
            "max_ms": round(max(per), 1),
            "median_cpu_ms": round(statistics.median(x for p in probes for x in p.cpu), 1),
            "under_50ms": sum(x < 50 for x in per),
            # every single run, not only the medians: the slow phases show here
            "samples": len(every),
            "samples_p90_ms": round(_p90(every), 1),
            "samples_over_50ms": sum(x >= 50 for x in every),
            "summary_chars_median": int(statistics.median(chars)),
            "failed_checks": sum(p.failed for p in probes),
            "summary_chars_max": max(chars),
            "per_question": [
                {
                    "patients": list(p.plan.patients),
                    "ms": p.median,
                    "p90_ms": round(_p90(p.ms), 1),
                    "chars": p.chars,
                }
                for p in probes
            ],
        }
        rows.append(row)
        print({k: v for k, v in row.items() if k != "per_question"}, file=sys.stderr, flush=True)
    return rows


def _speed_ms() -> float:
    """A fixed pure-Python loop (dict and string work, as the claim check does), in ms: the
    machine's pace at that moment, at the start and end of the query phase."""
    return round(_loop_s(600_000) * 1000, 1)


def _loop_s(n: int) -> float:
    t = time.perf_counter()
    d: dict[str, int] = {}
    for i in range(n):
        k = str(i % 997)
        d[k] = d.get(k, 0) + len(k)
    return time.perf_counter() - t


def page_bench(n: int, kb, eng, df, repeat: int) -> dict:
    """The Cohort page under AppTest: one Run, then reruns without a new run."""
    from streamlit.testing.v1 import AppTest

    from engine import engine_factory

    engine_factory.open_engine = lambda cfg, **kw: eng  # the dashboard opens this engine
    at = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("views/cohort.py").run()
    at.selectbox(key="question").set_value(COHORT_QUERIES["cohort: highest total burden"]).run()
    t = time.perf_counter()
    at.button(key="run_cohort").click().run()
    first_ms = (time.perf_counter() - t) * 1000
    assert not at.exception, at.exception
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - t) * 1000)
        assert not at.exception, at.exception
    # the page script runs in AppTest's script thread; process CPU time covers it
    cpu = []
    for _ in range(repeat):
        c = time.process_time()
        at.run()
        cpu.append((time.process_time() - c) * 1000)

    def raw() -> None:  # the page's tables straight from the table with pandas
        latest, _ = raw_latest_total(df)
        latest[["proj_id", "total", "visit", "date"]].reset_index(drop=True)
        for dom in ("motor", "adl", "nonmotor"):
            raw_slopes(df, dom)

    raw_ms, raw_cpu = _median_ms(raw, repeat)
    row = {
        "patients": n,
        "first_run_ms": round(first_ms, 1),
        "rerun_ms": round(statistics.median(times), 1),
        "raw_ms": raw_ms,
        "rerun_cpu_ms": round(statistics.median(cpu), 1),
        "raw_cpu_ms": raw_cpu,
    }
    row["ratio"] = round(row["rerun_ms"] / row["raw_ms"], 1)
    row["cpu_ratio"] = round(row["rerun_cpu_ms"] / row["raw_cpu_ms"], 1)
    print(row, file=sys.stderr, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bench-facts"))
    ap.add_argument("--patients", type=int, action="append")
    ap.add_argument("--repeat", type=int, default=5, help="page reruns and cohort claim checks")
    ap.add_argument(
        "--rounds", type=int, default=15, help="query phase: samples per question, one per round"
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--reuse", action="store_true", help="keep KBs already built under --workdir")
    ap.add_argument("--phase", choices=("build", "query", "both"), default="both")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--child-build", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--kb", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child_build:
        print(json.dumps(build_child(a.child_build, a.kb, a.seed)))
        return
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sizes = a.patients or list(SIZES)
    res: dict = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    if a.phase in ("build", "both"):
        res["build"] = build(sizes, a.workdir, a.reuse, a.seed)
    if a.phase in ("query", "both"):
        res["query"] = query(sizes, a.workdir, a.repeat, a.rounds)
        res["load_after"] = round(os.getloadavg()[0], 1)
    print(json.dumps(res, indent=1))
    if a.json_out:
        a.json_out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
