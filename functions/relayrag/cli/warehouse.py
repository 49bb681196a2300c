"""`relayrag warehouse load|config|verify|schema`: the collection's embedded DuckDB warehouse and SQL config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from relayrag.cli.app import (
    _print_json,
    _say,
    _service,
    _user_errors,
    err,
    out,
    warehouse_app,
)


@warehouse_app.command("load")
def warehouse_load(paths: list[Path] = typer.Argument(..., help="CSV, Parquet or SQLite files, or folders of them."),
                   collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
                   replace: bool = typer.Option(False, "--replace", help="Rebuild the warehouse from these files only."),
                   config: Optional[Path] = typer.Option(None, "--config", help="A relayrag.sql.yaml to store with "
                                                         "the warehouse: glossary, filter sets, examples, table "
                                                         "allow-list, notes (format: README section 'Tables "
                                                         "(Text-to-SQL)', or `python -m pydoc relayrag.sql.config`)."),
                   as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Load tables into RELAYRAG_HOME/warehouses/<collection>.duckdb (one table per CSV/Parquet file, named
    after it; every table of a SQLite file). `ask` then routes table questions of the collection to sql."""
    with _user_errors(as_json):
        rec = _service().warehouse_load(collection, list(paths), replace=replace, config=config)
    if as_json:
        _print_json(rec)
        return
    _say(out, (collection, "bold"), f": loaded {', '.join(rec['written'])} into {rec['path']} "
         f"({len(rec['tables'])} tables, {rec['seconds']:.1f} s)")
    if rec.get("config"):
        _print_sql_config(rec["config"])
    if rec.get("config_error"):
        _say(err, ("warning:", "yellow"), " the stored SQL config no longer fits the tables and is still used as "
             f"is:\n{rec['config_error']}")


def _print_sql_config(c: dict) -> None:
    tables = "all tables" if c.get("tables") is None else f"tables {', '.join(c['tables'])}"
    _say(out, f"SQL config {c.get('config', '')}: {c['glossary']} glossary terms, {c['filters']} filter sets, "
         f"{c['examples']} examples, {tables}")


@warehouse_app.command("config")
def warehouse_config(file: Optional[Path] = typer.Argument(None, help="A relayrag.sql.yaml to validate and store "
                                                           "(replaces the stored one). Omit it to print the "
                                                           "stored file."),
                     collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
                     remove: bool = typer.Option(False, "--remove", help="Delete the stored SQL config."),
                     as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Replace, show or remove a collection's SQL config (glossary, filter sets, question→SQL examples,
    table allow-list, notes). A new file is checked against the warehouse first: its SQL must pass the
    guard and (embedded warehouse) run; nothing is stored when it does not."""
    from relayrag.errors import RelayragError
    from relayrag.naming import validate_collection
    with _user_errors(as_json):
        service = _service()
        validate_collection(collection)
        if remove and file is not None:
            raise RelayragError("give either FILE (to store it) or --remove, not both")
        if remove:
            removed = service.sql_config_remove(collection)
            _print_json({"collection": collection, "removed": removed}) if as_json else _say(
                out, f"{collection}: SQL config {'removed' if removed else 'was not set'}")
            return
        if file is None:
            text, parsed = service.sql_config_text(collection)
            if as_json:
                _print_json(parsed)
            else:
                sys.stdout.write(text)
            return
        summary = service.sql_config_store(collection, file)
    _print_json({"collection": collection, **summary}) if as_json else _print_sql_config(summary)


@warehouse_app.command("verify")
def warehouse_verify(question: str = typer.Argument(..., help="The question the SQL answers, naming a value for "
                                                    "every slot (\"Which 3 countries have the most customers?\")."),
                     sql: str = typer.Option(..., "--sql", help="One SELECT (BigQuery SQL); write @NAME where a "
                                             "slot's value goes (LIMIT @n, WHERE Genre.Name = @genre)."),
                     collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
                     slot: list[str] = typer.Option([], "--slot", help="NAME=TYPE, repeatable: count, number, "
                                                    "year (@y, @y_start, @y_end), date_range (@p_start, @p_end), "
                                                    "or value:Table.Column (value:Employee.FirstName+Employee."
                                                    "LastName for a full name)."),
                     as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Add a verified query to the collection's SQL config: without an LLM, questions that ask the same thing
    are answered by it, with its slots filled from each question. The slots are filled from QUESTION, the SQL
    must pass the guard and run; then it is appended to the stored config (nothing is stored otherwise)."""
    with _user_errors(as_json):
        rec = _service().sql_verify(collection, question, sql, slot)
    if as_json:
        _print_json(rec)
        return
    filled = ", ".join(f"{k} = {v}" for k, v in rec["slots"].items())
    _say(out, (collection, "bold"), f": verified “{question}”" + (f" (slots: {filled})" if filled else "")
         + f"; it ran and returned {rec['row_count']} row{'s' if rec['row_count'] != 1 else ''}. "
         f"{rec['examples']} examples ({rec['templates']} templates) in {rec['config']}")


@warehouse_app.command("schema")
def warehouse_schema(collection: str = typer.Option(..., "--collection", "-c", help="Collection name.")):
    """Print the schema JSON the sql stage gives the LLM (tables, columns, types, keys, sample values)."""
    with _user_errors(as_json=True):
        _print_json(_service().warehouse_schema(collection))
