"""Document metadata: the collection schema, the JSONL manifest, normalisation and hashing, filters, validity.

- **Schema** (`relayrag.collection.yaml`, optional, one per collection; stored with the collection by
  `SchemaStore`): field name → type (string, enum, date, number, boolean, list = list of strings), required,
  filterable, shown (in citations). Four fields are built in and keep their types: `title` (string, shown),
  `valid_from` / `valid_until` (ISO dates), `needs_review` (boolean). Without a schema only those exist.
- **Manifest** (`load_manifest`): one UTF-8 JSON object per line, `document_path` (relative paths resolve
  against the manifest's folder) plus metadata fields. Every problem — invalid JSON, unknown field, missing
  required field, a value outside an enum or of the wrong type, a duplicate path, valid_until before
  valid_from — is collected with its line number and raised together as a `ManifestError` before anything
  is written; `check_coverage` adds documents that have no line.
- **Normalised metadata** (`normalise`): values in one canonical JSON form (dates `YYYY-MM-DD`, numbers as
  JSON numbers, lists of stripped strings), keys sorted; `metadata_hash` is its sha256, which incremental
  ingest compares next to the file's sha256 (a metadata-only change rewrites chunks without re-embedding).
- **Filters** (`parse_filters`): `field=value` (`a|b` any of; for a list field: contains), `field>=v`,
  `<=`, `>`, `<`, `field=lo..hi` (dates and numbers, inclusive), `valid_on=YYYY-MM-DD|today`,
  `include_expired=true`. Without `valid_on` and `include_expired`, documents whose `valid_until` is before
  today (UTC) are left out; documents without validity dates are kept (their citations say so).
  `row_mask` turns filters into a boolean mask over a snapshot's chunks, which retrieval applies to every
  arm's scores before its top-k.
- **Validity state** (`validity_state`): current, expiring (valid_until within `expiring_days`), expired,
  not yet valid, unknown (no dates); `needs_review` is reported beside it.

Chunks of a document ingested with metadata carry it as `chunk["meta"]` (the normalised dict; present, maybe
empty, whenever the document's collection manages metadata), so every segment of a snapshot carries it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from relayrag import jsonl
from relayrag.errors import BadRequestError, ConfigError, IngestError, RelayragError, first_validation_error

SCHEMA_FILE = "relayrag.collection.yaml"
SCHEMA_PREFIX = "collections"  # blob key: collections/<collection>/relayrag.collection.yaml
FieldType = Literal["string", "enum", "date", "number", "boolean", "list"]
FIELD_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
RESERVED = {"document_path", "valid_on", "include_expired", "doc", "page", "path", "source"}
DEFAULT_EXPIRING_DAYS = 30
VALIDITY_STATES = ("current", "expiring", "expired", "not yet valid", "unknown")


class MetadataError(RelayragError):
    """Metadata that does not fit the schema (one message naming the field and why)."""


class FilterError(BadRequestError):
    """A filter that cannot be applied (unknown or non-filterable field, bad value or operator)."""


class ManifestError(IngestError):
    """A manifest rejected before anything was written; `errors` = [{"line": int | None, "error": str}]."""

    def __init__(self, where: str, errors: list[dict]):
        self.where, self.errors = where, errors
        lines = "; ".join((f"line {e['line']}: " if e.get("line") else "") + e["error"] for e in errors[:20])
        more = f"; … ({len(errors)} errors in all)" if len(errors) > 20 else ""
        super().__init__(f"manifest {where} rejected, nothing was written: {lines}{more}")


class FieldSpec(BaseModel):
    """One metadata field: its type, the enum's values, and whether it is required, filterable and shown in
    citations."""

    model_config = ConfigDict(extra="forbid")

    type: FieldType
    values: list[str] | None = Field(None, description="The allowed values (enum only).")
    required: bool = False
    filterable: bool = True
    shown: bool = False
    description: str = ""

    @model_validator(mode="after")
    def _values(self) -> "FieldSpec":
        if self.type == "enum" and not self.values:
            raise ValueError("an enum field needs `values`")
        if self.type != "enum" and self.values is not None:
            raise ValueError(f"`values` is only for enum fields (this one is {self.type})")
        return self


BUILTIN: dict[str, FieldSpec] = {
    "title": FieldSpec(type="string", shown=True, description="The document's title (cited)."),
    "valid_from": FieldSpec(type="date", description="First day the document is valid (YYYY-MM-DD)."),
    "valid_until": FieldSpec(type="date", description="Last day the document is valid (YYYY-MM-DD)."),
    "needs_review": FieldSpec(type="boolean", description="The document is marked for review (cited as such)."),
}


class CollectionSchema(BaseModel):
    """relayrag.collection.yaml: `fields` (name → FieldSpec) and `expiring_days` (a document whose
    valid_until is at most that many days ahead is `expiring`)."""

    model_config = ConfigDict(extra="forbid")

    fields: dict[str, FieldSpec] = Field(default_factory=dict)
    expiring_days: int = Field(DEFAULT_EXPIRING_DAYS, ge=0, le=3650)

    @field_validator("fields")
    @classmethod
    def _names(cls, v: dict[str, FieldSpec]) -> dict[str, FieldSpec]:
        for name, spec in v.items():
            if not FIELD_NAME.match(name):
                raise ValueError(f"field name {name!r}: lower-case letters, digits and _, starting with a letter")
            if name in RESERVED:
                raise ValueError(f"field name {name!r} is reserved ({', '.join(sorted(RESERVED))})")
            if name in BUILTIN and spec.type != BUILTIN[name].type:
                raise ValueError(f"built-in field {name!r} is of type {BUILTIN[name].type}, not {spec.type}")
        return v

    def specs(self) -> dict[str, FieldSpec]:
        """Every field: the built-ins (unless the schema redeclares them) and the schema's."""
        return {**BUILTIN, **self.fields}

    def shown(self) -> list[str]:
        return [n for n, s in self.specs().items() if s.shown and n != "title"]


