"""Streams each agent's text into the page as the model writes it (st.write_stream), with a
cancel.

The engine runs in a worker thread with a `QueueSink` (engine.llm.base.TextSink): the backend
passes every new piece of text to it, and the page's generator yields it to `st.write_stream` in
the script thread, with a heading whenever another agent starts (or the same agent writes again
after the grounding check's critique). Cancel: the page draws a Cancel button before the stream;
clicking it makes Streamlit rerun the script, which closes the generator; its `finally` sets the
sink's cancel flag, the backend stops at the next token (a stopping criterion) and the run ends
with `Cancelled`. Streamlit calls are made only from the script thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

_DONE = object()


class QueueSink:
    """TextSink that queues (agent, text) pieces for the page and carries the cancel flag."""

    def __init__(self) -> None:
        self.q: queue.Queue = queue.Queue()
        self._cancel = threading.Event()

    def on_text(self, agent: str, chunk: str) -> None:
        self.q.put(("text", agent, chunk))

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()


def run_streaming(
    run: Callable[[QueueSink], Any],
    on_event: Callable[[str, str], None] | None = None,
) -> tuple[Iterator[str], dict[str, Any]]:
    """Start `run(sink)` in a worker thread; return (generator of text for st.write_stream, a
    box that holds "result" or "error" once the generator is exhausted)."""
    sink = QueueSink()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = run(sink)
        except BaseException as e:  # noqa: BLE001 - handed to the page's thread
            box["error"] = e
        finally:
            sink.q.put(("done", "", ""))

    worker = threading.Thread(target=work, name="marag-stream", daemon=True)
    worker.start()

    def stream() -> Iterator[str]:
        current, seen = None, set()
        try:
            while True:
                kind, agent, chunk = sink.q.get()
                if kind == "done":
                    break
                if agent != current:
                    again = " (rewritten after the grounding check)" if agent in seen else ""
                    yield f"\n\n**{agent}**{again}\n\n"
                    current = agent
                    seen.add(agent)
                    if on_event:
                        on_event(agent, "writing")
                yield chunk
        finally:
            if "result" not in box and "error" not in box:
                sink.cancel()  # the page stopped reading (Cancel clicked, page left)
            worker.join(timeout=60)

    return stream(), box
