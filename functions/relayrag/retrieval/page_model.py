"""Which page-image model (RELAYRAG_COLPALI_MODEL) is configured and where it would load from, without loading it.

No torch, no transformers: settings validation, `relayrag model`, ingestion and the colpali_search stage call
these before deciding whether page-image search runs at all, so a text question in a process without a model
pays nothing for it.

- `is_configured(model)`: a model is named ("", "off", "none" = page-image search off; the default is off).
- `tiny_model_reason(model)`: the model is a tiny random model built for tests (relayrag.retrieval.colpali_tiny
  writes TEST_MODEL_MARKER into its folder; a folder without it is recognised by its config: hidden size below
  TINY_HIDDEN_SIZE, where real ColPali (2,048) and ColQwen2 (1,536) are far above). Such a model ranks pages at
  random, so it may serve only the test suite, which says so with RELAYRAG_ALLOW_TEST_MODELS=1
  (tests/colpali/conftest.py); `refusal(model)` is the message otherwise.
- `describe(model)`: what `relayrag model` shows: the setting, the kind (colpali / colqwen2), whether it is a
  local folder or a hub id, the folder or hub-cache path it loads from, the files of the layout found there and
  what is missing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

OFF_VALUES = ("", "off", "none")
TEST_MODEL_MARKER = "relayrag-test-model.json"
TEST_MODELS_ENV = "RELAYRAG_ALLOW_TEST_MODELS"
TINY_HIDDEN_SIZE = 256
EXTRA_HINT = "pip install 'relayrag[colpali]'"
TURN_ON = (f"install the extra ({EXTRA_HINT}) and set RELAYRAG_COLPALI_MODEL to a ColPali/ColQwen2 model id "
           f"(e.g. vidore/colqwen2-v1.0-merged) or a local folder holding one, then ingest again")

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json", "adapter_model.safetensors")
PROCESSOR_FILES = ("preprocessor_config.json", "tokenizer.json", "tokenizer_config.json")


def model_key(model_id: str) -> str:
    """A file-name-safe key of a model id or folder (the page vectors of two models never mix)."""
    import hashlib
    return hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:16]


def vectors_reason(manifest: dict, model: str) -> tuple[str, str] | None:
    """(cause, reason) when a snapshot version cannot be searched by its page images with `model` — cause
    `no_images` (no PDF or image pages), `no_vectors` (ingested without page-image search), `other_model` (its
    page vectors come from another model: not comparable) — or None when it can. Reads only the manifest."""
    if not manifest.get("pages"):
        return "no_images", "no page images in this collection (only PDFs and image files have pages)"
    pv = manifest.get("page_vectors")
    if not pv:
        return "no_vectors", ("this collection's page images have no page vectors (it was ingested without "
                              "page-image search); ingest it again with RELAYRAG_COLPALI_MODEL set")
    if pv.get("model_key") != model_key(model):
        return "other_model", (f"this collection's page vectors were made by {pv.get('model')!r}, not by "
                               f"RELAYRAG_COLPALI_MODEL={model!r}; ingest it again with this model")
    return None


def is_configured(model: str) -> bool:
    """Whether RELAYRAG_COLPALI_MODEL names a model (not empty, 'off' or 'none')."""
    return model.strip().lower() not in OFF_VALUES


def kind(model: str) -> str | None:
    """'colqwen2' or 'colpali' by the name (byaldi 0.0.7 picks the model class this way), else None."""
    low = model.lower()
    return "colqwen2" if "colqwen2" in low else "colpali" if "colpali" in low else None


def local_folder(model: str) -> Path | None:
    """The folder `model` names when it is an existing local directory, else None (a hub id)."""
    if not is_configured(model):
        return None
    p = Path(model.strip()).expanduser()
    return p if p.is_dir() else None


def _hidden_sizes(config: dict) -> list[int]:
    sizes = [config.get("hidden_size")]
    for sub in ("text_config", "vision_config"):
        if isinstance(config.get(sub), dict):
            sizes.append(config[sub].get("hidden_size"))
    return [int(s) for s in sizes if isinstance(s, int)]


def tiny_model_reason(model: str) -> str | None:
    """Why `model` is a test-only model (marker file or tiny config in its folder), or None."""
    folder = local_folder(model)
    if folder is None:
        return None
    if (folder / TEST_MODEL_MARKER).is_file():
        return f"its folder holds {TEST_MODEL_MARKER}, written by relayrag.retrieval.colpali_tiny"
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    sizes = _hidden_sizes(config) if isinstance(config, dict) else []
    if sizes and max(sizes) < TINY_HIDDEN_SIZE:
        return f"its config.json has hidden size {max(sizes)}, where real ColPali/ColQwen2 models have 1,536 or more"
    return None


def tiny_models_allowed() -> bool:
    """The test suite's switch (RELAYRAG_ALLOW_TEST_MODELS=1)."""
    return os.environ.get(TEST_MODELS_ENV, "") == "1"


