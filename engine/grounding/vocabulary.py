"""What the claim reader recognises: domain, visit, patient and kind cues, direction words, and
the item phrases, codes and item counts of every instrument profile (kb_store/profiles).

Data and compiled patterns only; the reading rules are in reader.py, the checking in verdict.py.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from kb_store.profiles import PROFILE_DIR, load_profile

CHANGE_KINDS = ("delta", "cumulative", "change", "pair")
SIGNED_KINDS = CHANGE_KINDS + ("slope", "slope_year")
ROUNDED_KINDS = ("slope", "slope_year", "mean", "pdq8_si", "threshold")

DOMAIN_CUES: tuple[tuple[str, str], ...] = (
    # the PDQ-8's own total (its 0-32 score) before the UPDRS "total" below can take the word
    (r"(?:pdq[- ]?8|pdq8)[- ]+(?:total|sum)(?:[- ]score)?", "qol"),
    # MDS-UPDRS Part I's own name before Part II's ("motor experiences of daily living")
    (r"non[- ]?motor experiences of daily living", "nonmotor"),
    (r"motor experiences of daily living", "adl"),
    (r"activities of daily living|daily living|\badls?\b|part\s+(?:ii|2)\b|updrs[- ]?ii\b", "adl"),
    (r"non[- ]?motor|part\s+(?:i|1)\b|updrs[- ]?i\b", "nonmotor"),
    (r"quality[- ]of[- ]life|\bqol\b|pdq[- ]?8|pdq8", "qol"),
    (r"\bmotor\b|part\s+(?:iii|3)\b|updrs[- ]?iii\b", "motor"),
    (r"total burden|\bupdrs total\b|\btotal score\b|\btotal\b", "total"),
)
DOMAIN_RE = [(re.compile(p, re.I), d) for p, d in DOMAIN_CUES]

#: Symptom words that are not items of any profile in use: a number attached to one is a made-up item.
UNKNOWN_ITEMS = (
    "dyskinesia",
    "dyskinesias",
    "dystonia",
    "akinesia",
    "memory",
    "balance score",
    "orthostatic",
    "weight",
    "mood score",
    "hand tremor",
)


PATIENT_RE = re.compile(
    r"\b(?:patient|participant|subject|proj(?:ect)?[ _-]?id|pt\.?)\s*(?:id\s*)?#?\s*(\d+)(?![\d.]\d)",
    re.I,
)
PATIENTS_RE = re.compile(
    r"\b(?:patients|participants|proj(?:ect)?[ _-]?ids)\s+#?(\d+)((?:\s*(?:,|and|&|vs\.?|versus)\s*#?\d+)+)",
    re.I,
)
VISIT_WORD = r"(?:visit|session|assessment|v)"
#: "visits 1 to 3 and 2 at visit 4": a number followed by its own visit is a value, not a visit
_NOT_VALUE = r"(?!\d|\s+(?:again\s+)?(?:at|on)\s+(?:the\s+)?(?:visit|session|assessment|baseline))"
VISITS_RE = re.compile(
    rf"\b{VISIT_WORD}s\s*#?\s*(\d+)((?:\s*(?:-|to|through|and|,|&)\s*(?:{VISIT_WORD}\s*)?\d+{_NOT_VALUE})*)"
    r"(?![\d.]\d)"
    rf"|\b{VISIT_WORD}\s*#?\s*(\d+)((?:\s*(?:-|through)\s*\d+)?)(?![\d.]\d)",
    re.I,
)
ORD_VISIT_RE = re.compile(
    r"\b(?:(\d+)(?:st|nd|rd|th)|(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth))"
    r"\s+(?:visit|session|assessment)",
    re.I,
)
BASELINE_RE = re.compile(r"\bbaseline\b", re.I)
LATEST_RE = re.compile(
    r"\b(?:latest|last|most recent|final|current)\s+(?:visit|session|assessment)\b", re.I
)
REF_BEFORE_RE = re.compile(
    r"(?:from|since|vs\.?|versus|relative to|compared (?:with|to)|over|than(?: at)?|between)\s+(?:the\s+)?$",
    re.I,
)

KIND_AFTER: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), k)
    for p, k in (
        (r"per\s+year|/\s*y(?:ea)?r\b|a\s+year\b|per\s+annum|annuali[sz]ed|yearly", "slope_year"),
        (r"per\s+visit|/\s*visit|(?:points?|pts)\s+(?:each|a)\s+visit\b|\bslope\b", "slope"),
        (
            r"^\s*(?:(?:MDS-)?UPDRS\s+|PDQ-?8\s+|clinic\s+|study\s+|follow-up\s+)?"
            r"(?:visits|sessions|assessments|questionnaires)\b",
            "count_visits",
        ),
        (r"^\s*(?:patients|participants|subjects)\b", "count_patients"),
        (r"^\s*(?:of\s+\d+\s+)?(?:(?:PDQ-?8|(?:MDS-)?UPDRS)\s+)?items?\b", "count_items"),
        (r"summary index|\bSI\b", "pdq8_si"),
        # "the 2.51-point MCID", "a 3.25 point minimal clinically important difference"
        (
            r"^\s*-?\s*(?:points?\s+|pts?\s+)?(?:(?:improvement|worsening|deterioration)\s+)?"
            r"(?:mcid|minimal clinically important difference)",
            "threshold",
        ),
        # "this 3-point worsening", "a 1-point fall": the size of a change (after the MCIDs)
        (
            r"^\s*-?\s*(?:points?|pts?)\s+(?:rise|fall|drop|increase|decrease|improvement|"
            r"worsening|deterioration|change|reduction|gain|decline|loss)\b",
            "change",
        ),
    )
)
KIND_BEFORE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), k)
    for p, k in (
        (r"\bslope\b[^.;]{0,40}$", "slope"),
        (
            r"\b(?:mcid|minimal clinically important difference|cut-?off|threshold)s?"
            r"(?:\s+for\s+(?:improvement|worsening|deterioration))?\s*(?:of|is|=|:|at)?\s*"
            r"(?:about\s+)?$",
            "threshold",
        ),
        (r"\bat or (?:above|below)\s*$|(?:>=|<=|\u2265|\u2264)\s*$", "threshold"),
        (r"(?:hoehn (?:and|&) yahr|h&y|\bstage)\s*$", "stage"),
        (r"\b(?:average|mean|avg)\b[^.;]{0,45}$", "mean"),
        (r"\b(?:highest|maximum|max|peak|largest|greatest|worst)\b[^.;]{0,45}$", "max"),
        (r"\b(?:lowest|minimum|min|smallest|best)\b[^.;]{0,45}$", "min"),
        (r"\brank(?:ed|s|ing)?\b[^.;]{0,15}$", "rank"),
        (r"summary index[^.;]{0,15}$|\bSI\b[^.;]{0,10}$", "pdq8_si"),
        (
            r"\b(?:increase[sd]?|decrease[sd]?|rose|rise[sn]?|fell|fall(?:s|en)?|drop(?:ped|s)?|"
            r"change[sd]?|improv\w*|worsen\w*|declin\w*|gain(?:ed)?|los[st]|reduc\w*|went (?:up|down))"
            r"\s*(?:(?:only|just)\s+)?(?:of|by)?\s*(?:(?:about|only|just)\s+)?$",
            "change",
        ),
        # "worsened in patient 60: Part I by 7 (6 to 13), Part II by 4 (5 to 9)": a part's change
        (r"\b(?:part\s+(?:iii|ii|i|[1-3])|motor|non-?motor|adl)\s+(?:score\s+)?by\s*$", "change"),
        (
            r"\b(?:a|an)\s+(?:increase|decrease|change|rise|drop|reduction|improvement|worsening)\s+of\s*$",
            "change",
        ),
    )
)
#: "6 PDQ-8 questionnaires", "9 MDS-UPDRS assessments": a count of one instrument's assessments
#: (the ledger's count labelled "<instrument> assessments", engine.clinical.course)
COUNT_INSTRUMENT_RE = re.compile(r"^\s*(?:(pdq)-?8|(?:mds-)?(updrs))\s", re.I)
#: an instrument label right before a count: "UPDRS: 5 assessments", "PDQ-8 - 4 assessments"
COUNT_LABEL_RE = re.compile(r"\b(?:(pdq)-?8|(?:mds-)?(updrs))\s*[:\u2013-]\s*$", re.I)
#: "the 2.51-point MCID for worsening": a direction word naming which threshold, not a change
THRESHOLD_FOR = re.compile(
    r"\b(?:mcid|minimal clinically important difference|threshold|cut-?off)s?\s+(?:for|of)\s+$",
    re.I,
)
DIRECTION_RE = re.compile(
    r"\b(improv\w*|better|decreas\w*|reduc\w*|fell|dropped|lower(?:ed)?|declin\w*|"
    r"worsen\w*|worse|deteriorat\w*|increas\w*|rose|risen|higher|progressed)\b",
    re.I,
)
NEGATIVE_DIR = ("improv", "better", "decreas", "reduc", "fell", "dropped", "lower")
POSITIVE_DIR = ("worsen", "worse", "deteriorat", "increas", "rose", "risen", "higher", "progress")


def _item_phrases(label: str, code: str, aliases: tuple[str, ...] | list[str]) -> list[str]:
    """The phrases that name one item: its label, the label's head (before a comma or a
    parenthesis) and first half of an 'X and Y' head, parenthesised words, its code, its
    aliases, 'tremor' for the tremor items and 'rest tremor' for the resting-tremor ones."""
    head = re.split(r",|\s\(", label)[0]
    out = [label, head]
    for conj in (" and ", " or "):
        if conj in head:
            out.append(head.split(conj)[0])
    out += [
        par
        for par in re.findall(r"\(([^)]+)\)", label)
        if par.lower() not in {"examination", "activities of daily living"}
    ]
    out += [code, *aliases]
    if re.match(r"(\w+) tremor", head.lower()):
        out.append("tremor")
    # "rest tremor" (the MDS-UPDRS name, 3.17-3.18) names the MA-RAG "Resting tremor" item too
    if re.match(r"rest(?:ing)? tremor\b", head.lower()):
        out.append("rest tremor")
    return out


def _plural_nouns(item: Any) -> list[str]:
    """The item's plural noun among its clinical terms when its label is one gerund ("Falling":
    "falls"); the gerund's other forms ("fall", "fell") are verbs as often as nouns."""
    head = item.label.strip().lower()
    if " " in head or not head.endswith("ing"):
        return []
    return [t for t in item.terms if t.lower() == head[:-3] + "s"]


