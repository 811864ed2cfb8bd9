"""The character automaton of citation-safe decoding: citation markers and the numbers of the
clauses they cite (the rule of engine.llm.cite_markers, followed while the text is written).

A row that may cite statements (`LLMRequest.citable`) is in one of two modes:
- text: the number automaton of engine.llm.number_safe (`advance`) runs against the numbers of
  the current scope: the request's `allowed_numbers` before a sentence's first marker (None = any
  number), the union of the cited statements' numbers after a marker's ']' up to the next '[' or
  the end of the sentence; a '[' always opens a marker; with `lead` (the local backend's rows),
  a sentence may write nothing but whitespace before its first marker, so every sentence cites;
  with `order` as well (the local backend's rows), the first id of the n-th sentence's opening
  marker is the n-th statement the prompt lists, and after the last one the text may only end:
  one sentence per listed statement, in the prompt's order (a small model otherwise copies the
  line nearest the end of its prompt, again and again);
- marker: after '[' only "S", then digits forming a prefix of a citable id, then ',' (optionally
  one space) and another id, or ']' once the digits form a complete citable id. Marker digits are
  not numbers: they never touch the number state.

The sentence end is found as cite_markers reads it: a '.', '!' or '?' that is not a decimal point,
followed by whitespace (the pending `stop` flag below), or a newline.

Tokens are simulated over a skeleton (`cite_skeleton`) that keeps what the automaton reads:
digits, '.', '[', ']', 'S', ',', '!' (for '!' and '?'), ' ' (one whitespace character), '  ' (a
longer run), 'n' (a newline run), 'x' for any run of other characters, and 'e' for a token
with no text (the end of sequence: it may end the text between sentences). SmolLM2's 49,152
entries share a few hundred such skeletons.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from engine.llm.number_safe import NumberSet, normalise_allowed

#: characters kept as themselves in a skeleton ('?' is kept as '!')
_KEPT = frozenset("0123456789.[]S,!")


def cite_skeleton(text: str) -> str:
    """Reduce a token's text to what the citation automaton reads (an empty text is 'e')."""
    out: list[str] = []
    for ch in text:
        if ch in _KEPT or ch == "?":
            out.append("!" if ch == "?" else ch)
        elif ch == "\n" or ch == "\r":
            if not out or out[-1] != "n":
                out.append("n")
        elif ch.isspace():
            if out and out[-1] == " ":
                out[-1] = "  "
            elif not out or out[-1] != "  ":
                out.append(" ")
        elif not out or out[-1] != "x":
            out.append("x")
    return "".join(out) if out else "e"


class CiteState(NamedTuple):
    """Where a citable row is: the open number (as in number_safe.advance, "" when none), the
    marker's inside so far (None outside a marker), the cited ids of the current scope (None
    before a sentence's first marker), whether a sentence-ending mark was just written and how
    many sentences have opened with a marker (`led`, counted only with an `order`)."""

    num: str = ""
    marker: str | None = None
    scope: frozenset[str] | None = None
    stop: bool = False
    led: int = 0


START = CiteState()


@dataclass
class CiteSets:
    """One row's sets: the numbers outside any scope (None = unconstrained), each citable id's
    numbers, and the union per cited-id set (made on first use)."""

    allowed: NumberSet | None
    cited: dict[str, frozenset[str]]
    lead: bool = False  # every sentence opens with a marker
    #: with `lead`: the ids the sentences' opening markers name first, one per sentence, in order
    order: tuple[str, ...] = ()
    id_prefixes: frozenset[str] = field(init=False)
    _unions: dict[frozenset[str], NumberSet] = field(init=False, default_factory=dict)
    horizon: int = field(init=False)

    def __post_init__(self) -> None:
        self.id_prefixes = frozenset(i[:k] for i in self.cited for k in range(1, len(i) + 1))
        # characters beyond which a length limit cannot matter for a state: the longest number
        # of any set, or the longest marker closing ("S" + id digits + "]")
        longest = max((len(n) for nums in self.cited.values() for n in nums), default=0)
        allowed = self.allowed.longest if self.allowed is not None else 0
        ids = max((len(i) for i in self.cited), default=0) + 2
        self.horizon = max(longest, allowed, ids)

    @classmethod
    def of(
        cls,
        allowed: Iterable[str] | None,
        citable: Iterable[tuple[str, Iterable[str]]],
        lead: bool = False,
        ordered: bool = False,
    ) -> CiteSets:
        """The sets of a request's `allowed_numbers` and `citable` (normalised here); `ordered`
        (with `lead`): one sentence per citable id, in `citable`'s order."""
        numbers = None if allowed is None else NumberSet(normalise_allowed(allowed))
        cited: dict[str, set[str]] = {}
        for sid, nums in citable:
            cited.setdefault(sid, set()).update(normalise_allowed(nums))
        lead = lead and bool(cited)
        order = tuple(cited) if lead and ordered else ()
        return cls(numbers, {k: frozenset(v) for k, v in cited.items()}, lead, order)

    def opening(self, state: CiteState) -> str | None:
        """The id the opening marker of `state`'s sentence must name first (None: any id;
        "" once every listed statement has its sentence)."""
        if not self.order:
            return None
        return self.order[state.led] if state.led < len(self.order) else ""

    def numbers(self, scope: frozenset[str] | None) -> NumberSet | None:
        """The numbers the text may write in `scope` (None = any number)."""
        if scope is None:
            return self.allowed
        got = self._unions.get(scope)
        if got is None:
            got = NumberSet(frozenset().union(*(self.cited.get(i, frozenset()) for i in scope)))
            self._unions[scope] = got
        return got


