"""Writes an evaluation run as Markdown (report.md), JSON (report.json, every per-query record and
the aggregates) and a Plotly HTML chart (report.html), each stating the exact command."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from engine.types import ANALYSES

METRICS = (
    "fact_precision",
    "hallucination_rate",
    "temporal_fidelity",
    "temporal_fidelity_scoped",
    "sbert_similarity",
    "claim_accuracy",
    "unsupported_sentence_rate",
    "coverage",
)
RELEASE_KINDS = ("as_written", "repaired", "regenerated", "replaced")
LABELS = {
    "unsupported_sentence_rate": "unsupported-sentence rate",
    "coverage": "key-fact coverage",
    "fact_precision": "fact precision",
    "hallucination_rate": "hallucination rate",
    "temporal_fidelity": "temporal fidelity",
    "temporal_fidelity_scoped": "temporal fidelity (scoped)",
    "sbert_similarity": "SBERT similarity",
    "claim_accuracy": "claim accuracy",
    "llm_calls": "LLM calls",
    "wall_s": "wall time (s)",
}


def _m(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(mean(xs), 4) if xs else None


def aggregate(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["dataset"], r["task"], r["system"])].append(r)
        groups[(r["dataset"], "all", r["system"])].append(r)
    out = []
    order = {t: i for i, t in enumerate((*ANALYSES, "all"))}
    for (ds, task, system), rs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], order[kv[0][1]], kv[0][2])
    ):
        row: dict[str, Any] = {"dataset": ds, "task": task, "system": system, "n": len(rs)}
        for k in (*METRICS, "llm_calls", "wall_s"):
            row[k] = _m([r.get(k) for r in rs])
        row["sbert_n"] = sum(r.get("sbert_similarity") is not None for r in rs)
        row["claims_with_context"] = sum(r["claims_with_context"] for r in rs)
        row["numbers_without_context"] = sum(r["numbers_without_context"] for r in rs)
        row["queries_with_hallucination"] = sum(r["hallucination_rate"] > 0 for r in rs)
        row["min_claim_accuracy"] = min(r["claim_accuracy"] for r in rs)
        row["unsupported_sentences"] = sum(int(r.get("unsupported_sentences") or 0) for r in rs)
        if system == "product":
            row["fallback_used"] = sum(bool(r.get("fallback_used")) for r in rs)
            row["released"] = released_counts(rs)
            row["cited_sentences"] = sum(int(r.get("cited_sentences") or 0) for r in rs)
            row["cite_total"] = sum(int(r.get("cite_total") or 0) for r in rs)
        out.append(row)
    return out


def released_counts(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How each product agent text was released: as written, repaired (unsupported sentences
    removed or replaced), regenerated (after a critique) or replaced by the facts text."""
    c = Counter(k for r in records for k in (r.get("released") or {}).values())
    return {k: c.get(k, 0) for k in RELEASE_KINDS}


def product_guarantee(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    prod = [r for r in records if r["system"] == "product"]
    bad = [
        r["id"]
        for r in prod
        if r["hallucination_rate"] > 0
        or r["claim_accuracy"] < 1.0
        or int(r.get("unsupported_sentences") or 0) > 0
    ]
    by_agent = Counter(a for r in prod for a in r.get("fallback_agents") or [])
    return {
        "queries": len(prod),
        "violations": bad,
        "holds": not bad,
        "fallback_used": sum(bool(r.get("fallback_used")) for r in prod),
        "fallback_agents": dict(sorted(by_agent.items(), key=lambda kv: (-kv[1], kv[0]))),
        "regenerated": sum(int(r.get("regenerations") or 0) > 0 for r in prod),
        "released": released_counts(prod),
        "removed_sentences": sum(int(r.get("removed_sentences") or 0) for r in prod),
        "min_coverage": min((float(r.get("coverage", 1.0)) for r in prod), default=1.0),
    }


def _fallback_line(g: dict[str, Any]) -> str:
    """How much of the released prose was the model's rather than the facts text."""
    n, q = g["fallback_used"], g["queries"]
    line = f"facts-text fallback used on {n} of {q} queries"
    if g.get("fallback_agents"):
        parts = ", ".join(f"{a} {k}" for a, k in g["fallback_agents"].items())
        line += f" (agent texts replaced: {parts})"
    if "regenerated" in g:
        line += f"; critique-and-regenerate ran on {g['regenerated']} of {q}"
    if g.get("released"):
        rel = g["released"]
        line += (
            f"; agent texts released as written {rel['as_written']}, repaired "
            f"{rel['repaired']} ({g.get('removed_sentences', 0)} sentences removed or replaced), "
            f"regenerated {rel['regenerated']}, replaced by the facts text {rel['replaced']}"
        )
    line += "."
    if q and n * 2 > q:
        line += " The model's prose was replaced by the facts text on most queries."
    return line


def _fmt(x: Any) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)


