"""CLI: relax, a real BERT made into an ALBERT whose layer applications each add back a low-rank
part of their own layer (registered on import by cli.py)."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import get_args

from albert_lab.cli import sweep
from albert_lab.cli.arguments import int_in, path_option, seed_option
from albert_lab.cli.common import command, emit, print_frame
from albert_lab.cli.outputs import check_outputs
from albert_lab.errors import AlbertLabError
from albert_lab.spec import Init, Sharing

CURVE_COLUMNS = ["model", "rank", "parameters", "share_of_source", "energy_kept", "mlm_accuracy", "pair_task", "pair_accuracy",
                 "kl", "roughness", "end"]


def rank_option(text: str) -> int | str:
    """An argparse type: a rank, a whole number >= 0 or 'full'."""
    from albert_lab.relax import parse_rank

    try:
        return parse_rank(text)
    except AlbertLabError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("rank: ")) from None


def ranks_option(text: str) -> list[int | str]:
    from albert_lab.relax import parse_ranks

    try:
        return parse_ranks(text)
    except AlbertLabError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--ranks: ")) from None


def _relax_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", help="the BERT to relax: a BERT folder, a sentence-transformers folder, "
                   "a shipped BERT's name, a hub id (online)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--rank", type=rank_option, metavar="R", help="one model: each application's correction rank on every "
                      "shared matrix (0 = albertize's ALBERT; 'full' = the source again); needs --out")
    what.add_argument("--ranks", type=ranks_option, metavar="R,R,...", help="the curve: one row per rank, such as 0,4,16,64,full, "
                      "each measured against the source on held-out text (no model is saved)")
    p.add_argument("--rank-attention", type=rank_option, metavar="R", help="the rank of Q, K, V and the attention output (default --rank)")
    p.add_argument("--rank-ffn", type=rank_option, metavar="R", help="the rank of the FFN's two matrices (default --rank)")
    p.add_argument("--sharing", choices=[s for s in get_args(Sharing) if s != "none"], default="all")
    p.add_argument("--groups", type=int_in(1, 1024), metavar="N", help="sharing groups (default 1)")
    p.add_argument("--embedding", type=int_in(1, 1 << 16), metavar="E", help="embedding size E (default H: exact, the MLM head kept)")
    p.add_argument("--init", choices=get_args(Init), default="average", help="how each shared block starts, as in albertize")
    p.add_argument("--pairs", type=int_in(8, 5000), default=None, metavar="N", help="with --ranks: held-out pairs per task "
                   "(default 128)")
    p.add_argument("--seed", type=seed_option(), default=0)
    p.add_argument("--out", type=path_option, help="with --rank: the new checkpoint folder")
    p.add_argument("--json", action="store_true", help="print JSON")
    sweep.add_sweep_arguments(p)


@command("relax", "between a BERT and its ALBERT: each layer application adds back a low-rank part of its own layer "
         "(one model with --rank, the curve over ranks with --ranks, and after training with --uptrain)")(_relax_arguments)
def cmd_relax(args: argparse.Namespace) -> int:
    from albert_lab.checkpoint.discover import resolve_checkpoint

    if args.resume or args.show:
        if args.checkpoint or args.rank is not None or args.ranks is not None or args.uptrain is not None:
            raise AlbertLabError("--resume and --show name a sweep, which knows its source, ranks and steps: leave out "
                                 "--checkpoint, --rank, --ranks and --uptrain")
        return sweep.existing(args)
    if not args.checkpoint or (args.rank is None and args.ranks is None):
        raise AlbertLabError("give --checkpoint, the BERT, and --rank R (one model) or --ranks R,R,... (the curve)")
    if args.uptrain is not None:
        if args.ranks is None or args.out is not None or args.rank_attention is not None or args.rank_ffn is not None:
            raise AlbertLabError("--uptrain trains the curve's models: give --ranks (and no --rank, --rank-attention, "
                                 "--rank-ffn or --out)")
        return sweep.start(args, resolve_checkpoint(args.checkpoint))
    if given := sweep.sweep_options_given(args):
        raise AlbertLabError(f"{', '.join(given)}: training options, for a sweep: add --uptrain STEPS")
    if args.ranks is not None:
        if args.out is not None or args.rank_attention is not None or args.rank_ffn is not None:
            raise AlbertLabError("--ranks draws the curve at uniform ranks and saves nothing: leave out --out, "
                                 "--rank-attention and --rank-ffn (or give one --rank)")
        return _curve(args, resolve_checkpoint(args.checkpoint))
    if args.out is None:
        raise AlbertLabError("--rank makes one model: give --out, the new checkpoint folder")
    if args.pairs is not None:
        raise AlbertLabError("--pairs sizes the curve's measurements: use it with --ranks")
    return _one(args, resolve_checkpoint(args.checkpoint))


def _one(args: argparse.Namespace, source) -> int:
    from albert_lab.checkpoint.files import read_card, read_spec
    from albert_lab.params import human
    from albert_lab.relax import relax

    check_outputs(args, files=(), folders=("out",))  # never into the BERT it reads, nor any checkpoint
    out = relax(source, args.out, args.rank, args.rank_attention, args.rank_ffn, args.embedding, args.sharing, args.groups,
                args.init, args.seed, command="albert-lab " + shlex.join(sys.argv[1:]))
    card = read_card(out)
    facts, spec = card["relaxation"], read_spec(out, card)
    emit(args, {"out": str(out), "spec": spec.to_dict(), **facts},
         f"{out}: {spec.label}, converted, not trained\n"
         f"  parameters: {human(facts['parameters'])} ({facts['parameters'] / facts['source_parameters']:.0%} of the source's "
         f"{human(facts['source_parameters'])}); the corrections and each application's own vectors add "
         f"{human(facts['parameters_added'])} to the ALBERT\n"
         f"  the corrections keep {facts['energy_kept']:.1%} of what sharing took from the layers (residual energy); "
         f"per application and map in albert_lab.json")
    return 0


def _curve(args: argparse.Namespace, source) -> int:
    from albert_lab.analysis.relaxation import DEFAULT_PAIRS, relax_curve, report

    def progress(fraction: float, what: str) -> None:
        print(f"[{fraction:4.0%}] {what}", file=sys.stderr, flush=True)

    frame = relax_curve(source, args.ranks, args.embedding, args.sharing, args.groups, args.init,
                        args.pairs or DEFAULT_PAIRS, seed=args.seed, progress=progress)
    print_frame(args, frame, CURVE_COLUMNS)
    if not args.json:
        for line in report(frame).remarks:
            print(line, file=sys.stderr)
    return 0
