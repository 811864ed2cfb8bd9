"""Streams each agent's text into the page as the model writes it (st.write_stream), with its
progress and a cancel.

The engine runs in a worker thread with a `QueueSink` (engine.llm.base.TextSink): the backend
passes every new piece of text to it, and the page's generator yields it to `st.write_stream` in
the script thread, with a heading whenever another agent starts (or the same agent writes again
after the grounding check's critique). Progress travels the same queue: the backend's
`on_progress(agent, stage, tokens)` (loading the model, reading the prompt, writing with the
tokens so far, done), the pipeline's nodes (`on_node`) and the run queue's position (`on_wait`);
the generator hands each to the page's `on_progress` callback as a `Progress`, in the script
thread, and `progress_label` words it ("Summary agent: writing, 42 tokens"). Cancel: the page
draws a Cancel button before the stream; clicking it makes Streamlit rerun the script, which
closes the generator; its `finally` sets the sink's cancel flag, the backend stops at the next
token (a stopping criterion) and the run ends with `Cancelled`. Streamlit calls are made only
from the script thread. A model that cites statements writes "[S4]" before a clause; the stream
shows its text without the markers, as the released text (engine.agents.cited.strip_markers): a
piece that may be the start of a marker is held until the marker closes or the text goes on.
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from engine.agents.cited import strip_markers
from engine.llm.base import DONE

#: how the page names each agent in the progress label
AGENT_LABELS = {
    "motor": "Motor agent",
    "adl": "ADL agent",
    "nonmotor": "Non-motor agent",
    "qol": "Quality-of-life agent",
    "comparison": "Comparison agent",
    "cohort": "Cohort agent",
    "final": "Summary agent",
    "planner": "Planner",
}
NODE = "node"  # Progress.stage of a pipeline node starting (agent = the node's name)
QUEUED = "queued"  # Progress.stage while the run waits for the model (tokens = position)


@dataclass(frozen=True)
class Progress:
    """One progress event: an agent's stage and tokens so far, a node, or the queue position."""

    agent: str
    stage: str
    tokens: int = 0


def agent_label(agent: str) -> str:
    return AGENT_LABELS.get(agent, f"{agent.capitalize() or 'Model'} agent")


def progress_label(p: Progress) -> str:
    """The status label for one event, e.g. "Summary agent: writing, 42 tokens"."""
    if p.stage == NODE:
        return f"Running: {p.agent.replace('_', ' ')}..."
    if p.stage == QUEUED:
        return f"Waiting for the model: position {p.tokens} in the queue (one run at a time)..."
    if p.stage in ("writing", "done"):
        unit = "token" if p.tokens == 1 else "tokens"
        return f"{agent_label(p.agent)}: {p.stage}, {p.tokens} {unit}"
    return f"{agent_label(p.agent)}: {p.stage}..."


#: the end of a piece that may be (the start of) a citation marker: held back until the next piece
_OPEN_MARKER = re.compile(r"\[(?:S\d*(?:,\s?S?\d*)*)?\]?$")


class Unmarked:
    """The streamed text of one agent without citation markers, piece by piece."""

    def __init__(self) -> None:
        self.held = ""

    def feed(self, chunk: str) -> str:
        text = self.held + chunk
        m = _OPEN_MARKER.search(text)
        cut = m.start() if m else len(text)
        self.held = text[cut:]
        return strip_markers(text[:cut])[0]

    def flush(self) -> str:
        text, self.held = self.held, ""
        return strip_markers(text)[0]


class QueueSink:
    """TextSink that queues (kind, agent, payload) events for the page: text pieces, progress,
    pipeline nodes and queue positions; it carries the cancel flag."""

    def __init__(self) -> None:
        self.q: queue.Queue = queue.Queue()
        self._cancel = threading.Event()
        self._unmarked: dict[str, Unmarked] = {}

    def on_text(self, agent: str, chunk: str) -> None:
        shown = self._unmarked.setdefault(agent, Unmarked()).feed(chunk)
        if shown:
            self.q.put(("text", agent, shown))

    def on_progress(self, agent: str, stage: str, tokens: int) -> None:
        if stage == DONE and agent in self._unmarked:  # the rest of a held piece
            rest = self._unmarked[agent].flush()
            if rest:
                self.q.put(("text", agent, rest))
        self.q.put(("progress", agent, Progress(agent, stage, tokens)))

    def on_node(self, node: str, what: str) -> None:
        """engine.pipeline's on_node: a node starting is progress; its end is not shown."""
        if what == "start":
            self.q.put(("progress", "", Progress(node, NODE)))

    def on_wait(self, position: int) -> None:
        self.q.put(("progress", "", Progress("", QUEUED, position)))

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()


def run_streaming(
    run: Callable[[QueueSink], Any],
    on_progress: Callable[[Progress], None] | None = None,
) -> tuple[Iterator[str], dict[str, Any]]:
    """Start `run(sink)` in a worker thread; return (generator of text for st.write_stream, a
    box that holds "result" or "error" once the generator is exhausted). The generator calls
    `on_progress` for every progress event, in the thread that iterates it."""
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
    return _stream(sink, box, worker, on_progress), box


def _stream(
    sink: QueueSink,
    box: dict[str, Any],
    worker: threading.Thread,
    on_progress: Callable[[Progress], None] | None,
) -> Iterator[str]:
    """The page's generator: text with a heading per agent; progress to `on_progress`."""
    current, seen = None, set()
    try:
        while True:
            kind, agent, payload = sink.q.get()
            if kind == "done":
                break
            if kind == "progress":
                if on_progress:
                    on_progress(payload)
                continue
            if agent != current:
                again = " (rewritten after the grounding check)" if agent in seen else ""
                yield f"\n\n**{agent}**{again}\n\n"
                current = agent
                seen.add(agent)
            yield payload
    finally:
        if "result" not in box and "error" not in box:
            sink.cancel()  # the page stopped reading (Cancel clicked, page left)
        worker.join(timeout=60)
