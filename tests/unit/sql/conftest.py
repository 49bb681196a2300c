"""The bundled Chinook warehouse (examples/chinook) for the SQL tests: paths and a loaded, read-only copy."""

from pathlib import Path

import pytest

from relayrag.sql.warehouse import load_warehouse, open_warehouse

REPO = Path(__file__).resolve().parents[3]
CHINOOK = REPO / "examples" / "chinook" / "chinook.sqlite"
CONFIG = REPO / "examples" / "chinook" / "relayrag.sql.yaml"


@pytest.fixture
def wh(home):
    """Chinook loaded into `home`'s warehouse and opened (closed after the test)."""
    load_warehouse(home, "chinook", [CHINOOK])
    w = open_warehouse(home, "chinook")
    yield w
    w.close()
