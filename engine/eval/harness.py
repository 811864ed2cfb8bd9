"""Runs the evaluation: for each query of the set, on its dataset's KB and the configured model,
(a) the single-pass RAG baseline, (b) the MA-RAG pipeline without the grounding check, (c) the full
product; then scores each summary with engine.metrics against the run's ledger and the gold.

KBs: each dataset is ingested with kb_store.ingest.load_sources and built into a persistent Chroma
KB (kb_store.chroma_kb) under the run's output folder, with the configured embedding; a rerun over
unchanged data embeds nothing. Unit tests may pass `kb_root=None` for an InMemoryKB of the same
documents (same metadata, same exact-match retrieval). SBERT similarity uses the real all-MiniLM-L6-v2 (cfg.embedding == "minilm") or, for
fast tests only, the hashing stand-in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import metrics, open_engine
from engine.config import REPO_ROOT, Config
from engine.eval import gold as gold_mod
from engine.eval.baselines import single_pass
from engine.eval.queries import EvalQuery
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.screening import DECISION_SUPPORT_NOTE
from engine.grounding.verify import context_phrases
from engine.llm.base import LLM
from engine.types import Fact, Result
from kb_store.reader import InMemoryKB, KBReader
from kb_store.settings import KBSettings

if TYPE_CHECKING:
    from engine.pipeline import Engine

SYSTEMS = ("single_pass", "marag_unguarded", "product")


def default_marag_dir() -> Path:
    return REPO_ROOT.parent / "shared" / "data" / "ma-rag"


@dataclass
class Dataset:
    name: str
    kb: KBReader
    stats: dict[str, Any]
    marag_dir: Path | None = None


def open_dataset(
    name: str,
    marag_dir: Path | None = None,
    *,
    kb_root: Path | None = None,
    embedding: str = "minilm",
) -> Dataset:
    from kb_store.documents import build_documents
    from kb_store.ingest import load_sources

    if name == "synthetic":
        from kb_store.synth import default_sample_path

        paths = [default_sample_path()]
    else:
        marag_dir = marag_dir or default_marag_dir()
        if not marag_dir.exists():
            raise FileNotFoundError(f"MA-RAG study data not found at {marag_dir} (use --marag-dir)")
        paths = [marag_dir]
    res = load_sources(paths)
    docs = build_documents(res.sessions)
    stats = {
        "sources": [str(p) for p in paths],
        "sessions": len(res.sessions),
        "documents": len(docs),
        "patients": len({s.proj_id for s in res.sessions}),
        "issues": len(res.issues),
    }
    if kb_root is None:
        return Dataset(name, InMemoryKB(docs), {**stats, "kb": "InMemoryKB"}, marag_dir)
    kb = KBSettings(Path(kb_root) / f"kb-{name}", embedding=embedding)
    built = kb.build(res.sessions)
    stats["kb"] = (
        f"Chroma KB at {kb.kb_dir} ({embedding} embeddings; {built.added} added, {built.unchanged} unchanged)"
    )
    return Dataset(name, kb.open(), stats, marag_dir)


@dataclass
class EvalRecord:
    query: EvalQuery
    system: str
    summary: str
    metrics: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        q = self.query
        return {
            "id": q.id,
            "dataset": q.dataset,
            "task": q.task,
            "query": q.query,
            "plan": q.plan.to_dict(),
            "system": self.system,
            "summary": self.summary,
            **self.metrics,
            **self.extra,
        }


def strip_note(text: str) -> str:
    """The summary without the decision-support note and screening line (no numbers in either)."""
    text = text.replace(DECISION_SUPPORT_NOTE, "")
    cut = text.find("Screening flags (review before use)")
    return (text[:cut] if cut >= 0 else text).strip()


def score(
    summary: str,
    ledger: LedgerIndex,
    plan_patients: Sequence[int],
    gold: str | None,
    embed: metrics.Embedder | None,
    statements: dict[str, Any] | None = None,
) -> dict[str, Any]:
    cs = metrics.claim_stats(summary, ledger, list(plan_patients))
    st = statement_metrics(summary, ledger, plan_patients, **(statements or {}))
    return {
        **st,
        "fact_precision": metrics.fact_precision(summary, ledger),
        "hallucination_rate": metrics.hallucination_rate(summary, ledger),
        "temporal_fidelity": metrics.temporal_fidelity(summary, ledger),
        "temporal_fidelity_scoped": metrics.temporal_fidelity_scoped(summary, ledger),
        "sbert_similarity": (
            metrics.sbert_similarity(summary, gold, embed) if gold and embed is not None else None
        ),
        **cs,
    }


def statement_metrics(
    summary: str,
    ledger: LedgerIndex,
    plan_patients: Sequence[int],
    flags: dict[str, Any] | None = None,
    cohort: dict[str, Any] | None = None,
    phrases: Sequence[str] = (),
    analysis: str | None = None,
) -> dict[str, Any]:
    """Statement-level grounding metrics: the unsupported-sentence rate of a summary and its
    coverage of the final summary's key facts (each domain's change label, the current flags, the
    cohort finding)."""
    from engine.grounding.verify import verify_text

    rec = verify_text(
        summary,
        ledger.ledger,
        plan_patients,
        agent="final",
        flags=flags,
        cohort=cohort,
        phrases=phrases,
        analysis=analysis,
    )
    return {
        "unsupported_sentence_rate": rec["unsupported_sentence_rate"],
        "unsupported_sentences": rec["unsupported_sentences"],
        "sentences": rec["sentences_total"],
        "coverage": rec["coverage"],
    }


def cited_counts(records: dict[str, dict[str, Any]]) -> dict[str, int]:
    """The sentences of the product's model-written texts that cite statements, and all the
    sentences of those texts (a record's "cited" entry; texts written without statements to
    cite, and the facts backend's rendered texts, have none and are not counted)."""
    cited = [r["cited"] for r in records.values() if isinstance(r.get("cited"), dict)]
    return {
        "cited_sentences": sum(int(c.get("sentences", 0)) for c in cited),
        "cite_total": sum(int(c.get("total", 0)) for c in cited),
    }


#: one system's run of a query: summary text, LLM calls, seconds, extra record details
SystemRun = tuple[str, int, float, dict[str, Any]]


def _system_runs(
    eng: Engine,
    ds: Dataset,
    llm: LLM | None,
    q: EvalQuery,
    product: Result,
    product_s: float,
    all_facts: list[Fact],
    systems: Sequence[str],
) -> dict[str, SystemRun]:
    """The selected systems' runs of one query: the product's (already run), then MA-RAG without
    the grounding check, then the single-pass baseline over every patient's facts."""
    runs: dict[str, SystemRun] = {}
    if "product" in systems:
        v = product.verification
        runs["product"] = (
            product.summary,
            product.llm_calls,
            product_s,
            {
                "fallback_used": bool(v.get("fallback_used")),
                "fallback_agents": v.get("fallback_agents", []),
                "regenerations": v.get("rounds", 0),
                "screening_findings": len(product.screening),
                "released": v.get("released", {}),
                "removed_sentences": len(v.get("removed_sentences", [])),
                **cited_counts(v.get("per_agent", {})),
            },
        )
    if "marag_unguarded" in systems:
        t0 = time.perf_counter()
        ung = eng.run(q.plan, guard=False)
        runs["marag_unguarded"] = (
            ung.summary,
            ung.llm_calls,
            time.perf_counter() - t0,
            {"screening_findings": len(ung.screening)},
        )
    if "single_pass" in systems:
        b = single_pass(ds.kb, llm, q.query, replace(product, facts=all_facts))
        runs["single_pass"] = (
            b.text,
            b.llm_calls,
            b.seconds,
            {"context_truncated": b.truncated, "documents": b.documents},
        )
    return runs


def _progress_line(q: EvalQuery, records: Sequence[EvalRecord]) -> str:
    """The progress line of a finished query, with the product's scores when it ran."""
    prod = next((r for r in records[::-1] if r.query is q and r.system == "product"), None)
    tail = (
        (
            f" product HR={prod.metrics['hallucination_rate']:.3f} "
            f"CA={prod.metrics['claim_accuracy']:.3f} "
            f"unsupported sentences={prod.metrics['unsupported_sentences']} "
            f"coverage={prod.metrics['coverage']:.2f}"
        )
        if prod
        else ""
    )
    return f"{q.id} ({q.dataset}, {q.task}){tail}"


def run_eval(
    cfg: Config,
    llm: LLM | None,
    queries: Sequence[EvalQuery],
    datasets: dict[str, Dataset],
    systems: Sequence[str] = SYSTEMS,
    embed: metrics.Embedder | None = None,
    progress: Callable[[str], None] | None = None,
    on_record: Callable[[EvalRecord], None] | None = None,
) -> list[EvalRecord]:
    """Run and score the selected systems on every query, in order; `on_record` gets each record
    as it is made, `progress` a line per finished query."""
    records: list[EvalRecord] = []
    engines = {name: open_engine(cfg, kb=ds.kb, llm=llm) for name, ds in datasets.items()}
    for q in queries:
        ds = datasets[q.dataset]
        eng = engines[q.dataset]
        t0 = time.perf_counter()
        product = eng.run(q.plan, guard=True)
        product_s = time.perf_counter() - t0
        # scored against every patient's facts (a cohort result holds only its answer's scope)
        all_facts, all_ledger = eng.evidence(product)
        ledger = LedgerIndex(all_ledger)
        gold_text, gold_src = _gold(q, ds, product)
        st_args = {
            "flags": product.flags,
            "cohort": product.cohort,
            "phrases": context_phrases(eng.contexts),
            "analysis": product.plan.analysis,
        }
        runs = _system_runs(eng, ds, llm, q, product, product_s, all_facts, systems)
        for system in systems:
            if system not in runs:
                continue
            text, calls, secs, extra = runs[system]
            summary = strip_note(text)
            m = score(
                summary,
                ledger,
                q.plan.patients or product.plan.patients,
                gold_text,
                embed,
                st_args,
            )
            m.update({"llm_calls": calls, "wall_s": round(secs, 3)})
            records.append(EvalRecord(q, system, summary, m, {**extra, "gold_source": gold_src}))
            if on_record:
                on_record(records[-1])
        if progress:
            progress(_progress_line(q, records))
    return records


def _gold(q: EvalQuery, ds: Dataset, product) -> tuple[str | None, str]:
    if not q.gold:
        return None, "none"
    if q.gold == "clinician_summary":
        if ds.marag_dir is None:
            return None, "clinician summaries exist for the MA-RAG data only"
        return gold_mod.clinician_summary(ds.marag_dir, product.plan, product.facts)
    g = gold_mod.synthetic_gold().get(q.gold)
    return (g, "engine/eval/gold_synthetic_v1.json") if g else (None, f"gold id {q.gold} not found")
