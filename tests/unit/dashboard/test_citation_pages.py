"""Issue 28, item 3: a citation shows its page. A PDF citation carries a thumbnail served by the dashboard
(behind its auth) and a link to the whole page; a text source shows its type instead; the image routes read
only the reference stored in the run's own record, never a path from the request."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.conftest import EXAMPLES
from tests.unit.dashboard.conftest import job_url, read_sse

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def mixed(ctx, tmp_path):
    from relayrag.ingest.pipeline import ingest
    src = tmp_path / "mixed"
    src.mkdir()
    shutil.copy(EXAMPLES / "pdfs" / "ag-energy-round-up-2017-02-24.pdf", src)
    (src / "bees.txt").write_text("Honey bees communicate the direction of flowers with a waggle dance. The queen "
                                  "lays up to 2,000 eggs per day.", encoding="utf-8")
    ingest(ctx, src, "mixed")
    return src


def _answer(api, question: str, arm: str = "bm25") -> tuple[str, str]:
    r = api.post("/ask", data={"question": question, "collection": "mixed", "arm": arm})
    assert r.status_code == 200, r.text
    result = [d for e, d in read_sse(api, job_url(r.text)) if e == "result"][0]
    return re.search(r'data-run="([0-9a-f]+)"', result).group(1), result


def test_pdf_citation_shows_its_page_thumbnail_and_text_citation_its_type(api, app, mixed, ctx):
    from PIL import Image
    import io
    run_id, html = _answer(api, "What was the price of straw biomass?")
    assert "ag-energy-round-up-2017-02-24.pdf" in html
    thumb = f"/runs/{run_id}/citations/1/thumbnail.png"
    assert f'src="{thumb}"' in html and f'href="/runs/{run_id}/citations/1/image.png"' in html
    r = api.get(thumb)
    assert r.status_code == 200 and r.headers["content-type"] == "image/png" and r.content[:8] == PNG
    small = Image.open(io.BytesIO(r.content))
    big = Image.open(io.BytesIO(api.get(f"/runs/{run_id}/citations/1/image.png").content))
    assert max(small.size) == 256 and max(big.size) > 256  # the thumbnail is the small rendering of the page
    # the passage view carries the thumbnail too
    assert f'src="{thumb}"' in api.get(f"/runs/{run_id}/citations/1").text

    # served with the dashboard's auth, like every page
    from starlette.testclient import TestClient
    with TestClient(app) as anon:
        assert anon.get(thumb).status_code == 401

    run_id, html = _answer(api, "How many eggs does the queen bee lay per day?")
    assert "bees.txt" in html and '<span class="src-type"' in html and ">text</span>" in html
    assert "thumbnail.png" not in html
    r = api.get(f"/runs/{run_id}/citations/1/thumbnail.png", headers={"accept": "application/json"})
    assert r.status_code == 404 and "no page image" in r.json()["error"]
    other = api.get(f"/runs/{run_id}/citations/1/other.png", headers={"accept": "application/json"})
    assert other.status_code == 404 and "unknown page size" in other.json()["error"]


def test_a_tampered_page_reference_outside_the_blob_store_is_not_served(api, mixed, ctx, tmp_path):
    secret = tmp_path / "secret.png"
    secret.write_bytes(PNG + b"not yours")
    run_id, _ = _answer(api, "What was the price of straw biomass?")
    rec = ctx.docstore.get_run(run_id)
    root = ctx.blobstore.local_path("pages")
    for ref in (str(secret), str(root / ".." / ".." / "secret.png"), str(root / "x" / ".." / ".." / "secret.png"),
                "/etc/passwd"):
        cits = [{**c, "thumbnail": ref} for c in rec["citations"]]
        ctx.docstore.update_run(run_id, {"citations": cits})
        r = api.get(f"/runs/{run_id}/citations/1/thumbnail.png")
        assert r.status_code == 404 and b"not yours" not in r.content, ref
