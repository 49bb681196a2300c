"""One title per document: the loader's (HTML <title>; PDF metadata title unless junk, else its first heading;
Markdown first H1; else the file name without its suffix), stored with the file record at ingest and shown the
same by `relayrag collections NAME`, the dashboard's collection page (both read Service.list_documents),
search hits and citations."""

from __future__ import annotations

import pytest
from relayrag import cli
from relayrag.ingest.loaders import load_document
from relayrag.service import Service
from typer.testing import CliRunner

from tests.conftest import write_docs
from tests.unit.ingest.test_loaders import _Pdf, text_ops

BODY = ["The snack cupboard on the third floor is restocked", "every Monday morning by the facilities team",
        "and fruit is delivered on Wednesdays before noon."]


def _pdf(title: str | None, heading: str | None = None) -> bytes:
    ops = (text_ops([heading], 72, 720, size=22) if heading else b"") + text_ops(BODY, 72, 680)
    return _Pdf(title=title).page(ops).bytes()


@pytest.fixture
def titled(tmp_path):
    folder = write_docs(tmp_path / "docs", {
        "snacks.html": "<html><head><title>Office Snacks</title></head><body><h1>Welcome</h1>"
                       "<p>Snacks are restocked every Monday by the facilities team.</p></body></html>",
        "guide.md": "Intro line before the heading.\n\n# Visitor Guide\n\nVisitors sign in at the reception desk.\n\n"
                    "# Second heading\n\nBadges are returned at the exit.\n",
        "notes.txt": "Parking permits are renewed every January at the front desk.\n",
    })
    (folder / "review.pdf").write_bytes(_pdf("Quarterly Safety Review", heading="Not The Title"))
    (folder / "minutes.pdf").write_bytes(_pdf("Microsoft Word - minutes-final.doc", heading="Board Minutes March"))
    (folder / "scan.pdf").write_bytes(_pdf("   "))  # an empty metadata title and no heading
    return folder


EXPECTED = {
    "snacks.html": "Office Snacks",            # <title>, not the first <h1>
    "guide.md": "Visitor Guide",               # the first H1, not the first line
    "notes.txt": "notes",                      # no title in the format: the file name
    "review.pdf": "Quarterly Safety Review",   # the metadata title
    "minutes.pdf": "Board Minutes March",      # junk metadata title: the first heading
    "scan.pdf": "scan",                        # empty metadata title, no heading: the file name
}


def test_each_format_gives_its_title(titled):
    assert {p.name: load_document(p).title for p in sorted(titled.iterdir())} == EXPECTED


def test_the_title_is_stored_at_ingest_and_shown_the_same_everywhere(ctx, titled):
    svc = Service(ctx)
    svc.ingest(titled, "titles")
    docs = svc.list_documents("titles")
    assert {d["name"]: d["title"] for d in docs} == EXPECTED
    assert all(d["title"] == EXPECTED[d["name"]] for d in ctx.docstore.list_files("titles"))  # stored, not derived
    for name, title in EXPECTED.items():  # search hits and citations carry the same title
        hits = svc.search("snack cupboard restocked parking permits visitors sign badges", "titles", k=10,
                          doc=name).hits
        assert hits and {h.title for h in hits} == {title}, name
    res = svc.ask("When is the snack cupboard restocked?", "titles")
    assert res.citations and all(c.title == EXPECTED[c.doc] for c in res.citations)
    shown = CliRunner().invoke(cli.app, ["collections", "titles"])
    assert shown.exit_code == 0, shown.output
    for name, title in EXPECTED.items():
        assert f"{name} · {title} ·" in shown.output


def test_documents_ingested_before_titles_were_stored_show_their_chunks_title(ctx, titled):
    svc = Service(ctx)
    svc.ingest(titled, "old")
    records = [{k: v for k, v in r.items() if k != "title"} for r in ctx.docstore.list_files("old")]
    col = ctx.docstore.get_collection("old")  # rewrite the records as ingests before titles were stored wrote them
    ctx.docstore.commit_ingest("old", col["current_version"], col["stats"], records, [],
                               expected_version=col["current_version"])
    assert all("title" not in r for r in ctx.docstore.list_files("old"))
    assert {d["name"]: d["title"] for d in svc.list_documents("old")} == EXPECTED
