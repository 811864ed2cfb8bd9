"""OpenAI-compatible backend: any server speaking /v1/chat/completions (vLLM, llama.cpp server,
Ollama, a hosted API), chosen by configuration only (MARAG_LLM=openai, MARAG_OPENAI_BASE_URL,
MARAG_OPENAI_MODEL, MARAG_OPENAI_API_KEY).

Owns: one chat completion per request (system + user messages), temperature 0, max_tokens from the
request or cfg.max_new_tokens; a batch is sent as concurrent requests on a small thread pool (the
server batches them). Number-safe decoding needs access to the logits, which these servers do not
give, so `allowed_numbers` is not enforced here: the grounding guard still checks every number.
A server that cannot be reached, times out or answers with an HTTP error is a `BackendError` that
names the URL (`server_error`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engine.config import Config
from engine.llm.base import Cancelled, LLMRequest, TextSink
from engine.llm.errors import BackendError

MAX_PARALLEL = 8


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

    def _stream(self, req: LLMRequest, sink: TextSink) -> str:
        """One completion streamed chunk by chunk into the sink; stops when it cancels."""
        parts: list[str] = []
        stream = self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": req.system},
                {"role": "user", "content": req.user},
            ],
            temperature=0,
            max_tokens=req.max_new_tokens or self.cfg.max_new_tokens,
            stream=True,
        )
        for chunk in stream:
            if sink.cancelled():
                stream.close()
                raise Cancelled(f"{req.agent}: generation cancelled")
            delta = chunk.choices[0].delta.content if chunk.choices else None
            if delta:
                parts.append(delta)
                sink.on_text(req.agent, delta)
        return "".join(parts).strip()

    def _one(self, req: LLMRequest) -> str:
        resp = self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": req.system},
                {"role": "user", "content": req.user},
            ],
            temperature=0,
            max_tokens=req.max_new_tokens or self.cfg.max_new_tokens,
        )
        if not resp.choices:
            raise RuntimeError(f"{self.cfg.openai_base_url}: the server returned no choices")
        return (resp.choices[0].message.content or "").strip()

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
