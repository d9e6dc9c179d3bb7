"""CLI: the uptraining sweep of `albert-lab relax --ranks ... --uptrain STEPS` (training/sweep.py):
its training options, the launch, its progress, and the curves before and after training."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
import time
from pathlib import Path

from albert_lab.cli.arguments import add_option_arguments, option_values, path_option
from albert_lab.cli.common import emit
from albert_lab.errors import AlbertLabError
from albert_lab.training.config import OPTIONS_OF_CONFIG

# the training options a sweep takes from the command line (`train`'s flags); the rest are the sweep's
TRAINING = ("corpus", "batch_size", "max_seq_len", "lr", "optimizer", "weight_decay", "warmup_steps", "precision", "threads",
            "checkpoint_every", "log_every", "distil_from", "distil_weight", "distil_pair", "pair_weight", "pooler_init")
ROWS = tuple(row for row in OPTIONS_OF_CONFIG if row.name in TRAINING)
DEFAULTS = {row.name: row.default for row in ROWS}
# sweep_config's unless given: the source's positions, a tenth of the steps to warm up, a checkpoint every third
OWN_DEFAULTS = ("max_seq_len", "warmup_steps", "checkpoint_every")
SHOWN = ["model", "rank", "parameters", "share_of_source", "mlm_accuracy", "mlm_low", "mlm_high", "pair_task",
         "pair_accuracy", "pair_low", "pair_high", "kl", "roughness"]


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--uptrain", type=int, metavar="STEPS", help="with --ranks: train every rank's model, and the source, for "
                   "STEPS steps from the same data and seed (the same batches: the same tokens), as one background run, "
                   "then measure them all again: the curve before and after training")
    p.add_argument("--layers", metavar="K,K,...", help="with --uptrain: also BERTs of K of the source's layers (evenly "
                   "spaced), trained alike: BERTs of a relaxed model's size")
    add_option_arguments(p, ROWS)
    p.add_argument("--runs-dir", type=path_option, help="with --uptrain: where the sweep's run folder goes (default runs/)")
    p.add_argument("--run-id", help="with --uptrain: the run folder's name")
    p.add_argument("--foreground", action="store_true", help="with --uptrain: train in this process")
    p.add_argument("--detach", action="store_true", help="with --uptrain: start in the background and return at once")
    p.add_argument("--resume", metavar="RUN", help="continue a failed or cancelled sweep (its folder, or its id in --runs-dir)")
    p.add_argument("--show", metavar="RUN", help="a sweep's curves so far (its folder, or its id in --runs-dir)")


def sweep_options_given(args: argparse.Namespace) -> list[str]:
    """The sweep's flags given without --uptrain (they would not apply)."""
    given = [row.flag for row in ROWS if getattr(args, row.dest, None) not in (row.default, False)]
    given += [f"--{name.replace('_', '-')}" for name in ("layers", "runs_dir", "run_id", "foreground", "detach")
              if getattr(args, name)]
    return given


