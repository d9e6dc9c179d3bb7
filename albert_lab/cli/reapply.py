"""CLI commands for a shared block applied again (registered on import by albert_lab/cli/__init__.py):
extrapolate, logit-lens, lens-top, attention, cka."""

from __future__ import annotations

import argparse
import sys

from albert_lab.cli import common
from albert_lab.cli.common import add_checkpoint_arguments, add_text_arguments, command, input_texts, load_bundle, print_frame
from albert_lab.errors import AlbertLabError
from albert_lab.limits import MAX_CKA_TOKENS


def _repeat(p: argparse.ArgumentParser, default: int = 1) -> None:
    p.add_argument("--repeat", type=int, default=default, metavar="K",
                   help=f"apply a shared block K x L times, K = 1..4 (default {default}); unshared models stay at L")


def _masking(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mask-rate", type=float, default=0.15, help="share of each text's tokens masked (default 0.15)")
    p.add_argument("--seed", type=common.seed_option(), default=0, help="seed of the masked positions")


def _print_notes(frame, name_column: str = "checkpoint") -> None:
    """What an analysis could not do for a checkpoint (no shared block, no MLM head), on stderr."""
    from albert_lab.analysis.common import checkpoint_notes

    for name, note in checkpoint_notes(frame, name_column).items():
        print(f"note: {name}: {note}", file=sys.stderr)


def _extrapolate_arguments(p: argparse.ArgumentParser) -> None:
    add_checkpoint_arguments(p)
    add_text_arguments(p)
    _repeat(p, default=2)
    _masking(p)


@command("extrapolate", "run a shared block for K x L applications: distances, angles, MLM accuracy, verdict")(
    _extrapolate_arguments)
def cmd_extrapolate(args: argparse.Namespace) -> int:
    from albert_lab.analysis.extrapolation import extrapolate, extrapolation_verdict

    common.check_at_least(args, seq_len=common.MIN_SEQ_LEN)
    bundles = [load_bundle(args, c) for c in args.checkpoint]
    frame = extrapolate(bundles, input_texts(args), args.repeat, args.seq_len, args.mask_rate, args.seed)
    print_frame(args, frame, ["checkpoint", "application", "l2_step", "angle_step_deg", "l2_to_depth_L", "l2_return",
                              "mlm_accuracy", "beyond_L"])
    if not args.json:
        for row in extrapolation_verdict(frame).itertuples():
            print(f"{row.checkpoint}: {row.verdict}: {row.words}")
        _print_notes(frame)
    return 0


def _lens_arguments(p: argparse.ArgumentParser) -> None:
    add_checkpoint_arguments(p)
    add_text_arguments(p)
    _repeat(p)
    _masking(p)


@command("logit-lens", "masked-token accuracy of every layer's state read through the model's own MLM head")(_lens_arguments)
def cmd_logit_lens(args: argparse.Namespace) -> int:
    from albert_lab.analysis.lens import logit_lens

    common.check_at_least(args, seq_len=common.MIN_SEQ_LEN)
    bundles = [load_bundle(args, c) for c in args.checkpoint]
    frame = logit_lens(bundles, input_texts(args), args.repeat, args.seq_len, args.mask_rate, args.seed)
    print_frame(args, frame, ["checkpoint", "application", "mlm_accuracy", "nll", "agrees_with_last",
                                                      "beyond_L"])
    _print_notes(frame)
    return 0


def _top_arguments(p: argparse.ArgumentParser) -> None:
    add_checkpoint_arguments(p)
    add_text_arguments(p)
    _repeat(p)
    p.add_argument("--position", type=int, help="token index to watch (default: a typed [MASK], else the middle token)")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--no-mask", action="store_true", help="watch the token as it is instead of masking it")


@command("lens-top", "top-k predictions for one token after every layer application (first text only)")(_top_arguments)
def cmd_lens_top(args: argparse.Namespace) -> int:
    from albert_lab.analysis.lens import lens_predictions

    if not 1 <= args.top_k <= 100:
        raise AlbertLabError(f"--top-k must be 1..100, got {args.top_k}")
    common.check_at_least(args, seq_len=common.MIN_SEQ_LEN)
    bundles = [load_bundle(args, c) for c in args.checkpoint]
    frame = lens_predictions(bundles, input_texts(args)[0], args.position, args.top_k, not args.no_mask, args.repeat,
                             args.seq_len)
    print_frame(args, frame, ["checkpoint", "application", "rank", "token", "probability",
                                                      "watched", "target_rank"])
    return 0


def _attention_arguments(p: argparse.ArgumentParser) -> None:
    add_checkpoint_arguments(p)
    add_text_arguments(p)
    _repeat(p)
    p.add_argument("--maps-out", type=common.path_option, help="write the maps of the first text (raw and norm-weighted) as CSV")


@command("attention", "attention entropy per layer application and head; maps (raw, norm-weighted) as CSV")(
    _attention_arguments)
def cmd_attention(args: argparse.Namespace) -> int:
    from albert_lab.analysis.attention import attention_entropy, attention_maps

    common.check_at_least(args, seq_len=common.MIN_SEQ_LEN)
    common.check_outputs(args)  # before the analysis, not after it
    bundles = [load_bundle(args, c) for c in args.checkpoint]
    texts = input_texts(args)
    frame = attention_entropy(bundles, texts, args.repeat, args.seq_len)
    print_frame(args, frame, ["checkpoint", "application", "inner", "head", "entropy",
                                                      "entropy_norm_weighted", "entropy_share"])
    _print_notes(frame)
    if args.maps_out:
        maps = attention_maps(bundles, texts[0], args.repeat, args.seq_len)
        common.write_csv(maps, args.maps_out, "--maps-out")
        print(f"wrote {len(maps):,} rows to {args.maps_out}", file=sys.stderr)
    return 0


def _cka_arguments(p: argparse.ArgumentParser) -> None:
    add_checkpoint_arguments(p)
    add_text_arguments(p)
    _repeat(p)
    p.add_argument("--max-tokens", type=common.int_in(2, MAX_CKA_TOKENS), default=1024,
                   help=f"tokens drawn for CKA, 2..{MAX_CKA_TOKENS:,} (default 1024)")


@command("cka", "linear CKA between layer applications: one checkpoint, or two (across models)")(_cka_arguments)
def cmd_cka(args: argparse.Namespace) -> int:
    from albert_lab.analysis.cka import layer_cka

    if len(args.checkpoint) > 2:
        raise AlbertLabError("cka compares one checkpoint with itself or two with each other; give --checkpoint once or twice")
    common.check_at_least(args, seq_len=common.MIN_SEQ_LEN)
    bundles = [load_bundle(args, c) for c in args.checkpoint]
    other = bundles[1] if len(bundles) == 2 else None
    frame = layer_cka(bundles[0], input_texts(args), other, args.repeat, args.seq_len, args.max_tokens)
    if args.json:
        print_frame(args, frame)
    else:
        grid = frame.pivot(index="application_x", columns="application_y", values="cka")
        print(f"linear CKA, rows: {bundles[0].name}, columns: {frame.checkpoint_y.iloc[0]} "
              f"(unit: {frame.unit.iloc[0]}, N = {frame.n.iloc[0]})")
        print(grid.to_string(float_format=lambda v: f"{v:.2f}"))
        print(f"caution: {frame.note.iloc[0]}", file=sys.stderr)
    return 0