EMPTY_SCHEMA = CollectionSchema()


def parse_schema_bytes(raw: bytes, where: str) -> CollectionSchema:
    """Parse and validate relayrag.collection.yaml. Raises ConfigError `WHERE: key.path: why`."""
    import yaml
    try:
        data = yaml.safe_load(raw.decode("utf-8")) or {}
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where}: not valid UTF-8 YAML ({' '.join(str(exc).split())[:300]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping with `fields`, got {type(data).__name__}")
    try:
        return CollectionSchema.model_validate(data)
    except ValidationError as exc:
        loc, msg = first_validation_error(exc)
        raise ConfigError(f"{where}: {loc}: {msg}" if loc else f"{where}: {msg}") from None


class SchemaStore:
    """Collection schemas in a blob store (the one that holds the snapshots: RELAYRAG_HOME/blobs embedded,
    gs://RELAYRAG_GCS_BUCKET in the cloud) under `collections/<collection>/relayrag.collection.yaml`, stored
    verbatim. Parsed schemas are cached by content."""

    def __init__(self, blobstore: Any, location: str = ""):
        self.blobstore = blobstore
        self._location = location
        self._cache: dict[str, tuple[str, CollectionSchema]] = {}

    @staticmethod
    def key(collection: str) -> str:
        from relayrag.naming import validate_collection
        validate_collection(collection)
        return f"{SCHEMA_PREFIX}/{collection}/{SCHEMA_FILE}"

    def location(self, collection: str) -> str:
        local = self.blobstore.local_path(self.key(collection))
        return str(local) if local is not None else f"{self._location}{self.key(collection)}"

    def read_bytes(self, collection: str) -> bytes | None:
        try:
            return self.blobstore.get_bytes(self.key(collection))
        except FileNotFoundError:
            return None

    def get(self, collection: str) -> CollectionSchema | None:
        """The stored schema, or None. Raises ConfigError if the stored file no longer validates."""
        raw = self.read_bytes(collection)
        if raw is None:
            return None
        digest = hashlib.sha256(raw).hexdigest()
        hit = self._cache.get(collection)
        if hit and hit[0] == digest:
            return hit[1]
        schema = parse_schema_bytes(raw, self.location(collection))
        self._cache[collection] = (digest, schema)
        return schema

    def put(self, collection: str, raw: bytes) -> str:
        """Store the file verbatim (validate first); returns its location."""
        self.blobstore.put_bytes(self.key(collection), raw)
        return self.location(collection)


# -- values ----------------------------------------------------------------------------------------------

_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def parse_date(value: Any) -> dt.date:
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        s = value.strip()
        if s.lower() == "today":
            return today()
        try:
            return dt.date.fromisoformat(s[:10] if len(s) > 10 and s[10] in "T " else s)
        except ValueError:
            pass
    raise ValueError(f"{value!r} is not a date (YYYY-MM-DD)")


def today() -> dt.date:
    """Today's date in UTC (RELAYRAG_TODAY=YYYY-MM-DD overrides it, for reproducible evaluations)."""
    fixed = os.environ.get("RELAYRAG_TODAY", "").strip()
    return dt.date.fromisoformat(fixed) if fixed else dt.datetime.now(dt.timezone.utc).date()


# control characters other than whitespace (NUL, ESC, C1) and the bidi embeddings/overrides/isolates that
# reorder what is displayed after them (U+202E shows "txt.exe" as "exe.txt")
_HIDDEN = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069]")


def _check_characters(value: str) -> None:
    m = _HIDDEN.search(value)
    if m:
        raise ValueError(f"{value!r} holds the control or bidi-override character U+{ord(m.group()):04X}")


def normalise_value(spec: FieldSpec, value: Any, *, from_text: bool = False) -> Any:
    """The canonical JSON value of `value` for a field of `spec`; ValueError saying why it does not fit.
    from_text: the value arrived as a string (GCS custom metadata, a CLI filter) and is parsed by type."""
    t = spec.type
    if t == "date":
        return parse_date(value).isoformat()
    if t == "number":
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a number")
        if isinstance(value, (int, float)):
            if not math.isfinite(value):
                raise ValueError(f"{value!r} is not a finite number")
            return value
        if from_text and isinstance(value, str):
            try:
                f = float(value.strip())
            except ValueError:
                raise ValueError(f"{value!r} is not a number") from None
            if not math.isfinite(f):  # float() reads "nan", "inf", "1e999"
                raise ValueError(f"{value!r} is not a finite number")
            return int(f) if f.is_integer() and "." not in value else f
        raise ValueError(f"{value!r} is not a number")
    if t == "boolean":
        if isinstance(value, bool):
            return value
        if from_text and isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError(f"{value!r} is not true or false")
    if t == "list":
        if from_text and isinstance(value, str):
            s = value.strip()
            if s.startswith("["):
                try:
                    value = jsonl.loads_strict(s)
                except ValueError:
                    raise ValueError(f"{value!r} is not a JSON list of strings") from None
            else:
                value = [p for p in (x.strip() for x in s.split(",")) if p]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise ValueError(f"{value!r} is not a list of strings")
        for x in value:
            _check_characters(x)
        return [x.strip() for x in value if x.strip()]
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a string")
    _check_characters(value)
    s = " ".join(value.split())
    if t == "enum" and s not in (spec.values or []):
        raise ValueError(f"{s!r} is not one of {', '.join(spec.values or [])}")
    return s


def normalise(raw: dict, schema: CollectionSchema | None, *, from_text: bool = False) -> dict:
    """Validate a document's metadata against `schema` (None: the built-in fields only) and return it
    normalised (keys sorted, canonical values, nulls dropped). Raises MetadataError listing every problem."""
    specs = (schema or EMPTY_SCHEMA).specs()
    problems, out = [], {}
    for name in raw:
        if name not in specs:
            problems.append(f"unknown field {name!r} (fields: {', '.join(sorted(specs))})")
    for name, spec in specs.items():
        value = raw.get(name)
        if value is None or value == "":
            if spec.required:
                problems.append(f"missing required field {name!r}")
            continue
        try:
            out[name] = normalise_value(spec, value, from_text=from_text)
        except ValueError as exc:
            problems.append(f"field {name!r}: {exc}")
    if "valid_from" in out and "valid_until" in out and out["valid_until"] < out["valid_from"]:
        problems.append(f"valid_until {out['valid_until']} is before valid_from {out['valid_from']}")
    if problems:
        raise MetadataError("; ".join(problems))
    return dict(sorted(out.items()))


def metadata_hash(meta: dict | None) -> str | None:
    """sha256 of the normalised metadata's canonical JSON; None for a document without metadata."""
    if meta is None:
        return None
    return hashlib.sha256(json.dumps(meta, sort_keys=True, ensure_ascii=False,
                                     separators=(",", ":")).encode("utf-8")).hexdigest()


# -- manifest --------------------------------------------------------------------------------------------

@dataclass
class Manifest:
    """A validated manifest: normalised metadata per document key (the document's absolute path)."""
    path: Path
    entries: dict[str, dict] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)