def _closed(num: str, numbers: NumberSet | None) -> bool:
    return numbers is None or numbers.is_closed(num)


def _digit(num: str, ch: str, numbers: NumberSet | None) -> str | None:
    """The number after one more digit (an unconstrained number keeps only its shape)."""
    if numbers is None:
        return "0" if not num or num == "0" else ("0.0" if "." in num else "0")
    nxt = num + ch
    return nxt if nxt in numbers.prefixes else None


def _dot(state: CiteState, numbers: NumberSet | None) -> CiteState | None:
    """A '.' outside a marker: a pending decimal point after an integer, else punctuation."""
    num = state.num
    if not num or "." in num:  # punctuation (after "2.5" or "14." the number ends first)
        if num and not _closed(num, numbers):
            return None
        return state._replace(num="", stop=True)
    if numbers is None or num + "." in numbers.prefixes or num in numbers.complete:
        return state._replace(num=num + ".")
    return None


def _in_marker(state: CiteState, ch: str, sets: CiteSets) -> CiteState | None:
    """One symbol inside a marker: 'S' to start an id, its digits, ',' or ' ' between ids, ']'."""
    inner = state.marker or ""
    current = inner.rsplit(",", 1)[-1].strip()
    first = sets.opening(state) if state.scope is None and "," not in inner else None
    if ch == "S":
        ok = current == "" and (inner == "" or inner.endswith((",", ", ")))
        return state._replace(marker=inner + "S") if ok else None
    if "0" <= ch <= "9":
        nxt = current + ch
        if first is not None:
            return state._replace(marker=inner + ch) if first.startswith(nxt) else None
        return state._replace(marker=inner + ch) if nxt in sets.id_prefixes else None
    complete = current in sets.cited and (first is None or current == first)
    if ch == ",":
        return state._replace(marker=inner + ",") if complete else None
    if ch == " ":
        return state._replace(marker=inner + " ") if inner.endswith(",") else None
    if ch == "]" and complete:
        ids = frozenset(x.strip() for x in inner.split(","))
        return CiteState(scope=ids, led=state.led + (state.scope is None and bool(sets.order)))
    return None


def _in_text(state: CiteState, ch: str, sets: CiteSets) -> CiteState | None:
    """One symbol outside a marker, against the current scope's numbers."""
    if sets.lead and state.scope is None and ch not in ("[", " ", "  ", "n", "e"):
        return None  # a sentence's words come after its first marker
    if state.scope is None and sets.opening(state) == "" and ch != "e":
        return None  # every listed statement has its sentence: the text ends
    numbers = sets.numbers(state.scope)
    if "0" <= ch <= "9":
        nxt = _digit(state.num, ch, numbers)
        return None if nxt is None else state._replace(num=nxt, stop=False)
    if ch == ".":
        return _dot(state, numbers)
    if state.num and not _closed(state.num, numbers):
        return None  # any other symbol ends the number: it must be complete
    ends_sentence = state.stop or state.num.endswith(".")
    if ch == "[":  # a marker opens (only where there is something to cite)
        return CiteState(marker="", scope=state.scope, led=state.led) if sets.cited else None
    if ch == "!":
        return CiteState(scope=state.scope, stop=True, led=state.led)
    if ch == "n" or (ch in (" ", "  ") and ends_sentence):
        return CiteState(led=state.led)
    return CiteState(scope=state.scope, led=state.led)


def advance_cite(state: CiteState, skel: str, sets: CiteSets) -> CiteState | None:
    """Apply a token skeleton to a citable row's state; None when the token must be masked."""
    i = 0
    while state is not None and i < len(skel):
        ch = skel[i]
        if ch == " " and skel.startswith("  ", i):
            ch = "  "
        i += len(ch)
        state = _in_text(state, ch, sets) if state.marker is None else _in_marker(state, ch, sets)
    return state


def chars_to_close(state: CiteState, sets: CiteSets) -> int:
    """Fewest characters still needed before the row may stop: the rest of an open marker (an id
    and ']'), or the rest of an open number (0 when neither is open)."""
    if state.marker is not None:
        inner = state.marker
        current = inner.rsplit(",", 1)[-1].strip()
        if not current:  # after '[' or ',' (+ ' '): "S" + the shortest id's digits + "]"
            return min(len(i) for i in sets.cited) + 1 if sets.cited else 1
        rest = [len(i) - len(current) for i in sets.cited if i.startswith(current)]
        return min(rest, default=0) + 1
    numbers = sets.numbers(state.scope)
    return 0 if numbers is None else numbers.chars_to_close(state.num)
