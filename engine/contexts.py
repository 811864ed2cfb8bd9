"""Static domain contexts C_d and the clinical thresholds, loaded from `contexts/` and validated.

Owns the only reading of contexts/: the four domain texts (motor.md, adl.md, nonmotor.md, qol.md)
handed to the agents verbatim, and thresholds.json (severity cut-offs, MCIDs, red-flag rules,
moderate cut-offs for incongruence), each value with its source. Code applies these numbers; it
never hard-codes them. A missing file or field is a `ContextError` naming the file and field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb_store.profiles import DOMAINS

CONTEXT_FILES = {d: f"{d}.md" for d in DOMAINS}


class ContextError(ValueError):
    """contexts/ is missing a file or a field, or a value has the wrong type."""


@dataclass(frozen=True)
class Band:
    level: str
    min: float
    max: float | None  # None = open-ended


@dataclass(frozen=True)
class Mcid:
    improvement: float  # negative: change at or below this is a clinically meaningful improvement
    worsening: float  # positive: change at or above this is a clinically meaningful worsening
    source: str
    basis: str = "published"  # published | reference (borrowed from another scale)


@dataclass(frozen=True)
class RedFlagRule:
    id: str
    label: str
    min: float
    items: dict[str, tuple[str, ...]]  # profile -> item codes
    why: str
    source: str


@dataclass(frozen=True)
class Contexts:
    texts: dict[str, str]  # domain -> C_d
    severity: dict[str, dict[str, tuple[Band, ...]]]  # profile -> domain -> bands
    severity_source: dict[str, str]
    mcid: dict[str, dict[str, Mcid | None]]  # profile -> domain -> MCID (None = none verified)
    mcid_note: dict[str, str]
    moderate: dict[str, dict[str, float]]  # profile -> domain -> moderate lower bound
    moderate_source: dict[str, str]
    incongruence_rule: str
    red_flags: tuple[RedFlagRule, ...]
    directory: Path = field(default=Path("contexts"))
    #: the validated `course` and `findings` sections (course shape, bands, item findings)
    rules: Mapping[str, Any] = field(default_factory=dict)

    @property
    def combined(self) -> str:
        """C = union of the four C_d, for the comparison, cohort and final agents."""
        return "\n\n".join(self.texts[d] for d in DOMAINS if d in self.texts)

    def mcid_for(self, profile: str, domain: str) -> Mcid | None:
        return self.mcid.get(profile, {}).get(domain)

    def severity_of(self, profile: str, domain: str, score: float | None) -> str | None:
        """Severity level of a domain score, or None when the profile has no cut-offs for it."""
        if score is None:
            return None
        for b in self.severity.get(profile, {}).get(domain, ()):
            if score >= b.min and (b.max is None or score <= b.max):
                return b.level
        # between integer bands (a partial score like 10.5): the band whose min is below it
        bands = [b for b in self.severity.get(profile, {}).get(domain, ()) if score >= b.min]
        return bands[-1].level if bands else None

    def moderate_cutoff(self, profile: str, domain: str) -> float | None:
        return self.moderate.get(profile, {}).get(domain)


def _need(d: dict, key: str, where: str, typ: type | tuple[type, ...] = object) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise ContextError(f"{where}: missing field {key!r}")
    v = d[key]
    if typ is not object and not isinstance(v, typ):
        raise ContextError(f"{where}: field {key!r} must be {typ}, got {type(v).__name__}")
    return v


def _num(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ContextError(f"{where}: expected a number, got {v!r}")
    return float(v)


def _read_texts(directory: Path) -> dict[str, str]:
    texts: dict[str, str] = {}
    for dom, name in CONTEXT_FILES.items():
        p = directory / name
        if not p.exists():
            raise ContextError(f"{p}: missing context file for domain {dom}")
        t = p.read_text(encoding="utf-8").strip()
        if not t:
            raise ContextError(f"{p}: context file is empty")
        texts[dom] = t
    return texts


def _read_thresholds(tp: Path) -> dict[str, Any]:
    if not tp.exists():
        raise ContextError(f"{tp}: missing thresholds file")
    try:
        return json.loads(tp.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ContextError(f"{tp}: invalid JSON ({e})") from e


def _band(b: dict, bw: str) -> Band:
    mx = _need(b, "max", bw)
    return Band(
        _need(b, "level", bw, str),
        _num(_need(b, "min", bw), bw),
        None if mx is None else _num(mx, bw),
    )


def _severity(raw: dict, w: str) -> tuple[dict[str, dict[str, tuple[Band, ...]]], dict[str, str]]:
    severity: dict[str, dict[str, tuple[Band, ...]]] = {}
    severity_source: dict[str, str] = {}
    for prof, spec in _need(raw, "severity", w, dict).items():
        where = f"{w}: severity.{prof}"
        severity_source[prof] = _need(spec, "source", where, str)
        severity[prof] = {
            dom: tuple(_band(b, f"{where}.domains.{dom}[{i}]") for i, b in enumerate(bands))
            for dom, bands in _need(spec, "domains", where, dict).items()
        }
    return severity, severity_source


def _mcid(m: dict, dw: str, basis: str) -> Mcid:
    imp = _num(_need(m, "improvement", dw), dw)
    wor = _num(_need(m, "worsening", dw), dw)
    if imp >= 0 or wor <= 0:
        raise ContextError(f"{dw}: improvement must be < 0 and worsening > 0")
    return Mcid(imp, wor, _need(m, "source", dw, str), basis)


def _mcids(raw: dict, w: str) -> tuple[dict[str, dict[str, Mcid | None]], dict[str, str]]:
    mcid: dict[str, dict[str, Mcid | None]] = {}
    mcid_note: dict[str, str] = {}
    for prof, spec in _need(raw, "mcid", w, dict).items():
        where = f"{w}: mcid.{prof}"
        basis = _need(spec, "basis", where, str)
        mcid_note[prof] = spec.get("note", "")
        mcid[prof] = {}
        for dom, m in _need(spec, "domains", where, dict).items():
            if m is None and not mcid_note[prof]:
                raise ContextError(f"{where}: a null MCID needs a 'note' saying why")
            mcid[prof][dom] = None if m is None else _mcid(m, f"{where}.domains.{dom}", basis)
    return mcid, mcid_note


def _moderate(inc: dict, w: str) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    moderate: dict[str, dict[str, float]] = {}
    moderate_source: dict[str, str] = {}
    for prof, spec in _need(inc, "moderate_cutoff", f"{w}: incongruence", dict).items():
        where = f"{w}: incongruence.moderate_cutoff.{prof}"
        moderate_source[prof] = _need(spec, "source", where, str)
        moderate[prof] = {k: _num(v, f"{where}.{k}") for k, v in spec.items() if k != "source"}
    return moderate, moderate_source


def _red_flags(raw: dict, w: str) -> tuple[RedFlagRule, ...]:
    flags = []
    for i, r in enumerate(_need(raw, "red_flags", w, list)):
        rw = f"{w}: red_flags[{i}]"
        items = {k: tuple(v) for k, v in _need(r, "items", rw, dict).items()}
        flags.append(
            RedFlagRule(
                _need(r, "id", rw, str),
                _need(r, "label", rw, str),
                _num(_need(r, "min", rw), rw),
                items,
                _need(r, "why", rw, str),
                _need(r, "source", rw, str),
            )
        )
    return tuple(flags)


def _rules(raw: dict, w: str) -> dict[str, Any]:
    """The `course` and `findings` sections, with the fields the clinical core reads checked."""
    course = _need(raw, "course", w, dict)
    fw, cw = f"{w}: findings", f"{w}: course"
    _num(_need(course, "swing_min_points", cw), f"{cw}.swing_min_points")
    for key in ("partial_blank_share", "zero_after_points"):
        # engine.clinical.caveats: partial parts and implausible zeros
        _num(_need(course, key, cw), f"{cw}.{key}")
    _need(_need(course, "zero_level", cw, dict), "level", f"{cw}.zero_level", str)
    _need(course, "reference_bands", cw, dict)
    findings = _need(raw, "findings", w, dict)
    for key in ("high_item_min", "item_rise_min"):
        _num(_need(findings, key, fw), f"{fw}.{key}")
    anchors = _need(findings, "item_anchors", fw, dict)
    for inst in ("updrs", "pdq8"):
        _need(
            _need(anchors, inst, f"{fw}.item_anchors", dict),
            "words",
            f"{fw}.item_anchors.{inst}",
            list,
        )
    _need(findings, "new_onset", fw, list)
    _need(
        _need(findings, "pertinent_negatives", fw, dict), "items", f"{fw}.pertinent_negatives", dict
    )
    return {"course": course, "findings": findings}


def load_contexts(directory: str | Path) -> Contexts:
    """Read and validate contexts/ (texts + thresholds.json)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ContextError(f"contexts directory {directory} does not exist")
    texts = _read_texts(directory)
    tp = directory / "thresholds.json"
    raw = _read_thresholds(tp)
    w = str(tp)
    severity, severity_source = _severity(raw, w)
    mcid, mcid_note = _mcids(raw, w)
    inc = _need(raw, "incongruence", w, dict)
    moderate, moderate_source = _moderate(inc, w)
    flags = _red_flags(raw, w)
    return Contexts(
        texts,
        severity,
        severity_source,
        mcid,
        mcid_note,
        moderate,
        moderate_source,
        _need(inc, "rule", f"{w}: incongruence", str),
        flags,
        directory,
        _rules(raw, w),
    )
