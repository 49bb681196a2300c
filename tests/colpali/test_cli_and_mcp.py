"""The issue's "done when", as a user runs it with the colpali extra and a tiny local model: `relayrag ingest
examples/pdfs` indexes every page image, `relayrag ask "Which figure shows …?" --json` routes visual, runs
colpali_search through the YAML and cites a page whose image reference opens as a PNG; the MCP `ask` tool returns
an image content block; with page-image search off, the same commands work and say once how to turn it on."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RELAYRAG = Path(sys.executable).parent / "relayrag"


def cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    e = {**os.environ, "RELAYRAG_HOME": str(home), "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run([str(RELAYRAG), *args], env=e, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def examples_home(tmp_path_factory, tiny_models):
    home = tmp_path_factory.mktemp("home")
    p = cli(home, "ingest", str(REPO / "examples" / "pdfs"), "--collection", "examples", "--json",
            RELAYRAG_COLPALI_MODEL=str(tiny_models["colqwen2"]))
    assert p.returncode == 0, p.stderr[-3000:]
    return home, json.loads(p.stdout)


def test_ingest_indexes_every_page_image(examples_home):
    _, s = examples_home
    assert s["files"]["ingested"] == 5 and s["pages"] == {"indexed": 19, "rendered": 19, "embedded": 19}
    assert s["page_search"].startswith("page-image search: on (19 pages")


def test_ask_visual_json_cites_a_page_with_an_image_that_opens_as_png(examples_home, tiny_models):
    from PIL import Image
    home, _ = examples_home
    p = cli(home, "ask", "Which figure shows self-locking nuts?", "--collection", "examples", "--json",
            RELAYRAG_COLPALI_MODEL=str(tiny_models["colqwen2"]))
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout)
    assert r["route"] == "visual"
    step = next(s for s in r["stages"] if s["name"] == "colpali_search")
    assert step["method"] == "colpali"
    shown = r["citations"] or r["related"]
    assert shown and isinstance(shown[0]["page"], int)
    with Image.open(shown[0]["image"]) as im:
        assert im.format == "PNG" and min(im.size) > 100
    assert "page image" in r["answer"]


def test_mcp_ask_returns_an_image_content_block(examples_home, tiny_models, monkeypatch):
    from fastmcp import Client

    from relayrag.context import set_default_context
    from relayrag.mcp.server import build_server
    from relayrag.settings import load_settings
    home, _ = examples_home
    monkeypatch.setenv("RELAYRAG_HOME", str(home))
    monkeypatch.setenv("RELAYRAG_COLPALI_MODEL", str(tiny_models["colqwen2"]))
    load_settings.cache_clear()
    set_default_context(None)

    async def go():
        async with Client(build_server()) as c:
            return await c.call_tool("ask", {"question": "Which chart shows ethanol prices?", "collection": "examples"})
    try:
        res = asyncio.run(go())
    finally:
        load_settings.cache_clear()
        set_default_context(None)
    assert res.structured_content["route"] == "visual"
    blocks = [b for b in res.content if b.type == "image"]
    assert blocks and blocks[0].mimeType == "image/png"
    from PIL import Image
    with Image.open(io.BytesIO(base64.b64decode(blocks[0].data))) as im:
        assert im.format == "PNG" and max(im.size) == 256


def test_without_a_model_the_same_commands_work_and_say_how_to_turn_page_search_on(tmp_path):
    home = tmp_path / "home"
    p = cli(home, "ingest", str(REPO / "examples" / "pdfs" / "amt_handbook_sample.pdf"), "--collection", "m",
            RELAYRAG_COLPALI_MODEL="off")
    assert p.returncode == 0, p.stderr[-3000:]
    lines = [ln for ln in p.stdout.splitlines() if "page-image search is off" in ln]
    assert len(lines) == 1 and "relayrag[colpali]" in lines[0] and "RELAYRAG_COLPALI_MODEL" in lines[0]
    p = cli(home, "ask", "Which figure shows self-locking nuts?", "--collection", "m", "--json",
            RELAYRAG_COLPALI_MODEL="off")
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout)
    assert r["route"] == "visual" and r["page_search"]["status"] == "off" and "retrieve" in [s["name"] for s in r["stages"]]
    assert r["citations"] and r["citations"][0]["image"].endswith(".png")
