"""The analysis commands, one per record of albert_lab.analysis.registry.ANALYSES, built in one loop
(registered on import by albert_lab/cli/__init__.py): each takes its checkpoints, its inputs and its
record's options, runs the record's function and prints the frame (a table of the record's columns
and its report, or every column with --json)."""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from albert_lab.analysis.registry import ANALYSES, Analysis
from albert_lab.cli.arguments import add_checkpoint_arguments, add_option_arguments, add_text_arguments, check_bounds, option_values
from albert_lab.cli.common import Handler, command, print_frame, progress_line
from albert_lab.cli.inputs import input_texts, load_bundle, load_bundles
from albert_lab.cli.outputs import check_outputs, write_csv
from albert_lab.errors import AlbertLabError


def arguments(record: Analysis) -> Callable[[argparse.ArgumentParser], None]:
    """The command's arguments: its checkpoints, its texts if it reads texts, its record's options in order."""
    def add(p: argparse.ArgumentParser) -> None:
        add_checkpoint_arguments(p, many=record.most != 1)
        if record.inputs in ("texts", "text"):
            add_text_arguments(p)
        add_option_arguments(p, record.options)
        if record.used("output"):
            p.add_argument("--raw-csv", action="store_true",
                           help="write CSV cells as they are: without it, text that starts with = + - @ (a formula "
                                "to a spreadsheet) gets a leading '")
        p.epilog = record.epilog or None
    return add


def handler(record: Analysis) -> Handler:
    def run(args: argparse.Namespace) -> int:
        if record.most and record.most > 1 and len(args.checkpoint) > record.most:
            raise AlbertLabError(record.most_words)
        check_bounds(args, record.options)
        if record.used("output"):
            check_outputs(args, files=[o.dest for o in record.used("output")])  # before the work, not after it
        bundles, data = checkpoints_and_inputs(args, record)
        options = option_values(args, record.used("run"))
        if record.progress:
            options["progress"] = progress_line()
        frame = record.load()(bundles[0] if record.most == 1 else bundles, data, **options)
        if record.progress and sys.stderr.isatty():
            print(file=sys.stderr)  # past the progress line
        write_outputs(args, record, frame, bundles, data, options, own=True)
        show(args, record, frame)
        write_outputs(args, record, frame, bundles, data, options, own=False)
        return 0

    return run


def checkpoints_and_inputs(args: argparse.Namespace, record: Analysis) -> tuple[list, Any]:
    """The bundles and what the analysis reads: a pairs file first (a bad file is told before any
    model loads; then each pair head's warning), else the checkpoints first (a misspelt name fails
    before held-out pairs are built)."""
    inputs = option_values(args, record.used("inputs"))
    if record.inputs == "pairs":
        data, bundles = read_pairs(args, inputs), load_bundles(args, args.checkpoint)
        for bundle in bundles:
            if bundle.heads.warning:
                print(f"warning: {bundle.name}: {bundle.heads.warning}", file=sys.stderr)
        return bundles, data
    bundles = [load_bundle(args, args.checkpoint)] if record.most == 1 else load_bundles(args, args.checkpoint)
    return bundles, read_inputs(args, record, inputs)


def read_inputs(args: argparse.Namespace, record: Analysis, inputs: dict[str, Any]) -> Any:
    if record.inputs == "held-out":
        from albert_lab.analysis.evaluation import evaluation_pairs

        print("building the held-out pairs ...", file=sys.stderr)
        return evaluation_pairs(**inputs)
    texts = input_texts(args)
    return texts[0] if record.inputs == "text" else texts


def read_pairs(args: argparse.Namespace, inputs: dict[str, Any]) -> Any:
    """The pairs file's rows, its problems said on standard error."""
    from albert_lab.data.pairs_file import read_pairs as parse

    parsed = parse(*pairs_input(inputs["pairs"]), inputs["max_rows"])
    for problem in parsed.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return parsed.pairs


def pairs_input(path: Path) -> tuple[bytes, str]:
    """The pairs file's bytes and the name its format is read from; `-` is standard input
    (JSON lines if it starts with '{', tab-separated if its first line has a tab, else CSV)."""
    from albert_lab.data.textfile import MAX_UPLOAD_BYTES, check_size, read_user_file

    if str(path) != "-":
        return read_user_file(path), path.name
    data = sys.stdin.buffer.read(MAX_UPLOAD_BYTES + 1)
    check_size(len(data), "standard input")
    head = data.lstrip()[:1], data.split(b"\n", 1)[0]
    return data, "stdin.jsonl" if head[0] == b"{" else "stdin.tsv" if b"\t" in head[1] else "stdin.csv"


def show(args: argparse.Namespace, record: Analysis, frame: Any) -> None:
    """Every column with --json; else the record's table or its report's text, the lines after it and
    its remarks (stderr); a record's checkpoint notes on stderr either way."""
    report = record.load(record.report)(frame) if record.report and not args.json else None
    if report is None or report.text is None:
        print_frame(args, frame, list(record.columns) or None)
    else:
        print(report.text)
    for line in report.after if report else ():
        print(line)
    for line in report.remarks if report else ():
        print(line, file=sys.stderr)
    if record.notes:
        from albert_lab.analysis.common import checkpoint_notes

        for name, note in checkpoint_notes(frame).items():
            print(f"note: {name}: {note}", file=sys.stderr)


def write_outputs(args: argparse.Namespace, record: Analysis, frame: Any, bundles: list, data: Any,
                  options: dict[str, Any], own: bool) -> None:
    """The output files asked for: the frame itself (`own`), or another function's frame of the same
    checkpoints, the first text and the options that function takes (attention's maps)."""
    for option in record.used("output"):
        out = getattr(args, option.dest)
        if out is None or (option.writes is None) != own:
            continue
        if option.writes is not None:
            function = record.load(option.writes)
            taken = inspect.signature(function).parameters
            text = data if isinstance(data, str) else data[0]  # the first text
            frame = function(bundles, text, **{k: v for k, v in options.items() if k in taken})
        write_csv(frame, out, option.flag, raw=args.raw_csv)
        print(f"wrote {len(frame):,} rows to {out}", file=sys.stderr)


for _record in ANALYSES:
    if _record.command:
        command(_record.name, _record.help)(arguments(_record))(handler(_record))
