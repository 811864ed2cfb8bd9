"""The statements a model may cite: one prompt line per statement and the numbers a clause
citing it may write.

When a model writes, each agent's request lists the statements its text renders
(engine.agents.budget.agent_statements; the final digest: the key statements) as lines
"[S12] patient 3, motor, visit 1 to visit 4: change from baseline +10, worsened", and carries
`citable=((id, numbers), ...)` (engine.llm.base.LLMRequest) for number-safe decoding. The model
begins each clause with the id it states (engine.llm.base.CITE_MARKER); the cited text is then
checked by lookup (engine.agents.cited_check). One function renders a line, so the prompt and
the check read the same statement fields.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from engine.clinical.key_facts import in_digest
from engine.clinical.ledger import allowed_numbers
from engine.clinical.series import fmt, fmt_signed
from engine.clinical.statements import Statement, Statements
from engine.llm.base import LLMRequest
from engine.prompts import load_prompt
from engine.types import FactValue
from kb_store.profiles import DOMAIN_WORDS

#: at most this many statements are listed in one prompt (a small model's context is 2k-8k
#: tokens); the key statements first, then in the run's order
MAX_LINES = 40
#: value kinds written with their sign ("+10"): changes
SIGNED = frozenset({"delta", "cumulative"})
#: how a value kind is named in a line
KIND_WORDS = {
    "score": "score",
    "pdq8_si": "PDQ-8 summary index",
    "delta": "change",
    "cumulative": "change from baseline",
    "slope": "slope",
    "slope_year": "slope",
    "count": "count",
    "threshold": "threshold",
    "rank": "rank",
    "mean": "mean",
    "max": "highest",
    "min": "lowest",
}
#: what follows a value of these kinds ("slope 3.4 per visit": never "per visit 3.4", which
#: reads as a visit number)
KIND_AFTER = {"slope": " per visit", "slope_year": " per year"}
#: a run of digits (with its decimals) anywhere in a line's words, even inside one ("pdq8"):
#: what citation-safe decoding reads as a number
DIGIT_RUN = re.compile(r"\d+(?:\.\d+)?")
#: the labels of a change that read its direction (others, "possible missing data", do not)
DIRECTIONS = frozenset({"worsened", "improved", "stable"})
#: values a line leaves out (an item rating is stated in its own finding; dates in the visit)
UNLISTED = frozenset({"item", "date", "visit"})


def value_text(v: FactValue) -> str:
    """One value as the writers format it (engine.clinical.series.fmt)."""
    return fmt_signed(v.value) if v.kind in SIGNED else fmt(v.value)


def threshold_name(item: str | None) -> str:
    """A threshold as a line names it, in words the label check reads as naming a threshold
    (engine.agents.label_words): "MCID", "mild band", "red-flag threshold"."""
    name = item or ""
    if name.startswith("mcid"):
        return "MCID"
    if name.startswith("severity_"):
        return name.removeprefix("severity_").replace("_", " ") + " band"
    if name.endswith("new_onset"):
        return "onset threshold"
    if name.startswith("red_flag"):
        return "red-flag threshold"
    return "threshold"


def _subject(s: Statement) -> str:
    if s.subject is None:
        return ""
    return DOMAIN_WORDS.get(s.subject, s.subject)


def _visits(s: Statement) -> str:
    if not s.visits:
        return ""
    if len(s.visits) == 1:
        return f"visit {s.visits[0]}"
    if len(s.visits) == 2:
        return f"visit {s.visits[0]} to visit {s.visits[1]}"
    return "visits " + ", ".join(str(v) for v in s.visits)


#: statement kinds whose name a line states (the others are said by their values and label)
NAMED_KINDS = frozenset(
    {
        "red_flag",
        "new_onset",
        "pertinent_negative",
        "incongruence",
        "peak",
        "monitor",
        "item_finding",
        "excluded",
        "partial",
        "session",
        "rank",
    }
)
#: statement kinds whose thresholds a line lists (a change's MCID is said by its label)
THRESHOLD_KINDS = frozenset({"red_flag", "new_onset", "incongruence", "reference"})


def _shown(s: Statement, v: FactValue) -> bool:
    """Whether a line lists value `v` of `s`: not an item rating, date or visit (stated
    elsewhere), not a score between a change's visits, a count only on a count statement, a
    threshold only where it is the finding's own (a red flag's, a band's limits)."""
    if v.kind in UNLISTED or (s.visits and v.visit is not None and v.visit not in s.visits):
        return False
    if v.kind == "count":
        return s.kind == "count"
    if v.kind in SIGNED and s.kind == "change" and s.label and s.label not in DIRECTIONS:
        return False  # "possible missing data": the change is not read, so not written

    if v.kind == "threshold":
        if s.kind == "band":
            return (v.item or "") == f"severity_{s.label}"
        return s.kind in THRESHOLD_KINDS
    return True