def start(args: argparse.Namespace, source: str) -> int:
    """Launch the sweep the flags describe, then follow it (or return at once with --detach)."""
    from albert_lab.analysis.relaxation import DEFAULT_PAIRS
    from albert_lab.training.sweep import start_sweep
    from albert_lab.training.sweep_plan import SweepPlan, check_plan, parse_layers, sweep_config

    if args.uptrain < 1:
        raise AlbertLabError(f"--uptrain: give at least 1 step, got {args.uptrain}")
    plan = SweepPlan(source=str(source), ranks=tuple(str(r) for r in args.ranks), layers=parse_layers(args.layers),
                     sharing=args.sharing, init=args.init, embedding_size=args.embedding, groups=args.groups,
                     pairs=args.pairs or DEFAULT_PAIRS)
    check_plan(plan)  # the source and the ranks first: the training options are checked against its spec
    options = {name: value for name, value in option_values(args, ROWS).items()  # the sweep's own defaults where not given
               if not (name in OWN_DEFAULTS and value == DEFAULTS[name])}
    if options.get("distil_from"):
        from albert_lab.checkpoint.discover import resolve_checkpoint

        options["distil_from"] = resolve_checkpoint(options["distil_from"])
    config = sweep_config(source, args.uptrain, seed=args.seed, name=args.run_id or "", **options)
    config.validate(flags=True)
    print("preparing corpus and tokenizer ...", file=sys.stderr)
    with contextlib.redirect_stdout(sys.stderr):  # in the foreground the training's log: stdout holds the curves
        info = start_sweep(config, plan, args.runs_dir, args.run_id, foreground=args.foreground, checked=True,
                           command="albert-lab " + shlex.join(sys.argv[1:]),
                           announce=lambda run: print(f"sweep {run.id}: {len(plan.members())} models, {args.uptrain:,} steps "
                                                      f"each; folder {run.path}", file=sys.stderr))
    if args.detach and not args.foreground:
        print(f"started in the background; follow with: albert-lab relax --show {info.id}"
              + (f" --runs-dir {shlex.quote(str(args.runs_dir))}" if args.runs_dir else ""))
        return 0
    return follow(args, info.path)


def existing(args: argparse.Namespace) -> int:
    """--resume or --show a sweep."""
    from albert_lab.paths import runs_dir
    from albert_lab.training.jobs import resume_run
    from albert_lab.training.sweep import read_sweep

    given = args.resume or args.show
    folder = Path(given)
    if not folder.exists() and len(folder.parts) == 1:  # an id, as `albert-lab runs` lists them
        folder = (args.runs_dir or runs_dir()) / given
    read_sweep(folder)  # a sweep, or says what it is
    if args.show:
        return show(args, folder)
    with contextlib.redirect_stdout(sys.stderr):
        resume_run(folder, foreground=args.foreground)
    if args.detach and not args.foreground:
        print(f"resumed in the background; follow with: albert-lab relax --show {folder.name}")
        return 0
    return follow(args, folder)


def follow(args: argparse.Namespace, folder: Path) -> int:
    """Progress on stderr until the sweep ends (Ctrl-C leaves it running), then its curves."""
    from albert_lab.training.runs import read_run

    said = None
    try:
        while (info := read_run(folder)).active:
            words = f"[{info.step / max(1, info.total_steps or 1):4.0%}] {info.message or info.status}"
            if words != said:
                print(words, file=sys.stderr, flush=True)
                said = words
            time.sleep(1.0)
    except KeyboardInterrupt:
        print(f"\nthe sweep continues in the background; cancel with: albert-lab runs --cancel {folder.name}",
              file=sys.stderr)
        return 0
    return show(args, folder)


def show(args: argparse.Namespace, folder: Path) -> int:
    """The sweep's status and its curves: before training, and after (once measured)."""
    from albert_lab.analysis.relaxation import uptrain_report
    from albert_lab.training.sweep import read_sweep

    result = read_sweep(folder)
    run = result.run
    steps = run.config.get("max_steps")
    tokens = f", {result.tokens:,} tokens each" if result.tokens else ""
    lines = [f"sweep {run.id}: {run.status}" + (f" ({run.message})" if run.message and run.status != "succeeded" else "")]
    for title, frame in (("before training: the starting models", result.before),
                         (f"after {steps:,} steps{tokens}", result.after)):
        if frame is not None:
            lines += ["", title, frame[SHOWN].to_string(index=False, float_format=lambda v: f"{v:.4g}")]
    emit(args, {"run": run.id, "status": run.status, "message": run.message, "steps": steps, "tokens": result.tokens,
                "train_seconds": result.seconds, "plan": result.plan.to_dict(),
                "before": None if result.before is None else result.before.to_dict(orient="records"),
                "after": None if result.after is None else result.after.to_dict(orient="records")}, "\n".join(lines))
    if not args.json and result.before is not None and result.after is not None:
        for remark in uptrain_report(result.before, result.after).remarks:
            print(remark, file=sys.stderr)
    return 0 if run.status in ("succeeded", "cancelled", "queued", "running") else 1
