"""The bundled SmolLM2-135M writes the cited digest of a trajectory (slow, real model): the
digest is the model's, released as written or repaired, never replaced.

- every sentence of the model's digest opens with a citation marker (citation-safe decoding's
  `lead`), the first with the first key statement listed (`order`), and every marker names a
  statement the request gave;
- the released digest shows no marker, every sentence of the released summary is supported and
  its key facts are stated (the guard's record);
- the release is as written or repaired (a repair keeps at least one model sentence), and a
  sentence the model wrote opens the released summary.

Measured before these guarantees (docs/eval/cited-trajectory, 2026-12-04): the 135M model's
digest was replaced on every query; the ordered lead, prompt lines that read as sentences and no
repetition penalty on cited rows made its copies of its statements pass.
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
        first = CITE_MARKER.match(text.lstrip())
        assert marker_ids(first.group(1))[0] == req.citable[0][0], text  # ordered lead
    rec = r.verification["per_agent"]["final"]
    print("final digest released:", rec["released"], "| written:", digests[0][1][:300])
    assert rec["released"] in ("as_written", "repaired"), rec.get("rejected")
    assert rec["passed"] and not rec["unsupported"] and rec["coverage"] == 1.0
    assert not CITE_MARKER.search(r.summary)
    written = CITE_MARKER.sub("", digests[0][1]).strip()
    model_sentence = written.split(". ")[0].split("\n")[0].strip().rstrip(".")
    assert len(model_sentence) > 20 and r.summary.startswith(model_sentence), (written, r.summary)
