"""`marag plan`, `marag ask` and `marag report`: parse flags, run the engine, print text or JSON
or write the printable report.

Flags given to `ask` (--patients, --analysis, --instruments, --visits) override the rules-parsed
plan; the engine then runs that plan without a planner node.
Errors a user can fix raise ValueError / FileNotFoundError; engine.cli prints them as one line and
exits 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any

from engine.config import Config
from engine.types import Plan

log = logging.getLogger("marag.query")


def _csv_ints(text: str) -> tuple[int, ...]:
    from engine.query_input import parse_patient_list

    return parse_patient_list(text)


def _csv(text: str) -> tuple[str, ...]:
    return tuple(t.strip().lower() for t in text.split(",") if t.strip())


def _known_ids(cfg: Config) -> list[int] | None:
    try:
        from engine.engine_factory import open_kb

        return open_kb(cfg).patient_ids()
    except (ImportError, FileNotFoundError):
        return None


def plan(args: argparse.Namespace, cfg: Config) -> int:
    """Print the plan for a query. Checks ids against the KB when one exists."""
    from engine.plan import check_patients, parse_query
    from engine.query_input import check_query

    check_query(args.query)
    engine_plan = None
    if cfg.planner == "llm" and cfg.llm != "facts":
        from engine.engine_factory import open_engine

        engine_plan = open_engine(cfg).plan(args.query)
    p = engine_plan or parse_query(check_query(args.query))
    known = None if engine_plan else _known_ids(cfg)
    if known is not None:
        check_patients(p, known)
    d = p.to_dict()
    if getattr(args, "json", False):
        print(json.dumps(d))
    else:
        pats = ", ".join(map(str, d["patients"])) or "all patients in the knowledge base"
        print(
            f"patients:     {pats}\nanalysis:     {d['analysis']}\n"
            f"instruments:  {', '.join(d['instruments'])}\nvisit filter: {d['visit_filter']}"
        )
        if known is None:
            print("(no knowledge base found: patient ids not checked)", file=sys.stderr)
    return 0


def plan_from_args(args: argparse.Namespace, parsed: Plan | None) -> Plan | None:
    """The parsed plan with command-line overrides applied (None when nothing to override)."""
    over: dict[str, Any] = {}
    if getattr(args, "patients", None) is not None:  # "" or "," is an error, never "all"
        over["patients"] = _csv_ints(args.patients)
    if getattr(args, "analysis", None):
        over["analysis"] = args.analysis
    if getattr(args, "instruments", None):
        over["instruments"] = _csv(args.instruments)
    if getattr(args, "visits", None):
        over["visit_filter"] = args.visits.strip().lower()
    if getattr(args, "statistic", None):
        over["statistic"] = args.statistic
        over.setdefault("analysis", "cohort")
    if not over:
        return parsed
    base = parsed.to_dict() if parsed else {}
    base.update({k: list(v) if isinstance(v, tuple) else v for k, v in over.items()})
    return Plan.from_dict(base, query=getattr(args, "query", "") or "")


def _release(args: argparse.Namespace, cfg: Config, action: str) -> tuple[Any, Any]:
    """Run the query or plan flags of `args` and record the result in the audit trail before
    anything is shown or written; (result, audit entry)."""
    from engine.engine_factory import open_engine
    from engine.query_input import check_query

    query = check_query(getattr(args, "query", "") or "")
    if getattr(args, "patients", None) is not None:
        _csv_ints(args.patients)  # a bad list is an error before the engine loads
    overrides = getattr(args, "patients", None) is not None or any(
        getattr(args, k, None) for k in ("analysis", "instruments", "visits", "statistic")
    )
    if not query and not overrides:
        raise ValueError(f"{action} needs a QUERY or plan flags (--patients, --analysis, ...)")
    engine = open_engine(cfg)
    started = time.perf_counter()
    if overrides:
        # plan flags given: the rules parser fills the other fields (no planner LLM call); ids are
        # checked once, on the final plan, so a flag can replace an id the query got wrong
        from engine.plan import parse_query

        parsed = parse_query(query) if query else None
        result = engine.ask(query, plan=plan_from_args(args, parsed))
    else:
        result = engine.ask(query)
    # --- audit trail: every released result is recorded before it is shown ---
    from engine.audit import record

    entry = record(cfg, "ask", user=getattr(args, "user", None), result=result, plan=result.plan)
    print(f"[audit entry #{entry.id}]", file=sys.stderr)
    log.info(
        "%s: %s for patients %s in %.2f s (%s backend, %d model calls), audit entry #%d",
        action,
        result.plan.analysis,
        list(result.plan.patients) or "all",
        time.perf_counter() - started,
        result.backend,
        result.llm_calls,
        entry.id,
    )
    return result, entry


def report(args: argparse.Namespace, cfg: Config) -> int:
    """`marag report`: run as `ask`, record the release, write the printable report to --out."""
    from pathlib import Path

    from engine.report import render

    out = Path(args.out)
    if not out.parent.is_dir():
        raise FileNotFoundError(f"report --out: folder {out.parent} does not exist")
    result, entry = _release(args, cfg, "report")
    data = render(
        result,
        args.format,
        kb_generation=entry.kb_generation,
        user=entry.user,
        review_status=f"not reviewed (audit entry #{entry.id})",
    )
    out.write_bytes(data)
    print(f"wrote {out} ({args.format}, {len(data):,} bytes)", file=sys.stderr)
    return 0


def ask(args: argparse.Namespace, cfg: Config) -> int:
    result, _entry = _release(args, cfg, "ask")
    if getattr(args, "json", False):
        print(json.dumps(result.to_json(), default=str))
        return 0
    print(result.summary)
    flags = result.flags
    if flags.get("incongruence") or flags.get("red_flags"):
        print("\nFlags:")
        for r in flags.get("incongruence", []):
            print(
                f"  incongruence: patient {r['patient']}, visit {r['visit']}: {r['domain']} = "
                f"{r['values'][r['domain']]:g} while {r['elevated_domain']} = "
                f"{r['values'][r['elevated_domain']]:g} (cut-off {r['cutoff']:g})"
            )
        for r in flags.get("red_flags", []):
            print(
                f"  red flag: patient {r['patient']}, visit {r['visit']}: {r['item']} "
                f"({r['item_label']}) = {r['value']:g} >= {r['threshold']:g} [{r['source']}]"
            )
    v = result.verification
    print(
        f"\n[{result.backend}; {result.llm_calls} LLM call(s); numbers checked {v.get('numbers', 0)}, "
        f"unsupported {len(v.get('unsupported', []))}, fallback used: {v.get('fallback_used')}]"
    )
    return 0
