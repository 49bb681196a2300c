"""`relayrag feedback RUN_ID up|down`: a person's verdict on a run (relayrag.feedback)."""

from __future__ import annotations

from typing import Optional

import typer

from relayrag.cli.app import _print_json, _say, _service, _user_errors, app, out


# words a person types after `feedback` expecting a subcommand
_NOT_RUN_IDS = {"export", "export-feedback", "list", "ls", "show", "runs", "help"}


@app.command()
def feedback(run_id: str = typer.Argument(..., help="The run's id (printed by `relayrag ask`)."),
             verdict: Optional[str] = typer.Argument(None, show_default=False,
                                                     help="up (👍, good) | down (👎, bad); required unless --withdraw."),
             reason: Optional[str] = typer.Option(None, "--reason", help="With down: wrong | not_answered | "
                                                  "wrong_source | outdated | other."),
             answer: Optional[str] = typer.Option(None, "--answer", help="With down: the correct answer "
                                                  "(at most 2000 characters)."),
             doc: Optional[str] = typer.Option(None, "--doc", help="With down: the document that answers."),
             page: Optional[int] = typer.Option(None, "--page", help="With --doc: the page that answers (1 to the "
                                               "document's page count; a text file has one)."),
             withdraw: bool = typer.Option(False, "--withdraw", help="Remove your verdict on the run instead "
                                           "(VERDICT is then ignored)."),
             as_json: bool = typer.Option(False, "--json", help="Print the stored verdict as one JSON object.")):
    """Say whether a run's answer was right. One verdict per run and person: giving another replaces it (and
    its effect on the bandit). 👍 rewards the retrieval arm the run used; 👎 wrong / wrong_source (or no reason)
    punishes it; not_answered on a refusal does not; outdated / other teach the bandit nothing. A 👎 with
    --answer or --doc becomes a golden-set case via `relayrag eval export-feedback`. Exit 2 on an unknown run
    or bad input."""
    from relayrag import feedback as fb
    from relayrag.errors import RelayragError
    with _user_errors(as_json):
        if verdict is None and not withdraw:
            if run_id.strip().lower() in _NOT_RUN_IDS:  # read as a subcommand: say where it lives
                raise RelayragError(f"`relayrag feedback` takes a run id and a verdict, and {run_id!r} is not a "
                                    "subcommand; verdicts are exported as golden-set cases by "
                                    "`relayrag eval export-feedback`")
            raise RelayragError(f"give a verdict after the run id: `relayrag feedback {run_id} up` or "
                                f"`relayrag feedback {run_id} down --reason wrong`")
        service = _service()
        identity = fb.local_identity()
        if withdraw:
            removed = fb.withdraw(service.ctx.docstore, run_id, identity, visible=set(service.collection_names()))
            if as_json:
                _print_json({"run_id": run_id, "withdrawn": removed})
            else:
                _say(out, ("feedback", "bold"), f" {run_id}: " + ("withdrawn" if removed else "no verdict to withdraw"))
            return
        assert verdict is not None
        entry = fb.give(service, run_id, verdict, identity, reason=reason, answer=answer, doc=doc, page=page)
        if as_json:
            _print_json(entry)
            return
        mark = "👍" if entry["verdict"] == "up" else "👎"
        detail = f" ({entry['reason']})" if entry.get("reason") else ""
        taught = ", ".join(f"{k} = {v:g}" for k, v in entry["bandit"].items()) or "nothing (not the arm's doing)"
        _say(out, ("feedback", "bold"), f" {run_id}: {mark}{detail}" + (" replaces your earlier verdict"
             if entry["replaced"] else "") + f"; bandit: {taught}")