@cache
def _item_phrase_table() -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """(phrase, item codes, their domains) from every instrument profile, longest first."""
    phrases: dict[str, tuple[set[str], set[str]]] = {}
    for path in sorted(PROFILE_DIR.glob("*.json")):
        for it in load_profile(path.stem).items:
            for phrase in [*_item_phrases(it.label, it.code, it.aliases), *_plural_nouns(it)]:
                phrase = phrase.strip().lower()
                if len(phrase) < 4 or phrase in {"tremor score", "part"}:
                    continue
                codes, doms = phrases.setdefault(phrase, (set(), set()))
                codes.add(it.code)
                doms.add(it.domain)
    return tuple(
        (phrase, frozenset(phrases[phrase][0]), frozenset(phrases[phrase][1]))
        for phrase in sorted(phrases, key=len, reverse=True)
    )


@cache
def item_vocabulary() -> tuple[tuple[re.Pattern[str], frozenset[str], frozenset[str]], ...]:
    """(phrase pattern, item codes, their domains) from every instrument profile, longest first;
    then the symptom words that are no item (UNKNOWN_ITEMS), with no codes."""
    out = []
    for phrase, codes, doms in _item_phrase_table():
        pat = re.compile(
            r"(?<![\w-])" + re.escape(phrase).replace(r"\ ", r"[\s-]+") + r"s?(?![\w-])", re.I
        )
        out.append((pat, codes, doms))
    for w in UNKNOWN_ITEMS:
        pat = re.compile(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", re.I)
        out.append((pat, frozenset(), frozenset()))
    return tuple(out)


@cache
def item_literals() -> tuple[tuple[str, ...], ...]:
    """For each entry of item_vocabulary(), in its order: lower-case words that every match of
    its pattern contains verbatim in an ASCII text (the space-separated parts of the phrase; only
    ASCII parts, since case-insensitive matching of other letters is not plain lower-casing). A
    cheap pre-test: a pattern with one of these words missing from the lower-cased ASCII text
    cannot match it."""
    phrases = [p for p, _, _ in _item_phrase_table()] + [w.lower() for w in UNKNOWN_ITEMS]
    return tuple(tuple(w for w in p.split(" ") if w and w.isascii()) for p in phrases)


@cache
def code_domains() -> dict[str, str]:
    """Item code -> its domain, over every profile."""
    return {
        it.code: it.domain
        for path in sorted(PROFILE_DIR.glob("*.json"))
        for it in load_profile(path.stem).items
    }


def codes_in_domain(codes: frozenset[str], domain: str) -> frozenset[str]:
    return frozenset(k for k in codes if code_domains().get(k) == domain) or codes


@cache
def item_counts(domain: str | None) -> tuple[tuple[int, str], ...]:
    """Instrument constants: number of items of each profile (and of each of its domains)."""
    out = []
    for path in sorted(PROFILE_DIR.glob("*.json")):
        prof = load_profile(path.stem)
        if domain is None or domain in prof.domains:
            core = [i for i in prof.items if i.domain in prof.core_domains()]
            out.append((len(core), f"{prof.name}: number of items"))
        for dom in prof.core_domains():
            if domain in (None, dom):
                out.append((len(prof.items_of(dom)), f"{prof.name} {dom}: number of items"))
    return tuple(out)
