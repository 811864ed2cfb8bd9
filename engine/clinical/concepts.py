"""Clinical concepts -> instrument items, from the profiles' item labels and `terms`.

A query word sequence matches an item when the stemmed tokens of the item's label or of one of
its terms (kb_store/profiles/*.json, sources in each profile's `terms_source`) occur contiguously
in the query's stemmed tokens. "falls" -> Falling (FALL_PROB), "orthostatic" -> Light-headedness
on standing (LIGHT_HEADED). Matching is per profile, so one phrase can name items of the MA-RAG
UPDRS, the MDS-UPDRS and the PDQ-8 at once. Here in the clinical core (below the planner) because
both the search (engine.search) and the rules planner's item questions (engine.clinical.item_cohort)
read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from engine.clinical.text import tokens, words
from kb_store.profiles import load_profile, profile_names

#: MDS-UPDRS item anchors (Goetz et al. 2008): 0 normal, 1 slight, 2 mild, 3 moderate, 4 severe.
#: The MA-RAG study's UPDRS-only clinician notes use the same words. PDQ-8 answers use other words
#: (never .. always), so the anchors apply to the UPDRS profiles only.
SEVERITY_ANCHORS: dict[str, int] = {"slight": 1, "mild": 2, "moderate": 3, "severe": 4}
ANCHOR_PROFILES: frozenset[str] = frozenset({"mds-updrs", "marag-updrs44"})


def severity_anchor(query: str) -> int | None:
    """The anchor value a query names ("moderate tremor" -> 3); None when none or several."""
    found = {SEVERITY_ANCHORS[w] for w in words(query) if w in SEVERITY_ANCHORS}
    return found.pop() if len(found) == 1 else None


@dataclass(frozen=True)
class ConceptMatch:
    profile: str
    code: str
    label: str
    phrase: str  # the label or term that matched, as written in the profile
    max: float


@cache
def _phrases(profile: str) -> tuple[tuple[tuple[str, ...], str, str, str, float], ...]:
    prof = load_profile(profile)
    out = []
    for item in prof.items:
        for phrase in (item.label, *item.terms):
            toks = tuple(tokens(phrase))
            if toks:
                out.append((toks, item.code, item.label, phrase, item.max))
    return tuple(out)


def _spans(seq: list[str], sub: tuple[str, ...]) -> list[tuple[int, int]]:
    n = len(sub)
    return [(i, i + n) for i in range(len(seq) - n + 1) if tuple(seq[i : i + n]) == sub]


def match_concepts(query: str, profiles: tuple[str, ...] | None = None) -> list[ConceptMatch]:
    """Items the query names, per profile, in profile then item order; one match per item (the
    longest phrase that matched). Longest match wins: a phrase inside a longer matched phrase
    does not count on its own ("freezing of gait" names Freezing of gait, not also Gait)."""
    q = tokens(query)
    out: list[ConceptMatch] = []
    for name in profiles or tuple(profile_names()):
        found: list[tuple[tuple[int, int], ConceptMatch]] = []
        for toks, code, label, phrase, mx in _phrases(name):
            for span in _spans(q, toks):
                found.append((span, ConceptMatch(name, code, label, phrase, mx)))
        spans = {sp for sp, _ in found}
        kept = [
            (sp, m)
            for sp, m in found
            if not any(o != sp and o[0] <= sp[0] and sp[1] <= o[1] for o in spans)
        ]
        best: dict[str, tuple[tuple[int, int], ConceptMatch]] = {}
        for sp, m in kept:
            prev = best.get(m.code)
            if prev is None or (sp[1] - sp[0]) > (prev[0][1] - prev[0][0]):
                best[m.code] = (sp, m)
        order = [i.code for i in load_profile(name).items]
        out += [best[c][1] for c in order if c in best]
    return out


@cache
def same_concept(phrase: str) -> frozenset[str]:
    """The item codes, over every profile, whose label or terms match `phrase`: the MDS-UPDRS
    name "cognitive impairment" also names the MA-RAG UPDRS item Cognition (COGNITION)."""
    return frozenset(m.code for m in match_concepts(phrase))


def resolve_item(name: str) -> list[tuple[str, str]]:
    """(profile, code) pairs for an item given by code or label (case-insensitive), for filters."""
    key = name.strip().lower()
    hits = []
    for prof_name in profile_names():
        for item in load_profile(prof_name).items:
            if key in (item.code.lower(), item.label.lower()):
                hits.append((prof_name, item.code))
    if not hits:
        raise ValueError(
            f"unknown item {name!r}: give an item code or label of a profile "
            f"(e.g. FALL_PROB, NP1HALL, 'Falling')"
        )
    return hits
