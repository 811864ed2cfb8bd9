"""Issue 13 item 9: runs of thread-safe backends overlap; the local model is queued, and every
waiting user sees their position."""

from __future__ import annotations

import threading
import time

from dashboard.run_gate import RunGate


def _run_many(gate: RunGate, n: int, hold: float) -> tuple[int, dict[int, list[int]]]:
    peak = 0
    now = 0
    lock = threading.Lock()
    positions: dict[int, list[int]] = {}

    def work(i: int) -> None:
        nonlocal peak, now
        with gate.slot(on_wait=lambda pos: positions.setdefault(i, []).append(pos), poll_s=0.01):
            with lock:
                now += 1
                peak = max(peak, now)
            time.sleep(hold)
            with lock:
                now -= 1

    threads = []
    for i in range(n):
        t = threading.Thread(target=work, args=(i,))
        t.start()
        threads.append(t)
        time.sleep(0.01)  # arrival order = thread order
    for t in threads:
        t.join()
    return peak, positions


def test_thread_safe_backends_run_concurrently():
    gate = RunGate.for_backend("facts", max_concurrent=8)
    peak, positions = _run_many(gate, 6, 0.3)
    assert peak == 6 and positions == {}
    assert RunGate.for_backend("openai", 4).capacity == 4


def test_local_model_is_queued_with_visible_positions():
    gate = RunGate.for_backend("local", max_concurrent=8)
    peak, positions = _run_many(gate, 4, 0.15)
    assert peak == 1
    assert positions[3][0] == 3 and positions[3][-1] == 1  # the 4th arrival moved up to 1
    assert all(p == sorted(p, reverse=True) for p in positions.values())
    assert gate.running == 0 and gate.waiting == 0


def test_a_waiting_user_who_leaves_frees_the_queue():
    gate = RunGate(1)
    release = threading.Event()

    def holder() -> None:
        with gate.slot():
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    time.sleep(0.05)

    def leave(pos: int) -> None:
        raise KeyboardInterrupt  # Streamlit's StopException when the user navigates away

    try:
        with gate.slot(on_wait=leave, poll_s=0.01):
            raise AssertionError("must not run")
    except KeyboardInterrupt:
        pass
    assert gate.waiting == 0
    release.set()
    t.join()
    with gate.slot():
        assert gate.running == 1
