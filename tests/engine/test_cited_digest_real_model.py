"""The bundled SmolLM2-135M writes the cited digest of a trajectory (slow, real model): what the
cited path guarantees whatever the model writes.

- every sentence of the model's digest opens with a citation marker (citation-safe decoding's
  `lead`) and every marker names a statement the request gave;
- the released digest shows no marker, every sentence of the released summary is supported and
  its key facts are stated (the guard's record), whichever way it was released;
- the record says how (as_written / repaired / regenerated / replaced) and, when the model's text
  was not released as written, keeps it with the reasons.

Whether the model's own sentences survive is measured, not asserted: with this 135M model they
mostly do not (docs/eval/cited-trajectory); the test prints the release class.
"""

from __future__ import annotations

import os

import marag_engine_fixtures as fx
import pytest

from engine.agents.citable import citable_ids
from engine.llm.base import CITE_MARKER, marker_ids
from engine.types import Plan

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("local-llm")]

TRAJ = Plan((1,), "trajectory", ("updrs", "pdq8"), "none", "Show me the trajectory of patient 1")


class _Recording:
    """The real local backend, keeping each request and the text the model wrote for it."""

    def __init__(self, llm):
        self.llm, self.seen = llm, []

    def generate(self, requests, sink=None):
        out = (
            self.llm.generate(requests) if sink is None else self.llm.generate(requests, sink=sink)
        )
        self.seen += list(zip(requests, out, strict=True))
        return out

    def __getattr__(self, name):
        return getattr(self.llm, name)


def test_real_model_cited_digest_is_guarded_whatever_it_writes():
    from engine.config import Config
    from engine.llm.local import LocalLLM

    env = {k: v for k, v in os.environ.items() if k == "MARAG_MODEL_CACHE_DIR"}
    llm = _Recording(LocalLLM(Config.load({"llm": "local", "device": "cpu"}, env=env)))
    # 64 new tokens per text at most, as the committed evaluation (docs/eval/cited-trajectory)
    r = fx.engine(llm, max_new_tokens=64).run(TRAJ)
    digests = [(q, t) for q, t in llm.seen if q.agent == "final"]
    assert digests, [q.agent for q, _t in llm.seen]
    for req, text in digests:
        assert req.citable and "[S" in req.user  # the digest request, not the paper's prompt
        given = citable_ids(req)
        assert CITE_MARKER.match(text.lstrip()), text  # lead: the text opens with a marker
        for m in CITE_MARKER.finditer(text):
            assert set(marker_ids(m.group(1))) <= given, (m.group(0), text)
    rec = r.verification["per_agent"]["final"]
    print("final digest released:", rec["released"], "| written:", digests[0][1][:300])
    assert rec["released"] in ("as_written", "repaired", "regenerated", "replaced")
    assert rec["passed"] and not rec["unsupported"] and rec["coverage"] == 1.0
    assert not CITE_MARKER.search(r.summary)
    if rec["released"] != "as_written":
        assert rec["written"] == digests[0][1]
        assert rec.get("repairs") or rec.get("rejected")
