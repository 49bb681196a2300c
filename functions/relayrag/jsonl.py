"""JSON Lines that survive every line-break character: one writer and one reader for all of relayrag.

JSON Lines separates records with "\\n" only. `json.dumps(..., ensure_ascii=False)` leaves U+0085 (NEL),
U+2028 (LINE SEPARATOR) and U+2029 (PARAGRAPH SEPARATOR) unescaped inside strings, and `str.splitlines()`
(also `io.TextIOWrapper` lines in some modes of other tools) breaks lines on them, so a chunk whose text holds
one of them was cut in half on reading ("Unterminated string"). Here the writer escapes those three (JSON
already escapes every C0 control character, which covers \\v, \\f, \\x1c-\\x1e and \\r), and the reader splits
on b"\\n" alone, so files written before this fix, with raw separators inside strings, read correctly too.

Source: JSON Lines (https://jsonlines.org/: "the line separator is '\\n'"); Python `str.splitlines` docs list
the characters it treats as line boundaries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

# Line boundaries of str.splitlines() that json.dumps(ensure_ascii=False) does not escape.
_UNESCAPED_BREAKS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


MAX_DEPTH = 20  # nesting a relayrag JSON line or request may have (manifests and bodies are flat objects)


def depth(raw: bytes | str, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a JSON text (brackets outside strings), scanning only until it passes `limit`: checked
    before json.loads, whose recursion a line of 100,000 "[" turns into a RecursionError."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    d = deepest = 0
    in_string = escaped = False
    for b in data:
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b in (0x5B, 0x7B):
            d += 1
            if d > deepest:
                deepest = d
                if deepest > limit:
                    return deepest
        elif b in (0x5D, 0x7D):
            d -= 1
    return deepest


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows (only finite numbers)")


def _finite_float(text: str) -> float:
    import math
    f = float(text)
    if not math.isfinite(f):
        raise ValueError(f"{text} is out of range (not a finite double)")
    return f


def loads_strict(raw: bytes | str, limit: int = MAX_DEPTH):
    """json.loads for untrusted JSON: ValueError for NaN / Infinity / -Infinity (Python's json accepts them,
    then writes JSON no other parser reads), for numbers that overflow a double (1e999), and for nesting deeper
    than `limit` (checked before parsing)."""
    if depth(raw, limit) > limit:
        raise ValueError(f"JSON nested deeper than {limit} levels")
    return json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)


def dumps(obj, **kw) -> str:
    """One JSON value as one line without its "\\n": UTF-8-friendly (ensure_ascii=False) but with every
    character `str.splitlines()` breaks on escaped. `kw` goes to `json.dumps` (e.g. default=str)."""
    kw.setdefault("ensure_ascii", False)
    return json.dumps(obj, **kw).translate(_UNESCAPED_BREAKS)


def dump_lines(objs: Iterable) -> bytes:
    """UTF-8 JSON Lines of `objs`, each line ending in "\\n"."""
    return "".join(dumps(o) + "\n" for o in objs).encode("utf-8")


class JSONLError(ValueError):
    """A line that is not JSON: `lineno` is 1-based; the message names it."""

    def __init__(self, message: str, lineno: int):
        super().__init__(message)
        self.lineno = lineno


def iter_lines(data: bytes | str) -> Iterator[tuple[int, object]]:
    """(1-based line number, value) for each non-blank line of `data`, split on "\\n" only (a leading UTF-8
    BOM is ignored). Raises JSONLError naming the line for one that is not UTF-8 or not JSON."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            yield lineno, json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise JSONLError(f"line {lineno}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                             lineno) from None
        except json.JSONDecodeError as exc:
            raise JSONLError(f"line {lineno}: not JSON ({exc.msg} at column {exc.colno})", lineno) from None


def loads(data: bytes | str) -> list:
    """Every value of JSON Lines `data` (see iter_lines)."""
    return [obj for _, obj in iter_lines(data)]


def read(path: Path | str) -> list:
    """Every value of the JSON Lines file at `path`. Raises OSError, or JSONLError whose message starts with
    the file's name."""
    path = Path(path)
    try:
        return loads(path.read_bytes())
    except JSONLError as exc:
        raise JSONLError(f"{path}: {exc}", exc.lineno) from None
