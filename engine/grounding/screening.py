"""Output screening before release (the "ethical overseer" of the AMR paper, seed 003), done with
explicit rules instead of a second model so that every finding names the rule and the span.

Owns three checks on the final text and the decision-support note:
- prescriptive treatment advice: starting, stopping, switching or dosing a drug, or surgery /
  device therapy (deep brain stimulation, focused ultrasound, ...);
- diagnoses the assessment scores cannot support (dementia, PD-MCI, MSA, PSP, depression as a
  disorder, orthostatic hypotension, ...), when stated as a diagnosis ("diagnosed with",
  "consistent with", "has ...");
- statements about patients outside the plan (ids not in the plan's patient set, or unknown ids).
Findings are flagged, not silently removed: the result carries them and the UI shows them; the
text keeps a clear note that it is decision support.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from engine.grounding import literal_scan
from engine.types import Plan

DECISION_SUPPORT_NOTE = (
    "Decision support only: this summary restates recorded assessment scores; it is not a diagnosis "
    "or a treatment recommendation, and clinical decisions remain with the treating clinician."
)

DRUGS = (
    r"levodopa|l-?dopa|carbidopa|sinemet|madopar|rytary|duopa|benserazide|dopamine agonists?|"
    r"pramipexole|ropinirole|rotigotine|apomorphine|mao-?b inhibitors?|rasagiline|selegiline|safinamide|"
    r"comt inhibitors?|entacapone|opicapone|tolcapone|amantadine|istradefylline|anticholinergics?|"
    r"trihexyphenidyl|benztropine|clozapine|quetiapine|pimavanserin|rivastigmine|donepezil|"
    r"antidepressants?|ssris?|sertraline|citalopram|midodrine|fludrocortisone|droxidopa|"
    r"medications?|medicines?|drugs?|dose|dosage|dosing|pharmacotherapy|therapy|treatment"
)
ACTIONS = (
    r"start(?:ing|ed)?|initiat(?:e|ing|ion)|begin(?:ning)?|commenc\w*|introduc\w*|add(?:ing)?|"
    r"stop(?:ping)?|discontinu\w*|withdraw\w*|taper\w*|wean\w*|cease|hold|"
    r"increas(?:e|ing)|reduc(?:e|ing)|decreas(?:e|ing)|lower(?:ing)?|rais(?:e|ing)|adjust\w*|"
    r"titrat\w*|switch\w*|chang(?:e|ing)|double|halve|escalat\w*|optimi[sz]\w*|prescrib\w*"
)
SURGERY = (
    r"deep brain stimulation|dbs|surgery|surgical|pallidotomy|thalamotomy|"
    r"focused ultrasound|gamma knife|lesioning|pump implantation|duodopa pump"
)
DIAGNOSES = (
    r"parkinson'?s disease dementia|pdd|dementia|alzheimer'?s(?: disease)?|"
    r"lewy body dementia|dlb|mild cognitive impairment|pd-?mci|major depress\w*(?: disorder)?|"
    r"clinical depression|depressive disorder|psychosis|psychotic disorder|"
    r"orthostatic hypotension|dysphagia|multiple system atrophy|msa|"
    r"progressive supranuclear palsy|psp|corticobasal\w*|atypical parkinsonism|"
    r"impulse control disorder|rem sleep behaviou?r disorder|stroke"
)
RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "prescriptive_treatment",
        "advises starting, stopping or changing a drug or its dose",
        re.compile(rf"\b(?:{ACTIONS})\b(?:\s+\w+){{0,5}}?\s+(?:{DRUGS})\b", re.I),
    ),
    (
        "prescriptive_treatment",
        "advises a treatment change",
        re.compile(
            rf"\b(?:should|must|recommend\w*|advis\w*|consider|need\w*\s+to|suggest\w*)\b"
            rf"(?:\s+\w+){{0,4}}?\s+(?:{ACTIONS})\b(?:\s+\w+){{0,4}}?\s+(?:{DRUGS})",
            re.I,
        ),
    ),
    (
        "prescriptive_treatment",
        "advises starting, stopping or changing a drug or its dose",
        re.compile(
            rf"\b(?:{DRUGS})\b(?:\s+\w+){{0,4}}?\s+(?:should|must|needs?\s+to|ought\s+to|could|may)\s+be\s+"
            r"(?:started|stopped|discontinued|increased|reduced|decreased|adjusted|titrated|switched|"
            r"withdrawn|tapered|added|initiated|changed|doubled|halved|escalated|optimi[sz]ed|"
            r"prescribed|lowered|raised|held)\b",
            re.I,
        ),
    ),
    (
        "prescriptive_treatment",
        "states a drug dose",
        re.compile(r"\b\d+(?:\.\d+)?\s?(?:mg|mcg|µg|ml)\b(?:\s*(?:/|per)\s*(?:day|d))?", re.I),
    ),
    (
        "prescriptive_treatment",
        "advises surgery or device therapy",
        re.compile(rf"\b(?:{SURGERY})\b", re.I),
    ),
    (
        "unsupported_diagnosis",
        "states a diagnosis the assessment scores cannot establish",
        re.compile(
            r"\b(?:diagnos(?:is|ed|e)\s+(?:of|with)?|consistent with|indicative of|indicates|"
            r"meets criteria for|suffers? from|has developed|has|have)\s+(?:an?\s+|early\s+|probable\s+|"
            rf"possible\s+)?(?:{DIAGNOSES})\b",
            re.I,
        ),
    ),
)


def _required_literals(alternation: str) -> tuple[str, ...] | None:
    """For each alternative of `alternation`, the longest run of ASCII literals (lower-cased) that
    every match of it contains (literal_scan.required_literal); None when an alternative has none. A text (ASCII, lower-cased)
    containing none of them cannot match a pattern that requires the alternation."""
    out = []
    for alt in _alternatives(alternation):
        best = literal_scan.required_literal(alt)
        if not best:
            return None
        out.append(best)
    return tuple(out)


def _alternatives(alternation: str) -> list[str]:
    """The top-level alternatives of a pattern (no alternation inside its groups is split)."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(alternation):
        ch = alternation[i]
        if ch == "\\":
            cur.append(alternation[i : i + 2])
            i += 2
            continue
        depth += ch == "("
        depth -= ch == ")"
        if ch == "|" and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


