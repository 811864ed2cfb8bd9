"""Offline evaluation (`marag eval`): the versioned query set, gold summaries, the single-pass RAG
baseline, the harness that runs baselines and the product on the same model and queries, and the
report writer (Markdown, JSON, Plotly HTML). Definitions in docs/evaluation.md."""
