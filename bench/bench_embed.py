"""Embedding throughput: the KB build against raw sentence-transformers encode, side by side.

One process, the same documents (the KB documents of a source: by default the shipped synthetic
sample, 437 documents; `--source marag` adds the MA-RAG files' clinician notes), the model loaded
once outside every timed step:

- raw: `SentenceTransformer.encode(texts, batch_size=64, normalize_embeddings=True)`, the whole
  list in one call (sentence-transformers sorts it by length itself);
- build: `kb_store.chroma_kb.build_kb` into an empty directory (documents, hashing, the embedding
  function, Chroma upserts, manifest), timed end to end;
- unchanged rebuild: must embed 0 documents.

Runs are interleaved (raw, build, raw, build, ...) because the machine is shared and its load
drifts; the ratio is median(build docs/s) / median(raw docs/s). The 10,000-patient estimate is
the synthetic 10,000-patient document count (99,997, bench/README.md) / the build's docs/s.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_embed.py [--repeats 2] [--threads N] [--json-out F]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DOCS_10K = 99_997  # documents of the 10,000-patient synthetic cohort (bench/README.md)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", choices=["synthetic", "marag"], default="synthetic")
    ap.add_argument("--marag-dir", default=str(REPO.parent / "shared" / "data" / "ma-rag"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--limit", type=int, default=None, help="first N sessions only (smoke runs)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()

    from kb_store.offline import apply_offline_environment

    apply_offline_environment()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from kb_store import synth
    from kb_store.chroma_kb import build_kb
    from kb_store.documents import build_documents
    from kb_store.embeddings import MiniLMEmbeddingFunction
    from kb_store.ingest import load_sources
    from kb_store.minilm import load_minilm

    if args.source == "synthetic":
        sessions = load_sources([synth.default_sample_path()], "generic").sessions
    else:
        sessions = load_sources([args.marag_dir], "marag").sessions
    if args.limit:
        sessions = sessions[: args.limit]
    docs = build_documents(sessions)
    texts = [d.text for d in docs]
    t = time.perf_counter()
    model = load_minilm()
    out: dict = {
        "source": args.source,
        "documents": len(texts),
        "model_load_s": round(time.perf_counter() - t, 2),
        "torch_threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "machine": platform.machine(),
        "raw_s": [],
        "build_s": [],
        "rebuild_unchanged_embedded": [],
    }
    model.encode(texts[:16], batch_size=16, show_progress_bar=False)  # warm-up
    ef_batch = MiniLMEmbeddingFunction().batch_size
    for _ in range(args.repeats):
        t = time.perf_counter()
        vecs = model.encode(
            texts, batch_size=ef_batch, normalize_embeddings=True, show_progress_bar=False
        )
        out["raw_s"].append(round(time.perf_counter() - t, 2))
        assert len(vecs) == len(texts)
        with tempfile.TemporaryDirectory() as tmp:
            st = build_kb(sessions, Path(tmp) / "kb", embedding="minilm")
            assert st.embedded == len(texts), (st.embedded, len(texts))
            out["build_s"].append(round(st.seconds, 2))
            again = build_kb(sessions, Path(tmp) / "kb", embedding="minilm")
            out["rebuild_unchanged_embedded"].append(again.embedded)
        print(json.dumps(out), file=sys.stderr, flush=True)
    raw = statistics.median(out["raw_s"])
    build = statistics.median(out["build_s"])
    out["raw_docs_per_s"] = round(len(texts) / raw, 2)
    out["build_docs_per_s"] = round(len(texts) / build, 2)
    out["ratio"] = round(raw / build, 3)
    out["estimate_10000_patients_h"] = round(DOCS_10K / out["build_docs_per_s"] / 3600, 2)
    out["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
