"""Progress per agent request (engine.llm.base.report_progress): the scripted fake through the
whole pipeline, the OpenAI-compatible backend against a local HTTP server (streamed, and a server
that refuses streaming), and the bundled SmolLM2 (slow)."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import marag_engine_fixtures as fx
import pytest
from fakes import FakeLLM

from engine.config import Config
from engine.llm.base import DONE, LOADING, PREFILL, WAITING, WRITING, LLMRequest
from engine.llm.openai_backend import OpenAICompatLLM
from engine.types import Plan

TRAJ = Plan((1,), "trajectory", ("updrs", "pdq8"), "none", "trajectory of patient 1")


class Recorder:
    """A sink that keeps every text piece and progress event in arrival order."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def on_text(self, agent: str, chunk: str) -> None:
        self.events.append(("text", agent, chunk))

    def on_progress(self, agent: str, stage: str, tokens: int) -> None:
        self.events.append(("progress", agent, stage, tokens))

    def cancelled(self) -> bool:
        return False

    def progress(self, agent: str) -> list[tuple[str, int]]:
        return [(e[2], e[3]) for e in self.events if e[0] == "progress" and e[1] == agent]


def _check_request_progress(events: list[tuple[str, int]], start: str) -> int:
    """One request's events: `start`, then "writing" counting 1, 2, 3 ..., then "done" with the
    last count. Returns the count."""
    assert events[0] == (start, 0)
    writing = [n for stage, n in events if stage == WRITING]
    assert writing == list(range(1, len(writing) + 1)) and writing
    assert events[-1] == (DONE, writing[-1])
    return writing[-1]


def test_every_agent_reports_progress_in_order_before_its_text():
    rec = Recorder()
    fx.engine(FakeLLM(fx.echo_facts)).run(TRAJ, sink=rec)
    agents = [e[1] for e in rec.events if e[0] == "progress" and e[2] == PREFILL]
    assert agents == ["motor", "adl", "nonmotor", "qol", "final"]  # the order they run in
    for agent in agents:
        n = _check_request_progress(rec.progress(agent), PREFILL)
        assert n == len(_written(rec, agent).split(" "))  # the fake writes a word a token
        first_progress = next(i for i, e in enumerate(rec.events) if e[1] == agent)
        first_text = next(i for i, e in enumerate(rec.events) if e[0] == "text" and e[1] == agent)
        assert first_progress < first_text


def _written(rec: Recorder, agent: str) -> str:
    return "".join(e[2] for e in rec.events if e[0] == "text" and e[1] == agent)[:-1]


def test_a_sink_without_progress_still_streams():
    class TextOnly:
        def __init__(self) -> None:
            self.text: list[str] = []

        def on_text(self, agent: str, chunk: str) -> None:
            self.text.append(chunk)

        def cancelled(self) -> bool:
            return False

    sink = TextOnly()
    result = fx.engine(FakeLLM(fx.echo_facts)).run(TRAJ, sink=sink)
    assert sink.text and result.summary


# --- the OpenAI-compatible backend against a local server ------------------------------------


class _Server(BaseHTTPRequestHandler):
    """/v1/chat/completions: streamed (server-sent events, usage last when asked) or, with
    `refuse_stream`, HTTP 400 for a streamed request and a plain answer otherwise."""

    requests: list[dict] = []
    refuse_stream = False
    words = ["Patient ", "1 ", "is ", "stable."]

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Server.requests.append(body)
        if body.get("stream") and _Server.refuse_stream:
            err = {"error": {"message": "streaming is not supported", "type": "invalid_request"}}
            self._send(400, json.dumps(err).encode(), "application/json")
        elif body.get("stream"):
            self._send(200, self._events(body).encode(), "text/event-stream")
        else:
            self._send(200, json.dumps(self._answer(body)).encode(), "application/json")

    def _events(self, body: dict) -> str:
        head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        out = [
            {**head, "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]}
            for w in _Server.words
        ]
        if body.get("stream_options", {}).get("include_usage"):
            usage = {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16}
            out.append({**head, "choices": [], "usage": usage})
        return "".join(f"data: {json.dumps(x)}\n\n" for x in out) + "data: [DONE]\n\n"

    def _answer(self, body: dict) -> dict:
        text = "".join(_Server.words)
        return {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14},
        }


