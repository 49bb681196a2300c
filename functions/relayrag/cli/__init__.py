"""`relayrag` command line: ingest, delete, ask, feedback, collections, runs, eval, warehouse, model, mcp, dashboard, chat.

`app` (the console script `relayrag = relayrag.cli:app`) is built in relayrag.cli.app; each command module
registers its commands on it when imported here.
"""

# import order = the order of commands in --help
# isort: off
from relayrag.cli import documents  # noqa: F401  ingest, delete, collections
from relayrag.cli import ask  # noqa: F401  ask, run
from relayrag.cli import feedback  # noqa: F401  feedback
from relayrag.cli import serve  # noqa: F401  mcp, dashboard
from relayrag.cli import chat  # noqa: F401  chat, chat-serve
from relayrag.cli import warehouse, model, evaluate  # noqa: F401  sub-apps' commands
# isort: on
from relayrag.cli.app import _fail, app, full_short_help
from relayrag.cli.ask import QUOTE_CHARS, display_quote

full_short_help(app)

__all__ = ["app", "display_quote", "QUOTE_CHARS", "_fail"]
