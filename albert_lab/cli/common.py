"""What the command-line modules share: the command registry, output (a table or
one JSON document), spec and checkpoint arguments, and loading a checkpoint by
shipped name, folder or hub id (`outputs` checks and writes a command's files). The command
modules import from here; nothing here imports them."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from albert_lab.analysis.registry import AnalysisOption
from albert_lab.analysis.registry import text_table as table  # noqa: F401 (the commands' plain tables)
from albert_lab.errors import AlbertLabError
from albert_lab.fields import ascii_int
from albert_lab.limits import MIN_SEQ_LEN  # noqa: F401 (the train commands take it from here)
from albert_lab.runfolder import loss_words
from albert_lab.training.options import SPEC_OPTIONS, Option

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Handler, str]] = {}


def command(name: str, help: str) -> Callable[[Callable[[argparse.ArgumentParser], None]], Callable[[Handler], Handler]]:
    """Register a sub-command: `@command(name, help)(add_arguments)(handler)`."""
    def with_arguments(add: Callable[[argparse.ArgumentParser], None]) -> Callable[[Handler], Handler]:
        def with_handler(handler: Handler) -> Handler:
            COMMANDS[name] = (add, handler, help)
            return handler
        return with_handler
    return with_arguments


def emit(args: argparse.Namespace, payload: Any, text: str) -> None:
    """`text` for people, or with --json one valid JSON document (NaN and infinities,
    which JSON has no words for, become null)."""
    print(json.dumps(json_safe(payload), indent=2, default=str, allow_nan=False) if getattr(args, "json", False) else text)


def json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if value is not None and type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing values
        return None
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:  # numpy scalars
        return json_safe(value.item())
    return value


# ---- options, spec, checkpoints and texts ---------------------------------------------------------
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


def check_bf16(asked: bool, device: str, flag: str) -> None:
    """Where bf16 was asked for: a one-line warning on stderr if it measures slower here than
    fp32, AlbertLabError (exit 2) if it is too slow to use (devices.bf16_verdict)."""
    if asked:
        from albert_lab.devices import check_bf16 as verdict
        from albert_lab.devices import resolve_device

        warning = verdict(resolve_device(device), flag)
        if warning:
            print(warning, file=sys.stderr)


def load_bundle(args: argparse.Namespace, source: str):
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.checkpoint.load import load_checkpoint

    if not getattr(args, "_bf16_checked", False):  # once per command, before its first model
        check_bf16(args.dtype == "bfloat16", args.device, "--dtype bfloat16")
        args._bf16_checked = True

    return load_checkpoint(resolve_checkpoint(source), device=args.device, dtype=args.dtype,
                           allow_pickle=args.allow_pickle, name=source if "/" not in source else None,
                           casing=getattr(args, "casing", None))


def load_bundles(args: argparse.Namespace, sources: Sequence[str]) -> list:
    """Load each checkpoint; labels made distinct where folder names collide (a/model and
    b/model become 'a/model' and 'b/model'), so their rows never merge."""
    bundles = [load_bundle(args, source) for source in sources]
    for bundle, label in zip(bundles, distinct_labels([b.name for b in bundles], [b.source for b in bundles])):
        bundle.name = label
    return bundles


def distinct_labels(names: Sequence[str], sources: Sequence[str]) -> list[str]:
    """`names`, where two are equal: the last two parts of their paths, then ' (2)', ' (3)'..."""
    labels = list(names)
    for name in set(names):
        same = [i for i, n in enumerate(names) if n == name]
        if len(same) > 1:
            for i in same:
                parts = Path(sources[i]).expanduser().absolute().parts
                labels[i] = "/".join(parts[-2:]) if len(parts) >= 2 else name
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labels[i] = f"{label} ({seen[label]})"
    return labels


def input_texts(args: argparse.Namespace) -> list[str]:
    """The texts a command analyses: --file's paragraphs (separated by blank lines), read a
    line at a time and only as far as an analysis reads (MAX_TEXTS, each cut to
    MAX_DOC_CHARS), so memory is bounded by the work, not by the file; else --text, else
    the built-in sample."""
    from albert_lab.data.corpus import MAX_DOC_CHARS
    from albert_lab.data.samples import sample_texts
    from albert_lab.data.textfile import open_user_file, text_blocks, text_lines
    from albert_lab.limits import MAX_TEXTS

    if not args.file:
        return args.text or sample_texts()
    texts: list[str] = []
    with open_user_file(args.file, limit=None, give="a .txt file") as raw:
        for _, block in text_blocks(text_lines(raw, str(args.file), MAX_DOC_CHARS), MAX_DOC_CHARS):
            if len(texts) == MAX_TEXTS:
                fail(f"{args.file}: more than {MAX_TEXTS} texts (paragraphs separated by blank lines); an analysis "
                     f"reads at most {MAX_TEXTS} at once: give a file of fewer")
            texts.append(block)
    return texts or fail(f"{args.file}: no text")


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


def fail(message: str):
    raise AlbertLabError(message)


def print_frame(args: argparse.Namespace, frame, columns=None) -> None:
    """`columns` chooses what the text table shows; --json prints every column the library returned."""
    view = frame[columns] if columns else frame
    emit(args, frame.to_dict(orient="records"), view.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def metric_words(row: dict) -> str:
    """A metrics.jsonl row as a person reads it (was the raw dict)."""
    step = f"step {row.get('step', 0):,}"
    if row.get("kind") == "train" and "loss" in row:
        eta = row.get("eta_s")
        left = "" if eta is None else f", about {eta / 60:,.0f} min left" if eta >= 90 else f", about {eta:,.0f} s left"
        return (f"{step}: {loss_words(row)}, {row.get('run_tokens_per_s', row.get('tokens_per_s', 0)):,.0f} "
                f"tokens/s, {row.get('tokens', 0):,} tokens seen{left}")
    if row.get("kind") == "eval":
        names = {"eval_mlm_acc": "MLM", "eval_nsp_acc": "NSP", "eval_sop_acc": "SOP", "eval_sop_interior_acc": "SOP interior"}
        found = [f"{name} {row[key]:.3f}" for key, name in names.items() if isinstance(row.get(key), (int, float))]
        return f"{step}: held-out accuracy " + (", ".join(found) or "-")
    return f"{step}: {row.get('kind', 'event')}"


def progress_line():
    """A progress callback for stderr: one line rewritten in a terminal, a line per step
    in a log (evaluate was silent for minutes)."""
    tty = sys.stderr.isatty()

    def show(fraction: float, what: str) -> None:
        print(f"{chr(13) if tty else ''}[{fraction:4.0%}] scoring {what} ...", end="" if tty else "\n", file=sys.stderr,
              flush=True)

    return show
