"""MCP `ask` / `search` return the page thumbnails of what they show as MCP image content blocks (PNG) next to
the structured result, when the collection has page images (fastmcp's in-memory Client; page-image search by the
deterministic double of tests/pages_doubles.py)."""

from __future__ import annotations

import asyncio
import base64

import pytest
from fastmcp import Client

from relayrag.ingest.pipeline import ingest
from relayrag.mcp.server import build_server
from tests.pages_doubles import use_doubles, write_manual
from tests.unit.test_mcp_gateway import wf_dir  # noqa: F401  (fixture)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def server(home, wf_dir):  # noqa: F811
    return build_server()


def images(res) -> list[bytes]:
    return [base64.b64decode(b.data) for b in res.content if b.type == "image"]


def test_ask_returns_the_cited_page_as_an_image_block(ctx, server, tmp_path):
    use_doubles(ctx)
    ingest(ctx, write_manual(tmp_path / "docs"), "m")

    async def go():
        async with Client(server) as c:
            return (await c.call_tool("ask", {"question": "Which figure shows the red diagram?", "collection": "m"}),
                    await c.call_tool("ask", {"question": "hello", "collection": "m"}))
    visual, chat = asyncio.run(go())
    data = visual.structured_content
    assert data["route"] == "visual" and data["citations"][0]["page"] == 2
    blocks = images(visual)
    assert blocks and all(b.startswith(PNG_MAGIC) for b in blocks) and len(blocks) <= 3
    assert [b.mimeType for b in visual.content if b.type == "image"][0] == "image/png"
    # the first image is the cited page's thumbnail, byte for byte
    assert blocks[0] == open(data["citations"][0]["thumbnail"], "rb").read()
    assert visual.content[0].type == "text" and '"route": "visual"' in visual.content[0].text
    # no page shown, no image block
    assert chat.structured_content["route"] == "chitchat" and images(chat) == []


def test_search_returns_page_thumbnails_of_its_hits(ctx, server, tmp_path):
    ingest(ctx, write_manual(tmp_path / "docs"), "m")

    async def go():
        async with Client(server) as c:
            return await c.call_tool("search", {"query": "wiring of the pump motor", "collection": "m", "k": 2})
    res = asyncio.run(go())
    hits = res.structured_content["results"]
    assert hits[0]["page"] == 3 and hits[0]["image"].endswith("page-0003.png")
    blocks = images(res)
    assert len(blocks) == 2 and blocks[0] == open(hits[0]["thumbnail"], "rb").read()


def test_a_reference_outside_the_page_store_is_refused(ctx, tmp_path):
    from relayrag.errors import NotFoundError
    from relayrag.service import Service
    secret = tmp_path / "secret.png"
    secret.write_bytes(PNG_MAGIC)
    svc = Service()
    for ref in (str(secret), "/etc/passwd", str(ctx.blobstore.local_path("pages")) + "/../../etc/passwd.png"):
        with pytest.raises(NotFoundError):
            svc.page_image(ref)
