"""Test doubles shared by the suite; production code never imports this module.

`FakeLLM` is the scripted LLM of the fast tests: it satisfies engine.llm.base.LLM, answers from a
script and records every request so a test can assert what reached a prompt. Imported as
`from fakes import FakeLLM` (pyproject puts tests/ on the path for pytest).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine.llm.base import DONE, PREFILL, WRITING, Cancelled, LLMRequest, TextSink, report_progress


@dataclass
class FakeLLM:
    """Scripted fake: `script` is a callable (request -> text) or a list of texts used in turn.
    Records every request so tests can assert what reached a prompt."""

    script: Callable[[LLMRequest], str] | list[str] = field(default_factory=list)
    name: str = "fake"
    calls: list[LLMRequest] = field(default_factory=list)
    batches: list[int] = field(default_factory=list)

    def generate(self, requests: Sequence[LLMRequest], sink: TextSink | None = None) -> list[str]:
        self.batches.append(len(requests))
        out = []
        for r in requests:
            self.calls.append(r)
            if callable(self.script):
                out.append(self.script(r))
            elif self.script:
                out.append(self.script.pop(0))
            else:
                out.append(f"[{r.agent or 'llm'} narrative]")
            if sink is not None:  # stream the scripted text word by word, a word a token
                report_progress(sink, r.agent, PREFILL)
                words = out[-1].split(" ")
                for n, word in enumerate(words, 1):
                    if sink.cancelled():
                        raise Cancelled(f"{r.agent}: generation cancelled")
                    report_progress(sink, r.agent, WRITING, n)
                    sink.on_text(r.agent, word + " ")
                report_progress(sink, r.agent, DONE, len(words))
        return out


def echo_cited(req) -> str:
    """A scripted writer that cites: each citable line of the prompt restated as a sentence
    after its id ("[S86] Patient 1, motor, ... worsened."), which the lookup check passes."""
    import re

    out = []
    for ln in req.user.splitlines():
        m = re.match(r"\[(S\d+)\] (.*)$", ln.strip())
        if m:
            line = m.group(2).rstrip(".")
            out.append(f"[{m.group(1)}] {line[:1].upper()}{line[1:]}.")
    return " ".join(out) or f"The {req.agent} agent has no statements."
