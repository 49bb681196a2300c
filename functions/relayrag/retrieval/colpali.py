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
(`_export_index`), then loaded with `RAGMultiModalModel.from_index` — the byaldi pin is exact for that reason.
"""

from __future__ import annotations

import hashlib
import io
import logging
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

log = logging.getLogger(__name__)

OFF_VALUES = ("", "off", "none")
EXTRA_HINT = "pip install 'relayrag[colpali]'"
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


def model_key(model_id: str) -> str:
    """A file-name-safe key of a model id or folder (the page vectors of two models never mix)."""
    return hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:16]


def off_reason(model: str) -> str | None:
    """Why page-image search is off for RELAYRAG_COLPALI_MODEL=`model` without loading anything, or None when
    it may run (the extra is importable and a model is named)."""
    if model.strip().lower() in OFF_VALUES:
        return "page-image search is off (RELAYRAG_COLPALI_MODEL=off); set it to a ColPali/ColQwen2 model " \
               "id or folder and install " + EXTRA_HINT
    import importlib.util
    for mod in ("torch", "byaldi", "colpali_engine"):
        if importlib.util.find_spec(mod) is None:
            return f"page-image search is off ({mod} is not installed); turn it on with {EXTRA_HINT} " \
                   f"and RELAYRAG_COLPALI_MODEL (a ColPali/ColQwen2 model id or local folder)"
    return None


_models: dict[tuple[str, str], Any] = {}
_lock = threading.Lock()


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
    """byaldi's RAGMultiModalModel for `model` (one per process and device). Raises PageSearchUnavailable with
    the reason (extra missing, model not found / not downloadable, not a ColPali/ColQwen2 name)."""
    reason = off_reason(model)
    if reason:
        raise PageSearchUnavailable(reason)
    key = (model, device)
    with _lock:
        if key not in _models:
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


class ByaldiIndex:
    """PageScorer: a snapshot's byaldi index loaded with `RAGMultiModalModel.from_index`."""

    def __init__(self, folder: Path, device: str = ""):
        reason = off_reason("colpali")  # the extra only; the model comes from the index's config
        if reason:
            raise PageSearchUnavailable(reason)
        from byaldi import RAGMultiModalModel
        try:
            self.rag = RAGMultiModalModel.from_index(folder.name, index_root=str(folder.parent), verbose=0,
                                                     device=_device(device))
        except Exception as exc:
            raise PageSearchUnavailable(f"page-image search is off: the page index at {folder} could not be loaded "
                                        f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]})") from None
        self.model_id = self.rag.model.model_name

    def search(self, query: str, k: int) -> list[PageHit]:
        if not self.rag.model.indexed_embeddings:
            return []
        _align_threads()
        out = []
        for r in self.rag.search(query, k=k, return_base64_results=False):
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
