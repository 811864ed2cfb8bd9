"""The judgement words of a cited clause, mapped to the label vocabulary of the statements.

A statement's label is its clinical judgement (engine.clinical.statements): a change is
worsened / improved / stable, a severity band mild / moderate / severe, a red flag current /
resolved (a new onset is its own kind). A clause that cites statements may use these words only
as the cited statements label them: "improved" citing a worsened change fails. `label_words`
finds the words (negated ones, "no improvement", and words naming a threshold, "the moderate
cut-off", are not claims of a label) and
`label_disagreements` names each one that no cited statement's label equals. An item code a
clause writes ("NP3RIGLL", "PDQ8_2") must likewise be the subject of a cited statement
(`item_disagreements`): a clause citing one item's flag cannot name another.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.clinical.statements import Statement

#: (group, label, pattern): the words of each label, in the statements' vocabulary
LABEL_WORDS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("direction", "worsened", re.compile(r"\b(?:worsen\w*|deteriorat\w*)\b", re.I)),
    ("direction", "improved", re.compile(r"\bimprov\w*\b", re.I)),
    ("direction", "stable", re.compile(r"\b(?:stable|unchanged)\b", re.I)),
    ("severity", "mild", re.compile(r"\bmild(?:ly)?\b", re.I)),
    ("severity", "moderate", re.compile(r"\bmoderate(?:ly)?\b", re.I)),
    ("severity", "severe", re.compile(r"\bsevere(?:ly)?\b", re.I)),
    ("status", "current", re.compile(r"\b(?:current|ongoing|still present)\b", re.I)),
    ("status", "resolved", re.compile(r"\bresolved\b", re.I)),
    ("status", "new", re.compile(r"\bnew(?:ly)?(?:\s|-)onset\b", re.I)),
)
#: a word so preceded does not claim its label ("no improvement", "not worsened")
NEGATED = re.compile(r"\b(?:no|not|without|never|nor)\s+(?:\w+\s+)?$", re.I)
#: a word so followed or preceded names a threshold, not a judgement ("the moderate cut-off",
#: "mild band 32", "the MCID for worsening")
NAMES_AFTER = re.compile(r"\s*(?:band|cut-?off|bound|threshold|range|MCID)\b", re.I)
NAMES_BEFORE = re.compile(r"\bMCID\s+(?:for|of)\s+(?:\w+\s+)?$", re.I)


#: an instrument item's code as the statements and the prompt lines write it
ITEM_CODE = re.compile(r"\b(?:NP[1-4][A-Z0-9]{2,}|PDQ8_\d+)\b")


def label_words(clause: str) -> list[tuple[str, str, str]]:
    """(group, label, word as written) of each judgement word of `clause`, not negated."""
    out = []
    for group, label, pat in LABEL_WORDS:
        for m in pat.finditer(clause):
            before = clause[max(0, m.start() - 30) : m.start()]
            if NEGATED.search(before) or NAMES_BEFORE.search(before):
                continue
            if NAMES_AFTER.match(clause, m.end()):
                continue
            out.append((group, label, m.group(0)))
    return out


def statement_labels(s: Statement) -> list[tuple[str, str]]:
    """(group, label) of each judgement a statement's label states, in LABEL_WORDS'
    vocabulary: the label itself ("worsened") or the judgement words of a label phrase (a
    monitor's "worsened beyond its MCID"); none for a label that states no judgement."""
    if s.kind == "new_onset":
        return [("status", "new")]
    label = s.label.lower()
    for group, name, _pat in LABEL_WORDS:
        if label == name:
            return [(group, name)]
    return [(group, name) for group, name, _word in label_words(s.label)]


def label_disagreements(clause: str, cited: Sequence[Statement]) -> list[str]:
    """A reason for each judgement word of `clause` that no cited statement's label equals."""
    labels = [x for s in cited for x in statement_labels(s)]
    reasons = []
    for group, label, word in label_words(clause):
        same = [name for g, name in labels if g == group]
        if label in same:
            continue
        if same:
            told = " / ".join(sorted(set(same)))
            reasons.append(f"'{word}' disagrees with the cited statements' label ({told})")
        else:
            reasons.append(f"'{word}' is not the label of any cited statement")
    return reasons


def item_disagreements(clause: str, cited: Sequence[Statement]) -> list[str]:
    """A reason for each item code of `clause` that is no cited statement's subject."""
    subjects = {s.subject for s in cited if s is not None}
    return [
        f"'{code}' is not the item of any cited statement"
        for code in dict.fromkeys(m.group(0) for m in ITEM_CODE.finditer(clause))
        if code not in subjects
    ]
