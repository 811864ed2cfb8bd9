"""Gold summaries: hand-written ones for the synthetic cohort (gold_synthetic_v1.json) and, for
single-session queries on the MA-RAG study data, the study's clinician_summary of the selected
session, read from the study CSVs (UPDRS_one2one_summaries.csv for UPDRS-only plans,
PDQ8_UPDRS_one2one_summaries.csv for plans with the PDQ-8)."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from engine.types import Fact, Plan

SYNTHETIC_GOLD = Path(__file__).with_name("gold_synthetic_v1.json")
UPDRS_FILE = "UPDRS_one2one_summaries.csv"
PDQ_FILE = "PDQ8_UPDRS_one2one_summaries.csv"


@cache
def synthetic_gold(path: str = str(SYNTHETIC_GOLD)) -> dict[str, str]:
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return {k: v["text"] for k, v in doc["gold"].items()}


@cache
def _rows(path: str) -> list[dict[str, str]]:
    with open(path, encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def _iso(raw: str) -> str:
    d = raw.strip().split(" ")[0].replace("/", "-")
    y, m, dd = d.split("-")
    return f"{int(y):04d}-{int(m):02d}-{int(dd):02d}"


def clinician_summary(marag_dir: Path, plan: Plan, facts: Sequence[Fact]) -> tuple[str | None, str]:
    """(gold text or None, where it came from / why there is none) for a single-session plan."""
    if len(plan.patients) != 1:
        return None, "clinician summaries exist per single session only"
    p = plan.patients[0]
    with_pdq = "pdq8" in plan.instruments
    inst = "pdq8" if with_pdq else "updrs"
    dates = sorted({f.date for f in facts if f.patient == p and f.instrument == inst})
    if len(dates) != 1:
        return None, f"expected one selected {inst} session for patient {p}, found {len(dates)}"
    fname = PDQ_FILE if with_pdq else UPDRS_FILE
    date_col = "PDQ_SESSION_DATE" if with_pdq else "SESSION_DATE"
    for i, row in enumerate(_rows(str(marag_dir / fname)), start=2):
        try:
            if int(row["PROJ_ID"]) == p and _iso(row[date_col]) == dates[0]:
                text = (row.get("clinician_summary") or "").strip()
                if text:
                    return text, f"{fname}:{i} clinician_summary"
        except (ValueError, KeyError):
            continue
    return None, f"no {fname} row for patient {p} on {dates[0]}"
