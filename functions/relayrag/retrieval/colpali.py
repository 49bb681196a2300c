"""Page-image search: late-interaction (ColPali / ColQwen2) page vectors through byaldi.

A page image is encoded into a bag of 128-d vectors (one per image patch / token); a question into another bag;
the score is MaxSim: for each question vector its best dot product with the page's vectors, summed (ColBERT's
late interaction; Faysse et al. 2024, "ColPali"). byaldi (`RAGMultiModalModel`) loads the model, encodes,
stores the multi-vector index on disk and searches it; relayrag keeps that index inside the snapshot
(`snapshots/<collection>/<version>/colpali/`) and page vectors per file content next to the page images
(`pages/<collection>/<sha256>/vectors/<model key>.npz`, float16), so an unchanged file is never re-encoded and a
deleted file's vectors go with its page set (relayrag.ingest.pages).

The interfaces:
- `PageEncoder` (ingestion): `encode_pages(images) -> [float array (n_vectors, dim)]`, `write_index(pages, folder)`.
- `PageScorer` (query time): `search(query, k) -> [PageHit]`, best first. The colpali_search stage takes any
  PageScorer (tests use a deterministic double; ByaldiIndex is the real one).

Models: RELAYRAG_COLPALI_MODEL is a model id (downloaded where the machine can reach a model hub) or a local
folder; byaldi 0.0.7 picks the class by finding "colpali" or "colqwen2" in that string, so a local folder must
be named accordingly. The stack is the `colpali` extra (torch, transformers 4.47, colpali-engine 0.3.8, byaldi
0.0.7). byaldi 0.0.7 cannot remove documents from an index (`remove_from_index` raises NotImplementedError), so
the index of a version is assembled from the kept files' stored vectors and written with byaldi's own exporter
(`_export_index`); at query time the saved index is read into a ColPaliModel shell that shares the process's
one loaded model (`load_rag`: once per process, not per collection or version) — the byaldi pin is exact because
both touch byaldi's attributes. A tiny random test model (relayrag.retrieval.colpali_tiny) is refused outside
the test suite (relayrag.retrieval.page_model).
"""

from __future__ import annotations

import io
import logging
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from relayrag.retrieval.page_model import TURN_ON, is_configured, model_key, refusal

log = logging.getLogger(__name__)

INDEX_DIR = "colpali"  # the byaldi index folder inside a snapshot version


class PageSearchUnavailable(Exception):
    """Page-image search cannot run here; the message says why and how to turn it on."""


@dataclass(frozen=True)
class PageHit:
    """One page found by page-image search: the file's content hash and source key, its document name, the
    1-based page and the MaxSim score (higher is better; not comparable across models)."""

    sha256: str
    source: str
    doc: str
    page: int
    score: float


class PageScorer(Protocol):
    model_id: str

    def search(self, query: str, k: int) -> list[PageHit]: ...


class PageEncoder(Protocol):
    model_id: str

    def encode_pages(self, images: list[Any]) -> list[np.ndarray]: ...

    def write_index(self, pages: list[dict], vectors: list[np.ndarray], folder: Path) -> None: ...


def off_reason(model: str) -> str | None:
    """Why page-image search is off for RELAYRAG_COLPALI_MODEL=`model` without loading anything (no model
    configured, the extra not installed, a tiny test model outside the test suite), or None when it may run."""
    import importlib.util
    missing = next((m for m in ("torch", "byaldi", "colpali_engine") if importlib.util.find_spec(m) is None), None)
    if not is_configured(model):
        also = f"; {missing} is not installed" if missing else ""
        return f"page-image search is off (no model configured: RELAYRAG_COLPALI_MODEL is not set{also}); to turn " \
               f"it on, {TURN_ON}"
    if missing:
        return f"page-image search is off ({missing} is not installed); to turn it on, {TURN_ON}"
    why = refusal(model)
    if why:
        return f"page-image search is off: {why}"
    return None


_models: dict[tuple[str, str], Any] = {}
_lock = threading.Lock()
loads = 0  # models loaded by this process (load_rag's cache misses): tests read it


def _align_threads() -> None:
    """torch's intra-op threads within OMP_THREAD_LIMIT. OCR sets OMP_THREAD_LIMIT=1 (tesseract, DESIGN.md §6);
    torch 2.13's CPU kernels with more threads than that limit returned NaN page vectors here (bf16, 2 cores:
    thousands of NaN values per page with the limit at 1 and torch at 2 threads, none at 1 thread)."""
    import os

    import torch
    limit = os.environ.get("OMP_THREAD_LIMIT", "")
    if limit.isdigit() and int(limit) > 0 and torch.get_num_threads() > int(limit):
        torch.set_num_threads(int(limit))


