"""`marag search` and `marag similar`: parse their flags, call engine.search / engine.similar,
print text or JSON (DESIGN.md contracts: `hits` [{patient, date, instrument, doc_id, score, why,
snippet}], `patients` [{patient, distance, features}]). Errors raise ValueError; engine.cli prints
one line and exits 2."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
from collections.abc import Callable
from typing import Any

from engine.config import Config
from engine.query_input import check_search_text

_ITEM_MIN = re.compile(r"^\s*(.+?)\s*>=\s*(\d+(?:\.\d+)?)\s*$")


def add_parsers(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    s = sub.add_parser("search", help="free-text hybrid search over sessions and clinician notes")
    s.add_argument("text")
    s.add_argument("--patients", default=None, help="comma-separated proj ids, e.g. 3,8")
    s.add_argument("--instrument", choices=["updrs", "pdq8"], default=None)
    s.add_argument("--from", dest="date_from", default=None, help="first date, YYYY-MM-DD")
    s.add_argument("--to", dest="date_to", default=None, help="last date, YYYY-MM-DD")
    s.add_argument(
        "--item",
        action="append",
        default=None,
        help="item filter CODE>=VALUE (code or label), e.g. FALL_PROB>=2; repeatable",
    )
    s.add_argument("--k", type=int, default=10)
    s.add_argument("--system", choices=["hybrid", "bm25", "dense", "bm25+dense"], default="hybrid")
    s.add_argument("--json", action="store_true")
    common(s)
    m = sub.add_parser("similar", help="the patients most similar to one (descriptive)")
    m.add_argument("patient", help="proj id")
    m.add_argument("--k", type=int, default=5)
    m.add_argument("--instrument", choices=["updrs", "pdq8"], default=None)
    m.add_argument("--json", action="store_true")
    common(m)


def _ids(text: str | None) -> tuple[int, ...]:
    out = []
    for tok in (text or "").split(","):
        tok = tok.strip()
        if not tok:
            continue
        if not tok.isdigit():
            raise ValueError(f"--patients must be comma-separated integer ids, got {tok!r}")
        out.append(int(tok))
    return tuple(out)


def _date(flag: str, text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        raise ValueError(f"{flag} must be a date YYYY-MM-DD, got {text!r}") from None


def filters_from_args(args: argparse.Namespace) -> Any:
    from engine.search import SearchFilters

    items = []
    for raw in args.item or ():
        m = _ITEM_MIN.match(raw)
        if not m:
            raise ValueError(f"--item must look like CODE>=VALUE (e.g. FALL_PROB>=2), got {raw!r}")
        items.append((m.group(1), float(m.group(2))))
    f = SearchFilters(
        patients=_ids(args.patients),
        instrument=args.instrument,
        date_from=_date("--from", args.date_from),
        date_to=_date("--to", args.date_to),
        item_min=tuple(items),
    )
    if f.date_from and f.date_to and f.date_from > f.date_to:
        raise ValueError(f"--from {f.date_from} is after --to {f.date_to}")
    return f


def _open_kb(cfg: Config) -> Any:
    from engine.engine_factory import open_kb

    return open_kb(cfg)


def search(args: argparse.Namespace, cfg: Config) -> int:
    from engine.search import SearchIndex

    check_search_text(args.text)  # before the index is built
    filters = filters_from_args(args)
    if args.k < 1:
        raise ValueError(f"--k must be at least 1, got {args.k}")
    index = SearchIndex.from_kb(_open_kb(cfg))
    hits = index.search(args.text, filters, k=args.k, system=args.system)
    if args.json:
        print(
            json.dumps(
                {"query": args.text, "system": args.system, "hits": [h.to_json() for h in hits]}
            )
        )
        return 0
    if not hits:
        print("no session matches the filters")
        return 0
    for n, h in enumerate(hits, start=1):
        print(
            f"{n:2d}. patient {h.patient}, visit {h.visit}, {h.date}, {h.instrument} "
            f"[{h.doc_id}] score {h.score:.3f}"
        )
        print(f"    why: {h.why}")
        print(f"    {h.snippet}")
    return 0


def similar(args: argparse.Namespace, cfg: Config) -> int:
    from engine.similar import kb_facts, similar_patients

    if not str(args.patient).strip().isdigit():
        raise ValueError(f"patient must be an integer id, got {args.patient!r}")
    result = similar_patients(
        kb_facts(_open_kb(cfg)), int(args.patient), k=args.k, instrument=args.instrument
    )
    if args.json:
        print(json.dumps(result.to_json()))
        return 0
    inst = f" ({args.instrument})" if args.instrument else ""
    print(f"Patients most similar to patient {result.patient}{inst}:")
    if not result.neighbours:
        print("  none: no other patient shares enough features")
    for n, nb in enumerate(result.neighbours, start=1):
        print(
            f"{n}. patient {nb.patient}: distance {nb.distance:.3f} over "
            f"{len(nb.features)} shared features ({nb.sessions} sessions); closest: {nb.reasons()}"
        )
    print(result.note)
    return 0
