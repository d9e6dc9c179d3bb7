"""A dataclass's fields: a dict read from a file (run.json, a card, a spec) checked against them (its
keys are field names, its values have the fields' types: ints not bools, floats finite, Literal
choices; a mistake is one message naming the field), and what a field that is an option says of
itself: `OptionRow`, a row of an options table (training.options, analysis.registry), and `Range`,
the bounds of a number option; and a number typed by a person read in ASCII only (`ascii_int`,
`ascii_float`)."""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints


def field_names(cls) -> list[str]:
    """The sorted field names of a dataclass."""
    return sorted(f.name for f in dataclasses.fields(cls))


def unknown_field(cls, data: dict[str, Any]) -> str | None:
    """The first key of `data` that is not a field of the dataclass `cls`, if any."""
    unknown = sorted(set(data) - set(field_names(cls)))
    return unknown[0] if unknown else None


def check_types(cls: type, data: object, error: Callable[[str, str], Exception], what: str) -> None:
    """Raise `error(field, message)` unless `data` is a dict whose values have the types of
    the dataclass `cls`'s fields (ints not bools, floats finite, Literal choices); unknown
    keys are left to `unknown_field`. For dicts read from files (run.json, a card)."""
    if not isinstance(data, dict):
        raise error(what, f"must be an object of fields, got {type(data).__name__}")
    hints = get_type_hints(cls)
    for name, value in data.items():
        if name in hints and not _has_type(value, hints[name]):
            shown = _shown(value)
            raise error(name, f"{shown} is not {_type_words(hints[name])}")


def _shown(value: object) -> str:
    """repr() of a short value, else its type's name (a deeply nested one has no repr)."""
    if isinstance(value, (dict, list)):
        return type(value).__name__
    text = repr(value)
    return text if len(text) <= 60 else type(value).__name__


def _has_type(value: object, hint: Any) -> bool:
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin in (Union, types.UnionType):
        return any(_has_type(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, origin or hint)


def _type_words(hint: Any) -> str:
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(map(repr, args))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_words(a) for a in args)
    names = {int: "an integer", float: "a finite number", str: "text", bool: "true or false", type(None): "null", dict: "an object"}
    return names.get(origin or hint, getattr(origin or hint, "__name__", str(hint)))


@dataclass(frozen=True)
class Range:
    """The values a number option takes: low..high, `low` itself refused when `open` (a positive number)."""

    low: float | None = None
    high: float | None = None
    open: bool = False

    def holds(self, value: float) -> bool:
        above = self.low is None or (value > self.low if self.open else value >= self.low)
        return above and (self.high is None or value <= self.high)

    def words(self) -> str:
        """What an error says the value must be ('positive and at most 1.0', 'at least 1', '0..4,294,967,295')."""
        if self.open and self.low == 0:
            return "positive" + (f" and at most {_number(self.high)}" if self.high is not None else "")
        if self.high is None:
            return f"at least {_number(self.low)}"
        return f"{_number(self.low)}..{_number(self.high)}"


class OptionRow:
    """What a row of an option table is beside its own fields (training.options.Option,
    analysis.registry.AnalysisOption): a typed value with a command-line flag, help and a default."""

    name: str
    type: Any
    default: Any
    help: str
    flag: str | None

    @property
    def dest(self) -> str:
        """argparse's attribute for the flag ('--seq-len' -> 'seq_len')."""
        return str(self.flag).removeprefix("--").replace("-", "_")

    @property
    def base(self) -> Any:
        """The type without None ('int | None' -> int; a Literal stays a Literal)."""
        args = [a for a in get_args(self.type) if a is not type(None)]
        return args[0] if get_origin(self.type) in (Union, types.UnionType) and len(args) == 1 else self.type

    @property
    def choices(self) -> tuple[Any, ...] | None:
        return get_args(self.base) if get_origin(self.base) is Literal else None

    @property
    def switch(self) -> bool:
        """A flag without a value: it turns the default the other way ('--no-mask', '--cased')."""
        return self.base is bool

    def help_text(self) -> str:
        return self.help.format(default=self.default)


MAX_NUMBER_CHARS = 40  # a number a person types: longer is no count (and int() refuses over 4,300 digits)


def ascii_int(text: object) -> int | None:
    """`text` as a whole number when it is written as one in ASCII: an optional sign, then 1 to
    MAX_NUMBER_CHARS digits 0-9, spaces around it allowed; else None. int() alone also reads other
    scripts' digits ('١٢', '１２') and '1_000', and str.isdigit() passes '²', which int() refuses."""
    text = str(text).strip()
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not (0 < len(digits) <= MAX_NUMBER_CHARS and digits.isascii() and digits.isdigit()):
        return None
    return int(text)


def ascii_float(text: object) -> float | None:
    """`text` as a finite number written in ASCII ('0.5', '-1e-3'), at most MAX_NUMBER_CHARS; else
    None (float() also reads other scripts' digits, '1_0', 'nan' and 'inf')."""
    text = str(text).strip()
    if not (0 < len(text) <= MAX_NUMBER_CHARS and text.isascii()) or "_" in text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _number(value: float | None) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)
