"""The single-pass RAG baseline (the MA-RAG paper's baseline): one LLM call over the text of the
session documents the pipeline retrieved for the plan (same retrieval: exact metadata fetch and
visit filter, i.e. the documents behind the product's fact table) plus the query.

The documents are joined in visit order and cut at `max_context_chars` (prompt data) so that the
prompt fits small local models; the cut is recorded. With the facts backend there is no LLM: the
baseline's "summary" is then the retrieved text itself (extractive single pass), which shows what
raw retrieval contributes without any generation.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from engine.llm.base import LLM, LLMRequest
from engine.types import Result
from kb_store.reader import KBReader

PROMPT_FILE = Path(__file__).parent / "prompts" / "single_pass.json"


@cache
def prompt() -> dict[str, Any]:
    return json.loads(PROMPT_FILE.read_text(encoding="utf-8"))


@dataclass
class BaselineOutput:
    text: str
    llm_calls: int
    seconds: float
    truncated: bool
    documents: int


def retrieved_text(kb: KBReader, product: Result, max_chars: int) -> tuple[str, bool, int]:
    """The product run's session documents (ids from its fact table), in order, cut at max_chars."""
    ids: list[str] = []
    for f in sorted(product.facts, key=lambda f: (f.patient, f.visit, f.instrument)):
        if f.doc_id not in ids:
            ids.append(f.doc_id)
    docs = kb.get_docs(ids)
    text = "\n".join(d.text for d in docs)
    if len(text) <= max_chars:
        return text, False, len(docs)
    cut = text[:max_chars]
    cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
    return cut, True, len(docs)


def single_pass(kb: KBReader, llm: LLM | None, query: str, product: Result) -> BaselineOutput:
    p = prompt()
    t0 = time.perf_counter()
    docs, truncated, n = retrieved_text(kb, product, int(p["max_context_chars"]))
    if llm is None:
        return BaselineOutput(docs, 0, time.perf_counter() - t0, truncated, n)
    req = LLMRequest(
        system=p["system"], user=p["user"].format(query=query, documents=docs), agent="single_pass"
    )
    text = llm.generate([req])[0]
    return BaselineOutput(text, 1, time.perf_counter() - t0, truncated, n)