def _header_lines(meta: dict[str, Any], guarantee: dict[str, Any]) -> list[str]:
    """The report's title, run settings, notes and the product-guarantee line."""
    lines = [
        f"# MA-RAG evaluation: {meta['title']}",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"- Query set: {meta['query_set']} ({meta['n_queries']} queries run); LLM backend: "
        f"{meta['llm']} ({meta['model']}); systems: {', '.join(meta['systems'])}",
        f"- SBERT model: {meta['sbert_model']}; KB: {meta['kb']}",
        f"- Date: {meta['date']}; total wall time {meta['wall_s']:.1f} s"
        + (
            f" (this invocation; the systems' own times over all records sum to "
            f"{meta['wall_s_all_records']:.1f} s)"
            if meta.get("resumed_records")
            else ""
        ),
        "",
    ]
    if meta.get("notes"):
        lines += [f"- {n}" for n in meta["notes"]] + [""]
    lines += [
        "Product guarantee (hallucination rate 0.000, claim accuracy 1.000 and unsupported "
        f"sentences 0 on every query): "
        f"{'HOLDS' if guarantee['holds'] else 'VIOLATED on ' + ', '.join(guarantee['violations'])}"
        f"; lowest key-fact coverage {guarantee.get('min_coverage', 1.0):.3f}; "
        + _fallback_line(guarantee),
        "",
    ]
    return lines


#: the columns of the report's table
TABLE_HEAD: tuple[str, ...] = (
    "dataset",
    "task",
    "system",
    "n",
    "fact prec.",
    "halluc.",
    "temporal fid.",
    "TF scoped",
    "SBERT (n)",
    "claim acc.",
    "unsupp. sent. rate (n)",
    "coverage",
    "claims w/ ctx",
    "no ctx",
    "LLM calls",
    "wall s",
    "fallback",
)


def _row_cells(r: dict[str, Any]) -> list[str]:
    """One aggregate row's table cells, in the order of TABLE_HEAD."""
    sb = f"{_fmt(r['sbert_similarity'])} ({r['sbert_n']})"
    return [
        r["dataset"],
        r["task"],
        r["system"],
        str(r["n"]),
        _fmt(r["fact_precision"]),
        _fmt(r["hallucination_rate"]),
        _fmt(r["temporal_fidelity"]),
        _fmt(r["temporal_fidelity_scoped"]),
        sb,
        _fmt(r["claim_accuracy"]),
        f"{_fmt(r['unsupported_sentence_rate'])} ({r['unsupported_sentences']})",
        _fmt(r["coverage"]),
        str(r["claims_with_context"]),
        str(r["numbers_without_context"]),
        _fmt(r["llm_calls"]),
        _fmt(r["wall_s"]),
        _fmt(r.get("fallback_used", "")) or "",
    ]


def _table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The markdown table of the aggregate rows."""
    lines = ["| " + " | ".join(TABLE_HEAD) + " |", "|" + "---|" * len(TABLE_HEAD)]
    lines += ["| " + " | ".join(_row_cells(r)) + " |" for r in rows]
    return lines


def _released_lines(rows: list[dict[str, Any]]) -> list[str]:
    """How the product's agent texts were released, per dataset (empty without product rows)."""
    rel = [r for r in rows if r["system"] == "product" and r["task"] == "all"]
    if not rel:
        return []
    lines = [
        "",
        "Product agent texts by how they were released (as written / repaired / "
        "regenerated / replaced by the facts text):",
        "",
    ]
    for r in rel:
        c = r["released"]
        lines.append(
            f"- {r['dataset']}: {c['as_written']} / {c['repaired']} / {c['regenerated']} / "
            f"{c['replaced']}"
        )
    return lines


