"""Templates that grow: `relayrag warehouse verify "question" --sql "…" -c C [--slot name=type[:Table.Column] …]`
(and the dashboard's "save as verified") add a verified query to the collection's SQL config.

`verify_template` takes a question, SQL (with `@name` where a slot's value goes) and slot declarations, and:
1. checks the slots against the SQL's parameters and fills them from the question itself (the question must
   name a value for every slot: "Which 3 countries …" for `n=count`), exactly as a later question would fill
   them (relayrag.sql.templates, relayrag.sql.slots);
2. guards the filled SQL with the config's table allow-list (a refusal stores nothing) and runs it on the
   warehouse: it must run without error;
3. appends the example to the stored config (relayrag.sql.config.SqlConfigStore: RELAYRAG_HOME/warehouses/
   <collection>.sql.yaml embedded, `sql-config/<collection>.sql.yaml` in the deployment's bucket) as text after
   the last entry of `examples:` (comments and layout of the file kept; a config is created when there is
   none), re-validates the whole file, and stores it. A question that is already an example's question or
   variant is refused. Concurrent verifies of one collection are serialised (a lock file embedded; in the
   cloud the file is read again just before it is written and the write is refused if it changed).
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import threading
from pathlib import Path
from typing import Any, Iterator

import yaml

from relayrag.errors import ConfigError, RelayragError

_lock = threading.Lock()
SHOWN_ROWS = 20


def parse_slot_options(specs: list[str]) -> dict[str, str]:
    """["n=count", "g=value:Genre.Name"] → {"n": "count", "g": "value:Genre.Name"}; ConfigError when one has no
    '=' or a name twice. Types and columns are checked by the config model."""
    out: dict[str, str] = {}
    for spec in specs:
        for part in [p for p in re.split(r"[\n,;]+", spec) if p.strip()]:
            name, eq, kind = part.strip().partition("=")
            if not eq or not name.strip() or not kind.strip():
                raise ConfigError(f"slot {part.strip()!r}: write NAME=TYPE (count, number, year, date_range) or "
                                  "NAME=value:Table.Column")
            if name.strip() in out:
                raise ConfigError(f"slot {name.strip()!r} is declared twice")
            out[name.strip()] = kind.strip()
    return out


def _entry_yaml(entry: dict, indent: str) -> str:
    text = yaml.safe_dump([entry], allow_unicode=True, sort_keys=False, default_flow_style=False, width=100000)
    return "".join(indent + line if line.strip() else line for line in text.splitlines(keepends=True))


def append_example(raw: bytes | None, entry: dict) -> bytes:
    """The config text `raw` with `entry` (question, sql, slots) appended to its `examples:` block sequence (a
    new `examples:` at the end when it has none; a new file when `raw` is None). ConfigError when the file's
    `examples:` is not a block sequence this can extend (write the entry in by hand then)."""
    text = raw.decode("utf-8") if raw is not None else ""
    if text and not text.endswith("\n"):
        text += "\n"
    lines = text.splitlines(keepends=True)
    head = next((i for i, line in enumerate(lines) if re.match(r"^examples:[ \t]*(#.*)?$", line.rstrip("\n"))), None)
    if head is None:
        if re.search(r"^examples\s*:", text, re.M):
            raise ConfigError("the config's `examples:` is not a block list that can be extended; add the example "
                              "by hand:\n" + _entry_yaml(entry, "  "))
        return (text + ("\n" if text.strip() else "") + "examples:\n" + _entry_yaml(entry, "  ")).encode("utf-8")
    end = next((i for i in range(head + 1, len(lines)) if re.match(r"^[^\s#-]", lines[i])), len(lines))
    last = end
    while last > head + 1 and (not lines[last - 1].strip() or lines[last - 1].startswith("#")):
        last -= 1
    items = [re.match(r"^(\s*)- ", line) for line in lines[head + 1:last]]
    indent = next((m.group(1) for m in items if m), "  ")
    new = lines[:last] + [_entry_yaml(entry, indent)] + lines[last:]
    return "".join(new).encode("utf-8")


@contextlib.contextmanager
def _collection_lock(home: Path, collection: str) -> Iterator[None]:
    lock_dir = Path(home) / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with _lock, open(lock_dir / f"sql-config-{collection}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def verify_template(home: Path, collection: str, question: str, sql: str, slots: dict[str, Any] | None, *,
                    wh, store) -> dict:
    """Add a verified query (see the module docstring). `slots`: {name: "count" | "value:Genre.Name" | …};
    `wh`: the collection's warehouse without the config applied; `store`: relayrag.sql.config.SqlConfigStore.
    Returns {collection, question, sql (as guarded), slots (the values its question filled), columns, rows
    (up to SHOWN_ROWS), row_count, examples, templates, config (where it is stored)}. Raises ConfigError
    (slots, a fill, the file), RelayragError (the guard refused or the warehouse failed: nothing stored)."""
    from relayrag.sql import config as sqlconfig
    from relayrag.sql import templates as tpl
    from relayrag.sql.guard import guard_sql
    question, sql = (question or "").strip(), (sql or "").strip()
    if not question or not sql:
        raise ConfigError("give the question and its SQL")
    location = store.location(collection)
    with _collection_lock(home, collection):
        raw = store.read_bytes(collection)
        old = sqlconfig.parse_config_bytes(raw, location) if raw is not None else sqlconfig.SqlConfig()
        entry: dict[str, Any] = {"question": question, "sql": sql}
        if slots:
            entry["slots"] = dict(slots)
        try:
            example = sqlconfig.Example.model_validate(entry)
        except ValueError as exc:
            raise ConfigError(f"invalid template: {exc}") from None
        taken = {q.strip().casefold() for e in old.examples for q in e.wordings()}
        if question.casefold() in taken:
            raise ConfigError(f"{question!r} is already a verified question of {collection!r}")
        probe = sqlconfig.SqlConfig(examples=[example], value_aliases=old.value_aliases)
        problems: list[str] = []
        filled = sqlconfig.example_sqls(probe, wh, problems)[0]
        if problems or filled is None:
            raise ConfigError("the template cannot be used: " + "; ".join(p.removeprefix("examples[0]")
                                                                          .lstrip(".: ") for p in problems))
        allowed = old.allowed_tables(set(wh.tables()))
        verdict = guard_sql(filled, allowed_tables=allowed, dialect=wh.dialect, max_rows=getattr(wh, "max_rows", 1000))
        if not verdict.ok:
            raise RelayragError(f"refused by the SQL guard, nothing stored: {verdict.reason}")
        res = wh.query(verdict.sql)
        if not res.ok:
            raise RelayragError(f"the warehouse could not run it, nothing stored: {res.error}")
        new_raw = append_example(raw, entry)
        new = sqlconfig.parse_config_bytes(new_raw, location)
        if [e.model_dump() for e in new.examples] != [e.model_dump() for e in old.examples] + [example.model_dump()]:
            raise ConfigError("the config file could not be extended as text; add the example by hand:\n"
                              + _entry_yaml(entry, "  "))
        sqlconfig.check_config(new, wh, location, run_examples=False)
        if store.read_bytes(collection) != raw:  # another writer (another machine, in the cloud) got there first
            raise RelayragError(f"the SQL config of {collection!r} changed while this was checked; run it again")
        stored = store.put(collection, new_raw)
    fill = tpl.fill_from_text(question, tpl.slot_refs(example.slots, wh.schema()),
                              tpl.config_value_index(probe, wh)) if example.slots else None
    return {"collection": collection, "question": question, "sql": verdict.sql,
            "slots": {k: v.text for k, v in fill.used.items()} if fill else {}, "columns": res.columns,
            "rows": res.rows[:SHOWN_ROWS], "row_count": res.row_count, "examples": len(new.examples),
            "templates": sum(1 for e in new.examples if e.slots), "config": stored}
