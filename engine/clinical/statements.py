"""Statements: each clinical finding of a run, stated once, as data.

A `Statement` is what a text may say about the facts: its kind (a score, a change, a severity
band, a red flag ...), whom and what it is about (patient, domain or item, visits), its label (the
clinical judgement: worsened / stable / moderate / current ...), the ledger values (FactValues) it
states, whether it is a key fact (engine.clinical.key_facts) and the rules that raised it. The
engine builds them once per run (engine.clinical.statement_build); the run's ledger is the union of
their values (`ledger_of`); writers (engine.writing) render statements and cite them
(engine.writing.citing), and the record of a rendered text is looked up from its citations
(engine.grounding.lookup), never parsed back.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from engine.types import FactValue

StatementKind = Literal[
    "score",  # one session's part score with its items (kind "score" / "item" / "pdq8_si" values)
    "session",  # one session's visit index and date
    "change",  # a change between two assessments (delta, cumulative), with its label
    "course",  # the numbers of one part's whole course (counts, total, slopes)
    "band",  # the severity band of the latest score
    "course_shape",  # fluctuating
    "peak",  # a peak or a low between the first and latest assessment
    "trend",  # least-squares slopes per visit and per year
    "red_flag",  # one item's red flag, with its status
    "new_onset",  # a red-flag item first above zero after zero at every earlier assessment
    "item_finding",  # an item at 3 or 4 at the latest assessment, or up two points or more
    "pertinent_negative",  # a red-flag item at 0 at the latest assessment
    "incongruence",  # a part at 0 while another is at or above its moderate cut-off
    "monitor",  # a part or a flag group to monitor, with its reasons
    "cohort",  # a cohort statistic, rank or ranked score
    "count",  # a count (patients, visits, assessments)
    "excluded",  # a session left out at ingest
    "partial",  # a part score with items missing
    "reference",  # a threshold of the contexts (MCID, band bounds, red-flag thresholds)
]


@dataclass(frozen=True)
class Statement:
    """One finding, stated once: see the module docstring."""

    id: str
    kind: StatementKind
    patient: int | None = None
    subject: str | None = None  # domain, item code or threshold name
    visits: tuple[int, ...] = ()
    label: str = ""
    values: tuple[FactValue, ...] = ()
    key: bool = False
    rules: tuple[str, ...] = ()

    @classmethod
    def make(
        cls,
        id: str,
        kind: StatementKind,
        patient: int | None,
        subject: str | None,
        visits: tuple[int, ...],
        label: str,
        values: tuple[FactValue, ...],
        key: bool = False,
        rules: tuple[str, ...] = (),
    ) -> Statement:
        """The same statement as `Statement(...)`, without the frozen dataclass's per-field
        `object.__setattr__` (a cohort answer builds thousands)."""
        obj = object.__new__(cls)
        obj.__dict__.update(
            id=id,
            kind=kind,
            patient=patient,
            subject=subject,
            visits=visits,
            label=label,
            values=values,
            key=key,
            rules=rules,
        )
        return obj


@dataclass
class Statements:
    """The run's statements in order, with lookups for the writers (by kind, patient, subject,
    visit) and by id (for the record)."""

    items: list[Statement] = field(default_factory=list)
    _by_id: dict[str, Statement] = field(default_factory=dict, repr=False)
    _by_key: dict[tuple, list[Statement]] = field(default_factory=dict, repr=False)
    _by_patient: dict[int | None, list[Statement]] = field(default_factory=dict, repr=False)
    #: what readers derive from a set of statements (a lookup pool per cited id set), per run
    memo: dict[tuple[str, ...], object] = field(default_factory=dict, repr=False)

    def add(self, st: Statement) -> Statement:
        self.memo.clear()
        self.items.append(st)
        self._index(st)
        return st

    def _index(self, st: Statement) -> None:
        self._by_id[st.id] = st
        for k in _keys(st):
            self._by_key.setdefault(k, []).append(st)
        self._by_patient.setdefault(st.patient, []).append(st)

    def mark_key(self, ids: Sequence[str]) -> None:
        """Mark these statements as key facts (engine.clinical.key_facts)."""
        from dataclasses import replace

        want = set(ids)
        if not want:
            return
        self.items = [replace(s, key=True) if s.id in want else s for s in self.items]
        ledger = self.memo.get(("ledger",))
        self.memo.clear()
        if ledger is not None:  # the same values in the same order: marking keys keeps it
            self.memo[("ledger",)] = ledger
        self._by_id.clear()
        self._by_key.clear()
        self._by_patient.clear()
        for st in self.items:
            self._index(st)

    def extend(self, sts: Iterable[Statement]) -> None:
        for st in sts:
            self.add(st)

    def next_id(self) -> str:
        return f"S{len(self.items) + 1}"

    def __iter__(self) -> Iterator[Statement]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def get(self, sid: str) -> Statement:
        return self._by_id[sid]

    def find(
        self,
        kind: str,
        patient: int | None = None,
        subject: str | None = None,
        visit: int | None = None,
    ) -> list[Statement]:
        """Statements of `kind` about `patient` (and `subject`, and including `visit`)."""
        out = self._by_key.get((kind, patient, subject), [])
        return [s for s in out if visit is None or visit in s.visits]

    def about(self, patient: int | None, subject: str | None = None) -> list[Statement]:
        """What a text about one patient (and one part) may cite: that patient's statements (of
        that part, with its sessions and counts) and the run's statements of no patient
        (thresholds, cohort counts)."""
        mine = self._by_patient.get(patient, [])
        if subject is not None:
            mine = [s for s in mine if s.subject == subject or s.kind in ("session", "count")]
        return mine + ([] if patient is None else self._by_patient.get(None, []))

    @property
    def ledger(self) -> list[FactValue]:
        """`ledger_of(self)`, computed once (the memo is cleared when a statement is added)."""
        got = self.memo.get(("ledger",))
        if got is None:
            got = self.memo[("ledger",)] = ledger_of(self.items)
        return got  # type: ignore[return-value]

    @property
    def key_facts(self) -> list[Statement]:
        return [s for s in self.items if s.key]


def _keys(st: Statement) -> list[tuple]:
    return [(st.kind, st.patient, st.subject)]


def ledger_of(statements: Iterable[Statement]) -> list[FactValue]:
    """The run's ledger: the union of the statements' values, in order of first statement (a
    value two statements state is listed once)."""
    seen: set[int] = set()
    out: list[FactValue] = []
    for st in statements:
        for v in st.values:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out
