"""Before/after pairs of the product's released texts: for evaluation queries, what the
model wrote, what the grounding released (as written, repaired, regenerated or replaced by the
facts text) and every removed sentence with its reason.

Runs the product system as `marag eval` does (same query set, same KB folders, same
configuration from MARAG_* variables and the flags), so with greedy decoding the texts are the
evaluation's. Writes Markdown to stdout.

Usage (from the repository root, after `marag eval --out DIR`):
    HF_HUB_OFFLINE=1 .venv/bin/python tools/before_after.py --kb-root DIR --llm local \
        --ids syn-ss-01,mr-tr-01 [--only repaired]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kb-root", type=Path, required=True, help="the --out folder of marag eval")
    ap.add_argument("--ids", required=True, help="comma-separated query ids")
    ap.add_argument("--llm", default="local")
    ap.add_argument("--embedding", default="minilm")
    ap.add_argument("--only", help="show only agents released this way (e.g. repaired)")
    a = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from engine.config import Config
    from engine.engine_factory import open_engine
    from engine.eval.harness import open_dataset
    from engine.eval.queries import load_queries
    from engine.llm.backends import make_llm

    cfg = Config.load({"llm": a.llm, "embedding": a.embedding})
    llm = make_llm(cfg)
    _version, queries = load_queries()
    wanted = a.ids.split(",")
    engines = {}
    for q in [q for q in queries if q.id in wanted]:
        if q.dataset not in engines:
            ds = open_dataset(q.dataset, kb_root=a.kb_root, embedding=a.embedding)
            engines[q.dataset] = open_engine(cfg, kb=ds.kb, llm=llm)
        r = engines[q.dataset].run(q.plan, guard=True)
        print(f"## {q.id}: {q.query}\n")
        texts = {**r.narratives, "final": r.summary}
        for agent, rec in r.verification["per_agent"].items():
            released = rec.get("released", "as_written")
            if a.only and released != a.only:
                continue
            print(f"### {agent}: {released}\n")
            if rec.get("written") is not None:
                print("Before (the model's text):\n")
                print("> " + rec["written"].strip().replace("\n", "\n> ") + "\n")
            for rep in rec.get("repairs", []):
                for x in rep["removed"]:
                    by = f' (replaced by: "{x["replaced_by"]}")' if x.get("replaced_by") else ""
                    print(f'- removed: "{x["text"]}"{by}: {"; ".join(x["reasons"])}')
                print(f"- repair passed every check: {rep['passed']}\n")
            print("After (released):\n")
            print("> " + texts.get(agent, "").strip().replace("\n", "\n> ") + "\n")


if __name__ == "__main__":
    main()
