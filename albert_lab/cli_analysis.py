"""CLI commands for the analyses (registered on import by cli.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from albert_lab.cli import command, emit
from albert_lab.errors import AlbertLabError


def _common(p: argparse.ArgumentParser, many: bool = True) -> None:
    p.add_argument("--checkpoint", action="append" if many else "store", required=True,
                   help="shipped name, folder or hub id" + (" (repeatable)" if many else ""))
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--allow-pickle", action="store_true")
    p.add_argument("--json", action="store_true", help="print the frame as JSON records")


def _texts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text", action="append", help="an input text (repeatable); default: built-in held-out sample")
    p.add_argument("--file", type=Path, help="a .txt file: texts separated by blank lines")
    p.add_argument("--seq-len", type=int, default=128)


def _load(args: argparse.Namespace, source: str):
    from albert_lab.card import resolve_checkpoint
    from albert_lab.checkpoints import load_checkpoint

    return load_checkpoint(resolve_checkpoint(source), device=args.device, dtype=args.dtype,
                           allow_pickle=args.allow_pickle, name=source if "/" not in source else None)


def _input_texts(args: argparse.Namespace) -> list[str]:
    from albert_lab.data.corpus import decode_utf8
    from albert_lab.data.samples import sample_texts

    if args.file:
        if not args.file.is_file():
            raise AlbertLabError(f"{args.file}: no such file")
        blocks = decode_utf8(args.file.read_bytes(), str(args.file)).split("\n\n")
        return [b for b in blocks if b.strip()] or _fail(f"{args.file}: no text")
    return args.text or sample_texts()


def _fail(message: str):
    raise AlbertLabError(message)


def _print_frame(args: argparse.Namespace, frame, columns=None) -> None:
    view = frame[columns] if columns else frame
    emit(args, view.to_dict(orient="records"), view.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def _oscillation_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    _texts(p)
    p.add_argument("--aggregate", default="mean", choices=["mean", "median"])


@command("oscillation", "L2 distance and angle between each layer's input and output (paper Figure 1)")(_oscillation_arguments)
def cmd_oscillation(args: argparse.Namespace) -> int:
    from albert_lab.analysis.oscillation import oscillation, verdict

    bundles = [_load(args, c) for c in args.checkpoint]
    frame = oscillation(bundles, _input_texts(args), args.aggregate, args.seq_len)
    _print_frame(args, frame, ["checkpoint", "layer", "l2", "angle_deg", "l2_spread", "angle_spread", "norm_out"])
    if not args.json:
        for row in verdict(frame).itertuples():
            print(f"{row.checkpoint}: {row.verdict}", file=sys.stderr)
    return 0


def _gradflow_arguments(p: argparse.ArgumentParser) -> None:
    _common(p, many=False)
    _texts(p)
    p.add_argument("--objective", choices=["sop", "nsp", "none"], help="pair loss to add (default: the checkpoint's)")
    p.add_argument("--seed", type=int, default=0, help="seed of the pairs and masks")


@command("gradflow", "mean and max |grad| per layer, per application of shared layers")(_gradflow_arguments)
def cmd_gradflow(args: argparse.Namespace) -> int:
    from albert_lab.analysis.gradflow import gradient_flow

    bundle = _load(args, args.checkpoint)
    frame = gradient_flow(bundle, _input_texts(args), objective=args.objective, seed=args.seed, max_len=args.seq_len)
    _print_frame(args, frame)
    return 0


def _score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pairs", type=Path, help=".csv/.tsv/.jsonl with sentence_a, sentence_b[, label]")
    _common(p)
    p.add_argument("--out", type=Path, help="write the scores as CSV")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--max-rows", type=int, default=5000)


@command("score", "P(original order) / P(is next) from SOP and NSP heads for sentence pairs")(_score_arguments)
def cmd_score(args: argparse.Namespace) -> int:
    from albert_lab.analysis.pairs import read_pairs, score_pairs, summarize

    if not args.pairs.is_file():
        raise AlbertLabError(f"{args.pairs}: no such file")
    parsed = read_pairs(args.pairs.read_bytes(), args.pairs.name, args.max_rows)
    for problem in parsed.problems:
        print(f"warning: {problem}", file=sys.stderr)
    bundles = [_load(args, c) for c in args.checkpoint]
    for bundle in bundles:
        if bundle.heads.warning:
            print(f"warning: {bundle.name}: {bundle.heads.warning}", file=sys.stderr)
    scores = score_pairs(bundles, parsed.pairs, args.seq_len)
    if args.out:
        scores.to_csv(args.out, index=False)
        print(f"wrote {len(scores)} rows to {args.out}", file=sys.stderr)
    if args.json:
        emit(args, scores.to_dict(orient="records"), "")
    else:
        print(summarize(scores).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0
