"""Converted-copy cache for GGUF models.

transformers 5 loads a GGUF file by expanding its quantised weights to full precision (about 20 s
for SmolLM2-135M on two cores, plus ~10 s for the tokenizer), and a GGUF-loaded model refuses
`save_pretrained`. This module owns the workaround: build a plain model from the GGUF's config
(without its `quantization_config`), copy the weights in, and save that copy plus the tokenizer as
an ordinary Hugging Face model directory under `cache_dir`. Reloading the copy takes under a second.

Cache key: the GGUF file's name, size and modification time (hashing 100 MB on every start would cost
more than it saves), so replacing the file invalidates the copy. Writes are atomic: the copy is saved
to a temporary directory inside `cache_dir` and renamed into place, and an advisory file lock makes
concurrent test workers wait for one conversion instead of racing (a loser of a race discards its
temporary copy). Nothing here touches the network.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

MARKER = "marag-gguf-cache.json"


def cache_key(gguf_path: Path) -> str:
    """Stable key for one GGUF file version: name + size + mtime (nanoseconds)."""
    st = gguf_path.stat()
    raw = f"{gguf_path.name}|{st.st_size}|{st.st_mtime_ns}"
    return f"{gguf_path.stem}-{hashlib.sha256(raw.encode()).hexdigest()[:16]}"


def cached_dir(gguf_path: Path, cache_dir: Path) -> Path:
    """Where the converted copy of `gguf_path` lives (whether or not it exists yet)."""
    return Path(cache_dir).expanduser() / cache_key(Path(gguf_path))


def is_complete(path: Path) -> bool:
    return (path / MARKER).is_file() and (path / "config.json").is_file()


@contextlib.contextmanager
def _file_lock(lock_path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX: rely on the atomic rename alone
        yield
        return
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def convert_gguf(gguf_path: Path, out_dir: Path) -> None:
    """Dequantise `gguf_path` with transformers and save a plain model + tokenizer into `out_dir`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    gguf_model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, local_files_only=True)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=gguf_model.dtype)
    missing, unexpected = plain.load_state_dict(gguf_model.state_dict(), strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(
            f"converting {gguf_path}: weights do not match the model built from its config "
            f"(missing {sorted(set(missing) - tied)[:5]}, unexpected {sorted(unexpected)[:5]})"
        )
    if tied:
        plain.tie_weights()
    plain.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    del gguf_model


def ensure_converted(gguf_path: Path, cache_dir: Path) -> Path:
    """Return the directory of the converted copy of `gguf_path`, converting it first if needed."""
    gguf_path = Path(gguf_path).resolve()
    if not gguf_path.is_file():
        raise FileNotFoundError(f"GGUF model file not found: {gguf_path}")
    cache_dir = Path(cache_dir).expanduser()
    final = cached_dir(gguf_path, cache_dir)
    if is_complete(final):
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _file_lock(cache_dir / f".{final.name}.lock"):
        if is_complete(final):  # another process converted it while we waited
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=cache_dir))
        try:
            t0 = time.perf_counter()
            convert_gguf(gguf_path, tmp)
            st = gguf_path.stat()
            (tmp / MARKER).write_text(
                json.dumps(
                    {
                        "gguf": str(gguf_path),
                        "size": st.st_size,
                        "mtime_ns": st.st_mtime_ns,
                        "convert_seconds": round(time.perf_counter() - t0, 2),
                    },
                    indent=2,
                )
            )
            if final.exists():  # a stale, incomplete copy (a crash mid-rename on another OS)
                shutil.rmtree(final, ignore_errors=True)
            try:
                os.rename(tmp, final)
            except OSError:
                if not is_complete(final):
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return final
