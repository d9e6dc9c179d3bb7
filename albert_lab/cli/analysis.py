"""CLI commands for the analyses (registered on import by albert_lab/cli/__init__.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import get_args

from albert_lab.cli.common import (
    MIN_SEQ_LEN,
    add_checkpoint_arguments,
    add_text_arguments,
    check_at_least,
    check_outputs,
    command,
    emit,
    input_texts,
    load_bundle,
    load_bundles,
    path_option,
    print_frame,
    progress_line,
    seed_option,
    table,
    write_csv,
)
from albert_lab.data.corpus import MAX_LEN
from albert_lab.data.textfile import MAX_PAIR_ROWS, MAX_UPLOAD_MB
from albert_lab.spec import Objective


def _evaluate_arguments(p: argparse.ArgumentParser) -> None:
    add_checkpoint_arguments(p)
    p.add_argument("--corpus", default="long-mix", help="held-out documents of this corpus are used (default long-mix)")
    p.add_argument("--seq-len", type=int, default=MAX_LEN)
    p.add_argument("--limit", type=int, help="at most this many pairs per task (a fixed random sample)")
    p.add_argument("--by-source", action="store_true", help="also one row per source")
    p.add_argument("--no-ood", action="store_true", help="skip the out-of-domain source")


@command("evaluate", "intrinsic MLM / NSP / SOP accuracy on held-out pairs, with 95% intervals (paper Table 5)")(_evaluate_arguments)
def cmd_evaluate(args: argparse.Namespace) -> int:
    from albert_lab.analysis.evaluation import evaluate, evaluation_pairs

    check_at_least(args, seq_len=MIN_SEQ_LEN, limit=1)
    bundles = load_bundles(args, args.checkpoint)  # a misspelt name fails before the pairs are built
    print("building the held-out pairs ...", file=sys.stderr)
    pairs = evaluation_pairs(args.corpus, out_of_domain=not args.no_ood)
    results = evaluate(bundles, pairs, args.seq_len, args.limit,
                       by_source=args.by_source, progress=progress_line())
    if sys.stderr.isatty():
        print(file=sys.stderr)  # past the progress line
    emit(args, results.to_dict(orient="records"), evaluation_text(results))
    return 0


def evaluation_text(results) -> str:
    """One line per checkpoint and pairs set: accuracy [95% interval] n per metric, then the notes."""
    from albert_lab.analysis.evaluation import table5_cells

    cells, notes = table5_cells(results)
    return "\n".join([table([tuple(r) for r in cells.itertuples(index=False)], list(cells.columns)), *notes])


def _oscillation_arguments(p: argparse.ArgumentParser) -> None:
    add_checkpoint_arguments(p)
    add_text_arguments(p)
    p.add_argument("--aggregate", default="mean", choices=["mean", "median"])


@command("oscillation", "L2 distance and angle between each layer's input and output (paper Figure 1)")(_oscillation_arguments)
def cmd_oscillation(args: argparse.Namespace) -> int:
    from albert_lab.analysis.oscillation import oscillation, verdict

    check_at_least(args, seq_len=MIN_SEQ_LEN)
    bundles = load_bundles(args, args.checkpoint)
    frame = oscillation(bundles, input_texts(args), args.aggregate, args.seq_len)
    print_frame(args, frame, ["checkpoint", "layer", "l2", "angle_deg", "l2_spread", "angle_spread", "norm_out"])
    if not args.json:
        for row in verdict(frame).itertuples():
            print(f"{row.checkpoint}: {row.verdict}", file=sys.stderr)
    return 0


def _gradflow_arguments(p: argparse.ArgumentParser) -> None:
    add_checkpoint_arguments(p, many=False)
    add_text_arguments(p)
    p.add_argument("--objective", choices=get_args(Objective), help="pair loss to add (default: the checkpoint's)")
    p.add_argument("--seed", type=seed_option(), default=0, help="seed of the pairs and masks")


@command("gradflow", "mean and max |grad| per layer, per application of shared layers")(_gradflow_arguments)
def cmd_gradflow(args: argparse.Namespace) -> int:
    from albert_lab.analysis.gradflow import gradient_flow

    check_at_least(args, seq_len=MIN_SEQ_LEN)
    bundle = load_bundle(args, args.checkpoint)
    frame = gradient_flow(bundle, input_texts(args), objective=args.objective, seed=args.seed, max_len=args.seq_len)
    print_frame(args, frame)
    return 0


def _score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pairs", type=path_option, help=".csv (or .txt)/.tsv/.jsonl with sentence_a, sentence_b[, label]; "
                   "- reads them from standard input")
    add_checkpoint_arguments(p)
    p.add_argument("--out", type=path_option, help="write the scores as CSV")
    p.add_argument("--seq-len", type=int, default=MAX_LEN)
    p.add_argument("--max-rows", type=int, default=MAX_PAIR_ROWS,
                   help=f"score at most this many rows (default {MAX_PAIR_ROWS:,}); "
                   f"files up to {MAX_UPLOAD_MB} MB, as in the browser")


def _pairs_input(path: Path) -> tuple[bytes, str]:
    """The pairs file's bytes and the name its format is read from; `-` is standard input
    (JSON lines if it starts with '{', tab-separated if its first line has a tab, else CSV)."""
    from albert_lab.data.textfile import MAX_UPLOAD_BYTES, check_size, read_user_file

    if str(path) != "-":
        return read_user_file(path), path.name
    data = sys.stdin.buffer.read(MAX_UPLOAD_BYTES + 1)
    check_size(len(data), "standard input")
    head = data.lstrip()[:1], data.split(b"\n", 1)[0]
    return data, "stdin.jsonl" if head[0] == b"{" else "stdin.tsv" if b"\t" in head[1] else "stdin.csv"


@command("score", "P(original order) / P(is next) from SOP and NSP heads for sentence pairs")(_score_arguments)
def cmd_score(args: argparse.Namespace) -> int:
    from albert_lab.analysis.pairs import score_pairs, summarize
    from albert_lab.data.pairs_file import read_pairs

    check_at_least(args, seq_len=MIN_SEQ_LEN, max_rows=1)
    check_outputs(args)
    parsed = read_pairs(*_pairs_input(args.pairs), args.max_rows)
    for problem in parsed.problems:
        print(f"warning: {problem}", file=sys.stderr)
    bundles = load_bundles(args, args.checkpoint)
    for bundle in bundles:
        if bundle.heads.warning:
            print(f"warning: {bundle.name}: {bundle.heads.warning}", file=sys.stderr)
    scores = score_pairs(bundles, parsed.pairs, args.seq_len)
    if args.out:
        write_csv(scores, args.out)
        print(f"wrote {len(scores)} rows to {args.out}", file=sys.stderr)
    if args.json:
        emit(args, scores.to_dict(orient="records"), "")
    else:
        print(summarize(scores).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0
