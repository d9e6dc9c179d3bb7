"""The options of a training run, each written once: what it is (its name, type, default,
bounds, choices, help) and where it applies (the `albert-lab train` flag, the command a run
records). A training option is a TrainConfig field made with `option(...)`: that field is its
row. The spec's options (the architecture flags, shared with `albert-lab params`) are rows of
SPEC_OPTIONS, their defaults a preset's. The CLI's arguments, the recorded command and
validation's range and choice checks are read from the rows, and so are the Training page's
widgets' types and bounds (how the page shows a row is its own table: app/rooms/training/
widgets.py); nothing here imports argparse or streamlit."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal, get_type_hints

from albert_lab.fields import OptionRow, Range
from albert_lab.spec import ModelSpec

Record = Literal["changed", "always", "never"]


@dataclass(frozen=True)
class Option(OptionRow):
    """One row of the table."""

    name: str  # the TrainConfig or ModelSpec field
    type: Any = None  # its type hint (filled from the dataclass)
    default: Any = None  # TrainConfig's default; a spec option's comes from the preset (None here)
    flag: str | None = None  # the `albert-lab train` flag; None: not on the command line
    help: str = ""  # the command line's help; {default} is the default (with a format spec: {default:,})
    bounds: Range | None = None
    record: Record = "changed"  # in the recorded command: when it differs from the default, always, or never
    noun: str = ""  # how an error names the value ('learning rate')
    metavar: str | None = None

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value` for this option, as an error's words after the name; None if nothing."""
        if value is None or self.switch:
            return None
        if self.choices is not None and value not in self.choices:
            return f"{value!r}; allowed: {', '.join(map(str, self.choices))}"
        if self.base is float and not math.isfinite(value):
            return f"must be a finite number, got {value}"
        if self.bounds is not None and not self.bounds.holds(value):
            shown = f"{value:g}" if isinstance(value, float) else str(value)[:40] + ("..." if len(str(value)) > 40 else "")
            return f"{self.noun + ' ' if self.noun else ''}must be {self.bounds.words()}, got {shown}"
        return None


def option(default: Any = None, flag: str | None = None, help: str = "", **row: Any) -> Any:
    """A TrainConfig field that is a row of the table (`default` may be a callable for a mutable one)."""
    meta = {"option": Option(name="", flag=flag, help=help, **row)}
    if callable(default):
        return dataclasses.field(default_factory=default, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def rows_of(cls: type) -> tuple[Option, ...]:
    """The rows of a dataclass whose fields were made with `option`, in field order, with each
    field's name, type and default filled in."""
    hints = get_type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        if "option" in f.metadata:
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            found.append(dataclasses.replace(f.metadata["option"], name=f.name, type=hints[f.name], default=default))
    return tuple(found)


def _spec(name: str, flag: str, **row: Any) -> Option:
    return Option(name=name, type=get_type_hints(ModelSpec)[name], flag=flag, record="never", **row)


_N = dict(metavar="N", bounds=Range(1))
# The spec's options: what `albert-lab train` and `albert-lab params` take over a preset (ModelSpec checks each
# value), and the architecture the Training page's form shows.
SPEC_OPTIONS: tuple[Option, ...] = (
    _spec("family", "--family"),
    _spec("vocab_size", "--vocab", **_N),
    _spec("embedding_size", "--embedding", **_N),
    _spec("hidden_size", "--hidden", **_N),
    _spec("num_layers", "--layers", **_N),
    _spec("num_heads", "--heads", **_N),
    _spec("ffn_size", "--ffn", **_N),
    _spec("num_groups", "--groups", **_N),
    _spec("inner_group_num", "--inner", **_N),
    _spec("max_positions", "--max-positions", **_N),
    _spec("sharing", "--sharing"),
    _spec("objective", "--objective"),
    _spec("dropout", "--dropout"),
)
# The spec fields a run that starts from a checkpoint sets; it keeps every other field of the checkpoint's.
UPTRAIN_SPEC = ("objective", "dropout")
KEPT_BY_UPTRAINING = tuple(f.name for f in dataclasses.fields(ModelSpec) if f.name not in UPTRAIN_SPEC)

