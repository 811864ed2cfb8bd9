"""Severity bands of a domain score, in one place (each fact computed once): the published
cut-offs of the contexts, else the profile's reference bands, and the zero level (a score of 0 on
a banded scale is "normal", every item at its normal anchor). The per-visit rows (engine.clinical.series)
and the whole-course summary (engine.clinical.course) both take their band word from here, so the
summary never calls the same score "mild" in one sentence and "normal" in another."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contexts import Contexts


def course_rules(ctx: Contexts) -> Mapping[str, Any]:
    """The `course` and `findings` sections of contexts/thresholds.json, as the validated
    contexts loader read them (engine.contexts.load_contexts)."""
    return ctx.rules


def band_of(
    ctx: Contexts,
    rules: Mapping[str, Any],
    profile: str,
    domain: str,
    score: float,
    *,
    reference: bool = True,
):
    """(band word, basis) from the published cut-offs, else (with `reference`) this profile's
    reference bands. A score of 0 (every item 0, anchor "normal") is `course.zero_level`, never
    the bottom band ("mild"); a 0 that is possibly missing data gets no band at all (see
    _mark_zeros). Per-visit rows use the published cut-offs only (reference=False)."""
    zero = rules["course"].get("zero_level")
    ref = rules["course"].get("reference_bands", {}).get(profile, {}).get(domain)
    if not reference:
        ref = None
    has_bands = bool(ctx.severity.get(profile, {}).get(domain)) or bool(ref)
    if score == 0 and zero and has_bands:  # a domain without bands (PDQ-8) gets no word
        return zero["level"], zero.get("basis", "anchor")
    lvl = ctx.severity_of(profile, domain, score)
    if lvl:
        return lvl, "published"
    if not ref:
        return None, ""
    for b in ref["bands"]:
        if score >= b["min"] and (b["max"] is None or score <= b["max"]):
            return b["level"], ref.get("basis", "reference")
    return None, ""