def refusal(model: str) -> str | None:
    """The message refusing a tiny test model outside the test suite, or None when `model` may be used."""
    why = tiny_model_reason(model)
    if why is None or tiny_models_allowed():
        return None
    return (f"{model} is a tiny random test model ({why}): it ranks pages at random and is loadable only by "
            f"relayrag's test suite; set RELAYRAG_COLPALI_MODEL to a real ColPali/ColQwen2 model (a model id such "
            f"as vidore/colqwen2-v1.0-merged, or a local folder holding one) or unset it to turn page-image "
            f"search off")


def hub_cache_folder(model: str) -> Path:
    """Where huggingface_hub keeps a downloaded hub id (HF_HUB_CACHE, else HF_HOME/hub, else
    ~/.cache/huggingface/hub): `models--<org>--<name>`."""
    cache = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"), "hub")
    return Path(cache) / ("models--" + model.strip().replace("/", "--"))


def layout(folder: Path) -> tuple[list[str], list[str]]:
    """(files found, what is missing) of a model folder's layout: config.json (or an adapter's
    adapter_config.json), weights, and the processor's files."""
    names = {p.name for p in folder.iterdir() if p.is_file()} if folder.is_dir() else set()
    found = sorted(n for n in names if n.endswith((".json", ".safetensors", ".bin", ".model")))
    missing = []
    if "config.json" not in names and "adapter_config.json" not in names:
        missing.append("config.json")
    if not names & set(WEIGHT_FILES) and not any(n.startswith("model-") and n.endswith(".safetensors")
                                                 for n in names):
        missing.append("weights (model.safetensors or model-*-of-*.safetensors)")
    if "preprocessor_config.json" not in names:
        missing.append("preprocessor_config.json")
    if not names & {"tokenizer.json", "tokenizer_config.json"}:
        missing.append("tokenizer.json")
    return found, missing


def describe(model: str) -> dict:
    """What `relayrag model` shows about the page-image model: {setting, status (off | refused | ready |
    missing | hub), kind, source (local folder | hub id), path, files, missing, base_model (an adapter's base),
    message}."""
    import importlib.util
    out: dict = {"name": "page-image search", "setting": "RELAYRAG_COLPALI_MODEL", "value": model}
    if not is_configured(model):
        return {**out, "status": "off", "message": f"page-image search is off; to turn it on, {TURN_ON}"}
    out["kind"] = kind(model)
    missing_mods = [m for m in ("torch", "byaldi", "colpali_engine") if importlib.util.find_spec(m) is None]
    folder = local_folder(model)
    refused = refusal(model)
    if folder is not None:
        found, missing = layout(folder)
        out.update(source="local folder", path=str(folder.resolve()), files=found, missing=missing)
        try:
            adapter = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
            out["base_model"] = adapter.get("base_model_name_or_path")
        except (OSError, ValueError):
            pass
        status = "refused" if refused else "missing" if missing else "ready"
    else:
        cached = hub_cache_folder(model)
        out.update(source="hub id", path=str(cached))
        status = "ready" if cached.is_dir() else "hub"  # hub: downloaded on first use where a hub is reachable
        if Path(model).expanduser().is_absolute() or model.startswith((".", "~")):
            out["missing"] = [f"no folder at {model}"]
            status = "missing"
    messages = []
    if refused:
        messages.append(refused)
    if out["kind"] is None:
        messages.append("byaldi picks the model class by 'colpali' or 'colqwen2' in the name: rename the folder")
        status = "missing" if status == "ready" else status
    if missing_mods:
        messages.append(f"{', '.join(missing_mods)} not installed: {EXTRA_HINT}")
        status = "missing" if status in ("ready", "hub") else status
    if status == "hub":
        messages.append("not in the local hub cache: downloaded on first use where a model hub is reachable "
                        "(offline, copy the model into a folder and name that folder)")
    return {**out, "status": status, **({"message": "; ".join(messages)} if messages else {})}
