"""OpenAI-compatible backend: any server speaking /v1/chat/completions (vLLM, llama.cpp server,
Ollama, a hosted API), chosen by configuration only (MARAG_LLM=openai, MARAG_OPENAI_BASE_URL,
MARAG_OPENAI_MODEL, MARAG_OPENAI_API_KEY).

Owns: one chat completion per request (system + user messages), temperature 0, max_tokens from the
request (the agents size it: engine.agents.budget) or cfg.max_new_tokens; a batch is sent as concurrent requests on a small thread pool (the
server batches them). Number-safe decoding needs access to the logits, which these servers do not
give, so `allowed_numbers` is not enforced here: the grounding guard still checks every number.
A server that cannot be reached, times out or answers with an HTTP error is a `BackendError` that
names the URL (`server_error`).

With a sink, each request is streamed and its progress reported (engine.llm.base): "waiting for
the server" when it is sent, "writing" with the tokens so far (one per streamed piece of text),
"done" with the server's completion token count (asked for with `stream_options`; the pieces
counted when the server gives none; a server that refuses `stream_options` is asked without it).
A server that refuses streaming (HTTP 400, 404, 422) is asked again without it: "waiting for the
server", then the whole text and "done" with the completion tokens the answer reports.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engine.config import Config
from engine.llm.base import DONE, WAITING, WRITING, Cancelled, LLMRequest, TextSink, report_progress
from engine.llm.errors import BackendError

MAX_PARALLEL = 8
#: HTTP statuses of a server that does not take a streamed request: asked again without streaming
NO_STREAM_STATUSES = frozenset({400, 404, 422})
#: how a streamed request is asked, in turn: with the usage at the end, then plain
STREAM_ARGS: tuple[dict[str, Any], ...] = (
    {"stream": True, "stream_options": {"include_usage": True}},
    {"stream": True},
)


class OpenAICompatLLM:
    """`engine.llm.base.LLM` over an OpenAI-compatible chat-completions server."""

    name = "openai"

    def __init__(self, cfg: Config, client: Any | None = None, *, timeout: float = 300.0):
        if not cfg.openai_base_url:
            raise ValueError("llm=openai needs MARAG_OPENAI_BASE_URL (or --openai-base-url)")
        if client is None:
            from openai import OpenAI

            client = OpenAI(
                base_url=cfg.openai_base_url,
                api_key=cfg.openai_api_key or "not-needed",
                timeout=timeout,
                max_retries=1,
            )
        self.cfg = cfg
        self.client = client
        self._model: str | None = None if cfg.openai_model in ("", "default") else cfg.openai_model
        self._model_lock = threading.Lock()
        self.timeout = timeout
        self.calls = 0
        self.seconds = 0.0

    @property
    def model(self) -> str:
        """The configured model name; "default" asks the server for its first model (vLLM and
        llama.cpp serve one), falling back to the literal "default"."""
        with self._model_lock:
            if self._model is None:
                try:
                    models = list(self.client.models.list())
                    self._model = models[0].id if models else "default"
                except Exception:
                    self._model = "default"
            return self._model

    def _messages(self, req: LLMRequest) -> dict[str, Any]:
        """The chat-completion arguments of one request (temperature 0, its length limit)."""
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": req.system},
                {"role": "user", "content": req.user},
            ],
            "temperature": 0,
            "max_tokens": req.max_new_tokens or self.cfg.max_new_tokens,
        }

    def _stream(self, req: LLMRequest, sink: TextSink) -> str:
        """One completion streamed into the sink with its progress; stops when the sink cancels.
        A server that refuses streaming is asked once without it."""
        report_progress(sink, req.agent, WAITING)
        stream = self._open_stream(req)
        if stream is not None:
            return self._read_stream(req, stream, sink)
        text, used = self._complete(req)
        report_progress(sink, req.agent, DONE, used)
        if text:
            sink.on_text(req.agent, text)
        return text

    def _open_stream(self, req: LLMRequest) -> Any | None:
        """The streamed completion, with the usage in its last piece where the server takes
        `stream_options`, else without; None when the server refuses streaming."""
        import openai

        for extra in STREAM_ARGS:
            try:
                return self.client.chat.completions.create(**self._messages(req), **extra)
            except openai.APIStatusError as e:
                if e.status_code not in NO_STREAM_STATUSES:
                    raise
        return None

    def _read_stream(self, req: LLMRequest, stream: Any, sink: TextSink) -> str:
        """The text of a streamed completion, passed to the sink piece by piece."""
        parts: list[str] = []
        used = None
        for chunk in stream:
            if sink.cancelled():
                stream.close()
                raise Cancelled(f"{req.agent}: generation cancelled")
            usage = getattr(chunk, "usage", None)
            if usage is not None and getattr(usage, "completion_tokens", None) is not None:
                used = int(usage.completion_tokens)
            delta = chunk.choices[0].delta.content if chunk.choices else None
            if delta:
                parts.append(delta)
                report_progress(sink, req.agent, WRITING, len(parts))
                sink.on_text(req.agent, delta)
        report_progress(sink, req.agent, DONE, len(parts) if used is None else used)
        return "".join(parts).strip()

    def _complete(self, req: LLMRequest) -> tuple[str, int]:
        """One completion without streaming: (text, completion tokens; 0 when not reported)."""
        resp = self.client.chat.completions.create(**self._messages(req))
        if not resp.choices:
            raise RuntimeError(f"{self.cfg.openai_base_url}: the server returned no choices")
        usage = getattr(resp, "usage", None)
        used = int(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0
        return (resp.choices[0].message.content or "").strip(), used

    def _one(self, req: LLMRequest) -> str:
        return self._complete(req)[0]

    def _run(self, requests: Sequence[LLMRequest], sink: TextSink | None) -> list[str]:
        if sink is not None:  # streamed one after the other, so the text arrives in order
            return [self._stream(r, sink) for r in requests]
        if len(requests) == 1:
            return [self._one(requests[0])]
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(requests))) as pool:
            return list(pool.map(self._one, requests))

    def generate(self, requests: Sequence[LLMRequest], sink: TextSink | None = None) -> list[str]:
        if not requests:
            return []
        import openai

        t0 = time.perf_counter()
        try:
            out = self._run(requests, sink)
        except (openai.APIConnectionError, openai.APIStatusError) as e:
            raise server_error(e, self.cfg.openai_base_url, self.timeout) from e
        self.calls += len(requests)
        self.seconds += time.perf_counter() - t0
        return out


def server_error(e: Exception, url: str, timeout: float) -> BackendError:
    """A one-line BackendError for an `openai` client error (connection refused, timeout, HTTP
    status), naming the server URL and what to change."""
    import openai

    if isinstance(e, openai.APITimeoutError):
        what = f"did not answer within {timeout:g} s"
    elif isinstance(e, openai.APIStatusError):
        detail = " ".join(str(e.message).split())[:200]
        return BackendError(
            f"the OpenAI-compatible server at {url} answered HTTP {e.status_code} ({detail}): "
            "check MARAG_OPENAI_MODEL and MARAG_OPENAI_API_KEY"
        )
    else:
        what = "cannot be reached (connection failed)"
    return BackendError(
        f"the OpenAI-compatible server at {url} {what}: start it or set MARAG_OPENAI_BASE_URL"
    )
