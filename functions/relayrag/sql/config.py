"""Per-collection Text-to-SQL configuration: `relayrag.sql.yaml`.

A YAML file a data owner writes next to the data and loads with the warehouse
(`relayrag warehouse load PATH --collection NAME --config relayrag.sql.yaml`, or later
`relayrag warehouse config FILE --collection NAME`). Introspection still supplies the schema; the file adds
what a schema cannot say:

```yaml
version: 1                       # optional; the only version so far
notes: |                         # optional free text given to the LLM with every question
  Dates are TIMESTAMPs; money is DECIMAL(10,2).
tables: [Customer, Invoice]      # optional allow-list: the guard refuses every other table
glossary:                        # business term -> meaning and/or SQL expression
  revenue:
    meaning: money received from sales (invoice totals)
    sql: SUM(Invoice.Total)
    synonyms: [sales, turnover, 売上]
filters:                         # named filter sets: name -> SQL predicate
  business_customers:
    description: customers with a company on file
    sql: Customer.Company IS NOT NULL
    synonyms: [business customers, 法人顧客]
examples:                        # question -> SQL pairs: few-shot examples, and verified queries without an LLM
  - question: How many invoices were billed to Germany?
    variants: [ドイツへの請求書は何件？]   # optional: other wordings, any language
    sql: SELECT COUNT(*) AS invoices FROM Invoice WHERE BillingCountry = @country
    slots:                       # optional: a template; the SQL writes @name where a slot's value goes
      country: value:Invoice.BillingCountry    # or count, number, year, date_range (relayrag.sql.slots)
value_aliases:                   # optional: other names of stored values, for value slots
  Germany: [ドイツ, Deutschland]
```

Validation happens in two steps, each error naming the file, the key and why (a `ConfigError`):
`parse_config` checks the structure (pydantic; unknown keys are errors, so a typo never goes unnoticed);
`check_config` checks it against the loaded warehouse: allow-listed tables exist; glossary and filter SQL
parses, passes the guard as a fragment and names only existing tables and columns (qualify columns with
their table); every example passes the guard (an example the guard refuses is a config error) and, on the
embedded warehouse, runs without error; a template's parameters and slots agree, its slot columns exist, and
each of its wordings names a value for every slot (the SQL filled with the question's values is what is
guarded and run). A term or synonym may belong to only one glossary entry and one
filter set. Matching (relayrag.sql.context) is on Snowball-stemmed words for Latin script (so "sales"
matches "sale") and by substring for Japanese/CJK terms.

The accepted file is stored verbatim as RELAYRAG_HOME/warehouses/<collection>.sql.yaml.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from relayrag.errors import ConfigError
from relayrag.sql.registry import WAREHOUSES_DIR  # under RELAYRAG_HOME: also the local SQL configs

CONFIG_FILE_NAME = "relayrag.sql.yaml"  # the documented name; any name works with --config
MAX_CONFIG_BYTES = 1_000_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


def _clean_synonyms(values: list[str]) -> list[str]:
    """Stripped, de-duplicated in order; ValueError on an empty one."""
    out: list[str] = []
    for v in values:
        if not v.strip():
            raise ValueError("a synonym is empty")
        if v.strip() not in out:
            out.append(v.strip())
    return out


class _WithSynonyms(_Model):
    """Glossary entries and filter sets: other words (any language) that name the same thing."""

    @field_validator("synonyms", check_fields=False)
    @classmethod
    def _synonyms(cls, v: list[str]) -> list[str]:
        return _clean_synonyms(v)


class GlossaryEntry(_WithSynonyms):
    """A business term: what it means and/or the SQL expression that computes it."""

    meaning: str = Field("", max_length=2000, description="What the term means, in words.")
    sql: str | None = Field(None, min_length=1, max_length=2000,
                            description="The SQL expression for the term (BigQuery dialect), e.g. SUM(Invoice.Total).")
    synonyms: list[str] = Field(default_factory=list, max_length=50,
                                description="Other words for the term, any language (e.g. sales, 売上).")

    @model_validator(mode="after")
    def _something(self) -> "GlossaryEntry":
        if not self.meaning and not self.sql:
            raise ValueError("give a `meaning`, an `sql` expression, or both")
        return self


class FilterSet(_WithSynonyms):
    """A named filter: an SQL predicate (BigQuery dialect) and what it selects."""

    description: str = Field(..., min_length=1, max_length=2000)
    sql: str = Field(..., min_length=1, max_length=2000,
                     description="An SQL predicate, e.g. Customer.Company IS NOT NULL.")
    synonyms: list[str] = Field(default_factory=list, max_length=50)



class Slot(_Model):
    """A typed parameter of a verified query template (relayrag.sql.slots): `count`, `number`, `year`,
    `date_range`, or `value` of `column` ("Genre.Name"; columns of one table joined by "+" for a value made of
    them joined by a space, "Employee.FirstName+Employee.LastName"). Written as a mapping or as a string:
    "count", "value:Genre.Name"."""

    type: str = Field(..., description="count | number | year | date_range | value")
    column: str | None = Field(None, max_length=500, description="value slots: Table.Column (or A.x+A.y)")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            kind, _, column = data.strip().partition(":")
            return {"type": kind.strip(), **({"column": column.strip()} if column.strip() else {})}
        return data

    @model_validator(mode="after")
    def _valid(self) -> "Slot":
        from relayrag.sql.slots import SLOT_TYPES
        if self.type not in SLOT_TYPES:
            raise ValueError(f"unknown slot type {self.type!r} (use {', '.join(SLOT_TYPES)})")
        if self.type == "value":
            if not self.column or not all(re.fullmatch(r"[^.\s+]+\.[^.\s+]+", c.strip())
                                          for c in self.column.split("+")):
                raise ValueError("a value slot needs `column: Table.Column` (or Table.A+Table.B for a full name)")
            self.column = "+".join(c.strip() for c in self.column.split("+"))
        elif self.column:
            raise ValueError(f"a {self.type} slot takes no column")
        return self

    @property
    def columns(self) -> list[str]:
        return self.column.split("+") if self.column else []


class Example(_Model):
    """A question and the SQL that answers it: a few-shot example for the LLM and, without one, a verified
    query (relayrag.sql.verified). With `slots` it is a template: the SQL names each slot as @name and a
    question fills them (relayrag.sql.slots); `variants` are other wordings of the question (any language),
    each naming a value for every slot."""

    question: str = Field(..., min_length=1, max_length=2000)
    variants: list[str] = Field(default_factory=list, max_length=20,
                                description="Other wordings of the question, any language.")
    sql: str = Field(..., min_length=1, max_length=20_000)
    slots: dict[str, Slot] = Field(default_factory=dict, max_length=10,
                                   description="name -> slot; the SQL writes @name where the value goes.")

    @field_validator("variants")
    @classmethod
    def _variants(cls, v: list[str]) -> list[str]:
        out = [x.strip() for x in v]
        if any(not x for x in out):
            raise ValueError("a variant is empty")
        return out

    @field_validator("slots")
    @classmethod
    def _slot_names(cls, v: dict) -> dict:
        from relayrag.sql.slots import SLOT_NAME
        for name in v:
            if not SLOT_NAME.match(str(name)):
                raise ValueError(f"slot name {name!r}: letters, digits and _ only, starting with a letter")
        return v

    def wordings(self) -> list[str]:
        """The question and its variants."""
        return [self.question, *self.variants]


class SqlConfig(_Model):
    """The whole file. Term keys are the names shown to the LLM and matched in questions."""

    version: int = Field(1, ge=1, le=1)
    notes: str = Field("", max_length=20_000)
    tables: list[str] | None = Field(None, min_length=1, max_length=10_000)
    glossary: dict[str, GlossaryEntry] = Field(default_factory=dict)
    filters: dict[str, FilterSet] = Field(default_factory=dict)
    examples: list[Example] = Field(default_factory=list, max_length=1000)
    value_aliases: dict[str, list[str]] = Field(
        default_factory=dict, description="A stored value -> other names a question may use for it (カナダ, "
        "United States): value slots match them too.")

    @field_validator("value_aliases")
    @classmethod
    def _aliases(cls, v: dict) -> dict:
        from relayrag.sql.slots import fold
        owner: dict[str, str] = {}
        out = {}
        for value, names in v.items():
            if not str(value).strip():
                raise ValueError("a value is empty")
            out[str(value).strip()] = names = _clean_synonyms([str(n) for n in names])
            for n in names:
                if owner.get(fold(n), value) != value:
                    raise ValueError(f"the alias {n!r} names both {owner[fold(n)]!r} and {value!r}")
                owner[fold(n)] = value
        return out

    @field_validator("glossary", "filters")
    @classmethod
    def _names(cls, v: dict) -> dict:
        for name in v:
            if not isinstance(name, str) or not name.strip():
                raise ValueError("a term name is empty")
        return v

    @model_validator(mode="after")
    def _unique_terms(self) -> "SqlConfig":
        for section in ("glossary", "filters"):
            owner: dict[str, str] = {}
            for name, entry in getattr(self, section).items():
                for term in [name, *entry.synonyms]:
                    key = term_key(term)
                    if not key:
                        raise ValueError(f"{section}.{name}: the term {term!r} has no words to match "
                                         "(only stopwords or punctuation)")
                    if key in owner and owner[key] != name:
                        raise ValueError(f"{section}: {term!r} belongs to both {owner[key]!r} and {name!r}; "
                                         "a term may name only one entry")
                    owner[key] = name
        return self

    def allowed_tables(self, warehouse_tables: set[str]) -> set[str]:
        if self.tables is None:
            return set(warehouse_tables)
        wanted = {t.lower() for t in self.tables}
        return {t for t in warehouse_tables if t.lower() in wanted}


def term_key(term: str) -> str:
    """How a term is compared with another: its stemmed tokens (CJK: normalised text)."""
    from relayrag.retrieval.tokenize import tokenize
    from relayrag.text import has_cjk, normalize
    if has_cjk(term, min_share=0.01):
        return normalize(term).lower().strip()
    return " ".join(tokenize(term))


# ----------------------------------------------------------------------------------------------- parsing

def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _explain(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return ("unknown key (check the spelling; the format is in the README section 'Tables (Text-to-SQL)' "
                "and in `python -m pydoc relayrag.sql.config`)")
    if err["type"] == "missing":
        return "required key is missing"
    msg = err["msg"]
    return msg.removeprefix("Value error, ")


def config_from_data(data: Any, source: str) -> SqlConfig:
    """Validate already-parsed YAML data. Raises ConfigError naming `source`, each bad key and why."""
    if data is None:
        raise ConfigError(f"{source}: the file is empty; expected a mapping with glossary, filters, examples, "
                          "tables or notes")
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    try:
        return SqlConfig.model_validate(data)
    except ValidationError as exc:
        lines = [f"{_loc(tuple(e['loc']))}: {_explain(e)}" for e in exc.errors()[:20]]
        more = f"\n  … and {exc.error_count() - 20} more" if exc.error_count() > 20 else ""
        raise ConfigError(f"{source}: invalid SQL config:\n  " + "\n  ".join(lines) + more) from None


def parse_config(path: str | Path) -> SqlConfig:
    """Read and validate the structure of a config file. Raises ConfigError (file, key, why)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the SQL config: {exc.strerror or exc}") from None
    return parse_config_bytes(raw, str(path))


