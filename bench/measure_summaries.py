"""Readable-summary measurement: what the facts-backend summaries say on all MA-RAG study patients.

Runs the engine (facts backend, zero LLM calls) on every patient of the MA-RAG study files and
prints the counts the note reports on the summaries, each with its denominator:

- trajectories stating the UPDRS total first -> last and the number of assessments;
- patients with Falling >= 2 at any assessment whose trajectory mentions falls;
- latest-assessment items at 3 or 4 that the trajectory names (UPDRS and PDQ-8 separately);
- new-onset hallucinations (0 at every earlier assessment, >= 1 later) flagged as such;
- "What is the baseline status of proj id N using UPDRS?" answered for every patient with a UPDRS
  session (the answer is that patient's first UPDRS assessment);
- sessions excluded at ingest named in the trajectory of their patient;
- the cohort wordings ranked by slope, checked against an independent least-squares slope;
- every summary passes the claim checker (unsupported numbers).

The expected values are recomputed here from the ingested sessions (kb_store.ingest), not from the
engine's own course/findings modules, so the script can disagree with the engine.

    PYTHONPATH=$PWD python bench/measure_summaries.py [--data ../shared/data/ma-rag]
                                                      [--kb-dir DIR] [--show 23,47]

With --kb-dir the engine reads a KB built by `marag kb build` (Chroma, its excluded_sessions.json);
without it the sessions are ingested in memory (same documents, same exclusions).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.config import Config  # noqa: E402
from engine.grounding.guard import check_numbers  # noqa: E402
from kb_store.profiles import load_profile  # noqa: E402

COHORT_QUERIES = {
    "Which patient has the steepest motor slope per visit?": "motor",
    "Who has the largest increase in motor score per visit?": "motor",
    "Rank patients by motor progression": "motor",
    "Which patient has the steepest ADL slope per visit?": "adl",
}


def open_engine(data: Path, kb_dir: str | None):
    """(engine, ingest result, excluded rows): through the engine factory, over the KB built at
    `kb_dir` (Chroma, hashing embeddings) or an in-memory KB of the same documents."""
    from engine import open_engine as factory_engine
    from kb_store.exclusions import excluded_from_ingest
    from kb_store.ingest import load_sources

    res = load_sources([data])
    excluded = excluded_from_ingest(res, [data])
    if kb_dir:
        cfg = Config.load({"kb_dir": kb_dir, "embedding": "hashing", "llm": "facts"}, env={})
        return factory_engine(cfg, llm=None), res, excluded
    from kb_store.documents import build_documents
    from kb_store.reader import InMemoryKB

    cfg = Config.load({"llm": "facts"}, env={})
    kb = InMemoryKB(build_documents(res.sessions), excluded)
    return factory_engine(cfg, kb=kb, llm=None), res, excluded


def label(text: str) -> str:
    from engine.writing.readable import _label

    return _label(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "ma-rag"))
    ap.add_argument("--kb-dir", default=None)
    ap.add_argument("--show", default="", help="patients whose trajectory summary to print")
    args = ap.parse_args(argv)
    eng, ing, excluded = open_engine(Path(args.data), args.kb_dir)
    sessions = ing.sessions
    by_p: dict[int, list] = defaultdict(list)
    for s in sessions:
        by_p[s.proj_id].append(s)
    patients = sorted(by_p)
    updrs_prof = load_profile("marag-updrs44")
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # name -> [hits, denominator]
    missed: dict[str, list[str]] = defaultdict(list)
    unsupported = 0
    summaries: dict[int, str] = {}
    for p in patients:
        r = eng.ask(f"Show me the trajectory of proj id {p}.")
        text = r.summary
        summaries[p] = text
        rec = check_numbers(text, r.ledger, r.plan.patients)
        unsupported += len(rec["unsupported"])
        low = text.lower()
        up = sorted((s for s in by_p[p] if s.instrument == "updrs"), key=lambda s: s.visit)
        pq = sorted((s for s in by_p[p] if s.instrument == "pdq8"), key=lambda s: s.visit)
        # 1. total first -> last and the number of assessments
        if len(up) >= 2:
            counts["total_first_last_and_n"][1] += 1
            tot = [sum(v for v in s.items.values() if v is not None) for s in up]
            want = (
                f"UPDRS: {len(up)} assessments",
                f"{tot[0]:g} (visit {up[0].visit})",
                f"{tot[-1]:g} (visit {up[-1].visit})",
            )
            if all(w in text for w in want):
                counts["total_first_last_and_n"][0] += 1
            else:
                missed["total_first_last_and_n"].append(str(p))
        # 2. falls >= 2 mentioned
        if any((s.items.get("FALL_PROB") or 0) >= 2 for s in up):
            counts["falls_ge2_mentioned"][1] += 1
            if "falling" in low:
                counts["falls_ge2_mentioned"][0] += 1
            else:
                missed["falls_ge2_mentioned"].append(str(p))
        # 3. latest-visit items >= 3 mentioned (named in the items paragraph of that visit)
        for inst, ss in (("updrs", up), ("pdq8", pq)):
            if not ss:
                continue
            last = ss[-1]
            prof = load_profile(last.profile)
            para = next(
                (
                    b
                    for b in text.split("\n\n")
                    if b.startswith(f"At visit {last.visit}, the latest assessment, items rated")
                ),
                "",
            ).lower()
            for code, x in last.items.items():
                if x is not None and x >= 3:
                    key = f"latest_items_ge3_{inst}"
                    counts[key][1] += 1
                    if f"{label(prof.item(code).label)} " in para:
                        counts[key][0] += 1
                    else:
                        missed[key].append(f"{p}:{code}")
        # 4. new-onset hallucinations
        vals = [s.items.get("HALLUCINATION") for s in up]
        vals = [v for v in vals if v is not None]
        onset = any(v >= 1 and k > 0 and all(u == 0 for u in vals[:k]) for k, v in enumerate(vals))
        if onset:
            counts["new_onset_hallucinations_flagged"][1] += 1
            if "new-onset hallucinations" in low:
                counts["new_onset_hallucinations_flagged"][0] += 1
            else:
                missed["new_onset_hallucinations_flagged"].append(str(p))
        # 6. excluded sessions named
        for e in excluded:
            if e["patient"] == p:
                counts["excluded_sessions_named"][1] += 1
                if str(e["date"]).split(" ")[0] in text and "Left out at data import" in text:
                    counts["excluded_sessions_named"][0] += 1
                else:
                    missed["excluded_sessions_named"].append(f"{p}:{e['row']}")
        if "(baseline not selected)" in text:
            missed["baseline_not_selected"].append(str(p))
    # 5. baseline questions
    for p in patients:
        up = sorted((s for s in by_p[p] if s.instrument == "updrs"), key=lambda s: s.visit)
        if not up:
            continue
        counts["baseline_questions_answered"][1] += 1
        try:
            r = eng.ask(f"What is the baseline status of proj id {p} using UPDRS?")
        except Exception as e:  # noqa: BLE001 - counted as not answered, with the reason
            missed["baseline_questions_answered"].append(f"{p}: {e}")
            continue
        first = up[0]
        ds = first.domain_scores()
        want = f"Patient {p}, visit {first.visit} ({first.date.isoformat()}"
        motor = f"motor {ds['motor'].score:g}"
        if want in r.summary and motor in r.summary and {f.visit for f in r.facts} == {first.visit}:
            counts["baseline_questions_answered"][0] += 1
        else:
            missed["baseline_questions_answered"].append(str(p))
    # 7. cohort wordings against an independent slope
    cohort_lines = []
    for q, dom in COHORT_QUERIES.items():
        codes = [i.code for i in updrs_prof.items_of(dom)]
        slopes = {}
        for p in patients:
            up = sorted((s for s in by_p[p] if s.instrument == "updrs"), key=lambda s: s.visit)
            pts = [
                (s.visit, sum(s.items[c] for c in codes if s.items.get(c) is not None))
                for s in up
                if any(s.items.get(c) is not None for c in codes)
            ]
            if len(pts) >= 2:
                x, y = np.array([a for a, _ in pts], float), np.array([b for _, b in pts], float)
                slopes[p] = float(np.polyfit(x, y, 1)[0])
        best = max(slopes.values())
        truth = sorted(p for p, v in slopes.items() if abs(v - best) < 1e-9)
        r = eng.ask(q)
        c = r.cohort or {}
        ok = c.get("patient") in truth and c.get("statistic") == "steepest_slope"
        counts["cohort_wordings_ranked_by_slope"][1] += 1
        counts["cohort_wordings_ranked_by_slope"][0] += int(ok)
        cohort_lines.append(
            f"  {q!r}: statistic {c.get('statistic')} ({c.get('domain')}), answer patient "
            f"{c.get('patient')} {c.get('value')}; steepest by numpy.polyfit: {truth} "
            f"{best:.2f} -> {'OK' if ok else 'WRONG'}"
        )
    print(
        f"MA-RAG patients: {len(patients)}; facts backend; unsupported numbers in all "
        f"trajectory summaries: {unsupported}"
    )
    for k, (hit, n) in counts.items():
        print(f"{k}: {hit}/{n}" + (f"  (missed: {', '.join(missed[k][:12])})" if missed[k] else ""))
    print(f"trajectories saying '(baseline not selected)': {len(missed['baseline_not_selected'])}")
    print("cohort wordings:")
    print("\n".join(cohort_lines))
    for p in [int(x) for x in args.show.split(",") if x.strip()]:
        print(f"\n===== trajectory summary, patient {p} =====\n{summaries[p]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
