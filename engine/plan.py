"""The Orchestrator (plan_node): query -> Plan(P, a, M, phi).

Rules first (deterministic, no LLM call): patient ids, analysis type, instruments and visit filter
are read from keywords, covering the paper's examples and their common variants. An optional LLM
planner (cfg.planner == "llm") asks for JSON of the four fields; its output is validated and any
unparseable answer gives the paper's safe default (trajectory, both instruments, none). The patient
set always comes from the ids literally present in the query (rules), so a model can never widen
the patient scope. Unknown ids raise `UnknownPatientError` naming the valid ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache

from engine.clinical.item_cohort import PREFIX as ITEM_PREFIX
from engine.clinical.item_cohort import detect_concept
from engine.config import Config
from engine.contexts import RedFlagRule, load_contexts
from engine.llm.base import LLM, LLMRequest
from engine.prompts import load_prompt
from engine.query_input import MAX_ID_DIGITS, QueryInputError
from engine.state import NodeContext
from engine.types import ANALYSES, INSTRUMENTS, VISIT_FILTER_RE, Plan
from engine.vocabulary import WORD_NUMBERS


class UnknownPatientError(ValueError):
    """A plan names patient ids the KB does not hold."""


_NUM = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
# Possessive quantifiers (`*+`, `++`; Python 3.11) never give back what they matched, so a long run
# of spaces or separators is scanned once: linear time (the backtracking `\s*...\s*` made a 64 KB
# query take 44.5 s). Nothing after them can start with what they consumed, so they accept the
# same texts as the backtracking forms. Ids are ASCII digits only.
_SEP = (
    r"\s*+(?:,|and|&|or|vs\.?|versus|/)\s*+(?:(?:proj(?:ect)?[\s_-]*+ids?|patients?|pts?|ids?)"
    r"\s*+)?#?\s*+"
)
PATIENT_RE = re.compile(
    r"\b(?:proj(?:ect)?[\s_-]*+ids?|patients?|participants?|subjects?|pts?|ids?)\s*+"
    r"(?:no\.?\s*+)?#?\s*+([0-9]++(?:" + _SEP + r"[0-9]++)*+)\b",
    re.I,
)
ALL_PATIENTS_RE = re.compile(
    r"\b(all|every|each)\s+(patients?|participants?|subjects?)\b|\bcohort\b", re.I
)
WHICH_PATIENT_RE = re.compile(
    r"\b(which|what|who)\s+(patients?|participants?|subjects?|one)\b|\bwho\b", re.I
)
COHORT_WORDS_RE = re.compile(
    r"\b(highest|worst|lowest|best|fastest|slowest|most\s+stable|least\s+stable|stablest|average|"
    r"mean|rank|ranking|top|most\s+improved|greatest|largest|smallest|steepest)\b",
    re.I,
)
COMPARE_RE = re.compile(
    r"\b(compare|comparison|comparing|versus|vs\.?|between|contrast|differ\w*)\b", re.I
)
UPDRS_RE = re.compile(
    r"\b(updrs|mds-updrs|motor|adl|activities of daily living|daily living|"
    r"non-?\s?motor|part\s+(i{1,3}|[123]))\b",
    re.I,
)
PDQ_RE = re.compile(r"\b(pdq-?\s?8?|quality\s+of\s+life|qol)\b", re.I)

#: The paper's safe default when the planner output cannot be parsed.
SAFE_DEFAULT = {"analysis": "trajectory", "instruments": ("updrs", "pdq8"), "visit_filter": "none"}


def _n(tok: str) -> int:
    return int(tok) if tok.isdigit() else WORD_NUMBERS[tok.lower()]


def parse_patients(query: str) -> tuple[int, ...]:
    """Patient ids written in the query, in first-mention order, without duplicates."""
    out: list[int] = []
    for m in PATIENT_RE.finditer(query):
        for tok in re.findall(r"[0-9]+", m.group(1)):
            if len(tok.lstrip("0")) > MAX_ID_DIGITS:
                raise QueryInputError(
                    f"the query names a {len(tok)}-digit patient id; it cannot be a patient id"
                )
            if int(tok) not in out:
                out.append(int(tok))
    return tuple(out)


#: "between the first and last visit", "from the first to the latest assessment", "first vs last
#: visit": the first and the latest assessment of each instrument (baseline_vs_latest, which counts
#: each instrument's own assessments). "first" is bare here (the noun comes after the second word),
#: so "first 2 visits and the last visit" is not read as this (a count follows "first").
FIRST_AND_LAST_RE = re.compile(
    r"\b(?:first|initial|earliest)\s+(?:and|to|vs\.?|versus|against|compared\s+(?:with|to))\s+"
    r"(?:the\s+)?(?:latest|last|most\s+recent|final|current)\s+"
    r"(?:visits?|sessions?|assessments?|exams?|examinations?)\b",
    re.I,
)


def parse_visit_filter(query: str) -> str:
    q = query.lower()
    if re.search(
        r"\b(baseline|first\s+visit)\b.{0,20}\b(vs\.?|versus|and|to|against|compared\s+(with|to))\b"
        r".{0,20}\b(latest|last|most\s+recent|current|final)\b",
        q,
    ):
        return "baseline_vs_latest"
    if FIRST_AND_LAST_RE.search(q):
        return "baseline_vs_latest"
    m = re.search(
        r"\b(first|last|latest|most\s+recent|final)\s+"
        + _NUM
        + r"\s+(visits|sessions|assessments)\b",
        q,
    )
    if m:
        n = _n(m.group(2))
        kind = "first" if m.group(1) == "first" else "last"
        return f"{kind}_{n}_visits"
    m = re.search(
        r"\b(visit|session|assessment)\s*+(?:number\s*+|no\.?\s*+|#\s*+)?([0-9]{1,6})\b", q
    )
    if m:
        return f"visit_{int(m.group(2))}"
    m = re.search(
        r"\b(second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))\s+"
        r"(visit|session|assessment)\b",
        q,
    )
    if m:
        tok = m.group(1)
        n = int(re.sub(r"\D", "", tok)) if tok[0].isdigit() else WORD_NUMBERS[tok]
        return f"visit_{n}"
    if re.search(
        r"\b(baseline|first\s+(visit|session|assessment)|initial\s+(visit|assessment))\b", q
    ):
        return "baseline"
    if re.search(
        r"\b(latest|last|most\s+recent|current|final)\s*(visit|session|assessment|status|score)?\b",
        q,
    ) and not re.search(r"\blast\s+(month|year|week)", q):
        return "latest_visit"
    return "none"


def parse_instruments(query: str) -> tuple[str, ...]:
    u = bool(UPDRS_RE.search(query))
    p = bool(PDQ_RE.search(query))
    if u and not p:
        return ("updrs",)
    if p and not u:
        return ("pdq8",)
    return ("updrs", "pdq8")


def parse_analysis(query: str, patients: Sequence[int], visit_filter: str) -> str:
    """compare/versus between patients -> comparison; cohort words, 'which patient' or 'all
    patients' -> cohort; one patient at one visit -> single_session; otherwise trajectory."""
    compare = bool(COMPARE_RE.search(query))
    which = bool(WHICH_PATIENT_RE.search(query))
    every = bool(ALL_PATIENTS_RE.search(query))
    cohortish = which or bool(COHORT_WORDS_RE.search(query))
    if compare and len(patients) >= 2 and not which:
        return "comparison"
    if cohortish or (every and not compare):
        return "cohort"
    if compare and (len(patients) != 1 or every):
        return "comparison"
    if len(patients) >= 2:
        return "comparison"
    if visit_filter in ("baseline", "latest_visit") or visit_filter.startswith("visit_"):
        return "single_session"
    return "trajectory"


