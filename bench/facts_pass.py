"""One pass of facts-backend questions over a bench KB, for instruction counts.

Wall time on the shared 2-core VM moves by up to 1.5x between identical runs; the number of
instructions a pass executes does not. Run under valgrind with 0 and with 1 extra pass; the
difference is one pass of the questions (KB open, imports and a warm-up pass cancel out):

    PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \\
        .venv/bin/python bench/facts_pass.py /tmp/bench-facts/kb44 traj 0
    (the same with a last argument of 1; "I refs" of the second minus the first)

Repeated counts of the same code still differ by up to ~2 % (one:17: 1,189 and 1,213 M):
dictionaries keyed by id() follow the addresses. Treat single differences under ~3 % as noise.

Groups: traj (20 trajectory questions, every n/20-th patient), comp (20 comparisons), cohort
(the bench's three cohort questions), one:P (five trajectory questions of patient P: one long
summary, e.g. one:17 on the 44-patient KB). The KB is one built by bench_facts.py (hashing
embeddings).
"""

from __future__ import annotations

import sys
from pathlib import Path

from engine.config import Config
from engine.pipeline import Engine
from engine.types import Plan
from kb_store.chroma_reader import open_kb

COHORT = (
    "Which patients have the highest total burden?",
    "Who has the fastest motor worsening?",
    "What is the average motor score?",
)


def plans(ids: list[int], group: str) -> list[Plan]:
    picks = ids[:: max(1, len(ids) // 20)][:20]
    if group.startswith("one:"):
        return [Plan((int(group[4:]),), "trajectory")] * 5
    if group == "traj":
        return [Plan((p,), "trajectory") for p in picks]
    if group == "comp":
        return [Plan((p, picks[(i + 1) % len(picks)]), "comparison") for i, p in enumerate(picks)]
    return [Plan((), "cohort", query=q) for q in COHORT]


def main() -> None:
    kb_dir, group, passes = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    kb = open_kb(kb_dir, embedding="hashing")
    eng = Engine(Config.load({"kb_dir": kb_dir, "embedding": "hashing"}, env={}), kb, None)
    todo = plans(kb.patient_ids(), group)
    for _ in range(1 + passes):  # a warm-up pass, then the counted ones
        for plan in todo:
            eng.run(plan)


if __name__ == "__main__":
    main()
