"""Pandas frames the pages show and export: the fact table, table B (with its colour coding),
flags, cohort rankings and slopes. Pure functions of a Result; no Streamlit here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from engine.clinical.unranked import RULES as UNRANKED_RULES
from engine.types import Fact, Result, Slope
from kb_store.documents import fmt_num
from kb_store.profiles import domain_label

CHANGE_COLOURS: dict[str, str] = {
    "improved": "background-color: #DCEFE3; color: #14532D",
    "worsened": "background-color: #F6DEDA; color: #7F1D1D",
    "stable": "background-color: #EEF1F4; color: #334155",
}


def facts_frame(facts: Sequence[Fact]) -> pd.DataFrame:
    """One row per fact (patient, visit, domain), items as JSON, as in `marag ask --json`."""
    cols = [
        "patient",
        "visit",
        "date",
        "instrument",
        "domain",
        "score",
        "missing",
        "condition",
        "profile",
        "doc_id",
        "items",
    ]
    rows = []
    for f in facts:
        d = f.to_dict()
        d["items"] = json.dumps(f.items, sort_keys=True)
        rows.append({c: d.get(c) for c in cols})
    return pd.DataFrame(rows, columns=cols)


def table_b_frame(result: Result) -> pd.DataFrame:
    """Table B exactly as the comparison agent computed it (rows: patient, visit, domain, score,
    delta, change, ...), with known columns first."""
    if not result.table_b:
        return pd.DataFrame(columns=["patient", "visit", "domain", "score", "delta", "change"])
    df = pd.DataFrame(result.table_b)
    first = [
        c
        for c in ("patient", "visit", "date", "domain", "score", "delta", "cumulative", "change")
        if c in df.columns
    ]
    return df[first + [c for c in df.columns if c not in first]]


def style_changes(df: pd.DataFrame, column: str = "change") -> Any:
    """A pandas Styler colouring the `change` column (improved / worsened / stable)."""
    if column not in df.columns or df.empty:
        return df
    nums = [c for c in ("delta", "cumulative") if c in df.columns]  # signed; score stays a number
    ints = [c for c in ("from_visit", "missing_items") if c in df.columns]
    shown = df.copy()  # written out for the screen: blanks, not "None", where nothing applies
    for c in nums:
        shown[c] = df[c].map(lambda x: "" if pd.isna(x) else ("+" if x > 0 else "") + fmt_num(x))
    for c in ints:
        shown[c] = df[c].map(lambda x: "" if pd.isna(x) else str(int(x)))
    for c in shown.columns:
        if shown[c].dtype == object:
            shown[c] = shown[c].map(lambda x: "" if x is None else x)
    floats = [c for c in shown.columns if pd.api.types.is_float_dtype(shown[c])]  # e.g. score
    return shown.style.map(change_style, subset=[column]).format(
        lambda x: "" if pd.isna(x) else fmt_num(x), subset=floats
    )


def change_style(v: Any) -> str:
    """CSS for a table-B change cell: improved green, worsened red, stable grey."""
    s = str(v).lower()
    return next((css for k, css in CHANGE_COLOURS.items() if s.startswith(k)), "")


def flags_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(
        [
            {k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in r.items()}
            for r in rows
        ]
    )
    first = [
        c
        for c in ("patient", "visit", "date", "domain", "item", "label", "value", "score")
        if c in df.columns
    ]
    return df[first + [c for c in df.columns if c not in first]]


def slopes_frame(slopes: Sequence[Slope]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "patient": s.patient,
                "domain": s.domain,
                "slope_per_visit": round(s.slope, 3),
                "slope_per_year": None if s.slope_year is None else round(s.slope_year, 3),
                "visits": s.n_visits,
            }
            for s in slopes
        ],
        columns=["patient", "domain", "slope_per_visit", "slope_per_year", "visits"],
    )


def cohort_frames(cohort: dict[str, Any] | None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(answer, ranking, per-domain statistics) frames from Result.cohort, as the cohort agent
    computed them: the answer row (statistic, domain, patient, value, ...), the ranking rows and
    max / min / mean per domain at each patient's latest scored visit."""
    if not cohort:
        return pd.DataFrame(), pd.DataFrame(), pd.DataFrame()
    keys = ("label", "statistic", "domain", "patient", "value", "visit", "ties", "n_patients")
    answer = pd.DataFrame([{k: _cell(cohort.get(k)) for k in keys if k in cohort}])
    ranking = pd.DataFrame(
        [{k: _cell(v) for k, v in r.items()} for r in cohort.get("ranking") or []]
    )
    if not ranking.empty:
        first = [c for c in ("rank", "patient", "value") if c in ranking.columns]
        ranking = ranking[first + [c for c in ranking.columns if c not in first]]
    stats = pd.DataFrame(
        [
            {"domain": domain_label(d), **{k: _cell(v) for k, v in st.items()}}
            for d, st in (cohort.get("domain_stats") or {}).items()
        ]
    )
    return answer, ranking, stats


def not_ranked_frame(cohort: dict[str, Any] | None) -> pd.DataFrame:
    """One row per cohort patient the ranking leaves out: patient, why (the rule), and the number
    of usable scores of the ranked domain (engine.clinical.unranked, as the engine judged it)."""
    rows = [
        {"patient": p, "usable scores": u, "why not ranked": UNRANKED_RULES[g["reason"]]}
        for g in (cohort or {}).get("not_ranked") or []
        for p, u in zip(g["patients"], g["usable"], strict=True)
    ]
    return pd.DataFrame(rows, columns=["patient", "usable scores", "why not ranked"])


def _cell(v: Any) -> Any:
    return ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v


def flag_rule_rows(red_flags: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The red-flag rows with the rule's rationale and source (the Provenance page and report:
    the summary text states the finding, never why it matters)."""
    keys = ("patient", "visit", "date", "item", "item_label", "value", "threshold", "rule")
    return [
        {**{k: r.get(k) for k in keys}, "why": r.get("why", ""), "source": r.get("source", "")}
        for r in red_flags
    ]


# ---- statement-level grounding: rows for the Provenance page, from the engine's record


def statement_rows(verification: dict) -> list[dict]:
    """One row per agent text: how it was released, its sentences and coverage."""
    out = []
    for agent, rec in (verification.get("per_agent") or {}).items():
        out.append(
            {
                "agent": agent,
                "released": rec.get("released", "as_written"),
                "sentences": rec.get("sentences_total", 0),
                "unsupported sentences": rec.get("unsupported_sentences", 0),
                "key-fact coverage": rec.get("coverage"),
                "regeneration rounds": rec.get("rounds", 0),
            }
        )
    return out


def removed_rows(removed: list[dict]) -> list[dict]:
    return [
        {
            "agent": r.get("agent", ""),
            "removed sentence": r["text"],
            "why": "; ".join(r.get("reasons") or []),
            "replaced by": r.get("replaced_by") or "(removed)",
        }
        for r in removed
    ]


def rejected_sentence_rows(verification: dict) -> list[dict]:
    """Unsupported sentences of drafts the facts text replaced."""
    out = []
    for agent, rec in (verification.get("per_agent") or {}).items():
        for s in (rec.get("rejected") or {}).get("unsupported_sentences", []):
            out.append({"agent": agent, "sentence": s["text"], "why": "; ".join(s["reasons"])})
    return out


def check_rows(rec: dict) -> list[dict]:
    return [
        {
            "status": s["status"],
            "sentence": s["text"],
            "why": "; ".join(s["reasons"]),
            "facts matched": sum(len(f.get("values", [])) or 1 for f in s["facts"]),
        }
        for s in rec["sentences"]
    ]
