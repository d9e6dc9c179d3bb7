"""The command line's flags: an argument per row of an options table (training's, an analysis's,
the spec's), the shared checkpoint, device and text flags, and the argparse types that refuse a bad
value in one line naming the flag (paths, whole numbers, ranges, seeds)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from albert_lab.analysis.registry import AnalysisOption
from albert_lab.errors import AlbertLabError
from albert_lab.fields import ascii_int
from albert_lab.training.options import SPEC_OPTIONS, Option


def add_option_arguments(p: argparse.ArgumentParser, rows: Sequence[Option | AnalysisOption]) -> None:
    """An argument for each row of an options table (training's or an analysis's) with a flag, in
    the table's order, its default the row's: a switch, a choice of the row's values, a path
    (path_option; an analysis's input file is positional), or a number (a whole number in a closed
    range checked as it is parsed, others by TrainConfig.validate or check_bounds)."""
    for row in rows:
        if row.flag is None:
            continue
        words = dict(help=row.help_text().replace("%", "%%") or None, metavar=row.metavar)
        if row.switch:  # given, it turns the default the other way (--cased: lowercase False)
            p.add_argument(row.flag, action="store_true", help=words["help"])
        elif row.choices is not None:
            p.add_argument(row.flag, choices=row.choices, default=row.default, **words)
        elif row.base is Path:
            p.add_argument(row.flag, type=path_option, default=row.default, **words)
        elif row.base is int and row.bounds is not None and None not in (row.bounds.low, row.bounds.high):
            p.add_argument(row.flag, type=int_in(int(row.bounds.low), int(row.bounds.high)), default=row.default, **words)
        elif row.base is int:  # bounded by check_bounds or TrainConfig.validate, naming the bound
            p.add_argument(row.flag, type=whole_number, default=row.default, **words)
        else:
            p.add_argument(row.flag, type=row.base, default=row.default, **words)


def check_bounds(args: argparse.Namespace, rows: Sequence[AnalysisOption]) -> None:
    """Refuse a number outside its row's bounds where parsing did not (e.g. `--seq-len -1`), naming the flag."""
    for row in rows:
        problem = row.problem(getattr(args, row.dest, None)) if not row.switch else None
        if problem:
            raise AlbertLabError(f"{row.flag} {problem}")


def option_values(args: argparse.Namespace, rows: Sequence[Option]) -> dict[str, Any]:
    """The rows' values on the command line, by field: a switch given turns its default the other
    way; None (not given, and no default) is left out."""
    values = {}
    for row in (r for r in rows if r.flag):
        value = getattr(args, row.dest, None)
        if row.switch:
            value = (not row.default) if value else row.default
        if value is not None:
            values[row.name] = value
    return values


def add_spec_arguments(p: argparse.ArgumentParser, default_preset: str = "albert-base") -> None:
    p.add_argument("--preset", help=f"start from a preset (default {default_preset}; see `albert-lab presets`); "
                   "the flags below override it")
    add_option_arguments(p, SPEC_OPTIONS)


def spec_from_args(args: argparse.Namespace, default_preset: str = "albert-base") -> Any:
    from albert_lab.spec import ModelSpec

    base = ModelSpec.from_name(args.preset or default_preset)
    changes = option_values(args, SPEC_OPTIONS)
    return base.replace(**changes) if changes else base  # the spec applies the BERT rule (E = H, no sharing)


DEVICES = ["auto", "cpu", "cuda", "mps"]


def add_device_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", choices=DEVICES, help="auto: CUDA when present, else MPS, else CPU")


def add_checkpoint_arguments(p: argparse.ArgumentParser, many: bool = True) -> None:
    p.add_argument("--checkpoint", action="append" if many else "store", required=True,
                   help="shipped name, folder or hub id" + (" (repeatable)" if many else ""))
    add_device_argument(p)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--allow-pickle", action="store_true")
    add_casing_arguments(p)
    p.add_argument("--json", action="store_true", help="print the frame as JSON records")


def add_casing_arguments(p: argparse.ArgumentParser) -> None:
    casing = p.add_mutually_exclusive_group()
    for value in ("cased", "uncased"):
        casing.add_argument(f"--{value}", dest="casing", action="store_const", const=value,
                            help=f"tokenise Google's releases {value}, whatever their names say")


def add_text_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text", action="append", help="an input text (repeatable); default: built-in held-out sample")
    p.add_argument("--file", type=path_option, help="a .txt file: texts separated by blank lines")


def check_at_least(args: argparse.Namespace, **minimums: int) -> None:
    """Refuse an integer option below its minimum (e.g. `--seq-len -1`), naming the flag."""
    for name, low in minimums.items():
        value = getattr(args, name)
        if value is not None and value < low:
            raise AlbertLabError(f"--{name.replace('_', '-')} must be at least {low}, got {value}")


def path_option(text: str) -> Path:
    """The argparse type of every path flag: paths.user_path (length, NUL, `~user`, symlink
    loops), its refusal argparse's one line naming the flag (exit 2)."""
    from albert_lab.paths import user_path

    if text == "-":
        return Path(text)
    try:
        return user_path(text)
    except AlbertLabError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def whole_number(text: str) -> int:
    """An argparse type: a whole number in ASCII digits (fields.ascii_int), else one line naming the flag."""
    value = ascii_int(text)
    if value is None:  # '1e21', 'abc', '²', '１２' or more digits than any count
        raise argparse.ArgumentTypeError(f"{text if len(text) <= 40 else text[:40] + '...'!r} is not a whole number")
    return value


whole_number.__name__ = "int"


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in low..high (a seed, threads, steps), else one line naming the flag."""
    def parse(text: str) -> int:
        value = whole_number(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low:,}..{high:,}, got {text if len(text) <= 40 else text[:40] + '...'}")
        return value

    parse.__name__ = "int"
    return parse


def seed_option() -> Callable[[str], int]:
    from albert_lab.limits import MAX_SEED

    return int_in(0, MAX_SEED)