def _device(device: str) -> str:
    if device:
        return device
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_rag(model: str, device: str = "") -> Any:
    """byaldi's RAGMultiModalModel for `model`: the one loader of page-image models, loaded once per process and
    device and shared by every collection and version (ingestion's encoder and every snapshot's index). Raises
    PageSearchUnavailable with the reason (no model configured, extra missing, a tiny test model outside the test
    suite, model not found / not downloadable, not a ColPali/ColQwen2 name)."""
    global loads
    reason = off_reason(model)
    if reason:
        raise PageSearchUnavailable(reason)
    key = (model, device)
    with _lock:
        if key not in _models:
            loads += 1
            import tempfile
            try:
                from byaldi import RAGMultiModalModel
                _models[key] = RAGMultiModalModel.from_pretrained(model, index_root=tempfile.mkdtemp(
                    prefix="relayrag-byaldi-"), verbose=0, device=_device(device))
            except Exception as exc:  # OSError (not found / offline), ValueError (not a ColPali/ColQwen2 name)
                raise PageSearchUnavailable(
                    f"page-image search is off: the model {model!r} could not be loaded ({type(exc).__name__}: "
                    f"{' '.join(str(exc).split())[:300]}); set RELAYRAG_COLPALI_MODEL to a ColPali/ColQwen2 model "
                    f"id this machine can download or to a local folder whose name contains 'colpali' or "
                    f"'colqwen2'") from None
    return _models[key]


class ByaldiEncoder:
    """PageEncoder over byaldi's ColPaliModel (`encode_image`, `_export_index`)."""

    def __init__(self, model: str, device: str = ""):
        self.model_id = model
        self.rag = load_rag(model, device)

    def encode_pages(self, images: list[Any]) -> list[np.ndarray]:
        """One float16 array (n_vectors, dim) per image (encoded one at a time: pages of different sizes would
        be padded in a batch)."""
        _align_threads()
        out = []
        for im in images:
            emb = self.rag.model.encode_image(im.convert("RGB"))[0].float().numpy()
            if not np.isfinite(emb).all():
                raise ValueError(f"the page-image model {self.model_id!r} returned non-finite page vectors")
            out.append(emb.astype(np.float16))
        return out

    def write_index(self, pages: list[dict], vectors: list[np.ndarray], folder: Path) -> None:
        """Write byaldi's index of `pages` (entries with sha256, source, doc, page) and their vectors to
        `folder` (its files: index_config.json.gz, embeddings/embeddings_<n>.pt, embed_id_to_doc_id.json.gz,
        doc_ids_to_file_names.json.gz, metadata.json.gz). One byaldi document per file (doc_id in order of first
        appearance), page_id = the 1-based page."""
        import torch
        from byaldi.colpali import ColPaliModel

        m = self.rag.model
        # a fresh ColPaliModel shell sharing the loaded network: byaldi keeps the index in the model object
        shell = ColPaliModel.__new__(ColPaliModel)
        shell.__dict__.update({k: v for k, v in m.__dict__.items()})
        doc_ids: dict[str, int] = {}
        embeds: list[Any] = []
        embed_map: dict[int, dict] = {}
        metadata: dict[int, dict] = {}
        names: dict[int, str] = {}
        dtype = m.model.dtype
        for entry, vec in zip(pages, vectors):
            did = doc_ids.setdefault(entry["sha256"], len(doc_ids))
            metadata[did] = {"sha256": entry["sha256"], "source": entry["source"], "doc": entry["doc"]}
            names[did] = entry["source"]
            embed_map[len(embeds)] = {"doc_id": did, "page_id": int(entry["page"])}
            embeds.append(torch.from_numpy(np.asarray(vec, dtype=np.float32)).to(dtype))
        shell.index_name = folder.name
        shell.index_root = str(folder.parent)
        shell.indexed_embeddings = embeds
        shell.embed_id_to_doc_id = embed_map
        shell.doc_id_to_metadata = metadata
        shell.doc_ids_to_file_names = names
        shell.doc_ids = set(doc_ids.values())
        shell.highest_doc_id = len(doc_ids) - 1
        shell.full_document_collection = False
        shell.collection = {}
        shell.max_image_width = shell.max_image_height = None
        shell.verbose = 0
        shell._export_index()


