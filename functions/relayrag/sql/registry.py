"""Which collections have a warehouse, and where it is recorded: standard library and settings only, since
classify asks it on every question (importing relayrag.sql.warehouse and relayrag.sql.config for it cost a
`relayrag ask` ~25 ms of CPU). relayrag.sql.warehouse re-exports these names."""

from __future__ import annotations

import json
from pathlib import Path

WAREHOUSES_DIR = "warehouses"  # under RELAYRAG_HOME: DuckDB files, their records, and local SQL configs


def warehouse_dir(home: Path) -> Path:
    """RELAYRAG_HOME/warehouses: the DuckDB files, their records (<collection>.json) and local SQL configs."""
    return Path(home) / WAREHOUSES_DIR


def _bigquery_record(collection: str) -> dict | None:
    """The record of a collection whose warehouse is the BigQuery dataset named by settings
    (RELAYRAG_BIGQUERY_DATASET + RELAYRAG_BIGQUERY_COLLECTIONS), else None."""
    from relayrag.settings import load_settings
    s = load_settings()
    names = {n.strip() for n in s.bigquery_collections.split(",") if n.strip()}
    if not s.bigquery_dataset or not (collection in names or "*" in names):
        return None
    project, _, dataset = s.bigquery_dataset.rpartition(".")
    return {"collection": collection, "engine": "bigquery", "project": project or s.gcp_project,
            "dataset": dataset, "path": f"bigquery:{s.bigquery_dataset}", "tables": None,
            "max_bytes_billed": s.bigquery_max_bytes_billed}


def warehouse_record(home: Path, collection: str) -> dict | None:
    """The collection's warehouse record (None: no warehouse): a BigQuery dataset when settings map the
    collection to one (`tables` is then None: listed by the warehouse itself), else the record
    `relayrag warehouse load` writes next to the DuckDB database."""
    bq = _bigquery_record(collection)
    if bq is not None:
        return bq
    p = warehouse_dir(home) / f"{collection}.json"
    if not p.is_file():
        return None
    try:
        rec = json.loads(p.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


def warehouse_collections(home: Path) -> list[str]:
    """The collections with a warehouse recorded under RELAYRAG_HOME (`relayrag warehouse load`), sorted: each
    <collection>.json record whose `collection` is its own name. (A BigQuery mapping names no collections until
    asked for one.)"""
    d = warehouse_dir(home)
    out = []
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        rec = warehouse_record(home, p.stem)
        if rec is not None and rec.get("collection") == p.stem:
            out.append(p.stem)
    return out
