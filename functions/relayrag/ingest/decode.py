"""Bytes to text: reading a file, byte-order marks, strict UTF-8, HTML <meta charset>; line tidying."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from relayrag.errors import IngestError


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise IngestError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise IngestError(f"{path}: is a directory, not a file") from None
    except PermissionError:
        raise IngestError(f"{path}: cannot read file (permission denied)") from None
    except OSError as e:
        raise IngestError(f"{path}: cannot read file ({e.strerror or e})") from None


# UTF-32 first: its little-endian BOM starts with the UTF-16 one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _decode_bom(data: bytes, name: str) -> str | None:
    """Decode by byte-order mark; None when there is none."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(enc)
            except UnicodeDecodeError as e:
                raise IngestError(
                    f"{name}: not {enc.upper()} text although it starts with a {enc.upper()} byte-order mark: "
                    f"undecodable bytes at offset {e.start + len(bom)} ({e.reason})"
                ) from None
    return None


def _decode_text(data: bytes, name: str) -> str:
    """bytes -> str with newlines normalised to "\\n". BOM-marked UTF-8/16/32, else strict UTF-8."""
    text = _decode_bom(data, name)
    if text is None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise IngestError(
                f"{name}: not UTF-8 text: undecodable byte 0x{data[e.start]:02x} at offset {e.start} "
                f"({e.reason}); re-save the file as UTF-8"
            ) from None
        if "\x00" in text:
            raise IngestError(
                f"{name}: not text: it contains NUL bytes (a binary file, or UTF-16 without a byte-order mark)"
            )
    return text.replace("\r\n", "\n").replace("\r", "\n")


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.I)


def _decode_html(data: bytes, name: str) -> str:
    """HTML bytes -> str: BOM, else UTF-8, else the charset a <meta> tag declares."""
    text = _decode_bom(data, name)
    if text is not None:
        return text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        m = _META_CHARSET.search(data[:8192])
        if m is None:
            raise IngestError(
                f"{name}: not UTF-8 text: undecodable byte 0x{data[e.start]:02x} at offset {e.start} "
                f"({e.reason}) and no <meta charset> declares another encoding"
            ) from None
        charset = m.group(1).decode("ascii", "replace")
        try:
            return data.decode(charset)
        except LookupError:
            raise IngestError(f"{name}: declares an unknown charset {charset!r}") from None
        except UnicodeDecodeError as e2:
            raise IngestError(
                f"{name}: not valid {charset} text (its declared charset): undecodable byte "
                f"0x{data[e2.start]:02x} at offset {e2.start}"
            ) from None


def _tidy_lines(text: str) -> str:
    """Collapse runs of spaces inside lines, strip lines, keep at most one blank line in a row."""
    lines = [re.sub(r"[ \t\f\v\u00a0\u200b]+", " ", ln).strip() for ln in text.splitlines()]
    out: list[str] = []
    for ln in lines:
        if ln or (out and out[-1]):
            out.append(ln)
    return "\n".join(out).strip()