def parse_config_bytes(raw: bytes, source: str) -> SqlConfig:
    """Validate the structure of a config given as bytes (`source` names it in errors). Raises ConfigError."""
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{source}: the SQL config is {len(raw):,} bytes; the limit is {MAX_CONFIG_BYTES:,}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{source}: not valid YAML{where}: {problem}") from None
    return config_from_data(data, source)


# ----------------------------------------------------------------------------------------------- checking

def _columns_by_table(schema: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for t in schema.get("tables", []):
        cols = t.get("columns") or {}
        names = cols.keys() if isinstance(cols, dict) else [c["name"] for c in cols]
        out[t["name"].lower()] = {c.lower() for c in names}
    return out


def _check_fragment(sql: str, *, kind: str, allowed: set[str], columns: dict[str, set[str]]) -> str | None:
    """Why an expression / predicate fragment is unusable, or None. The fragment must parse on its own,
    pass the guard inside a SELECT, and name only allowed tables and their existing columns."""
    import sqlglot
    from sqlglot import exp

    from relayrag.sql.guard import guard_sql
    wrapped = f"SELECT 1 AS v WHERE {sql}" if kind == "predicate" else f"SELECT {sql} AS v"
    g = guard_sql(wrapped, allowed_tables=allowed, dialect="bigquery")
    if not g.ok:
        return f"refused by the SQL guard: {g.reason}"
    try:
        tree = sqlglot.parse_one(wrapped, read="bigquery")
    except Exception as exc:  # the guard parsed it already; keep the config check total anyway
        return f"does not parse: {exc}"
    has_subquery = any(isinstance(n, exp.Subquery) or (isinstance(n, exp.Select) and n is not tree)
                       for n in tree.walk())
    allowed_low = {t.lower() for t in allowed}
    for col in tree.find_all(exp.Column):
        table = col.table
        name = col.name.lower()
        if table:
            low = table.lower()
            if low not in allowed_low:
                if has_subquery:  # may be an alias defined inside the fragment
                    continue
                return (f"column {col.sql()!r} names table {table!r}, which is not in the warehouse's "
                        f"allowed tables ({', '.join(sorted(allowed)) or 'none'})")
            if name not in columns.get(low, set()):
                return f"table {table!r} has no column {col.name!r}"
        elif not has_subquery and not any(name in columns.get(t, set()) for t in allowed_low):
            return f"no allowed table has a column {col.name!r} (qualify columns as Table.Column)"
    return None


def check_config(cfg: SqlConfig, wh, source: str, *, run_examples: bool | None = None) -> SqlConfig:
    """Check `cfg` against the warehouse `wh` (relayrag.sql.warehouse.Warehouse); returns it with the
    allow-listed table names spelled as in the warehouse. Raises ConfigError naming the key and why.
    run_examples: execute each example (default: only on the embedded DuckDB warehouse, where it is free)."""
    from relayrag.sql.guard import guard_sql

    all_tables = set(wh.tables())
    problems: list[str] = []
    if cfg.tables is not None:
        by_low = {t.lower(): t for t in all_tables}
        fixed = []
        for i, t in enumerate(cfg.tables):
            real = by_low.get(t.lower())
            if real is None:
                problems.append(f"tables[{i}]: no table {t!r} in the warehouse (tables: "
                                f"{', '.join(sorted(all_tables)) or 'none'})")
            elif real not in fixed:
                fixed.append(real)
        cfg = cfg.model_copy(update={"tables": fixed})
    allowed = cfg.allowed_tables(all_tables)
    columns = _columns_by_table(wh.schema())
    for name, entry in cfg.glossary.items():
        if entry.sql:
            why = _check_fragment(entry.sql, kind="expression", allowed=allowed, columns=columns)
            if why:
                problems.append(f"glossary.{name}.sql: {why}")
    for name, f in cfg.filters.items():
        why = _check_fragment(f.sql, kind="predicate", allowed=allowed, columns=columns)
        if why:
            problems.append(f"filters.{name}.sql: {why}")
    if run_examples is None:
        run_examples = getattr(wh, "engine", None) == "duckdb"  # the embedded warehouse (or its allow-list view)
    filled = example_sqls(cfg, wh, problems)
    for i, sql in enumerate(filled):
        if sql is None:
            continue
        g = guard_sql(sql, allowed_tables=allowed, dialect="bigquery")
        if not g.ok:
            problems.append(f"examples[{i}].sql: refused by the SQL guard: {g.reason}")
            continue
        if run_examples:
            res = wh.query(sql)
            if not res.ok:
                problems.append(f"examples[{i}].sql: the warehouse could not run it: {res.error}")
    if problems:
        shown = problems[:20] + ([f"… and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise ConfigError(f"{source}: invalid SQL config:\n  " + "\n  ".join(shown))
    return cfg


def example_sqls(cfg: SqlConfig, wh, problems: list[str]) -> list[str | None]:
    """Each example's SQL as it runs for its own question: a template filled with the values its question
    names (relayrag.sql.templates), others as written. Template problems (parameters and slots disagree, a
    slot column that does not exist, a wording that does not name a slot's value) are appended to `problems`
    and give None."""
    from relayrag.sql import templates as tpl
    out: list[str | None] = []
    index = None
    for i, ex in enumerate(cfg.examples):
        try:
            if not ex.slots:
                params = tpl.parameters_of(ex.sql)
                if params:
                    problems.append(f"examples[{i}].sql: @{sorted(params)[0]} is not a slot's parameter (declare "
                                    "the example's slots under `slots:`)")
                out.append(None if params else ex.sql)
                continue
            why = tpl.check_slots(ex.sql, ex.slots)
            if why:
                problems.extend(f"examples[{i}].slots: {w}" for w in why)
                out.append(None)
                continue
            refs = tpl.slot_refs(ex.slots, wh.schema())
            for slot in ex.slots.values():
                if slot.type == "value":  # read (and cached) here, so that an unusable column names its example
                    tpl.column_values(wh, [f"{t}.{c}" for t, c in tpl.resolve_columns(slot.columns, wh.schema())])
            if index is None:
                index = tpl.config_value_index(cfg, wh, [])
            sql = None
            for j, wording in enumerate(ex.wordings()):
                fill = tpl.fill_from_text(wording, refs, index)
                where = "question" if j == 0 else f"variants[{j - 1}]"
                for name in fill.missing:
                    from relayrag.sql.slots import describe
                    problems.append(f"examples[{i}].{where}: names no value for slot {name!r} "
                                    f"({describe(refs[name].type, refs[name].key)}); a template's wordings must "
                                    "each name one (a value in another language goes under value_aliases)")
                if j == 0 and not fill.missing:
                    sql = tpl.fill_sql(ex.sql, fill.params)
            out.append(sql)
        except tpl.TemplateError as exc:
            problems.append(f"examples[{i}]: {exc}")
            out.append(None)
    return out


# ----------------------------------------------------------------------------------------------- storage

SHARED_PREFIX = "sql-config"  # in a shared blob store (GCS): sql-config/<collection>.sql.yaml


class SqlConfigStore:
    """Where collections' SQL configs live: `<collection>.sql.yaml` under `prefix` of a blob store.

    Embedded: RELAYRAG_HOME/warehouses/ (a LocalBlobStore rooted there, next to the DuckDB files). Cloud: the
    deployment's bucket (RELAYRAG_GCS_BUCKET) under `sql-config/`, so the deployed classify and sql functions
    read the config that `relayrag warehouse config` stored (relayrag.context.StageContext.sql_configs).
    Parsed configs are cached by content (sha256), so an update is seen on the next read."""

    def __init__(self, blobstore: Any, prefix: str = "", location: str = ""):
        self.blobstore = blobstore
        self.prefix = prefix.strip("/")
        self._location = location
        self._cache: dict[str, tuple[str, SqlConfig]] = {}
        self._lock = threading.Lock()

    def key(self, collection: str) -> str:
        name = f"{collection}.sql.yaml"
        return f"{self.prefix}/{name}" if self.prefix else name

    def location(self, collection: str) -> str:
        """A path (embedded) or gs:// URL (cloud) naming the stored file, for messages."""
        local = self.blobstore.local_path(self.key(collection))
        return str(local) if local is not None else f"{self._location}{self.key(collection)}"

    def exists(self, collection: str) -> bool:
        return self.blobstore.exists(self.key(collection))

    def read_bytes(self, collection: str) -> bytes | None:
        try:
            return self.blobstore.get_bytes(self.key(collection))
        except FileNotFoundError:
            return None

    def get(self, collection: str) -> SqlConfig | None:
        """The stored config, or None when there is none. Raises ConfigError if it no longer validates."""
        import hashlib
        raw = self.read_bytes(collection)
        if raw is None:
            return None
        digest = hashlib.sha256(raw).hexdigest()
        with self._lock:
            hit = self._cache.get(collection)
            if hit and hit[0] == digest:
                return hit[1]
        cfg = parse_config_bytes(raw, self.location(collection))
        with self._lock:
            self._cache[collection] = (digest, cfg)
        return cfg

    def put(self, collection: str, raw: bytes) -> str:
        """Store the file's bytes verbatim (atomically); returns its location. Validate before calling."""
        self.blobstore.put_bytes(self.key(collection), raw)
        return self.location(collection)

    def remove(self, collection: str) -> bool:
        """Delete the stored config; True if there was one."""
        if not self.exists(collection):
            return False
        self.blobstore.delete_prefix(self.key(collection))
        return True


_local_stores: dict[str, SqlConfigStore] = {}
_local_lock = threading.Lock()


def local_config_store(home: Path) -> SqlConfigStore:
    """The embedded store: RELAYRAG_HOME/warehouses/<collection>.sql.yaml (one per home, cached)."""
    from relayrag.backends.blobstore import LocalBlobStore
    root = Path(home) / WAREHOUSES_DIR
    with _local_lock:
        store = _local_stores.get(str(root))
        if store is None:
            store = _local_stores[str(root)] = SqlConfigStore(LocalBlobStore(root))
        return store


def stored_config_path(home: Path, collection: str) -> Path:
    return Path(home) / WAREHOUSES_DIR / f"{collection}.sql.yaml"


def load_config(home: Path, collection: str, store: SqlConfigStore | None = None) -> SqlConfig | None:
    """The collection's stored SQL config (from `store`, default the embedded one under `home`), or None
    when it has none. Raises ConfigError if the stored file no longer validates (e.g. edited by hand)."""
    return (store or local_config_store(home)).get(collection)


def remove_config(home: Path, collection: str, store: SqlConfigStore | None = None) -> bool:
    """Delete the stored config; True if there was one."""
    return (store or local_config_store(home)).remove(collection)


def summarize(cfg: SqlConfig, stored: Path | None = None, source: Path | None = None) -> dict:
    out: dict[str, Any] = {"glossary": len(cfg.glossary), "filters": len(cfg.filters), "examples": len(cfg.examples),
           "templates": sum(1 for e in cfg.examples if e.slots),
           "tables": list(cfg.tables) if cfg.tables is not None else None, "notes": bool(cfg.notes)}
    if stored is not None:
        out["config"] = str(stored)
    if source is not None:
        out["source"] = str(Path(source).resolve())
    return out

