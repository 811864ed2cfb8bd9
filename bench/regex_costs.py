"""Where the grounding check's regex time goes, pattern by pattern.

Every compiled pattern held by a module of `engine.grounding` (and the `(pattern, label)` tuples
of its vocabularies) is replaced by a timing proxy for one pass of questions; the script prints
each pattern's total time, calls and time per call. The proxies add about a microsecond per call,
and wall time on the shared VM moves with its pace: use the ranking to find candidates, then
confirm a change with instruction counts (`bench/facts_pass.py` under valgrind), which are
deterministic. A pattern that `re` tries at every position of a text (no literal prefix, or
case-insensitive alternatives that begin with `\\b`) shows up here as a high cost per call.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/regex_costs.py /tmp/bench-facts/kb44 traj
(groups as in facts_pass.py: traj, comp, cohort; the KB is one built by bench_facts.py)
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import engine.grounding as grounding
from engine.config import Config
from engine.pipeline import Engine
from kb_store.chroma_reader import open_kb

sys.path.insert(0, str(Path(__file__).parent))
from facts_pass import plans  # noqa: E402

TOTAL: Counter[str] = Counter()
CALLS: Counter[str] = Counter()


class _Timed:
    """A compiled pattern's stand-in that times its scanning methods."""

    def __init__(self, pat: re.Pattern[str], name: str):
        self._p, self._name = pat, name
        self.pattern, self.flags = pat.pattern, pat.flags
        self.groupindex, self.groups = pat.groupindex, pat.groups

    def _timed(self, meth: str, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        out = getattr(self._p, meth)(*a, **k)
        if meth == "finditer":
            out = iter(list(out))  # the scan happens here, inside the timing
        TOTAL[self._name] += time.perf_counter() - t
        CALLS[self._name] += 1
        return out


for _meth in ("search", "match", "fullmatch", "finditer", "findall", "sub", "split"):
    setattr(_Timed, _meth, lambda self, *a, _m=_meth, **k: self._timed(_m, *a, **k))


def _instrument() -> None:
    mods = [
        importlib.import_module(f"engine.grounding.{m.name}")
        for m in pkgutil.iter_modules(grounding.__path__)
    ]
    proxies: dict[int, _Timed] = {}
    for m in mods:
        short = m.__name__.rsplit(".", 1)[-1]
        for name, val in list(vars(m).items()):
            if isinstance(val, re.Pattern):
                setattr(m, name, proxies.setdefault(id(val), _Timed(val, f"{short}.{name}")))
            elif (
                isinstance(val, tuple)
                and val
                and all(
                    isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], re.Pattern)
                    for x in val
                )
            ):
                setattr(
                    m,
                    name,
                    tuple(
                        (proxies.setdefault(id(p), _Timed(p, f"{short}.{name}[{lab}]")), lab)
                        for p, lab in val
                    ),
                )


def main() -> None:
    kb_dir, group = Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "traj"
    kb = open_kb(kb_dir, embedding="hashing")
    eng = Engine(Config.load({"kb_dir": kb_dir, "embedding": "hashing"}, env={}), kb, None)
    todo = plans(kb.patient_ids(), group)
    for plan in todo:  # warm-up, before the proxies (imports, caches)
        eng.run(plan)
    _instrument()
    t = time.perf_counter()
    for plan in todo:
        eng.run(plan)
    ms = (time.perf_counter() - t) * 1000
    print(
        f"pass {ms:.0f} ms ({len(todo)} questions), timed regex {sum(TOTAL.values()) * 1000:.0f} ms"
    )
    for name, s in TOTAL.most_common(25):
        print(f"{s * 1000:7.1f} ms {CALLS[name]:7d} calls {s * 1e6 / CALLS[name]:7.1f} us  {name}")


if __name__ == "__main__":
    main()
