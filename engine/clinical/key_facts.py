"""Key facts: what a text must state, the one definition (docs/engine.md, "Key facts").

- a domain agent's text (motor, adl, nonmotor, qol): for each patient with a score in its domain,
  the first selected score ("baseline"), the latest score and, with two or more visits, the
  change from the first to the latest with its MCID label;
- the final text: for each patient and part, the change from the first to the latest selected
  assessment with its label (with one selected assessment, or in a single-session analysis, the
  score of each session), every red flag current at the latest assessment, and every incongruence
  at the patient's latest visit; in cohort mode, the finding (the rank-1 patient, or the value).

Clinical reason: a summary that leaves out how each part moved against its MCID, or a current red
flag, misleads by omission even when every number in it is right; older flags, trends and item
history are details. The engine marks these statements `key` (engine.clinical.statement_build)
and the checker's coverage (engine.grounding.coverage) asks for the same specs, from this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DOMAIN_AGENTS = ("motor", "adl", "nonmotor", "qol")

#: a patient-part series: (patient, domain) -> {visit: score}
Scores = Mapping[tuple[int, str], Mapping[int, float]]
Label = Callable[[str, float], str]


#: key facts the digest leaves to the details: an incongruence is a note on the data's quality
#: (a part at 0 beside another at or above its cut-off), read in the details' flags, while the
#: digest carries the course and what matters now (reference/clinical-summary-style.md)
DETAILS_ONLY = frozenset({"incongruence"})


def in_digest(kind: str) -> bool:
    """Whether a key fact of this kind is the digest's to state (else the details state it)."""
    return kind not in DETAILS_ONLY


@dataclass(frozen=True)
class KeySpec:
    kind: str  # baseline | latest | label | score | red_flag | incongruence | cohort
    patient: int
    domain: str | None
    visit: int | None = None
    value: float | None = None
    item: str | None = None
    ref_visit: int | None = None
    label: str = ""


def key_specs(
    agent: str,
    scores: Scores,
    label: Label,
    flags: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    cohort: Mapping[str, Any] | None = None,
    analysis: str | None = None,
) -> list[KeySpec]:
    """The key facts of one agent's text (see the module docstring)."""
    if agent in DOMAIN_AGENTS:
        return _domain_specs(scores, label, agent)
    if agent == "final" and cohort:
        return _cohort_specs(cohort)
    if agent == "final":
        return _final_specs(scores, label, analysis) + flag_specs(scores, flags or {})
    return []


def _domain_specs(scores: Scores, label: Label, agent: str) -> list[KeySpec]:
    out: list[KeySpec] = []
    for (p, d), series in sorted(scores.items()):
        if d != agent or not series:
            continue
        vs = sorted(series)
        out.append(KeySpec("baseline", p, d, vs[0], float(series[vs[0]])))
        if len(vs) > 1:
            out.append(KeySpec("latest", p, d, vs[-1], float(series[vs[-1]])))
            ch = float(series[vs[-1]]) - float(series[vs[0]])
            out.append(KeySpec("label", p, d, vs[-1], ch, ref_visit=vs[0], label=label(d, ch)))
    return out


def _cohort_specs(cohort: Mapping[str, Any]) -> list[KeySpec]:
    if cohort.get("patient") is not None:
        return [KeySpec("cohort", int(cohort["patient"]), cohort.get("domain"))]
    if cohort.get("value") is not None:
        return [KeySpec("cohort", -1, cohort.get("domain"), value=float(cohort["value"]))]
    return []


def _final_specs(scores: Scores, label: Label, analysis: str | None) -> list[KeySpec]:
    out: list[KeySpec] = []
    for (p, d), series in sorted(scores.items()):
        if d not in DOMAIN_AGENTS or not series:
            continue
        vs = sorted(series)
        if len(vs) == 1 or analysis == "single_session":
            out += [KeySpec("score", p, d, v, float(series[v])) for v in vs]
        else:
            ch = float(series[vs[-1]]) - float(series[vs[0]])
            out.append(KeySpec("label", p, d, vs[-1], ch, ref_visit=vs[0], label=label(d, ch)))
    return out


def flag_specs(scores: Scores, flags: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[KeySpec]:
    """The current red flags and the incongruences of each patient's latest visit."""
    out: list[KeySpec] = []
    latest: dict[int, int] = {}
    for (p, _d), ser in scores.items():
        if ser:
            latest[p] = max(latest.get(p, 0), max(ser))
    for r in flags.get("red_flags", []):
        # the engine marks current flags (each instrument's latest assessment); rows without
        # the mark (older results): the patient's latest visit
        if not r.get("current", r["visit"] == latest.get(r["patient"])):
            continue
        out.append(
            KeySpec(
                "red_flag", r["patient"], r.get("domain"), r["visit"], float(r["value"]), r["item"]
            )
        )
    for r in flags.get("incongruence", []):
        if r["visit"] == latest.get(r["patient"]):
            out.append(KeySpec("incongruence", r["patient"], r["elevated_domain"], r["visit"]))
    return out
