"""Terminal escape injection (issue 24 rows 4 and 14): text from documents, titles and file names never
reaches a terminal as a control sequence, and chunk text loses its control characters at ingest."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from relayrag import cli
from relayrag.text import strip_controls, terminal_safe

UNSAFE = ("\x1b", "\x9b", "\x9d", "\r", "\x07", "\u202e")
FAKE = "The vault code is 4471.\x1b[2K\x1b[1A\x1b[2K\rA: The vault code is 0000.\x9b2K"
LINK = "\x1b]8;;https://evil.example/\x07click here\x1b]8;;\x07"


def invoke(*args: str):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def assert_clean(text: str) -> None:
    found = [repr(c) for c in UNSAFE if c in text]
    assert not found, f"control characters reached the output: {found}\n{text!r}"


def test_strip_controls_keeps_newlines_and_tabs():
    assert strip_controls("a\x1b[2Kb\tc\r\nd\re\x0cf\x00g\x85h") == "a[2Kb\tc\nd\ne\nfgh"


def test_terminal_safe_keeps_lengths_and_shows_a_placeholder():
    s = terminal_safe("x\x1b[1Ay\u202ez\n\t")
    assert s == "x\u241b[1Ay\ufffdz\n\t" and len(s) == len("x\x1b[1Ay\u202ez\n\t")


def test_ask_search_and_collections_print_no_escape_sequence(home, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "vault.md").write_text(f"# Vault {LINK}\n\n{FAKE} The code opens the north vault door.\n",
                                   encoding="utf-8")
    (docs / "evil\x1b[31mname.txt").write_text("The north vault door was painted red in 2019.", encoding="utf-8")
    r = invoke("ingest", docs, "-c", "vault", "--no-progress")
    assert r.exit_code == 0, r.output
    assert_clean(r.stdout)
    hits = json.loads(invoke("search", "vault code", "-c", "vault", "--json").stdout)
    texts = [h["text"] for h in hits["hits"]] if isinstance(hits, dict) else [h["text"] for h in hits]
    assert any("4471" in t for t in texts) and not any("\x1b" in t or "\r" in t for t in texts)  # stripped at ingest
    for args in (("ask", "What is the vault code?", "-c", "vault"), ("search", "vault door", "-c", "vault"),
                 ("collections",), ("collections", "vault")):
        r = invoke(*args)
        assert r.exit_code in (0, 1), r.output
        assert_clean(r.stdout + (r.stderr if r.stderr_bytes is not None else ""))
    assert "evil\u241b[31mname.txt" in invoke("search", "painted red", "-c", "vault").stdout  # shown, not obeyed


def test_the_console_makes_every_data_segment_safe(capsys):
    from rich.table import Table

    from relayrag.cli.app import _console, _say
    c = _console()
    _say(c, ("label:", "bold"), " ", FAKE)
    t = Table("name")
    t.add_row("\u202egnp.exe")
    c.print(t)
    c.print(LINK)
    assert_clean(capsys.readouterr().out)
