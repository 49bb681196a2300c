"""`relayrag feedback` and `relayrag eval export-feedback` end to end, in-process: ask, give verdicts, see
the bandit move, export the 👎 with a correct answer and score it with `relayrag eval answers`."""

from __future__ import annotations

import json

from relayrag.retrieval.bandit import human_key
from tests.unit.test_cli_edges import invoke


def _ask(question: str) -> dict:
    r = invoke("ask", question, "-c", "docs", "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_feedback_from_the_cli_teaches_the_bandit_and_becomes_a_golden_case(home, small_corpus, tmp_path):
    from relayrag.context import default_context
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    res = _ask("How many worker bees live in a colony in summer?")
    run_id, arm = res["run_id"], res["arm"]

    r = invoke("feedback", run_id, "up")
    assert r.exit_code == 0, r.output
    assert f"{run_id}: 👍; bandit: latin/{arm}/human = 1" in r.stdout
    arms = default_context().docstore.get_arms("docs")
    assert arms[human_key("latin", arm)] == (2.0, 1.0)

    r = invoke("feedback", run_id, "down", "--reason", "wrong", "--answer", "60,000", "--doc", "bees.txt",
               "--page", "1", "--json")
    assert r.exit_code == 0, r.output
    entry = json.loads(r.stdout)
    assert entry["replaced"] is True and entry["verdict"] == "down" and entry["answer"] == "60,000"
    assert default_context().docstore.get_arms("docs")[human_key("latin", arm)] == (1.0, 2.0)  # replaced

    # bad input: one line, exit 2, nothing stored
    for args, msg in [((run_id, "maybe"), "feedback verdict: must be one of up, down"),
                      ((run_id, "up", "--reason", "wrong"), "goes with a 👎"),
                      ((run_id, "down", "--page", "2"), "needs the document"),
                      (("no-such-run", "up"), "no run 'no-such-run'"),
                      ((run_id, "down", "--answer", "x" * 2001), "feedback answer"),
                      # a new user's --doc naming another collection's file became an exported golden case
                      ((run_id, "down", "--doc", "nowhere.pdf", "--page", "1"),
                       "'nowhere.pdf' is not a document of collection 'docs'")]:
        r = invoke("feedback", *args)
        assert r.exit_code == 2 and msg in " ".join(r.stderr.split()), (args, r.output)
    assert len(default_context().docstore.list_feedback("docs")) == 1

    # the same question asked again and judged by a second verdict: merged into one case
    again = _ask("How many  worker bees live in a colony in SUMMER?")
    assert invoke("feedback", again["run_id"], "down", "--answer", "60000").exit_code == 0
    up_only = _ask("What is the standard rail gauge?")
    assert invoke("feedback", up_only["run_id"], "up").exit_code == 0  # a 👍 is no test case

    golden = tmp_path / "fb.jsonl"
    r = invoke("eval", "export-feedback", "-c", "docs", "--out", golden)
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in golden.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 1
    case = lines[0]
    assert case["question"] == "How many worker bees live in a colony in summer?"
    assert case["answers"] == ["60,000", "60000"] and case["doc"] == "bees.txt" and case["page"] == 1
    assert case["category"] == "feedback" and case["unanswerable"] is False and case["id"].startswith("fb-")
    assert set(case) == {"id", "question", "answers", "doc", "page", "category", "unanswerable"}

    r = invoke("eval", "answers", golden, "-c", "docs", "--json", "--rows", "--no-llm-run")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["n"] == 1
    (m,) = report["methods"].values()
    assert m["overall"]["answer_accuracy"] == 1.0 and m["overall"]["citation_precision"] == 1.0
    assert m["rows"][0]["id"] == case["id"]

    # withdrawing takes the verdict and its reward away
    assert invoke("feedback", again["run_id"], "--withdraw", "up").exit_code == 0
    assert len(default_context().docstore.list_feedback("docs")) == 2


def test_feedback_without_a_verdict_says_what_to_type_and_where_export_lives(home):
    """A new user typed `relayrag feedback export` and got "Missing argument 'verdict'": a subcommand word says
    which command exports verdicts; a run id alone says how to give one. Exit 2, nothing opened or stored."""
    r = invoke("feedback", "export")
    assert r.exit_code == 2
    said = " ".join(r.stderr.split())
    assert "'export' is not a subcommand" in said and "relayrag eval export-feedback" in said
    for word in ("list", "EXPORT"):
        assert "relayrag eval export-feedback" in " ".join(invoke("feedback", word).stderr.split())
    r = invoke("feedback", "0123abcd")
    assert r.exit_code == 2
    said = " ".join(r.stderr.split())
    assert "relayrag feedback 0123abcd up" in said and "export-feedback" not in said
    r = invoke("feedback", "0123abcd", "--withdraw")  # --withdraw needs no verdict: the run is looked up
    assert r.exit_code == 2 and "no run '0123abcd'" in " ".join(r.stderr.split())



def test_a_rule_about_the_whole_verdict_says_feedback_once(home, small_corpus):
    """`relayrag feedback RUN up --page 3` said "error: feedback feedback: …": a rule of the whole verdict (a
    model validator's error, which has no field) got the placeholder "feedback" as its field. It says
    `feedback: …`; a field's rule still names the field. Exit 2, nothing stored."""
    from relayrag.context import default_context
    from relayrag.errors import first_validation_error
    from relayrag.feedback import FeedbackIn
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    run_id = _ask("How many worker bees live in a colony in summer?")["run_id"]
    for args, said in [(("up", "--page", "3"), "error: feedback: a reason, correct answer or correct document "
                                               "goes with a 👎 (down) verdict only"),
                       (("up", "--reason", "wrong"), "error: feedback: a reason, correct answer or correct "
                                                     "document goes with a 👎 (down) verdict only"),
                       (("down", "--page", "2"), "error: feedback: a page needs the document it is in (doc)"),
                       (("down", "--reason", "nope"), "error: feedback reason: must be one of wrong, not_answered, "
                                                      "wrong_source, outdated, other")]:
        r = invoke("feedback", run_id, *args)
        assert r.exit_code == 2 and " ".join(r.stderr.split()) == said, (args, r.output)
    assert default_context().docstore.list_feedback("docs") == []

    from pydantic import ValidationError
    for fields, where in [({"verdict": "up", "answer": "x"}, ""), ({"verdict": "down", "page": 2}, ""),
                          ({"verdict": "down", "answer": "x" * 3000}, "answer")]:
        try:
            FeedbackIn.model_validate(fields)
        except ValidationError as exc:
            got, msg = first_validation_error(exc)
            assert got == where and not msg.startswith("Value error"), (fields, got, msg)
        else:
            raise AssertionError(fields)


def test_feedback_page_must_be_one_the_document_has(home, small_corpus):
    """A new user's `--page 99` on a 3-page PDF (and page 0, a negative page) was stored and would have become an
    exported golden case citing a page that does not exist: each is refused with one line naming the document
    and its page count, exit 2, nothing stored. A text file has one page."""
    from relayrag.context import default_context
    from tests.pages_doubles import write_manual
    write_manual(small_corpus)  # manual.pdf, 3 pages
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    run_id = _ask("How many worker bees live in a colony in summer?")["run_id"]

    for doc, page, has in [("manual.pdf", "4", "'manual.pdf' has 3 pages (1 to 3); there is no page 4"),
                           ("manual.pdf", "99", "'manual.pdf' has 3 pages (1 to 3); there is no page 99"),
                           ("manual.pdf", "0", "'manual.pdf' has 3 pages (1 to 3); there is no page 0"),
                           ("manual.pdf", "-2", "'manual.pdf' has 3 pages (1 to 3); there is no page -2"),
                           ("manual.pdf", "200000", "'manual.pdf' has 3 pages (1 to 3); there is no page 200000"),
                           ("bees.txt", "2", "'bees.txt' has 1 page (page 1); there is no page 2")]:
        r = invoke("feedback", run_id, "down", "--answer", "60,000", "--doc", doc, "--page", page)
        said = " ".join(r.stderr.split())
        assert r.exit_code == 2 and said == f"error: feedback page: {has}", (doc, page, r.output)
    r = invoke("feedback", run_id, "down", "--doc", "manual.pdf", "--page", "0", "--json")
    assert r.exit_code == 2 and "there is no page 0" in json.loads(r.stdout)["error"]
    assert default_context().docstore.list_feedback("docs") == []

    r = invoke("feedback", run_id, "down", "--page", "0")  # no document: pages start at 1 all the same
    assert r.exit_code == 2 and " ".join(r.stderr.split()) == ("error: feedback page: pages are numbered from 1; "
                                                              "there is no page 0"), r.output
    assert default_context().docstore.list_feedback("docs") == []

    for page in ("1", "3"):  # the first and the last page are pages
        assert invoke("feedback", run_id, "down", "--doc", "manual.pdf", "--page", page).exit_code == 0
    assert default_context().docstore.list_feedback("docs")[0]["page"] == 3
