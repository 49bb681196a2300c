"""JSON-safe values of database rows (DuckDB, BigQuery, the query worker) and their normal form for comparing results."""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any


def json_value(v: Any) -> Any:
    """A JSON-safe value: Decimal -> float, datetimes -> 'YYYY-MM-DD HH:MM:SS', bytes -> hex."""
    if isinstance(v, decimal.Decimal):
        return int(v) if v == v.to_integral_value() and abs(v) < 2**53 else float(v)
    if isinstance(v, _dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, (_dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): json_value(x) for k, x in v.items()}
    return v


def norm_value(v: Any) -> Any:
    """A result value as Text-to-SQL scoring compares it (../shared/bench/text2sql/README.md): floats and
    Decimals rounded to 2 places, integral numbers as ints, datetimes as 'YYYY-MM-DD HH:MM:SS', dates ISO."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (float, decimal.Decimal)):
        r = round(float(v), 2)
        return int(r) if r == int(r) else r
    if isinstance(v, _dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, _dt.date):
        return v.isoformat()
    return v
