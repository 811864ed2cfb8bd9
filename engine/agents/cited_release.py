"""The release of a model text that was given citable statements: check, repair, regenerate,
facts text, in the order the prose guard (engine.grounding.guard.guard_text) follows.

1. the text is read (engine.agents.cited: markers to citations) and checked
   (engine.agents.cited_check: cited sentences by lookup, the others by the prose checker);
2. a failing text is repaired (engine.agents.cited_repair) when every failure is a sentence's;
   a text without any citation is repaired as the prose guard repairs it
   (engine.grounding.guard.repair_text);
3. still failing: critique and regenerate (at most `max_rounds`), each new text read and checked
   again, then repaired;
4. still failing: the facts text, whose record is looked up from its own citations
   (engine.agents.rendered_record).
`record["released"]` says which: as_written | repaired | regenerated | replaced; the released
text never shows a marker.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from engine.agents.cited import CitedText, read_cited
from engine.agents.cited_check import ProseCheck, cited_record
from engine.agents.cited_repair import add_missing, repair_cited
from engine.agents.rendered_record import rendered_record
from engine.clinical.statements import Statements
from engine.grounding.guard import critique, repair_text
from engine.grounding.sentences import split_sentences
from engine.writing.citing import Rendered


@dataclass(frozen=True)
class CitedGuard:
    """What the check of one agent's cited text needs."""

    statements: Statements
    prose: ProseCheck
    given: Collection[str]  # the ids the request gave (engine.agents.citable.citable_ids)
    agent: str
    plan_patients: Sequence[int] = ()
    coverage_min: float = 1.0
    digest: bool = False  # the final agent's digest (engine.clinical.key_facts.in_digest)

    def read(self, text: str) -> CitedText:
        return read_cited(text, self.given)

    def check(self, cited: CitedText) -> dict[str, Any]:
        return cited_record(
            cited,
            self.statements,
            self.prose,
            agent=self.agent,
            plan_patients=self.plan_patients,
            coverage_min=self.coverage_min,
            digest=self.digest,
        )

    def facts_record(self, fallback: Rendered) -> dict[str, Any]:
        """The facts text's record, looked up from its citations."""
        rec = rendered_record(
            fallback,
            self.statements,
            agent=self.agent,
            plan_patients=self.plan_patients,
            coverage_min=self.coverage_min,
            digest=self.digest,
        )
        sents = rec["statements"]["sentences"]
        n_cited = sum(1 for s in sents if s["citations"])
        rec["cited"] = {
            "sentences": n_cited,
            "total": len(sents),
            "share": n_cited / len(sents) if sents else 0.0,
        }
        return rec


def passed(rec: dict[str, Any]) -> bool:
    return not rec["unsupported"] and rec.get("statements_passed", True)


def _brief(rec: dict[str, Any]) -> dict[str, Any]:
    return {
        "unsupported": [u["text"] for u in rec["unsupported"]],
        "claim_accuracy": rec["claim_accuracy"],
        "unsupported_sentences": [b["text"] for b in rec["statements"]["removable"]],
        "coverage": rec["coverage"],
    }


def _repairable(rec: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The failing sentences when every unsupported number lies in one of them (a failure of
    the whole text, e.g. visit order or a missing key fact, is not repaired by sentences)."""
    bad = rec["statements"]["removable"]
    spans = [tuple(b["span"]) for b in bad if b["span"] is not None]
    loose = [
        u
        for u in rec["unsupported"]
        if u.get("span") is None or not any(a <= u["span"][0] < b for a, b in spans)
    ]
    return None if not bad or loose or len(spans) < len(bad) else bad


def _short_of_key_facts(rec: dict[str, Any]) -> bool:
    """Every sentence holds, but key statements are missing (coverage)."""
    return not rec["unsupported"] and not rec["statements"]["removable"]


def try_repair(
    g: CitedGuard,
    cited: CitedText,
    rec: dict[str, Any],
    fallback: Rendered,
    repairs: list[dict[str, Any]],
    stage: str,
) -> tuple[CitedText, dict[str, Any], str]:
    """The repaired text and its record when the repair passes, else the text as it was:
    failing sentences replaced or removed, then the renderings of missing key statements
    added (engine.agents.cited_repair). A repair keeps at least one of the model's sentences:
    one that would remove them all is no repair (the text is regenerated or replaced)."""
    bad = _repairable(rec)
    if (bad is None and not _short_of_key_facts(rec)) or not cited.text.strip():
        return cited, rec, stage
    if bad is not None and len(bad) >= len(split_sentences(cited.text)):
        return cited, rec, stage
    removed: list[dict[str, Any]] = []
    if bad is None:
        fixed, new = cited.rendered, rec
    else:
        if cited.rendered.citations or cited.strays:
            fixed, removed = repair_cited(cited, bad, fallback)
        else:  # no citation at all: the prose guard's repair, as for a text without citable
            plain, removed = repair_text(cited.text, bad, fallback.text)
            fixed = Rendered(plain)
        new = g.check(CitedText(fixed))
    added: list[dict[str, Any]] = []
    if not passed(new) and _short_of_key_facts(new):
        missing = new["statements"]["coverage_detail"].get("missing_ids") or []
        fixed, added = add_missing(fixed, missing, fallback)
        if added:
            new = g.check(CitedText(fixed))
    if not removed and not added:
        return cited, rec, stage
    repairs.append({"stage": stage, "removed": removed, "added": added, "passed": passed(new)})
    if passed(new):
        return CitedText(fixed), new, "repaired"
    return cited, rec, stage


def release_cited(
    g: CitedGuard,
    text: str,
    regenerate: Callable[[str], str] | None,
    fallback: Rendered,
    max_rounds: int,
) -> tuple[str, dict[str, Any]]:
    """(released text, record) of one agent's cited text (see the module docstring)."""
    cited = g.read(text)
    rec = g.check(cited)
    history = [_brief(rec)]
    released, rounds = "as_written", 0
    repairs: list[dict[str, Any]] = []
    if not passed(rec):
        cited, rec, released = try_repair(g, cited, rec, fallback, repairs, "as_written")
    while not passed(rec) and regenerate is not None and rounds < max_rounds:
        rounds += 1
        cited = g.read(regenerate(critique(rec)))
        rec = g.check(cited)
        history.append(_brief(rec))
        released = "regenerated"
        if not passed(rec):
            cited, rec, released = try_repair(g, cited, rec, fallback, repairs, "regenerated")
    out, fallback_used = cited.text, False
    if not passed(rec):
        rejected = {
            k: rec[k] for k in ("unsupported", "claim_accuracy", "hallucination_rate", "numbers")
        }
        rejected["text"] = cited.text
        rejected["unsupported_sentences"] = rec["statements"]["removable"]
        rejected["coverage"] = rec["statements"]["coverage_detail"]
        out, rec = fallback.text, g.facts_record(fallback)
        rec["rejected"] = rejected
        released, fallback_used = "replaced", True
    rec.update(
        rounds=rounds,
        fallback_used=fallback_used,
        passed=passed(rec),
        history=history,
        released=released,
        repairs=repairs,
    )
    if released != "as_written":
        rec["written"] = text
    if fallback_used:
        rec["note"] = (
            "The model's cited text still had unsupported numbers or sentences (or missed key "
            f"facts) after repair and {rounds} regeneration round(s); the facts text replaced it."
        )
    return out, rec