def wall_ratios(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """Per (dataset, task): the product's mean wall time divided by the single-pass baseline's,
    on the same model and queries in the same run (only where both ran)."""
    walls = {(r["dataset"], r["task"], r["system"]): r["wall_s"] for r in rows}
    out = {}
    for (ds, task, system), w in walls.items():
        base = walls.get((ds, task, "single_pass"))
        if system == "product" and w is not None and base:
            out[(ds, task)] = round(w / base, 2)
    return out


def _model_lines(rows: list[dict[str, Any]]) -> list[str]:
    """How much the model writes: per dataset and task, the product's wall time over the
    single-pass baseline's and the share of its model-written sentences that cite statements."""
    ratios = wall_ratios(rows)
    prod = [r for r in rows if r["system"] == "product"]
    if not prod or not (ratios or any(r.get("cite_total") for r in prod)):
        return []
    lines = [
        "",
        "Model share (product): wall time / single-pass wall time; sentences of the model's "
        "texts that cite statements:",
        "",
    ]
    for r in prod:
        ratio = ratios.get((r["dataset"], r["task"]))
        n, tot = r.get("cited_sentences", 0), r.get("cite_total", 0)
        share = f"{n} of {tot} ({n / tot:.2f})" if tot else "none written"
        lines.append(
            f"- {r['dataset']}, {r['task']}: wall ratio "
            f"{'n/a' if ratio is None else f'{ratio:.2f}'}; citing sentences {share}"
        )
    return lines


def markdown(meta: dict[str, Any], rows: list[dict[str, Any]], guarantee: dict[str, Any]) -> str:
    """The report in markdown: header and guarantee, the aggregate table, definitions, and how
    the product's texts were released."""
    lines = _header_lines(meta, guarantee) + _table_lines(rows)
    lines += [
        "",
        "Definitions: docs/evaluation.md. 'no ctx' = numbers without a recoverable context "
        "(checked leniently, not counted in claim accuracy). SBERT is computed only where a gold "
        "summary exists (n). 'unsupp. sent. rate (n)' = mean share of a summary's sentences that "
        "the statement check finds unsupported (n = unsupported sentences in all); 'coverage' = "
        "mean share of the final summary's key facts stated.",
    ]
    lines += _released_lines(rows) + _model_lines(rows)
    return "\n".join(lines) + "\n"


def html(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    mets = [
        "fact_precision",
        "hallucination_rate",
        "temporal_fidelity",
        "sbert_similarity",
        "claim_accuracy",
        "unsupported_sentence_rate",
        "coverage",
        "llm_calls",
    ]
    datasets = sorted({r["dataset"] for r in rows})
    fig = make_subplots(
        rows=len(datasets),
        cols=len(mets),
        subplot_titles=[f"{ds}: {LABELS[m]}" for ds in datasets for m in mets],
    )
    colors = {"single_pass": "#9e9e9e", "marag_unguarded": "#64b5f6", "product": "#1565c0"}
    shown: set[str] = set()
    for i, ds in enumerate(datasets, start=1):
        for j, m in enumerate(mets, start=1):
            for system in ("single_pass", "marag_unguarded", "product"):
                rs = [r for r in rows if r["dataset"] == ds and r["system"] == system]
                if not rs:
                    continue
                fig.add_trace(
                    go.Bar(
                        x=[r["task"] for r in rs],
                        y=[r[m] for r in rs],
                        name=system,
                        marker_color=colors[system],
                        legendgroup=system,
                        showlegend=system not in shown,
                    ),
                    row=i,
                    col=j,
                )
                shown.add(system)
    fig.update_layout(
        barmode="group",
        height=380 * len(datasets),
        width=1900,
        title=f"MA-RAG evaluation ({meta['title']}) - command: {meta['command']}",
    )
    return fig.to_html(include_plotlyjs=True, full_html=True)


def write_report(
    out: Path, meta: dict[str, Any], records: Sequence[dict[str, Any]]
) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    rows = aggregate(records)
    guarantee = product_guarantee(records)
    paths = {"md": out / "report.md", "json": out / "report.json", "html": out / "report.html"}
    paths["md"].write_text(markdown(meta, rows, guarantee), encoding="utf-8")
    paths["json"].write_text(
        json.dumps(
            {"meta": meta, "guarantee": guarantee, "aggregates": rows, "records": list(records)},
            indent=1,
            default=str,
        ),
        encoding="utf-8",
    )
    paths["html"].write_text(html(meta, rows), encoding="utf-8")
    return paths
