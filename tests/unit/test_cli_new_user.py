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