@pytest.fixture
def server():
    _Server.requests, _Server.refuse_stream = [], False
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def _openai(url: str) -> OpenAICompatLLM:
    return OpenAICompatLLM(Config(llm="openai", openai_base_url=url, openai_model="m"), timeout=10)


def test_openai_streamed_request_carries_its_length_and_reports_progress(server):
    rec = Recorder()
    out = _openai(server).generate([LLMRequest("s", "u", agent="final", max_new_tokens=123)], rec)
    assert out == ["Patient 1 is stable."]
    (body,) = _Server.requests
    assert body["max_tokens"] == 123 and body["stream"] is True
    events = rec.progress("final")
    assert events[0] == (WAITING, 0)
    assert [n for s, n in events if s == WRITING] == [1, 2, 3, 4]  # one per streamed piece
    assert events[-1] == (DONE, 7)  # the server's completion token count
    assert [e[0] for e in rec.events].index("text") > 0  # progress comes first


def test_openai_server_refusing_streams_is_asked_once_more_without(server):
    _Server.refuse_stream = True
    rec = Recorder()
    out = _openai(server).generate([LLMRequest("s", "u", agent="motor", max_new_tokens=80)], rec)
    assert out == ["Patient 1 is stable."]
    assert [b.get("stream", False) for b in _Server.requests] == [True, True, False]
    assert {b["max_tokens"] for b in _Server.requests} == {80}
    assert rec.progress("motor") == [(WAITING, 0), (DONE, 5)]
    assert ("text", "motor", "Patient 1 is stable.") in rec.events


def test_pipeline_over_openai_sends_each_agent_its_length(server):
    from engine.pipeline import Engine

    cfg = fx.cfg(llm="openai", openai_base_url=server, openai_model="m")
    eng = Engine(cfg, fx.kb(), _openai(server), fx.CONTEXTS)
    rec = Recorder()
    eng.run(TRAJ, sink=rec)
    sent = {b["max_tokens"] for b in _Server.requests}
    assert len(sent) > 1 and max(sent) < cfg.max_new_tokens  # per agent, not the 1,200
    waiting = [e[1] for e in rec.events if e[0] == "progress" and e[2] == WAITING]
    assert list(dict.fromkeys(waiting)) == ["motor", "adl", "nonmotor", "qol", "final"]
    assert len(waiting) == len(_Server.requests)  # regenerations report too


# --- the bundled model ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("local-llm")
def test_local_model_reports_progress_before_its_first_token():
    from engine.llm.local import LocalLLM

    env = {k: v for k, v in os.environ.items() if k == "MARAG_MODEL_CACHE_DIR"}
    llm = LocalLLM(Config.load({"llm": "local", "device": "cpu"}, env=env))
    rec = Recorder()
    req = LLMRequest(
        "You are a clinical assistant.",
        "Patient 3's motor score rose from 20 to 24 between visits 1 and 2. Describe it.",
        agent="motor",
        max_new_tokens=24,
    )
    (text,) = llm.generate([req], rec)
    assert text
    kinds = [(e[0], e[2] if e[0] == "progress" else "") for e in rec.events]
    first_text = kinds.index(("text", ""))
    assert (LOADING in (k for _, k in kinds[:first_text])) == (kinds[0] == ("progress", LOADING))
    assert ("progress", PREFILL) in kinds[:first_text]  # the prompt is read before any text
    events = [e for e in rec.progress("motor") if e[0] != LOADING]
    n = _check_request_progress(events, PREFILL)
    assert n == llm.last_stats["new_tokens"] <= 24
