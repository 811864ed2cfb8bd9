"""Reading a text's structure for the claim reader: its sentences (with paragraph index) and its
cues (patient, visit, reference visit, domain and item mentions, parentheses, semicolons) with
their spans, and the kind cue around each number. Vocabulary in vocabulary.py."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from engine.grounding import literal_scan
from engine.grounding.numbers import NumberToken
from engine.grounding.paragraphs import paragraphs
from engine.grounding.run_memo import memoised
from engine.grounding.vocabulary import (
    BASELINE_RE,
    DOMAIN_RE,
    KIND_AFTER,
    KIND_BEFORE,
    LATEST_RE,
    ORD_VISIT_RE,
    PATIENT_RE,
    PATIENTS_RE,
    REF_BEFORE_RE,
    VISITS_RE,
    item_literals,
    item_vocabulary,
)
from engine.vocabulary import WORD_ORDINALS


@dataclass
class Cue:
    start: int
    end: int
    kind: (
        str  # patient, patients, visit, ref_visit, domain, item, paren_open, paren_close, semicolon
    )
    value: Any = None
    num_spans: tuple[tuple[int, int], ...] = ()
    range_end: bool = False  # end of a span ("between baseline and visit 4") or a list: no anchor


_SENTENCE_BREAK = re.compile(r"(?<=[.!?:])\s+(?=[A-Z(*\-•#\d])|\n")
_PREVIOUS_VISIT = re.compile(
    r"\b(?:the\s+)?(?:previous|prior|preceding)\s+(?:visit|session|assessment)\b", re.I
)
_RANKED_BEFORE = re.compile(r"\brank\s+\d+\s*:\s*patient\s+\d+\s*,\s*$", re.I)
_AFTER_END = re.compile(r"[,;]|\s(?:and|while|but)\s")
_DIGITS = re.compile(r"\d+")
_DIGIT_RANGE = re.compile(r"\d\s*(?:-|to|through)\s*\d")
_ONWARD = re.compile(r"\s*(?:onwards?|on)\b", re.I)
_SPAN_END_BEFORE = re.compile(
    r"(?:between|from)\s+(?:the\s+)?(?:baseline|(?:visit|session|assessment)\s*\d+)"
    r"\s+(?:and|to|through)\s+(?:the\s+)?$",
    re.I,
)
_BETWEEN_END = re.compile(r"\bbetween\s+$", re.I)
_PAREN_GROUP = re.compile(r"\([^()]*\)")
#: what every match of ORD_VISIT_RE holds, lower-cased: an ordinal ends in st / nd / rd / th
_ORDINAL_VISIT_NEEDLE = re.compile(r"(?:st|nd|rd|th)\s+(?:visit|session|assessment)")
_GAP_PUNCT = re.compile(r"[\s,:=-]*")


def sentences(text: str) -> list[tuple[int, int, int]]:
    """(paragraph index, start, end) of each sentence (once per text within an engine run)."""
    return list(_sentences(text))


@memoised
def _sentences(text: str) -> tuple[tuple[int, int, int], ...]:
    out = []
    for pi, (pstart, para) in enumerate(paragraphs(text)):
        last = 0
        for sm in _SENTENCE_BREAK.finditer(para):
            if sm.start() > last:
                # don't split after "vs." or "e.g."
                prev = para[max(0, sm.start() - 4) : sm.start()].lower()
                if (
                    prev.endswith(("vs.", "e.g.", "i.e."))
                    or para[sm.start() - 1] == ":"
                    and "\n" not in sm.group()
                ):
                    continue
                out.append((pi, pstart + last, pstart + sm.start()))
            last = sm.end()
        if last < len(para):
            out.append((pi, pstart + last, pstart + len(para)))
    return tuple(out)


class _Taken:
    """Character positions already claimed by a cue: the first pattern to match a span wins."""

    def __init__(self, n: int):
        self.flags = bytearray(n)

    def mark(self, a: int, b: int) -> bool:
        if self.flags.find(1, a, b) >= 0:
            return False
        self.flags[a:b] = b"\x01" * (b - a)
        return True


def _digit_spans(m: re.Match[str]) -> tuple[tuple[int, int], ...]:
    return tuple((m.start() + x.start(), m.start() + x.end()) for x in _DIGITS.finditer(m.group()))


def _patient_cues(text: str, taken: _Taken, low: str | None = None) -> list[Cue]:
    cues: list[Cue] = []
    if not literal_scan.may_match(_PATIENT_NEEDLE, text, low):
        return cues
    for m in literal_scan.finditer(PATIENTS_RE, text, low):
        if taken.mark(m.start(), m.end()):
            spans = _digit_spans(m)
            cues.append(
                Cue(m.start(), m.end(), "patients", [int(text[a:b]) for a, b in spans], spans)
            )
    for m in literal_scan.finditer(PATIENT_RE, text, low):
        if taken.mark(m.start(), m.end()):
            cues.append(
                Cue(m.start(), m.end(), "patient", int(m.group(1)), ((m.start(1), m.end(1)),))
            )
    return cues


def _visit_cues_of(text: str, m: re.Match[str]) -> list[Cue]:
    """The cue(s) of one 'visit N' / 'visits 2, 3 and 4' / 'visits 1-3' mention."""
    spans = _digit_spans(m)
    vals = [int(text[a:b]) for a, b in spans]
    if len(vals) == 2 and _DIGIT_RANGE.search(m.group()) and vals[1] > vals[0]:
        vals_all = list(range(vals[0], vals[1] + 1))
    else:
        vals_all = vals
    before = text[max(0, m.start() - 40) : m.start()]
    onward = _ONWARD.match(text[m.end() : m.end() + 10])
    span_end = _SPAN_END_BEFORE.search(before)
    if len(vals) == 1 and _ref_before(before) and not onward and not span_end:
        return [Cue(m.start(), m.end(), "ref_visit", vals[0], spans)]
    if _BETWEEN_END.search(before) and len(vals) == 2:
        return [
            Cue(m.start(), m.end(), "ref_visit", vals[0], spans[:1]),
            Cue(m.start(), m.end(), "visit", vals[1], spans[1:]),
        ]
    return [
        Cue(
            m.start(),
            m.end(),
            "visit",
            vals_all if len(vals_all) > 1 else vals[0],
            spans,
            range_end=bool(span_end) or len(vals_all) > 1,
        )
    ]


def _visit_cues(text: str, taken: _Taken, low: str | None = None) -> list[Cue]:
    cues = []
    for m in literal_scan.finditer(VISITS_RE, text, low):
        if taken.mark(m.start(), m.end()):
            cues.extend(_visit_cues_of(text, m))
    return cues + _named_visit_cues(text, taken, low)


def _named_visit_cues(text: str, taken: _Taken, low: str | None = None) -> list[Cue]:
    """'the third visit', 'baseline', 'the previous visit', 'the latest visit'."""
    cues = []
    # an ordinal visit ends with one of the visit words after an ordinal's last letters ("1st",
    # "third", "tenth"): without them (in a lower-cased ASCII text) there is none
    ordinal = low is None or (
        any(w in low for w in ("visit", "session", "assessment"))
        and _ORDINAL_VISIT_NEEDLE.search(low) is not None
    )
    for m in ORD_VISIT_RE.finditer(text) if ordinal else ():
        if taken.mark(m.start(), m.end()):
            v = int(m.group(1)) if m.group(1) else WORD_ORDINALS[m.group(2).lower()]
            spans = ((m.start(1), m.end(1)),) if m.group(1) else ()
            before = text[max(0, m.start() - 40) : m.start()]
            kind = "ref_visit" if _ref_before(before.replace("the ", "")) else "visit"
            cues.append(Cue(m.start(), m.end(), kind, v, spans))
    for m in literal_scan.finditer(BASELINE_RE, text, low):
        if taken.mark(m.start(), m.end()):
            before = text[max(0, m.start() - 40) : m.start()]
            kind = "ref_visit" if _ref_before(before) else "visit"
            cues.append(Cue(m.start(), m.end(), kind, 1))
    for m in literal_scan.finditer(_PREVIOUS_VISIT, text, low):
        if taken.mark(m.start(), m.end()):
            cues.append(Cue(m.start(), m.end(), "ref_visit", "previous"))
    for m in literal_scan.finditer(LATEST_RE, text, low):
        if taken.mark(m.start(), m.end()):
            cues.append(Cue(m.start(), m.end(), "visit", "latest"))
    return cues


def _domain_and_item_cues(text: str, taken: _Taken) -> list[Cue]:
    cues = []
    # an ASCII text is matched only by patterns whose words it contains (lower-cased): skip the
    # others without running them (same cues, a fraction of the regex scans)
    low = text.lower() if text.isascii() else None
    # the words of every phrase that occur in the text, found once (not once per phrase)
    present = _present_item_words(low) if low is not None else frozenset()
    vocab, literals, needs = item_vocabulary(), item_literals(), _item_word_sets()
    # the phrases one of whose words occurs (by a word -> phrases index), in vocabulary order
    order = range(len(vocab)) if low is None else _phrases_with_words(present)
    for i in order:
        (pat, codes, doms), words, need = vocab[i], literals[i], needs[i]
        if low is not None and not need <= present:
            continue
        for m in _item_matches(pat, text, low, words):
            if taken.mark(m.start(), m.end()):
                cues.append(Cue(m.start(), m.end(), "item", (codes, doms, m.group())))
    if not literal_scan.may_match(_DOMAIN_NEEDLE, text, low):
        return cues
    for pat, dom in DOMAIN_RE:
        for m in literal_scan.finditer(pat, text, low):
            if taken.mark(m.start(), m.end()):
                cues.append(Cue(m.start(), m.end(), "domain", dom))
    return _pdq_totals(text, cues)


#: what may stand between "the PDQ-8 items" and the bare "total" that sums them: no sentence end,
#: no other scale or part
_NOT_PDQ_GAP = re.compile(r"[.!?]\s|\bupdrs\b|\bparts?\b|\bmotor\b", re.I)


def _pdq_totals(text: str, cues: list[Cue]) -> list[Cue]:
    """A bare "total" after a PDQ-8 cue of its sentence, with no other domain between ("endorsed
    none of the eight PDQ-8 items, giving a total of 0"), is the PDQ-8's total, not the UPDRS
    total."""
    doms = sorted((c for c in cues if c.kind == "domain"), key=lambda c: c.start)
    swap: dict[int, Cue] = {}
    for prev, c in zip(doms, doms[1:], strict=False):
        if c.value != "total" or text[c.start : c.end].lower() != "total" or prev.value != "qol":
            continue
        if "pdq" in text[prev.start : prev.end].lower() and not _NOT_PDQ_GAP.search(
            text, prev.end, c.start
        ):
            swap[c.start] = Cue(c.start, c.end, "domain", "qol")
    return [swap.get(c.start, c) if c.kind == "domain" else c for c in cues]


@cache
def _item_word_sets() -> tuple[frozenset[str], ...]:
    return tuple(frozenset(words) for words in item_literals())


@cache
def _phrases_by_word() -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
    """(word -> the item phrases whose first word it is, the phrases without a word)."""
    by: dict[str, list[int]] = {}
    bare: list[int] = []
    for i, words in enumerate(item_literals()):
        if words:
            by.setdefault(words[0], []).append(i)
        else:
            bare.append(i)
    return {w: tuple(v) for w, v in by.items()}, tuple(bare)


def _phrases_with_words(present: frozenset[str]) -> list[int]:
    """The phrases that can match a text with the words `present`: those whose first word is
    present and those without words, in vocabulary order (which decides a span's cue)."""
    by, bare = _phrases_by_word()
    out = list(bare)
    for w in present:
        out.extend(by.get(w, ()))
    out.sort()
    return out


@cache
def _item_words() -> frozenset[str]:
    return frozenset(w for words in item_literals() for w in words)


@cache
def _item_word_runs() -> re.Pattern[str]:
    """Runs of the characters item words are made of: an item word found in a text lies inside
    one run (it has no other character), so the words of a text are those of its runs."""
    chars = "".join(sorted(set("".join(_item_words()))))
    return re.compile(f"[{re.escape(chars)}]+")


@lru_cache(maxsize=16384)
def _item_words_in(run: str) -> frozenset[str]:
    return frozenset(w for w in _item_words() if w in run)


def _present_item_words(low: str) -> frozenset[str]:
    """The item words that occur in the lower-cased text (`{w for w in words if w in low}`),
    found run by run; a run's words are cached (texts repeat their runs: "motor", "visit")."""
    out: set[str] = set()
    for run in set(_item_word_runs().findall(low)):
        out |= _item_words_in(run)
    return frozenset(out)


def _item_matches(
    pat: re.Pattern[str], text: str, low: str | None, words: tuple[str, ...]
) -> list[re.Match[str]]:
    """The matches `pat.finditer(text)` yields, found faster in a long ASCII text: every match of
    an item phrase starts with the phrase's first word (words[0], lower-cased), so the pattern is
    tried only where that word occurs (lookbehinds still see the text before), left to right,
    without overlaps, exactly as finditer scans."""
    if low is None or not words or not pat.pattern.startswith(_ITEM_PREFIX + re.escape(words[0])):
        return list(pat.finditer(text))
    out, pos, first = [], 0, words[0]
    i = low.find(first)
    while i >= 0:
        if i >= pos and (m := pat.match(text, i)) is not None:
            out.append(m)
            pos = m.end()
        i = low.find(first, i + 1)
    return out


_ITEM_PREFIX = r"(?<![\w-])"
_DOMAIN_PATTERNS = tuple(p for p, _d in DOMAIN_RE)
_PATIENT_PATTERNS = (PATIENTS_RE, PATIENT_RE)
#: the pretests of the two groups (literal_scan.may_match), built once at import
_DOMAIN_NEEDLE = literal_scan.group_needle(_DOMAIN_PATTERNS)
_PATIENT_NEEDLE = literal_scan.group_needle(_PATIENT_PATTERNS)
_PUNCT = re.compile(r"[();]")
_PUNCTUATION = {"(": "paren_open", ")": "paren_close", ";": "semicolon"}


def item_cues(text: str) -> list[tuple[int, int, Any]]:
    """(start, end, value) of each item cue of `text`, at the text's offsets: the paragraphs'
    item cues, without building the text's other cues (coverage and the flag-list check read only
    these)."""
    return [
        (c.start + p0, c.end + p0, c.value)
        for p0, para in paragraphs(text)
        for c in _paragraph_cues(para)
        if c.kind == "item"
    ]


def find_cues(text: str) -> list[Cue]:
    """Every cue of `text`, in text order (patients, then visits, items and domains claim their
    spans in that order of precedence; punctuation inside a cue is not a cue). Computed once per
    text within an engine run (run_memo); the list is the caller's own."""
    return list(_find_cues(text))


@memoised
def _find_cues(text: str) -> tuple[Cue, ...]:
    """The cues of each paragraph (paragraphs.py: a reading is local to a paragraph), shifted to
    its offset."""
    out: list[Cue] = []
    for p0, para in paragraphs(text):
        cues = _paragraph_cues(para)
        out.extend(cues if p0 == 0 else (_shifted(c, p0) for c in cues))
    return tuple(out)


def _shifted(c: Cue, d: int) -> Cue:
    out = object.__new__(Cue)
    out.__dict__.update(c.__dict__)  # the value is shared: cues are read-only
    out.start, out.end = c.start + d, c.end + d
    if c.num_spans:
        out.num_spans = tuple([(a + d, b + d) for a, b in c.num_spans])
    return out


@memoised
def _paragraph_cues(text: str) -> tuple[Cue, ...]:
    taken = _Taken(len(text))
    low = text.lower() if text.isascii() else None
    cues = _patient_cues(text, taken, low) + _visit_cues(text, taken, low)
    cues += _domain_and_item_cues(text, taken)
    for m in _PUNCT.finditer(text):
        if not taken.flags[m.start()]:
            cues.append(Cue(m.start(), m.end(), _PUNCTUATION[m.group()]))
    cues.sort(key=lambda c: (c.start, c.end))
    return tuple(cues)


#: one scan that matches where any of the kind patterns does (an alternation matches at some
#: position iff one of its alternatives does there): the ordered loop runs only after a hit
_ANY_KIND_AFTER = re.compile("|".join(f"(?:{p.pattern})" for p, _ in KIND_AFTER), re.I)
_ANY_KIND_BEFORE = re.compile("|".join(f"(?:{p.pattern})" for p, _ in KIND_BEFORE), re.I)
_ANY_KIND_AFTER_LOW = literal_scan.lowered(_ANY_KIND_AFTER)
_ANY_KIND_BEFORE_LOW = literal_scan.lowered(_ANY_KIND_BEFORE)
_REF_BEFORE_LOW = literal_scan.lowered(REF_BEFORE_RE)


def _any_kind(pattern: re.Pattern[str], lowered: re.Pattern[str], window: str) -> bool:
    """Whether `pattern` (case-insensitive) matches somewhere in the window (see
    literal_scan.lowered)."""
    if window.isascii():
        return lowered.search(window.lower()) is not None
    return pattern.search(window) is not None


def _ref_before(window: str) -> bool:
    """Whether the window ends with a reference word ("from", "since", "compared with")."""
    return _any_kind(REF_BEFORE_RE, _REF_BEFORE_LOW, window)


def kind_for(
    tok: NumberToken, text: str, s_start: int, prev_end: int, next_start: int
) -> tuple[str | None, str]:
    """(the kind cue of a number, the window after it that was read for one)."""
    ranked = text[max(s_start, tok.start - 40) : tok.start]
    if ":" in ranked and _RANKED_BEFORE.search(ranked):  # the pattern needs a colon
        return "ranked", ""
    window = text[tok.end : min(next_start, tok.end + 60)]
    cut = _AFTER_END.search(window)
    after = window[: cut.start()] if cut else window
    before = text[max(s_start, prev_end, tok.start - 50) : tok.start]
    if _any_kind(_ANY_KIND_AFTER, _ANY_KIND_AFTER_LOW, after):
        for pat, k in KIND_AFTER:
            if pat.search(after):
                return k, after
    if _any_kind(_ANY_KIND_BEFORE, _ANY_KIND_BEFORE_LOW, before):
        for pat, k in KIND_BEFORE:
            if pat.search(before):
                return k, after
    by_token = {"percent": "percent", "ordinal": "rank"}
    if tok.kind in by_token:
        return by_token[tok.kind], after
    return ("change" if tok.signed else None), after


def next_domain(text: str, s_cues: list[Cue], c: Cue, default: str | None) -> str | None:
    """The domain a visit mention introduces: the first domain cue after it, before the next
    visit or patient cue of the sentence ("visit 1 (date), ADL = 23"); else the running one."""
    for o in s_cues:
        if o.start <= c.start:
            continue
        if o.kind in ("visit", "patient", "patients"):
            break
        if o.kind == "domain":
            gap = _PAREN_GROUP.sub("", text[c.end : o.start])
            return o.value if _GAP_PUNCT.fullmatch(gap) else default
    return default


def clause_patient(s_cues: list[Cue], pos: int, default: int | None) -> int | None:
    """The first patient cue of the clause starting at `pos` (up to ";" or sentence end) governs
    the clause from its start ("rank 2: patient 7, 18"); else the running patient."""
    for c in s_cues:
        if c.start < pos:
            continue
        if c.kind == "semicolon":
            break
        if c.kind == "patient":
            return c.value
        if c.kind == "patients":
            return None
    return default