#: progression wordings rank by slope (per year when the query says so), not by level
SLOPE_RE = re.compile(
    r"\b(steepest|fastest|quickest|most\s+rapid\w*|slope|progress\w*|"
    r"(?:largest|greatest|biggest|fastest)\s+(?:increase|rise|worsening|decline)\s+"
    # "in <up to 6 words>": bounded, so each attempt is O(1) (an unbounded lazy run made
    # "largest increase in " repeated quadratic)
    r"(?:in\s++(?:[\w-]++\s++){1,6}?)?per\s+(?:visit|year))\b",
    re.I,
)
PER_YEAR_RE = re.compile(r"\bper\s+year\b|\bper\s+annum\b|\byearly\b|\bannual\w*\b", re.I)
CHANGE_RE = re.compile(
    # "per" within the next 120 characters of the sentence (bounded: linear time)
    r"\b(largest|greatest|biggest)\s+(increase|rise|change|worsening)\b(?![^.?]{0,120}\bper\b)",
    re.I,
)


def parse_statistic(query: str) -> str:
    """Cohort statistic named by the query's words ("" = the cohort agent's keyword rules)."""
    if SLOPE_RE.search(query):
        return "slope_year" if PER_YEAR_RE.search(query) else "slope_visit"
    if CHANGE_RE.search(query):
        return "change"
    return ""


@cache
def _default_red_flags() -> tuple[RedFlagRule, ...]:
    return load_contexts(Config().contexts_dir).red_flags