def index_model(folder: Path) -> str:
    """The model a byaldi index folder was written with (index_config.json.gz `model_name`). Raises
    PageSearchUnavailable when the folder holds no readable index."""
    import gzip
    import json
    try:
        with gzip.open(folder / "index_config.json.gz", "rt", encoding="utf-8") as f:
            return str(json.load(f)["model_name"])
    except (OSError, ValueError, KeyError) as exc:
        raise PageSearchUnavailable(f"page-image search is off: the page index at {folder} could not be read "
                                    f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]})") from None


def _shell_with_index(rag: Any, folder: Path) -> Any:
    """A byaldi ColPaliModel sharing `rag`'s loaded network, holding the index saved in `folder` (read as byaldi
    0.0.7's loader reads it: embeddings/embeddings_<n>.pt in order, the id maps and the metadata), so one model
    serves every collection and version instead of `from_index` loading a copy per index."""
    import gzip
    import json

    import torch
    from byaldi.colpali import ColPaliModel

    def read(name: str) -> dict:
        path = folder / name
        if not path.exists():
            return {}
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)

    m = rag.model
    shell = ColPaliModel.__new__(ColPaliModel)
    shell.__dict__.update(m.__dict__)
    config = read("index_config.json.gz")
    files = sorted((folder / "embeddings").glob("embeddings_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    embeds: list[Any] = []
    for f in files:
        embeds.extend(torch.load(f, weights_only=True))
    shell.indexed_embeddings = embeds
    shell.embed_id_to_doc_id = {int(k): v for k, v in read("embed_id_to_doc_id.json.gz").items()}
    shell.doc_ids_to_file_names = {int(k): v for k, v in read("doc_ids_to_file_names.json.gz").items()}
    shell.doc_id_to_metadata = {int(k): v for k, v in read("metadata.json.gz").items()}
    shell.doc_ids = {int(e["doc_id"]) for e in shell.embed_id_to_doc_id.values()}
    shell.highest_doc_id = max(shell.doc_ids, default=-1)
    shell.index_name, shell.index_root = folder.name, str(folder.parent)
    shell.full_document_collection = bool(config.get("full_document_collection", False))
    shell.collection = {}
    shell.max_image_width = config.get("max_image_width")
    shell.max_image_height = config.get("max_image_height")
    shell.verbose = 0
    return shell


class ByaldiIndex:
    """PageScorer: a snapshot's byaldi index searched with the process's one copy of the configured model
    (load_rag). Raises PageSearchUnavailable when page-image search is off here (off_reason), when the index was
    written by another model than RELAYRAG_COLPALI_MODEL (its page vectors are not comparable with this model's
    query vectors) or when the index cannot be read."""

    def __init__(self, folder: Path, model: str, device: str = ""):
        reason = off_reason(model)
        if reason:
            raise PageSearchUnavailable(reason)
        built_with = index_model(folder)
        if model_key(built_with) != model_key(model):
            raise PageSearchUnavailable(
                f"page-image search is off for this collection: its page vectors were made by {built_with!r} but "
                f"RELAYRAG_COLPALI_MODEL is {model!r}; ingest the collection again (or set the model back)")
        rag = load_rag(model, device)
        try:
            self.shell = _shell_with_index(rag, folder)
        except Exception as exc:
            raise PageSearchUnavailable(f"page-image search is off: the page index at {folder} could not be loaded "
                                        f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]})") from None
        self.model_id = model

    def search(self, query: str, k: int) -> list[PageHit]:
        if not self.shell.indexed_embeddings:
            return []
        _align_threads()
        out = []
        for r in self.shell.search(query, k=k, return_base64_results=False):
            if not math.isfinite(r.score):
                raise PageSearchUnavailable(f"the page-image model {self.model_id!r} returned a non-finite score")
            meta = r.metadata or {}
            out.append(PageHit(sha256=meta.get("sha256", ""), source=meta.get("source", ""), doc=meta.get("doc", ""),
                               page=int(r.page_num), score=float(r.score)))
        return out


def save_vectors(vectors: dict[int, np.ndarray]) -> bytes:
    """Page vectors of one file (page -> float16 (n, dim)) as .npz bytes (no pickle)."""
    buf = io.BytesIO()
    arrays: dict[str, Any] = {f"p{p:04d}": np.asarray(v, np.float16) for p, v in vectors.items()}
    np.savez(buf, **arrays)
    return buf.getvalue()


def load_vectors(data: bytes) -> dict[int, np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return {int(k[1:]): z[k] for k in z.files}
