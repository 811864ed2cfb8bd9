"""Regex scans tried only where a match can start.

Python's `re` tries a pattern at every position of a text when the pattern begins with an
assertion (`\\b`, a look-behind): most of the claim reader's patterns do, and those scans were a
large part of a claim check. Every match of such a pattern starts with the literal
prefix of one of its alternatives ("motor", "part", "updrs"); in an ASCII text, lower-cased, those
prefixes are found with `str.find`, and the pattern is tried only there, left to right and without
overlaps, exactly as `finditer` scans (look-behinds and `\\b` still see the text before each
position). A pattern with an alternative that has no literal prefix is scanned as before.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from functools import lru_cache
from re import _constants as _sre  # the parsed form, to read literal prefixes
from re._parser import parse as _sre_parse
from typing import Any

from engine.grounding import run_memo

_ASSERTS = (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT)


def first_literals(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """The lower-cased literal prefixes one of which every match of `pattern` starts with (None
    when some alternative has none). Only for case-insensitive or letter-free prefixes: with a
    case-sensitive pattern a lower-cased prefix would also find other cases (harmless: the
    pattern is still tried), so the set stays a superset of the starts."""
    return _source_prefixes(pattern.pattern, pattern.flags)


@lru_cache(maxsize=8192)
def _source_prefixes(source: str, flags: int) -> tuple[str, ...] | None:
    """`first_literals` of the pattern compiled from `source` and `flags`, once per pattern: it
    is keyed by the source and flags (a str caches its hash), not by the compiled pattern, whose
    hash covers its whole code (microseconds for the content patterns)."""
    out = _prefixes(_sre_parse(source, flags).data)
    if any(not p for p in out):
        return None
    return tuple(sorted(set(out)))  # empty: no alternative can start in an ASCII text


def _outer_items(part: str) -> list[Any]:
    """The parsed sequence of `part` (read case-insensitively), inside a group that is all of it."""
    items = list(_sre_parse(part, re.I).data)
    while True:
        core = [(op, av) for op, av in items if op not in _ASSERTS]
        if len(core) == 1 and core[0][0] is _sre.SUBPATTERN:
            items = list(core[0][1][-1].data)
            continue
        return items


def required_literal(part: str) -> str:
    """The longest run of ASCII literals (lower-cased) that every match of `part` (read
    case-insensitively) contains, looked for in its outer group ("mg" in "\\d+\\s?mg",
    "criteria" in "meets ... criteria"); "" if none. A text without it cannot match `part`."""
    items = _outer_items(part)
    runs, cur = [], []
    for op, av in items:
        if op is _sre.LITERAL and av < 128:
            cur.append(chr(av))
        else:
            runs.append("".join(cur))
            cur = []
    runs.append("".join(cur))
    return max(runs, key=len).lower()


def lowered(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """`pattern` (case-insensitive) without IGNORECASE, its letters lower-cased: on a lower-cased
    ASCII text it matches exactly where `pattern` matches the text, with the same spans (its
    upper-case letters must be literals such as "SI" or classes such as "[A-Za-z]", never escapes
    such as \\S, which lower-casing would change). `re` tries a case-insensitive pattern more
    slowly at each position: 1.5-2x for the kind-cue alternations of `\\b` branches."""
    if re.search(r"\\[A-Z]", pattern.pattern):
        raise ValueError(f"an upper-case escape cannot be lower-cased: {pattern.pattern[:80]}")
    return re.compile(pattern.pattern.lower(), pattern.flags & ~re.I)


def any_literals(part: str) -> tuple[str, ...]:
    """Literals (lower-cased) one of which every match of `part` (read case-insensitively)
    contains, from its outer sequence: the characters of a class of plain characters ("$" or
    "\u00a3" in "[$\u00a3\u20ac]\\s?\\d"), or the alternatives of a group of literal runs ("usd",
    "eur", "gbp" in "\\d\\s?(?:usd|eur|gbp)"); () if none. A character beyond ASCII is kept only
    when it has no case (no ASCII character matches it case-insensitively): an ASCII text never
    holds it, so an alternative needing it cannot match there."""
    items = _outer_items(part)
    for op, av in items:
        if op is _sre.IN:
            chars = [chr(a) for o, a in av if o is _sre.LITERAL]
            if chars and len(chars) == len(av) and all(_plain(c) for c in chars):
                return tuple(sorted({c.lower() for c in chars}))
        if op is _sre.SUBPATTERN:  # a capturing group of one branch
            sub = list(av[-1].data)
            op, av = sub[0] if len(sub) == 1 else (op, av)
        if op is _sre.BRANCH:  # (a non-capturing group is parsed into its sequence)
            runs = [_literal_run(alt.data) for alt in av[1]]
            if all(runs):
                return tuple(sorted({r.lower() for r in runs}))
    return ()


def _plain(c: str) -> bool:
    return c.isascii() or c.lower() == c.upper() == c


def _literal_run(items: Any) -> str:
    """The text of a sequence made only of plain literal characters, else ""."""
    out = []
    for op, av in items:
        if op is not _sre.LITERAL or not _plain(chr(av)):
            return ""
        out.append(chr(av))
    return "".join(out)


def _prefixes(items: Any) -> list[str]:
    """Literal prefixes of a parsed sequence: a run of literals, or, when it starts with a group
    or a branch, the prefixes of each alternative of that group (a match starts with one); an
    optional part at the start adds the prefixes of what follows it."""
    run: list[str] = []
    items = list(items)
    for i, (op, av) in enumerate(items):
        if op in _ASSERTS and not run:
            continue
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and not run and av[0] == 0:
            return _prefixes(av[2].data) + _prefixes(items[i + 1 :])
        if op is _sre.LITERAL and av < 128:
            run.append(chr(av))
            continue
        if op is _sre.LITERAL and not run and chr(av).lower() == chr(av).upper():
            return []  # a character without case beyond ASCII ("\u2265"): no ASCII text has it
        head = "".join(run).lower()
        if op is _sre.SUBPATTERN:  # the run, then each prefix of the group ("p" + "atients")
            return [head + p for p in _prefixes(av[-1].data)]
        if op is _sre.BRANCH:
            out: list[str] = []
            for alt in av[1]:
                out += [head + p for p in _prefixes(alt.data)]
            return out
        return [head]
    return ["".join(run).lower()]


def search(pattern: re.Pattern[str], text: str, low: str | None = None) -> re.Match[str] | None:
    """`pattern.search(text)`, tried only where a match can start (see the module docstring)."""
    prefixes = first_literals(pattern)
    if prefixes is None or not text.isascii():
        return pattern.search(text)
    for p in _starts(prefixes, text.lower() if low is None else low, 0, len(text)):
        m = pattern.match(text, p)
        if m is not None:
            return m
    return None


def _starts(prefixes: tuple[str, ...], low: str, pos: int, endpos: int) -> list[int]:
    starts: set[int] = set()
    for pre in prefixes:
        i = low.find(pre, pos, endpos)
        while i >= 0:
            starts.add(i)
            i = low.find(pre, i + 1, endpos)
    return sorted(starts)


def finditer(
    pattern: re.Pattern[str],
    text: str,
    low: str | None = None,
    pos: int = 0,
    endpos: int | None = None,
) -> list[re.Match[str]]:
    """The matches `pattern.finditer(text, pos, endpos)` yields (see the module docstring).
    `low`: the text lower-cased when it is ASCII (computed here when not given)."""
    end = len(text) if endpos is None else min(endpos, len(text))
    prefixes = first_literals(pattern)
    if prefixes is None or not text.isascii():
        return list(pattern.finditer(text, pos, end))
    if (pos or end < len(text)) and run_memo.active():
        # a window of a text scanned window by window (the sentences of a paragraph): the text's
        # starts found once per run, the window's taken by bisection (a start whose prefix runs
        # past the window end is tried and fails, as the truncated scan would not start there)
        every = run_memo.cached(
            ("literal_starts", prefixes, text),  # the starts depend on these two only
            lambda: _starts(prefixes, text.lower() if low is None else low, 0, len(text)),
        )
        starts = every[bisect_left(every, pos) : bisect_left(every, end)]
    else:
        starts = _starts(prefixes, text.lower() if low is None else low, pos, end)
    out, at = [], pos
    for p in starts:
        if p < at:
            continue
        m = pattern.match(text, p, end)
        if m is not None:
            out.append(m)
            at = m.end() if m.end() > p else p + 1
    return out


def group_needle(patterns: tuple[re.Pattern[str], ...]) -> re.Pattern[str] | None:
    """One pattern that finds, in a lower-cased ASCII text, any literal prefix of `patterns`
    (None when some pattern has no literal prefixes): built once per group, at import, by the
    module that scans the group (`may_match`)."""
    prefixes: set[str] = set()
    for p in patterns:
        got = first_literals(p)
        if got is None:
            return None
        prefixes.update(got)
    if not prefixes:
        return None
    return re.compile("|".join(re.escape(x) for x in sorted(prefixes, key=len, reverse=True)))


def may_match(needle: re.Pattern[str] | None, text: str, low: str | None) -> bool:
    """False only when none of the patterns of `needle` (`group_needle`) can match the ASCII
    text: none of their literal prefixes occurs in it (one scan for the group; a pretest before
    scanning each pattern)."""
    if low is None or not text.isascii():
        return True
    return needle is None or needle.search(low) is not None
