"""CLI commands for training runs: train, runs and fit-head (registered on import by albert_lab/cli/__init__.py)."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from albert_lab.cli.arguments import (
    add_checkpoint_arguments,
    add_option_arguments,
    add_spec_arguments,
    check_at_least,
    int_in,
    option_values,
    path_option,
    seed_option,
    spec_from_args,
    whole_number,
)
from albert_lab.cli.common import command, emit, metric_words, table
from albert_lab.cli.inputs import check_bf16, load_bundles
from albert_lab.cli.outputs import check_outputs
from albert_lab.errors import AlbertLabError
from albert_lab.limits import MAX_PROBE_PAIRS, MAX_PROBE_STEPS, MIN_SEQ_LEN
from albert_lab.training.config import OPTIONS_OF_CONFIG, TrainConfig
from albert_lab.training.options import SPEC_OPTIONS, UPTRAIN_SPEC


def _train_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p, default_preset="lab-tiny")
    add_option_arguments(p, OPTIONS_OF_CONFIG)  # the run's options, from the table (training/config.py)
    p.set_defaults(steps=None)  # the step budget's default applies unless --minutes is given (cmd_train)
    p.add_argument("--runs-dir", type=path_option, help="where run folders go (default runs/, or $ALBERT_LAB_RUNS; other commands "
                   "find a run's checkpoint, run:ID, only in that default)")
    p.add_argument("--run-id", help="run folder name (default: time stamp + name)")
    p.add_argument("--foreground", action="store_true", help="train in this process (also: under torchrun)")
    p.add_argument("--detach", action="store_true", help="start in the background and return at once")
    p.add_argument("--resume", type=path_option, metavar="RUN_DIR", help="continue a failed or cancelled run")


def _resume_folder(args: argparse.Namespace) -> Path:
    """The run folder --resume names (a path, or a run id in --runs-dir / runs/), after refusing
    the options a resumed run would ignore: it continues with the settings it started with."""
    from albert_lab.paths import runs_dir

    defaults = argparse.ArgumentParser()
    _train_arguments(defaults)
    unchanged = vars(defaults.parse_args([]))
    ignored = [name for name, value in vars(args).items() if name in unchanged and value != unchanged[name]
               and name not in ("resume", "foreground", "detach", "runs_dir")]
    if ignored:
        flags = ", ".join("--" + name.replace("_", "-") for name in ignored)
        raise AlbertLabError(f"--resume continues a run with the settings it started with; {flags} would not apply: "
                             "leave them out, or start a new run (--init-from its checkpoint) with them")
    folder = args.resume
    if not folder.exists() and len(folder.parts) == 1:  # a run id, as `albert-lab runs` lists them
        folder = (args.runs_dir or runs_dir()) / folder
    return folder


@command("train", "pretrain a model (MLM + SOP / NSP / none) as a background run")(_train_arguments)
def cmd_train(args: argparse.Namespace) -> int:
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.training.jobs import resume_run, start_run
    from albert_lab.training.runs import read_run

    if args.resume:
        args.resume = _resume_folder(args)
        resume_run(args.resume, foreground=args.foreground)
        if not args.foreground:
            return _follow(args.resume, args.detach)
        info = read_run(args.resume)
        return _report(info, info.status)
    # every path it reads checked (`~nouser`, loops, NUL) before a folder is made; the runs never inside a checkpoint
    check_outputs(args, files=(), folders=("runs_dir",))
    spec = init_spec(args) if args.init_from else spec_from_args(args, default_preset="lab-tiny")
    options = option_values(args, OPTIONS_OF_CONFIG)
    if args.minutes is not None and args.steps is None:
        options["max_steps"] = None  # a budget in minutes alone
    if args.distil_from:
        options["distil_from"] = resolve_checkpoint(args.distil_from)
    config = TrainConfig(**{**options, "spec": spec.to_dict(), "objective": args.objective or spec.objective,
                            "command": "albert-lab " + shlex.join(sys.argv[1:])})
    config.validate(flags=True)  # before any work, in flags ('--steps: must be at least 1'); start_run trusts it
    check_bf16(config.precision == "bf16", "auto", "--precision bf16")
    from albert_lab.training.distributed import DistContext

    dist = DistContext.from_env()
    if dist.world_size > 1:
        return _train_distributed(config, args, dist)
    print("preparing corpus and tokenizer ...", file=sys.stderr)
    info = start_run(config, args.runs_dir, args.run_id, foreground=args.foreground, announce=_announce, checked=True)
    return _report(info, info.status) if args.foreground else _follow(info.path, args.detach)


def _announce(run) -> None:
    print(f"run {run.id}: {run.raw.get('spec_label', '')}; folder {run.path}", file=sys.stderr)
    warnings = run.raw.get("warnings", [])
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if (more := run.raw.get("skipped_lines", 0) - len(warnings)) > 0:
        print(f"warning: ... and {more:,} more lines of the corpus skipped", file=sys.stderr)


def init_spec(args: argparse.Namespace):
    """The spec of a run that starts from a checkpoint: the checkpoint's, with --objective
    (default: the checkpoint's pair objective, else SOP) and --dropout applied."""
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.training.init import uptrain_spec

    shape = sorted(row.flag for row in SPEC_OPTIONS if row.name not in UPTRAIN_SPEC and getattr(args, row.dest, None) is not None)
    if shape or args.preset:
        raise AlbertLabError(f"--init-from keeps the checkpoint's architecture: drop {', '.join(shape or ['--preset'])}")
    folder, spec = uptrain_spec(Path(resolve_checkpoint(args.init_from)), args.objective, args.dropout)
    args.init_from = str(folder)
    return spec


def _train_distributed(config, args: argparse.Namespace, dist) -> int:
    """Under torchrun: rank 0 creates the run folder, every rank trains in-process."""
    from albert_lab.training.jobs import create_run
    from albert_lab.training.loop import train
    from albert_lab.training.runs import read_run

    if not args.run_id:
        raise AlbertLabError("under torchrun give --run-id so that every rank uses the same run folder")
    from albert_lab.runfolder import check_run_id

    root = (args.runs_dir or _default_runs()).resolve()
    run_dir = root / check_run_id(args.run_id)
    prepared = create_run(config, root, args.run_id, checked=True)[1] if dist.is_main else None
    dist.barrier()
    status = train(run_dir, config, prepared)
    return _report(read_run(run_dir), status) if dist.is_main else 0


def _default_runs() -> Path:
    from albert_lab.paths import runs_dir

    return runs_dir()


def _runs_option(run_dir: Path) -> str:
    """' --runs-dir X' where the run is not in the default runs folder (a hint without it
    finds no such run)."""
    parent = run_dir.resolve().parent
    return "" if parent == _default_runs().resolve() else f" --runs-dir {shlex.quote(str(parent))}"


def _follow(run_dir: Path, detach: bool) -> int:
    """Show a progress bar until the run ends; Ctrl-C leaves it running."""
    from albert_lab.training.runs import read_run, running_run

    if detach:
        print(f"started in the background; follow with: albert-lab runs --show {run_dir.name}{_runs_option(run_dir)}")
        return 0
    tty, shown, said_queued = sys.stderr.isatty(), None, False
    try:
        while True:
            info = read_run(run_dir)
            rows = info.metrics("train")
            if info.status == "queued" and not said_queued and (ahead := running_run(run_dir.parent)) is not None:
                print(f"queued: one run trains at a time in {run_dir.parent}; this one starts when {ahead.id} ends",
                      file=sys.stderr, flush=True)
                said_queued = True
            if rows and rows[-1]["step"] != shown:  # a new line only for a new step (a log got a copy a second)
                last, shown = rows[-1], rows[-1]["step"]
                total = info.total_steps or 0
                done = min(1.0, last["step"] / total) if total else min(1.0, last["elapsed_s"] / max(1.0, last["elapsed_s"] + last["eta_s"]))
                bar = "#" * int(30 * done) + "." * (30 - int(30 * done))
                print(f"{chr(13) if tty else ''}[{bar}] step {last['step']} loss {last['loss']:.3f} "
                      f"{last['tokens_per_s']:,.0f} tok/s eta {last['eta_s']:,.0f}s ", end="" if tty else "\n",
                      file=sys.stderr, flush=True)
            if not info.active:
                if tty and shown is not None:
                    print(file=sys.stderr)
                return _report(info, info.status)
            time.sleep(1.0)
    except KeyboardInterrupt:
        print(f"\nthe run continues in the background; cancel with: albert-lab runs --cancel {run_dir.name}"
              f"{_runs_option(run_dir)}", file=sys.stderr)
        return 0


def _report(info, status: str) -> int:
    evals = info.metrics("eval")
    line = f"run {info.id}: {status}"
    if evals:
        line += "; " + metric_words(evals[-1]).split(": ", 1)[1]  # 'held-out accuracy MLM 0.155, SOP 0.634, ...'
    if info.message:
        line += f"\n{info.message}"
    print(line)
    return 0 if status in ("succeeded", "cancelled") else 1


def _runs_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cancel", metavar="RUN_ID")
    p.add_argument("--show", metavar="RUN_ID", help="status and the last metrics of one run")
    p.add_argument("--runs-dir", type=path_option)
    p.add_argument("--json", action="store_true")


@command("runs", "list training runs; show or cancel one")(_runs_arguments)
def cmd_runs(args: argparse.Namespace) -> int:
    from albert_lab.paths import runs_dir
    from albert_lab.runfolder import RunFolder, check_run_id
    from albert_lab.training.jobs import cancel_run
    from albert_lab.training.runs import list_runs, read_run, running_run

    root = args.runs_dir or runs_dir()
    if args.cancel or args.show:
        path = root / check_run_id(args.cancel or args.show)
        if not RunFolder(path).is_run():
            raise AlbertLabError(f"no run {path.name!r} in {root}")
        info = cancel_run(path) if args.cancel else read_run(path)
        metrics = info.metrics()
        step = info.latest_step(metrics)
        if args.cancel:
            after = "it ends without training" if info.status == "queued" else "it saves its checkpoint and stops"
            state = f"{info.id}: cancel requested (it was {info.status} at step {step:,}); {after}"
        else:
            state = f"{info.id}: {info.status} at step {step:,}"
            if info.status == "queued":
                ahead = running_run(root)
                state += f"\nwaiting: one run trains at a time in {root}" + (f"; {ahead.id} is training" if ahead else "")
        emit(args, {"id": info.id, "status": info.status, "step": step, "message": info.message,
                    "cancel_requested": bool(args.cancel), "last_metrics": metrics[-1] if metrics else None},
             state + (f"\n{info.message}" if info.message else "") + (f"\nlast: {metric_words(metrics[-1])}" if metrics else ""))
        return 0
    if args.runs_dir and not root.is_dir():  # the default folder may not exist yet: no runs
        raise AlbertLabError(f"{root}: a file, not a runs folder" if root.exists() else
                             f"{root}: no such folder (runs are made there by `albert-lab train --runs-dir {root}`)")
    runs = list_runs(root)
    rows = [(r.id, r.status, r.step, r.raw.get("spec_label", ""), r.config.get("objective", "")) for r in runs]
    emit(args, [{"id": r.id, "status": r.status, "step": r.step, "message": r.message} for r in runs],
         table(rows, ["run", "status", "step", "spec", "objective"]) if rows else f"no runs in {root}")
    return 0


def _fit_head_arguments(p: argparse.ArgumentParser) -> None:
    add_checkpoint_arguments(p, many=False)
    p.add_argument("--task", choices=["sop", "nsp"], help="the head to fit (default: the checkpoint's pair head kind)")
    p.add_argument("--out", type=path_option, help="new checkpoint folder (default: checkpoints/NAME-TASK-probe)")
    p.add_argument("--corpus", default="long-mix", help="training pairs from its training documents, scored on its held-out ones")
    p.add_argument("--train-pairs", type=int_in(1, MAX_PROBE_PAIRS), default=2000, help=f"1..{MAX_PROBE_PAIRS:,}")
    p.add_argument("--heldout-pairs", type=int_in(1, MAX_PROBE_PAIRS), default=1000, help=f"1..{MAX_PROBE_PAIRS:,}")
    p.add_argument("--steps", type=int_in(1, MAX_PROBE_STEPS), default=300,
                   help=f"full-batch optimizer steps on the cached features, 1..{MAX_PROBE_STEPS:,}")
    p.add_argument("--seed", type=seed_option(), default=0)
    p.add_argument("--seq-len", type=whole_number, default=128)
    p.add_argument("--replace", action="store_true", help="also fit in place of a trained head of the same kind")


@command("fit-head", "fit a missing or untrained SOP / NSP head as a probe on the frozen encoder")(_fit_head_arguments)
def cmd_fit_head(args: argparse.Namespace) -> int:
    from albert_lab.checkpoint.store import check_new_folder
    from albert_lab.paths import checkpoints_dir
    from albert_lab.training.probe import PROBE, check_probe_allowed, fit_probe, probe_options, save_probe

    check_at_least(args, seq_len=MIN_SEQ_LEN)  # --seq-len 3 fitted a probe on [CLS][SEP][SEP] alone
    check_outputs(args, files=(), folders=("out",))  # never inside the checkpoint it reads
    bundle = load_bundles(args, [args.checkpoint])[0]
    task = args.task or bundle.heads.pair_kind
    check_probe_allowed(bundle, task, args.replace)
    out = check_new_folder(args.out or checkpoints_dir() / f"{bundle.name.replace('/', '-')}-{task}-probe")
    log = lambda line: print(line, file=sys.stderr)
    result = fit_probe(bundle, task, args.corpus, args.train_pairs, args.heldout_pairs, args.steps, seed=args.seed,
                       max_len=args.seq_len, log=log)
    options = probe_options(bundle.source, task, args.corpus, args.train_pairs, args.heldout_pairs, args.steps,
                            seed=args.seed, max_len=args.seq_len, dtype=args.dtype)
    folder = save_probe(bundle, result, out, options)
    emit(args, {"folder": str(folder), **result.facts()},
         f"{task.upper()} {PROBE} of {bundle.name}: held-out accuracy {result.accuracy:.3f} "
         f"[{result.low:.3f}, {result.high:.3f}] (95% Wilson), {result.hits}/{result.heldout_pairs} held-out pairs; "
         f"fitted on {result.train_pairs:,} training pairs, {result.steps} steps, pooler {result.pooler}\nwrote {folder}")
    return 0