def document_key(path: Path | str) -> str:
    """The key ingest stores a local document under (its absolute path, symbolic links not resolved)."""
    return str(Path(os.path.abspath(path)))


def load_manifest(path: Path, schema: CollectionSchema | None) -> Manifest:
    """Read and validate a JSONL manifest; ManifestError with every problem and its line number."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ManifestError(str(path), [{"line": None, "error": f"cannot read it ({exc.strerror or exc})"}]) from None
    errors: list[dict] = []
    m = Manifest(path)
    base = path.parent
    for n, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = jsonl.loads_strict(line.decode("utf-8"))
        except UnicodeDecodeError:
            errors.append({"line": n, "error": "not UTF-8"})
            continue
        except (ValueError, RecursionError) as exc:
            errors.append({"line": n, "error": f"not a JSON object ({exc})"})
            continue
        if not isinstance(obj, dict):
            errors.append({"line": n, "error": f"not a JSON object (a {type(obj).__name__})"})
            continue
        doc = obj.pop("document_path", None)
        if not isinstance(doc, str) or not doc.strip():
            errors.append({"line": n, "error": "missing document_path"})
            continue
        key = document_key(base / doc if not os.path.isabs(doc) else doc)
        try:
            meta = normalise(obj, schema)
        except MetadataError as exc:
            errors.append({"line": n, "error": f"{doc}: {exc}"})
            meta = None
        if key in m.lines:
            errors.append({"line": n, "error": f"duplicate document_path {doc!r} (first on line {m.lines[key]})"})
            continue
        m.lines[key] = n
        if meta is not None:
            m.entries[key] = meta
    if not m.lines and not errors:
        errors.append({"line": None, "error": "no manifest lines"})
    if errors:
        raise ManifestError(str(path), errors)
    return m


def check_coverage(manifest: Manifest, files: list[Path], *, root: Path) -> None:
    """ManifestError unless every file has a manifest line and every line names a file under `root`."""
    keys = {document_key(f) for f in files}
    errors: list[dict[str, Any]] = [{"line": None, "error": f"document {f} has no manifest line"} for f in files
              if document_key(f) not in manifest.lines]
    errors += [{"line": n, "error": f"document_path {k} is not a document under {root}"}
               for k, n in sorted(manifest.lines.items(), key=lambda kv: kv[1]) if k not in keys]
    if errors:
        raise ManifestError(str(manifest.path), errors)


# -- filters ---------------------------------------------------------------------------------------------

_OPS = (">=", "<=", "!=", "=", ">", "<")


class Condition(BaseModel):
    """field op value: op eq (value: list = any of), ge, le, gt, lt."""
    field: str
    op: Literal["eq", "ge", "le", "gt", "lt"]
    value: Any


class Filters(BaseModel):
    """Parsed filters: conditions (all must hold), the validity day, and whether expired documents stay."""
    conditions: list[Condition] = Field(default_factory=list)
    valid_on: str | None = None
    include_expired: bool = False

    def key(self) -> str:
        return self.model_dump_json()

    def describe(self) -> dict:
        """What was applied, for run records and results."""
        out: dict[str, Any] = {}
        if self.conditions:
            out["conditions"] = [f"{c.field} {c.op} {c.value}" for c in self.conditions]
        if self.valid_on:
            out["valid_on"] = self.valid_on
        elif self.include_expired:
            out["include_expired"] = True
        else:
            out["valid_on"] = f"{today().isoformat()} (default: expired documents left out)"
        return out


def filter_items(filters: Any) -> list[str]:
    """Filters as a list of `field<op>value` strings: from a list, a {field: value} map, or a string with
    items separated by `;` or newlines. Raises FilterError for anything else."""
    if filters is None or filters == "":
        return []
    if isinstance(filters, str):
        return [p.strip() for p in re.split(r"[;\n]", filters) if p.strip()]
    if isinstance(filters, dict):
        def text(v: Any) -> str:
            if isinstance(v, bool):
                return "true" if v else "false"
            return "|".join(str(x) for x in v) if isinstance(v, (list, tuple)) else str(v)
        return [f"{k}={text(v)}" for k, v in filters.items()]
    if isinstance(filters, (list, tuple)) and all(isinstance(x, str) for x in filters):
        return [x.strip() for x in filters if x.strip()]
    raise FilterError(f"filters must be a list of 'field=value' strings or a map, got {type(filters).__name__}")


def parse_filters(filters: Any, schema: CollectionSchema | None) -> Filters:
    """Parse filters (see `filter_items`) against `schema` (None: built-in fields). Raises FilterError."""
    specs = (schema or EMPTY_SCHEMA).specs()
    out = Filters()
    for item in filter_items(filters):
        m = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|!=|=|>|<)\s*(.*?)\s*$", item)
        if not m:
            raise FilterError(f"filter {item!r}: expected field=value, field>=value, field<=value, field>value, "
                              "field<value or field=from..to")
        name, op, text = m.group(1), m.group(2), m.group(3)
        if name == "valid_on":
            if op != "=":
                raise FilterError("valid_on takes one day: valid_on=YYYY-MM-DD (or today)")
            try:
                out.valid_on = parse_date(text).isoformat()
            except ValueError as exc:
                raise FilterError(f"filter {item!r}: {exc}") from None
            continue
        if name == "include_expired":
            if op != "=" or text.lower() not in _TRUE | _FALSE:
                raise FilterError("include_expired takes true or false: include_expired=true")
            out.include_expired = text.lower() in _TRUE
            continue
        spec = specs.get(name)
        if spec is None:
            names = ", ".join(sorted(n for n, s in specs.items() if s.filterable))
            raise FilterError(f"unknown filter field {name!r}; filterable fields: {names}, and valid_on, "
                              "include_expired")
        if not spec.filterable:
            raise FilterError(f"field {name!r} is not filterable (the collection schema says filterable: false)")
        if op == "!=":
            raise FilterError(f"filter {item!r}: != is not supported; use = with the values you want (a|b)")
        ordered = spec.type in ("date", "number")
        if op != "=" and not ordered:
            raise FilterError(f"filter {item!r}: {op} needs a date or number field ({name} is {spec.type})")
        try:
            if op == "=" and ordered and ".." in text:
                lo, hi = (p.strip() for p in text.split("..", 1))
                if lo:
                    out.conditions.append(Condition(field=name, op="ge", value=_one(spec, lo)))
                if hi:
                    out.conditions.append(Condition(field=name, op="le", value=_one(spec, hi)))
                continue
            if op == "=":
                values = [_one(spec, v) for v in (text.split("|") if spec.type != "boolean" else [text])]
                out.conditions.append(Condition(field=name, op="eq", value=values))
            else:
                out.conditions.append(Condition(field=name, op={">=": "ge", "<=": "le", ">": "gt", "<": "lt"}[op],
                                                value=_one(spec, text)))
        except ValueError as exc:
            raise FilterError(f"filter {item!r}: {exc}") from None
    return out


def _one(spec: FieldSpec, text: str) -> Any:
    if spec.type == "list":  # a list field matches when it contains the value
        return " ".join(text.split())
    return normalise_value(spec, text.strip(), from_text=True)


def _holds(c: Condition, meta: dict) -> bool:
    v = meta.get(c.field)
    if v is None:
        return False
    if c.op == "eq":
        return any(x in v for x in c.value) if isinstance(v, list) else v in c.value
    if isinstance(v, list) or isinstance(v, bool):
        return False
    try:
        return {"ge": v >= c.value, "le": v <= c.value, "gt": v > c.value, "lt": v < c.value}[c.op]
    except TypeError:
        return False


def document_passes(meta: dict | None, f: Filters) -> bool:
    """Does a document with metadata `meta` (None: none at all) pass the filters?"""
    meta = meta or {}
    if not all(_holds(c, meta) for c in f.conditions):
        return False
    start, end = meta.get("valid_from"), meta.get("valid_until")
    if f.valid_on:
        return (start is None or start <= f.valid_on) and (end is None or f.valid_on <= end)
    if f.include_expired:
        return True
    return end is None or end >= today().isoformat()


def row_mask(snapshot: Any, f: Filters) -> np.ndarray | None:
    """bool [n_chunks]: which rows of `snapshot` pass `f` (None: every row passes, nothing to apply). Computed
    once per document and cached on the snapshot per filter."""
    cache = snapshot.__dict__.setdefault("_filter_masks", {})
    key = f.key()
    if key in cache:
        return cache[key]
    chunks = snapshot.chunks
    if not f.conditions and not any("meta" in c for c in chunks):
        mask = None  # no document carries metadata: the validity default removes nothing
    else:
        by_doc: dict[tuple, bool] = {}
        out = np.zeros(len(chunks), dtype=bool)
        for i, c in enumerate(chunks):
            k = (c.get("source"), c.get("doc"))
            ok = by_doc.get(k)
            if ok is None:
                ok = by_doc[k] = document_passes(c.get("meta"), f)
            out[i] = ok
        mask = None if out.all() else out
    if len(cache) > 32:
        cache.clear()
    cache[key] = mask
    return mask


def snapshot_filters(snapshot: Any, filters: Any) -> tuple[Filters, np.ndarray | None]:
    """(parsed filters, row mask) of `filters` (list of `field=value` strings, a map, or None) against the
    schema the snapshot was built with (its manifest's `schema`). Raises FilterError."""
    schema = snapshot.manifest.get("schema")
    parsed = parse_filters(filters, CollectionSchema.model_validate(schema) if schema else None)
    return parsed, row_mask(snapshot, parsed)


# -- validity --------------------------------------------------------------------------------------------

def validity_state(meta: dict | None, expiring_days: int = DEFAULT_EXPIRING_DAYS, on: dt.date | None = None) -> str:
    """current | expiring | expired | not yet valid | unknown (no validity dates) on day `on` (default today)."""
    meta = meta or {}
    start, end = meta.get("valid_from"), meta.get("valid_until")
    if start is None and end is None:
        return "unknown"
    day = on or today()
    if end is not None and parse_date(end) < day:
        return "expired"
    if start is not None and parse_date(start) > day:
        return "not yet valid"
    if end is not None and (parse_date(end) - day).days <= expiring_days:
        return "expiring"
    return "current"


def citation_fields(chunk: dict, shown: list[str], expiring_days: int = DEFAULT_EXPIRING_DAYS) -> dict:
    """What a citation of `chunk` adds: title (the metadata's, else the document's), and for a document with
    metadata its validity state, needs_review and the schema's shown fields that it has."""
    meta = chunk.get("meta")
    out: dict[str, Any] = {"title": (meta or {}).get("title") or chunk.get("title") or ""}
    if meta is None:
        return out
    out["validity"] = validity_state(meta, expiring_days)
    for k in ("valid_from", "valid_until"):
        if k in meta:
            out[k] = meta[k]
    out["needs_review"] = bool(meta.get("needs_review", False))
    show = {k: meta[k] for k in shown if k in meta}
    if show:
        out["shown"] = show
    return out


def citation_notes(citations: list[dict]) -> list[str]:
    """Sentences an answer adds about its sources: unknown validity, needs review, expired / not yet valid."""
    notes = []
    for c in citations:
        name = f"[{c['n']}] {c.get('title') or c.get('doc')}"
        state = c.get("validity")
        if state == "unknown":
            notes.append(f"The validity of {name} is unknown: the document has no valid_from / valid_until.")
        elif state == "expired":
            notes.append(f"{name} expired on {c.get('valid_until')} (cited because expired documents were included).")
        elif state == "not yet valid":
            notes.append(f"{name} is valid only from {c.get('valid_from')}.")
        if c.get("needs_review"):
            notes.append(f"{name} is marked as needing review.")
    return notes
