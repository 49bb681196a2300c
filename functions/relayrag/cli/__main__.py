"""`python -m relayrag.cli`: the `relayrag` command."""

from relayrag.cli import app

if __name__ == "__main__":
    app()
