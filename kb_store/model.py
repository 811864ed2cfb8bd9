"""Typed records shared by ingest, validation, documents and the KB.

A `Session` is one instrument administered to one patient on one date, with item values exactly as
read (None = missing, never imputed). `DomainScore` is an item sum that remembers how many items were
missing. `ValidationIssue` is one line of the validation report: file, row, column, rule, message.
`SessionKey` is what the cross-row rules and the report read of a session (no items, a digest of
them): what a report over a large file keeps.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from kb_store.profiles import Profile, load_profile


@dataclass(frozen=True)
class SourceRef:
    file: str
    row: int  # the physical line the row starts on, 1-based (header = line 1)


@dataclass(frozen=True)
class DomainScore:
    domain: str
    score: float | None  # sum of the items present; None when every item is missing
    n_items: int
    missing: tuple[str, ...] = ()  # item codes that were blank

    @property
    def partial(self) -> bool:
        return bool(self.missing)


@dataclass
class Session:
    proj_id: int
    date: dt.date
    instrument: str  # "updrs" | "pdq8"
    profile: str  # profile name, e.g. "mds-updrs", "marag-updrs44", "pdq8"
    items: dict[str, float | None]  # item code -> value as read; None = missing
    source: SourceRef
    visit: int | None = None  # 1..N_p, assigned by kb_store.visits.assign_visits
    condition: str = (
        ""  # PPMI Part III exam state: "OFF" (or untreated) / "ON"; "" when not applicable
    )
    extra: dict = field(default_factory=dict)  # e.g. raw timestamp, PPMI EVENT_ID, paired dates

    def domain_scores(self) -> dict[str, DomainScore]:
        return domain_scores(load_profile(self.profile), self.items)

    @property
    def items_digest(self) -> bytes:
        """What the duplicate rule compares of the items (`items_digest`)."""
        return items_digest(self.items)


def items_digest(items: Mapping[str, float | None]) -> bytes:
    """A 128-bit digest of the item codes and values: two sessions' digests are equal exactly when
    their items compare equal (values as floats; -0.0 reads as 0.0, as == compares them)."""
    canon = sorted((code, None if v is None else float(v) + 0.0) for code, v in items.items())
    return hashlib.blake2b(repr(canon).encode(), digest_size=16).digest()


@dataclass(slots=True)
class SessionKey:
    """What the cross-row rules (date outliers, duplicates, visits) and the report's counts read
    of a `Session`, without its items and descriptors: about 250 bytes instead of about 2.5 KB,
    so that a report over a million rows fits in memory (kb_store.ingest.load_sources with
    `keys_only`). `extra` holds only the keys those rules read (kb_store.validation.SessionKeys)."""

    proj_id: int
    date: dt.date
    instrument: str
    profile: str
    items_digest: bytes
    source: SourceRef
    visit: int | None = None
    condition: str = ""
    extra: dict = field(default_factory=dict)


#: a session as the cross-row rules read it: whole, or its key
AnySession = Session | SessionKey


def domain_scores(profile: Profile, items: dict[str, float | None]) -> dict[str, DomainScore]:
    """Item sums per domain of the profile; items absent from `items` count as missing."""
    out: dict[str, DomainScore] = {}
    for dom in profile.domains:
        codes = [i.code for i in profile.items_of(dom)]
        present = [items[c] for c in codes if items.get(c) is not None]
        missing = tuple(c for c in codes if items.get(c) is None)
        if dom in profile.domains and profile.domains[dom].optional and not present:
            continue  # optional part (MDS-UPDRS Part IV) not administered
        score = float(sum(present)) if present else None  # type: ignore[arg-type]
        out[dom] = DomainScore(dom, score, len(codes), missing)
    return out


@dataclass(frozen=True)
class ValidationIssue:
    file: str
    row: int | None  # None for file-level issues
    column: str | None
    rule: str  # short machine name: out_of_range, non_numeric, missing_item, duplicate_session, ...
    message: str
    severity: str = "error"  # "error" = row rejected; "warning" = row kept, noted; "info" = deliberate action (visit join, ignored column)

    def line(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.column:
            where += f", column {self.column}"
        return f"{self.severity.upper()} {where}: [{self.rule}] {self.message}"
