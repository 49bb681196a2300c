"""Issue 28 walk, item 7: the README's commands for the demo's collection must be the ones scripts/demo.sh makes
(`eval answers … --collection demo` failed after demo.sh, which ingests examples/pdfs into `examples`)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def demo_script() -> tuple[str, str]:
    """(collection, RELAYRAG_HOME default) that scripts/demo.sh ingests examples/pdfs into."""
    sh = (REPO / "scripts" / "demo.sh").read_text(encoding="utf-8")
    collection = re.search(r"ingest examples/pdfs --collection (\S+)", sh).group(1)
    home = re.search(r"RELAYRAG_HOME=\$\{RELAYRAG_HOME:-([^}]+)\}", sh).group(1)
    return collection, home


def test_the_readme_names_the_collection_and_home_demo_sh_uses():
    collection, home = demo_script()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    # every command over the bundled PDFs' golden set, or ingesting examples/pdfs, names demo.sh's collection
    named = re.findall(r"(?:examples-pdfs\.jsonl|ingest examples/pdfs) (?:--collection|-c) (\S+)", readme)
    assert named and set(named) == {collection}, named
    assert f"export RELAYRAG_HOME={home}" in readme  # where the demo's state is
    assert f"collection `{collection}`" in readme
