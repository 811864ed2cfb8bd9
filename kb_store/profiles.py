"""Instrument profiles, loaded from the JSON files beside this module.

A profile is data, not code: its items (code, number, label, domain, range, aliases) and its domains
(label, maximum). Ingest, documents, the engine and the dashboard all read item metadata from here so
that a new instrument is a new JSON file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path

PROFILE_DIR = Path(__file__).with_name("profiles")

#: The four clinical domains of the MA-RAG paper, in display order.
DOMAINS: tuple[str, ...] = ("motor", "adl", "nonmotor", "qol")
DOMAIN_LABELS: dict[str, str] = {
    "motor": "Motor",
    "adl": "ADL",
    "nonmotor": "Non-motor",
    "qol": "QoL (PDQ-8)",
}
#: Domain names as written inside prose ("the motor score", "ADL").
DOMAIN_WORDS: dict[str, str] = {
    "motor": "motor",
    "adl": "ADL",
    "nonmotor": "non-motor",
    "qol": "quality of life (PDQ-8)",
}
#: The three MDS-UPDRS domains whose sum is the total burden (Parts I+II+III).
UPDRS_DOMAINS: tuple[str, ...] = ("nonmotor", "adl", "motor")
#: The pseudo-domain of the UPDRS total and its label.
TOTAL = "total"
TOTAL_LABEL = "Total UPDRS (I+II+III)"
#: Which instrument each domain belongs to.
DOMAIN_INSTRUMENT: dict[str, str] = {
    "motor": "updrs",
    "adl": "updrs",
    "nonmotor": "updrs",
    "qol": "pdq8",
}
INSTRUMENTS: tuple[str, ...] = ("updrs", "pdq8")
#: Instrument names as written inside prose ("UPDRS: 5 assessments").
INSTRUMENT_WORDS: dict[str, str] = {"updrs": "UPDRS", "pdq8": "PDQ-8"}
#: Instrument names on labels and widgets.
INSTRUMENT_LABELS: dict[str, str] = {"updrs": "MDS-UPDRS", "pdq8": "PDQ-8"}


def domain_label(domain: str) -> str:
    """Display label of a domain or of the UPDRS total."""
    return TOTAL_LABEL if domain == TOTAL else DOMAIN_LABELS.get(domain, domain)


@dataclass(frozen=True)
class Item:
    code: str
    number: str
    label: str
    domain: str
    min: float
    max: float
    aliases: tuple[str, ...] = ()  # other CSV column names of the item (ingest)
    terms: tuple[str, ...] = ()  # clinical words for the item (search concepts; terms_source)


@dataclass(frozen=True)
class Domain:
    name: str
    label: str
    max: float
    optional: bool = False


@dataclass(frozen=True)
class Profile:
    name: str
    instrument: str
    title: str
    source: str
    domains: dict[str, Domain]
    items: tuple[Item, ...]
    extra: dict = field(default_factory=dict, hash=False, compare=False)

    def item(self, code: str) -> Item:
        return self._by_code[code]

    def items_of(self, domain: str) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.domain == domain)

    def core_domains(self) -> tuple[str, ...]:
        """Domains that count for the product (the optional Part IV is kept but not scored)."""
        return tuple(d for d, spec in self.domains.items() if not spec.optional)

    def lookup(self) -> dict[str, Item]:
        """Normalised column name -> item, covering codes and aliases (case- and punctuation-blind)."""
        out: dict[str, Item] = {}
        for i in self.items:
            for name in (i.code, *i.aliases):
                out[normalise_column(name)] = i
        return out

    @cached_property
    def _by_code(self) -> dict[str, Item]:
        """Code -> item, built on first use and kept on the (immutable) profile."""
        return {i.code: i for i in self.items}


def normalise_column(name: str) -> str:
    """Case-, space- and punctuation-insensitive key for matching CSV headers to item codes."""
    return "".join(ch for ch in str(name).upper() if ch.isalnum())


@cache
def load_profile(name: str) -> Profile:
    path = PROFILE_DIR / f"{name}.json"
    if not path.exists():
        valid = ", ".join(sorted(p.stem for p in PROFILE_DIR.glob("*.json")))
        raise KeyError(f"unknown instrument profile {name!r}; valid profiles: {valid}")
    raw = json.loads(path.read_text(encoding="utf-8"))
    domains = {
        k: Domain(k, v["label"], float(v["max"]), bool(v.get("optional", False)))
        for k, v in raw["domains"].items()
    }
    items = tuple(
        Item(
            code=i["code"],
            number=str(i["number"]),
            label=i["label"],
            domain=i["domain"],
            min=float(i["min"]),
            max=float(i["max"]),
            aliases=tuple(i.get("aliases", ())),
            terms=tuple(i.get("terms", ())),
        )
        for i in raw["items"]
    )
    for i in items:
        if i.domain not in domains:
            raise ValueError(f"{path}: item {i.code} names unknown domain {i.domain!r}")
    known = {"name", "instrument", "title", "source", "domains", "items"}
    extra = {k: v for k, v in raw.items() if k not in known}
    return Profile(
        raw["name"], raw["instrument"], raw["title"], raw["source"], domains, items, extra
    )


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.json"))