def _parts(s: Statement) -> list[tuple[str, str]]:
    """(words, text) of each value part of a line: ("score", "score 20 at visit 1"), the band's
    limits as one part ("moderate band", "moderate band 33 to 58")."""
    parts: list[tuple[str, str]] = []
    band: list[str] = []
    for v in s.values:
        if not _shown(s, v):
            continue
        if v.kind == "threshold" and s.kind == "band":
            band.append(value_text(v))
            continue
        word = threshold_name(v.item) if v.kind == "threshold" else KIND_WORDS.get(v.kind, v.kind)
        at = f" at visit {v.visit}" if v.visit is not None and v.kind == "score" else ""
        parts.append((word, f"{word} {value_text(v)}{KIND_AFTER.get(v.kind, '')}{at}"))
    if band:
        parts.append((f"{s.label} band", f"{s.label} band " + " to ".join(band)))
    return parts


def statement_line(s: Statement) -> str:
    """The prompt line of one statement, short and a sentence of its own: "[S12] Patient 3,
    motor: score 20 at visit 1, score 30 at visit 4, change from baseline +10, worsened." (a
    model that copies a line writes a finished, true sentence, its visits in order; every token
    of a line is prompt the model reads)."""
    who = f"Patient {s.patient}" if s.patient is not None else "Cohort"
    parts = _parts(s)
    # the visits once, in order: a line whose scores name their visits names no range before
    # them ("visit 1 to visit 4: score 20 at visit 1" reads 1, 4, 1: back in time)
    dated = any(v.kind == "score" and v.visit is not None and _shown(s, v) for v in s.values)
    head = ", ".join(x for x in (who, _subject(s), "" if dated else _visits(s)) if x)
    kind = s.kind.replace("_", " ")
    said = {kind} | {word.split(" ")[0] for word, _text in parts}
    label = "" if s.kind == "band" or s.label in said else s.label
    values = ", ".join(text for _word, text in parts)
    named = kind if s.kind in NAMED_KINDS or not (values or label) else ""
    body = ", ".join(x for x in (named, values, label) if x)
    return f"[{s.id}] {head}: {body}."


def statement_numbers(s: Statement) -> frozenset[str]:
    """The numbers a clause citing `s` may write, normalised like the request's allowed
    numbers (engine.clinical.ledger.allowed_numbers): its values as the writers format them,
    its patient id, its visits, the parts of its values' session dates and the numbers of its
    line's words (the 8 of "PDQ-8": a copy of the line is never pushed off it)."""
    texts: list[str] = [value_text(v) for v in s.values]
    # the digits of the line's words, as decoding reads them ("PDQ-8", "red_flag_pdq8_...")
    words = [_subject(s), s.label, *(word for word, _text in _parts(s))]
    texts += [n for w in words for n in DIGIT_RUN.findall(w)]
    texts += [fmt(v.value) for v in s.values if v.kind in SIGNED]  # the size, written unsigned
    if s.patient is not None:
        texts.append(str(s.patient))
    texts += [str(v) for v in s.visits]
    for v in s.values:
        if v.visit is not None:
            texts.append(str(v.visit))
        if v.date:
            parts = v.date.split("-")
            texts += parts + [str(int(p)) for p in parts if p.isdigit()]
    return allowed_numbers(*texts)


def citable_statements(
    statements: Sequence[Statement], max_lines: int = MAX_LINES
) -> list[Statement]:
    """The statements a prompt lists: the key ones first, at most `max_lines` (and MAX_LINES)."""
    keys = [s for s in statements if s.key]
    rest = [s for s in statements if not s.key]
    return (keys + rest)[: min(max_lines, MAX_LINES)]


def with_citable(
    req: LLMRequest, statements: Sequence[Statement], max_lines: int = MAX_LINES
) -> LLMRequest:
    """`req` with the citable statements listed before its closing line ("Narrative:"), at
    most `max_lines` of them (the ones its text has room to state: engine.llm.lengths
    `statements_within`), the citing instruction in its system message, and `citable` set; the
    allowed numbers (when the request has them) include every citable number."""
    shown = citable_statements(statements, max_lines)
    if not shown:
        return req
    p = load_prompt("cite")
    lines = "\n".join(statement_line(s) for s in shown)
    head, sep, tail = req.user.rpartition("\n")
    block = p["user"].format(lines=lines)
    user = f"{head}\n{block}\n{tail}" if sep else f"{block}\n{req.user}"
    citable = tuple((s.id, statement_numbers(s)) for s in shown)
    allowed = req.allowed_numbers
    if allowed is not None:
        allowed = allowed.union(*(nums for _id, nums in citable))
    return replace(
        req,
        system=req.system + "\n\n" + p["system"],
        user=user,
        citable=citable,
        allowed_numbers=allowed,
    )


def citable_ids(req: LLMRequest) -> frozenset[str]:
    """The ids a request's text may cite (none without `citable`)."""
    return frozenset(i for i, _nums in req.citable or ())


def key_statements(statements: Statements | None, patients: Sequence[int]) -> list[Statement]:
    """The final digest's statements: the run's key statements about `patients` (or of no
    patient: cohort findings) that the digest states (engine.clinical.key_facts.in_digest)."""
    if statements is None:
        return []
    want = set(patients)
    return [
        s
        for s in statements.key_facts
        if (not want or s.patient in want or s.patient is None) and in_digest(s.kind)
    ]
