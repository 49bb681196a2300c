"""String enums whose parse error lists the valid values (modes are data, errors say what is allowed)."""

from __future__ import annotations

import enum


class ChoiceEnum(str, enum.Enum):
    @classmethod
    def from_str(cls, value: str):
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown {cls._label()} {value!r}; valid: {valid}") from None

    @classmethod
    def _label(cls) -> str:
        return cls.__name__.lower()