def parse_query(query: str, red_flags: Sequence[RedFlagRule] | None = None) -> Plan:
    """Rule-based plan. Patients empty = every patient in the KB (also for 'all patients').

    A cohort question that names an item concept and no ranking statistic ("Which patients have
    falls?", "Who has hallucinations now?", "Which patients have any item at 4?") is answered by
    the item: statistic "item:<red-flag rule id>" (engine.clinical.item_cohort, with `red_flags`,
    default the shipped contexts'); "now" / "latest" there mean the current rating, which the
    answer reads over every assessment, so the latest-visit filter is dropped.

    Linear in the query's length (every pattern is; whitespace runs are collapsed first), so a
    long or adversarial text costs one pass per pattern; the CLI and the dashboard also refuse
    queries over engine.query_input.MAX_QUERY_CHARS before they get here."""
    text = " ".join(query.split())
    patients = parse_patients(text)
    vf = parse_visit_filter(text)
    analysis = parse_analysis(text, patients, vf)
    stat = parse_statistic(text) if analysis == "cohort" else ""
    if analysis == "cohort" and not stat:
        rules = _default_red_flags() if red_flags is None else red_flags
        concept = detect_concept(text, rules)
        if concept is not None:
            stat = ITEM_PREFIX + concept
            vf = "none" if vf == "latest_visit" else vf
    return Plan(patients, analysis, parse_instruments(text), vf, query, stat)


def check_patients(plan: Plan, known: Sequence[int]) -> Plan:
    """Raise UnknownPatientError when the plan names ids absent from the KB."""
    if not plan.patients:
        return plan  # every patient: nothing to look up
    missing = set(plan.patients).difference(known)  # one pass in C (KBReader ids are ints)
    bad = [p for p in plan.patients if p in missing]
    if bad:
        valid = format_ids(sorted(set(map(int, known))))
        raise UnknownPatientError(
            f"unknown patient id(s) {', '.join(map(str, bad))}; valid ids: {valid}"
        )
    return plan


def format_ids(ids: Sequence[int]) -> str:
    """Compact id list: 1-44 or 1-3, 7, 9-10."""
    if not ids:
        return "(none: the knowledge base is empty)"
    parts, start, prev = [], ids[0], ids[0]
    for i in list(ids[1:]) + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts)


# ---- optional LLM planner ------------------------------------------------------------------

_ANALYSIS_ALIASES = {
    "single-session": "single_session",
    "single session": "single_session",
    "singlesession": "single_session",
    "session": "single_session",
    "longitudinal": "trajectory",
}


def parse_planner_output(text: str) -> dict | None:
    """The four fields from the model's JSON answer, normalised; None when anything is off."""
    m = re.search(r"\{.*\}", text, re.S)
    if not m:
        return None
    try:
        raw = json.loads(m.group())
    except json.JSONDecodeError:
        return None
    if not isinstance(raw, dict) or not {
        "patients",
        "analysis",
        "instruments",
        "visit_filter",
    } <= set(raw):
        return None
    analysis = str(raw["analysis"]).strip().lower()
    analysis = _ANALYSIS_ALIASES.get(analysis, analysis.replace("-", "_"))
    inst = raw["instruments"]
    if isinstance(inst, str):
        inst = [inst]
    if not isinstance(inst, list):
        return None
    inst = [str(i).lower().replace("-", "").replace("_", "") for i in inst]
    vf = str(raw["visit_filter"]).strip().lower().replace("-", "_").replace(" ", "_")
    pats = raw["patients"]
    if pats in ("all", None):
        pats = []
    if not isinstance(pats, list) or not all(
        isinstance(p, int | str) and str(p).isdigit() for p in pats
    ):
        return None
    if analysis not in ANALYSES or not inst or any(i not in INSTRUMENTS for i in inst):
        return None
    if not VISIT_FILTER_RE.match(vf):
        return None
    return {
        "patients": [int(p) for p in pats],
        "analysis": analysis,
        "instruments": tuple(inst),
        "visit_filter": vf,
    }


def plan_with_llm(query: str, llm: LLM) -> tuple[Plan, str, bool]:
    """One planner LLM call. Returns (plan, raw output, used_default). Patients always come from
    the rules (ids written in the query); the model chooses analysis, instruments and filter."""
    prompt = load_prompt("planner")
    req = LLMRequest(
        system=prompt["system"],
        user=prompt["user"].format(query=query),
        agent="planner",
        allowed_numbers=None,
        max_new_tokens=200,
    )
    raw = llm.generate([req])[0]
    rule_patients = parse_patients(query)
    parsed = parse_planner_output(raw)
    if parsed is None:
        return Plan(rule_patients, query=query, **SAFE_DEFAULT), raw, True
    return (
        Plan(
            rule_patients, parsed["analysis"], parsed["instruments"], parsed["visit_filter"], query
        ),
        raw,
        False,
    )


def plan_node(query: str, ctx: NodeContext) -> tuple[Plan, int, str]:
    """plan_node: (plan with checked patients, planner LLM calls, note for the trace). It runs
    before the State exists (the state is built around the plan)."""
    if ctx.cfg.planner == "llm" and ctx.llm is not None:
        plan, _raw, default = plan_with_llm(query, ctx.llm)
        note = "LLM planner" + (": output unparseable, safe default used" if default else "")
        calls = 1
    else:
        plan, calls = parse_query(query, ctx.contexts.red_flags), 0
        note = "rules planner: no LLM call" + (
            " (planner=llm needs an LLM backend)" if ctx.cfg.planner == "llm" else ""
        )
    return check_patients(plan, ctx.kb.patient_ids()), calls, note
