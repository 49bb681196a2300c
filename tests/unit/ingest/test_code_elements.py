"""<script>/<style> in Markdown and HTML: their content is code a reader never sees, so it is not indexed,
and the text around it keeps its line breaks (a script at the end of a line must not glue itself, or the
next line, to the sentence before)."""

from __future__ import annotations

import pytest
from relayrag.ingest.loaders import load_document
from relayrag.service import Service

from tests.conftest import write_docs

PARKING = "Staff parking is in the basement garage on level B2."


@pytest.mark.parametrize("name, body", [
    ("inline.md", "# Office guide\n\nThe office opens at 8 am. <script>alert('md')</script>\n" + PARKING + "\n"),
    ("block.md", "# Office guide\n\nThe office opens at 8 am.\n<script>alert('md')</script>\n" + PARKING + "\n"),
    ("multiline.md", "# Office guide\n\nThe office opens at <b>8 am</b>. <script>\nalert('md')\n</script>\n"
                     + PARKING + "\n"),
    ("style.md", "# Office guide\n\nThe office opens at 8 am. <STYLE type='text/css'>p {alert: 'md'}</STYLE>\n"
                 + PARKING + "\n"),
    ("page.html", "<html><head><title>Office guide</title><style>p{alert:'md'}</style></head><body>"
                  "<p>The office opens at 8 am. <script>alert('md')</script></p><p>" + PARKING + "</p></body></html>"),
])
def test_script_and_style_content_is_dropped_and_the_next_line_stays_its_own(tmp_path, name, body):
    doc = load_document(write_docs(tmp_path, {name: body}) / name)
    assert "alert" not in doc.text and "script" not in doc.text.lower()
    lines = [ln.strip() for ln in doc.text.splitlines()]
    assert PARKING in lines, doc.text  # its own line, not joined to the script or the sentence before
    assert any(ln.startswith("The office opens at 8 am.") for ln in lines)


def test_markdown_code_span_showing_a_script_tag_is_kept_as_text(tmp_path):
    doc = load_document(write_docs(tmp_path, {"a.md": "Write `<script>x()</script>` to embed code.\n"}) / "a.md")
    assert doc.text == "Write <script>x()</script> to embed code."


def test_plain_text_is_kept_verbatim_tags_included(tmp_path):
    # a .txt file is never rendered: what it holds is its text, tags and all (data, never run)
    body = "Example: <script>alert('txt')</script>\n" + PARKING
    doc = load_document(write_docs(tmp_path, {"a.txt": body}) / "a.txt")
    assert doc.text == body


def test_the_sentence_after_a_markdown_script_is_answered_and_the_script_is_not_indexed(ctx, tmp_path):
    docs = write_docs(tmp_path / "docs", {
        "guide.md": "# Office guide\n\nThe office opens at 8 am. <script>alert('md')</script>\n" + PARKING + "\n\n"
                    "Visitors sign in at the reception desk on the ground floor.\n",
    })
    svc = Service(ctx)
    svc.ingest(docs, "guide")
    res = svc.ask("Where is staff parking?", "guide")
    assert res.found and "level B2" in res.answer and "alert" not in res.answer
    hits = svc.search("alert md", "guide", k=5).hits
    assert hits and all("alert" not in h.text for h in hits)
