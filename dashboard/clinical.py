"""Clinical reference values the charts draw (severity bands, MCIDs), taken from the engine's contexts.

The dashboard does not own clinical thresholds: `contexts/thresholds.json` does, read by
`engine.contexts.load_contexts`. This module flattens a `Contexts` into what the charts need,
keyed by (profile, domain): severity bands (engine.contexts.Band) and the asymmetric MCID (improvement, worsening), each
with its source. Profiles without published bands or MCIDs simply get none; when the contexts
cannot be loaded at all the charts draw no bands and no markers, and `ClinicalRefs.note` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.contexts import Band, Contexts, load_contexts

#: Colours of severity bands (calm, low-saturation) by band level.
BAND_COLOURS: dict[str, str] = {
    "normal": "rgba(120, 170, 140, 0.10)",
    "mild": "rgba(120, 170, 140, 0.12)",
    "moderate": "rgba(230, 180, 90, 0.14)",
    "severe": "rgba(210, 110, 100, 0.14)",
}

Key = tuple[str, str]  # (profile, domain)


@dataclass(frozen=True)
class ClinicalRefs:
    bands: dict[Key, tuple[Band, ...]] = field(default_factory=dict)
    mcid: dict[Key, tuple[float, float]] = field(default_factory=dict)
    sources: dict[Key, str] = field(default_factory=dict)
    note: str = ""
    #: the band word of a domain score of 0 (contexts course.zero_level: "normal")
    zero_level: str | None = None

    def bands_for(self, profile: str, domain: str) -> tuple[Band, ...]:
        return self.bands.get((profile, domain), ())

    def mcid_for(self, profile: str, domain: str) -> tuple[float | None, float | None]:
        """(improvement threshold < 0, worsening threshold > 0); (None, None) where none verified."""
        return self.mcid.get((profile, domain), (None, None))


def refs_from_contexts(ctx: Contexts) -> ClinicalRefs:
    """Flatten an engine.contexts.Contexts into ClinicalRefs."""
    bands: dict[Key, tuple[Band, ...]] = {}
    mcid: dict[Key, tuple[float, float]] = {}
    sources: dict[Key, str] = {}
    for prof, doms in ctx.severity.items():
        for dom, bs in doms.items():
            if bs:
                bands[(prof, dom)] = tuple(sorted(bs, key=lambda b: b.min))
                sources[(prof, dom)] = ctx.severity_source.get(prof, "")
    for prof, doms in ctx.mcid.items():
        for dom, m in doms.items():
            if m is not None:
                mcid[(prof, dom)] = (m.improvement, m.worsening)
                src = sources.get((prof, dom))
                sources[(prof, dom)] = f"{src}; MCID: {m.source}" if src else f"MCID: {m.source}"
    zero = (ctx.rules.get("course") or {}).get("zero_level") or {}
    return ClinicalRefs(bands, mcid, sources, zero_level=zero.get("level"))


def load_refs(contexts_dir: Path) -> ClinicalRefs:
    """Severity bands and MCIDs from contexts/; empty refs with a note when they cannot be read."""
    try:
        return refs_from_contexts(load_contexts(contexts_dir))
    except Exception as e:  # noqa: BLE001 - shown to the user, never hidden
        return ClinicalRefs(note=f"contexts could not be loaded from {contexts_dir}: {e}")
