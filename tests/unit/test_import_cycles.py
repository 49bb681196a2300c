"""scripts/check_import_cycles.py: an import cycle hidden under `if TYPE_CHECKING:` counts (the mcp.tools <->
mcp.workflow_tools cycle hid there), and relayrag has none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_import_cycles.py"


def _check(root: Path, package: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(root), package], capture_output=True, text=True,
                          timeout=120)


def test_a_type_checking_cycle_is_a_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import B\n\nclass A(B):\n    pass\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.a import A\n\n"
                              "class B:\n    other: 'A'\n")
    r = _check(tmp_path, "pkg")
    assert r.returncode == 1 and "pkg.a" in r.stdout and "pkg.b" in r.stdout, r.stdout + r.stderr


def test_relayrag_has_no_import_cycle():
    r = _check(REPO / "functions", "relayrag")
    assert r.returncode == 0, r.stdout + r.stderr
