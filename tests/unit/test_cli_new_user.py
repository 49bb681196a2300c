"""What a new user sees on bad input or a refusal at the command line: one line that names the thing once and
says what is wrong (a new-user check of the CLI, the dashboard and the MCP gateway found these)."""

from __future__ import annotations

from tests.conftest import EXAMPLES
from tests.unit.test_cli_edges import invoke, one_line


def test_eval_sql_names_an_unreadable_set_once(home, tmp_path):
    """`relayrag eval sql /nope.jsonl` said "cannot read /nope.jsonl: [Errno 2] No such file or directory:
    '/nope.jsonl'": the OSError's text repeats the path. The reason is said once, for a missing file, a folder
    and the adversarial set alike; exit 2."""
    assert invoke("warehouse", "load", EXAMPLES / "chinook" / "chinook.sqlite", "-c", "chinook").exit_code == 0
    missing = tmp_path / "nope.jsonl"
    dev = tmp_path / "dev.jsonl"
    dev.write_text('{"id": "q1", "question": "How many customers?", "gold_result": [[59]]}\n', encoding="utf-8")
    for args, said in [((missing,), f"error: cannot read {missing}: No such file or directory"),
                       ((tmp_path,), f"error: cannot read {tmp_path}: Is a directory"),
                       ((dev, "--adversarial", missing), f"error: cannot read {missing}: No such file or directory")]:
        r = invoke("eval", "sql", *args, "-c", "chinook")
        assert r.exit_code == 2 and one_line(r.stderr) == said, (args, r.output)
        assert "Errno" not in r.output


def _answer_block(text: str) -> list[str]:
    """The lines from `A:` up to the footer (ask) or the stage table (run): what both print through show_answer."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("A: "))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(("run ", "stages ", "filters:")))
    return lines[start:end]


def test_run_shows_the_outcome_and_the_answer_as_ask_does(home, small_corpus, make_llm_ctx):
    """`relayrag run RUN_ID` on a grounded answer, a "not found" (with its related passages, marked as not an
    answer) and an SQL statement the guard refused shows the same outcome word as `ask`'s footer and the same
    answer block, printed by one function (show_answer): a refusal never reads like an answer. The run view left
    the related passages' quotes and the page images out."""
    import json
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    assert invoke("warehouse", "load", EXAMPLES / "chinook" / "chinook.sqlite", "-c", "chinook").exit_code == 0
    cases = [("How many worker bees live in a colony in summer?", "docs", "grounded"),
             ("How many worker bees live in a colony in winter?", "docs", "not found"),
             ("What is the boiling point of tungsten on Venus?", "docs", "not found")]
    n_related = 0
    for question, collection, flag in cases:
        asked = invoke("ask", question, "-c", collection)
        assert asked.exit_code == 0, asked.output
        footer = asked.stdout.splitlines()[-1]
        run_id = footer.split()[1]
        assert f" · {flag} · " in footer, asked.stdout
        shown = invoke("run", run_id)
        assert shown.exit_code == 0 and f"outcome: {flag}" in shown.stdout, shown.output
        assert _answer_block(shown.stdout) == _answer_block(asked.stdout), (question, shown.stdout, asked.stdout)
        if flag == "not found":
            related = json.loads(invoke("run", run_id, "--json").stdout)["run"].get("related") or []
            n_related += len(related)
            assert sum(line.startswith("  related, not an answer: ") for line in _answer_block(shown.stdout)) \
                == len(related)
    assert n_related, "no related passage was shown: the test checked nothing of them"

    from tests.conftest import sql_route_reply
    make_llm_ctx(sql_route_reply("DROP TABLE Customer"))
    asked = invoke("ask", "Delete every customer we have in Brazil", "-c", "chinook")
    assert asked.exit_code == 0 and " · refused · " in asked.stdout.splitlines()[-1], asked.output
    shown = invoke("run", asked.stdout.splitlines()[-1].split()[1])
    assert "outcome: refused" in shown.stdout and "(refused, not run)" in shown.stdout, shown.output
    assert _answer_block(shown.stdout) == _answer_block(asked.stdout)


def test_schema_of_a_mistyped_collection_is_an_error(home, small_corpus, tmp_path):
    """`relayrag schema -c nosuch` printed "nosuch: no schema" and exited 0, so a typo read like a real collection
    without a schema. A name with neither documents, tables nor a stored schema exits 2 naming the collections
    there are; a collection with documents and no schema, and a schema stored before the first ingest, still
    show as before."""
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    r = invoke("schema", "-c", "nosuch")
    assert r.exit_code == 2 and one_line(r.stderr).startswith("error: unknown collection 'nosuch' (collections: docs)"), \
        r.output
    r = invoke("schema", "-c", "docs")
    assert r.exit_code == 0 and "docs: no schema" in r.output, r.output
    yaml = tmp_path / "relayrag.collection.yaml"
    yaml.write_text("fields:\n  region:\n    type: string\n    filterable: true\n", encoding="utf-8")
    assert invoke("schema", yaml, "-c", "later").exit_code == 0
    r = invoke("schema", "-c", "later")
    assert r.exit_code == 0 and "region: string" in r.output, r.output


def test_an_unknown_collection_is_said_one_way_for_feedback(home, small_corpus):
    """`eval export-feedback -c nosuch` and the recent-verdicts list said "no collection 'nosuch'" where every other
    command says "unknown collection 'nosuch' (collections: …)" with how to make one."""
    from relayrag import feedback
    from relayrag.errors import NotFoundError
    from relayrag.service import Service
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    r = invoke("eval", "export-feedback", "-c", "nosuch")
    assert r.exit_code == 2 and one_line(r.stderr).startswith("error: unknown collection 'nosuch' (collections: docs)")
    try:
        feedback.recent(Service(), "someone", collection="nosuch")
    except NotFoundError as exc:
        assert str(exc).startswith("unknown collection 'nosuch' (collections: docs)")
    else:
        raise AssertionError("recent() accepted an unknown collection")


def test_eval_answers_on_a_missing_set_is_one_line(home, tmp_path):
    """`eval answers /nope.jsonl` drew an empty "answers ━━━ 0/?" progress bar before its error: the bar starts
    only once the set is loaded, so a missing set is the error line alone."""
    missing = tmp_path / "nope.jsonl"
    r = invoke("eval", "answers", missing, "-c", "docs")
    assert r.exit_code == 2 and r.stderr.strip() == f"error: {missing}: no such golden-set file", r.stderr