#: per rule, the literals one of which every match contains (None: no pre-test)
_RULE_NEEDS: tuple[tuple[str, ...] | None, ...] = (
    _required_literals(DRUGS),
    _required_literals(DRUGS),
    _required_literals(DRUGS),
    None,
    _required_literals(SURGERY),
    _required_literals(DIAGNOSES),
)

PATIENT_CUE = re.compile(
    r"\b(?:patients|participants|subjects|proj(?:ect)?[ _-]?ids)\s*#?\s*(\d+)((?:\s*(?:,|and|&|or)\s*#?\d+)*)"
    r"|\b(?:patient|participant|subject|proj(?:ect)?[ _-]?id)\s*#?\s*(\d+)(?![\d.]\d)",
    re.I,
)


def screen(
    text: str, plan: Plan | None, known_patients: Sequence[int] = ()
) -> list[dict[str, Any]]:
    """Findings in `text`: each {rule, message, span, text}. Empty when the text is clean.

    Patients: with a plan naming patients, any other id is out of plan; with an empty plan (every
    patient), an id not in `known_patients` is flagged as unknown."""
    findings: list[dict[str, Any]] = []
    # an ASCII text lacking every literal a rule needs cannot match it: its scan is skipped
    low = text.lower() if text.isascii() else None
    present: dict[tuple[str, ...], bool] = {}  # three rules need the same drug words
    for (rule, message, pat), needs in zip(RULES, _RULE_NEEDS, strict=True):
        if low is not None and needs is not None:
            if needs not in present:
                present[needs] = any(w in low for w in needs)
            if not present[needs]:
                continue
        for m in literal_scan.finditer(pat, text, low):
            if rule == "prescriptive_treatment" and _is_score_statement(m):
                continue
            findings.append(
                {"rule": rule, "message": message, "span": [m.start(), m.end()], "text": m.group()}
            )
    in_plan = set(plan.patients) if plan is not None else set()
    # the known ids matter only for a plan naming no patient (a set of 10,000 costs a millisecond)
    known = set() if in_plan else set(int(p) for p in known_patients)
    for m in literal_scan.finditer(PATIENT_CUE, text, low):
        ids = [int(x) for x in re.findall(r"\d+", m.group())]
        for pid in ids:
            if in_plan and pid not in in_plan:
                findings.append(
                    {
                        "rule": "out_of_plan_patient",
                        "message": f"mentions patient {pid}, who is outside the plan "
                        f"(patients {sorted(in_plan)})",
                        "span": [m.start(), m.end()],
                        "text": m.group(),
                    }
                )
            elif not in_plan and known and pid not in known:
                findings.append(
                    {
                        "rule": "out_of_plan_patient",
                        "message": f"mentions patient {pid}, who is not in the knowledge base",
                        "span": [m.start(), m.end()],
                        "text": m.group(),
                    }
                )
    return _dedupe(findings)


def _is_score_statement(m: re.Match[str]) -> bool:
    """'increase in the motor score', 'treatment' as part of 'treatment context' are not advice."""
    s = m.group().lower()
    return bool(re.search(r"\b(?:score|scores|points?|items?)\b", s)) and not re.search(
        r"\b(?:mg|dose|levodopa|medication|drug)\b", s
    )


def _dedupe(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One finding per rule and overlapping stretch of text (the longest is kept)."""
    out: list[dict[str, Any]] = []
    for f in sorted(findings, key=lambda f: (f["span"][0], -f["span"][1])):
        if out and any(o["rule"] == f["rule"] and f["span"][0] < o["span"][1] for o in out):
            continue
        out.append(f)
    return out


def with_note(text: str) -> str:
    """The text with the decision-support note, added once."""
    if DECISION_SUPPORT_NOTE in text:
        return text
    return text.rstrip() + "\n\n" + DECISION_SUPPORT_NOTE


def screen_and_annotate(
    text: str, plan: Plan | None, known_patients: Sequence[int] = ()
) -> tuple[str, list[dict[str, Any]]]:
    """(text with the decision-support note and, when findings exist, a visible flag line; findings)."""
    findings = screen(text, plan, known_patients)
    out = with_note(text)
    if findings:
        rules = sorted({f["rule"].replace("_", " ") for f in findings})
        out += (
            "\n\nScreening flags (review before use): " + "; ".join(rules) + ". "
            "Flagged statements are highlighted; they go beyond what the assessment data support."
        )
    return out, findings
