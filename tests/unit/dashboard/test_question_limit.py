"""Issue 28 walk, item 5: the dashboard's question box had maxlength 2000 while the API takes 4000 — one constant
(relayrag.naming.MAX_QUESTION_CHARS) for the box, the stages' request model and the service's check."""

from __future__ import annotations

import re


def test_the_question_box_allows_what_the_api_allows(api):
    from relayrag.naming import MAX_QUESTION_CHARS
    from relayrag.stages.classify import ClassifyRequest
    page = api.get("/ask").text
    box = re.search(r'<input[^>]*name="question"[^>]*>', page)
    assert box and f'maxlength="{MAX_QUESTION_CHARS}"' in box.group(0), box
    assert ClassifyRequest.model_fields["question"].metadata[-1].max_length == MAX_QUESTION_CHARS == 4000


def test_a_question_over_the_limit_is_told_in_a_sentence(api):
    long = ("How many eggs does the queen lay? " * 127).strip()
    r = api.post("/ask", data={"question": long, "collection": "docs"}, headers={"hx-request": "true"})
    assert r.status_code == 400 and f"The question is {len(long):,} characters; the limit is 4,000." in r.text
    assert "String should have" not in r.text
