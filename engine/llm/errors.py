"""The error a misconfigured LLM backend raises: `BackendError`.

A backend raises it where it detects a problem the user fixes by changing the configuration (4-bit
weights asked for without a CUDA GPU, a local model path that does not exist, an OpenAI-compatible
server that cannot be reached or refuses the request). The message is one line that says what was
wrong and what to change; `engine.cli` prints it and exits 2, the dashboard shows it.
"""

from __future__ import annotations


class BackendError(RuntimeError):
    """The configured LLM backend cannot run as configured; the message says what to change."""
