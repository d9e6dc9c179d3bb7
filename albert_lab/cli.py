"""`albert-lab` (also `python -m albert_lab`): the command line.

Every command prints a readable table, or one JSON document with --json. Errors a
user can cause end in one line on stderr and exit status 2, never a traceback.
Heavy imports (torch, transformers) happen inside the commands that need them, so
`albert-lab params` answers at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import albert_lab.cli_analysis
import albert_lab.cli_reapply
import albert_lab.cli_train  # noqa: F401  (registers its commands)
from albert_lab.cli_common import COMMANDS, add_device_argument, add_spec_arguments, command, emit, spec_from_args, table
from albert_lab.errors import AlbertLabError


def _params_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p)
    p.add_argument("--seq-len", type=int, default=512, help="sequence length for attention FLOPs (default 512)")
    p.add_argument("--json", action="store_true")


@command("params", "exact parameter and FLOP counts of a spec (no weights allocated)")(_params_arguments)
def cmd_params(args: argparse.Namespace) -> int:
    from albert_lab.params import count, human

    if args.seq_len <= 0:
        raise AlbertLabError(f"--seq-len must be positive, got {args.seq_len}")
    report = count(spec_from_args(args), seq_len=args.seq_len)
    rows = [(c.name, c.unique, c.applied, human(c.flops_per_token)) for c in report.components]
    text = "\n".join([
        report.spec.label,
        table(rows, ["component", "unique", "applied", "FLOPs/token"]),
        f"total (encoder incl. pooler, the paper's count): {report.total:,} ({human(report.total)})",
        f"with pretraining heads: {report.total_with_heads:,}   applied: {report.applied:,}",
        f"forward FLOPs/token at seq len {report.seq_len}: {human(report.flops_per_token)} "
        f"(+ {human(report.mlm_flops_per_prediction)} per MLM prediction)",
    ])
    emit(args, report.to_dict(), text)
    return 0


def _json_only(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")


@command("presets", "the paper's Table 1 configurations and the lab presets")(_json_only)
def cmd_presets(args: argparse.Namespace) -> int:
    from albert_lab.params import count, human
    from albert_lab.spec import PRESET_NOTES, PRESETS

    payload = {name: {"spec": s.to_dict(), "total": count(s).total, "note": PRESET_NOTES.get(name, "")} for name, s in PRESETS.items()}
    rows = [(n, s.label, human(payload[n]["total"]), payload[n]["note"]) for n, s in PRESETS.items()]
    emit(args, payload, table(rows, ["preset", "spec", "params", "note"]))
    return 0


@command("checkpoints", "checkpoints shipped in checkpoints/ and finished runs in runs/")(_json_only)
def cmd_checkpoints(args: argparse.Namespace) -> int:
    from albert_lab.catalog import discover_checkpoints  # file reads only: no torch, no transformers

    found = discover_checkpoints()
    rows = [(c.name, c.origin, c.label, str(c.path)) for c in found]
    emit(args, [c.to_dict() for c in found], table(rows, ["name", "origin", "spec", "path"]) if rows else "no checkpoints found")
    return 0


def _card_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoint", help="checkpoint folder, name from `albert-lab checkpoints`, or hub id")
    p.add_argument("--allow-pickle", action="store_true", help="load pickled weights (only if you trust the source)")
    add_device_argument(p)
    p.add_argument("--json", action="store_true")


@command("card", "model card of a checkpoint: spec, provenance, parameters, head status")(_card_arguments)
def cmd_card(args: argparse.Namespace) -> int:
    from albert_lab.card import model_card, resolve_checkpoint
    from albert_lab.checkpoints import load_checkpoint

    bundle = load_checkpoint(resolve_checkpoint(args.checkpoint), device=args.device, allow_pickle=args.allow_pickle)
    card = model_card(bundle)
    lines = [f"{card['name']}: {card['spec_label']}", f"source: {card['source']}",
             f"parameters: {card['params']['total']:,} (encoder incl. pooler), {card['params']['total_with_heads']:,} with heads",
             f"heads: MLM {card['heads']['mlm']}, pair ({card['heads']['pair_kind'].upper()}) {card['heads']['pair']}"]
    if card["warning"]:
        lines.append(f"warning: {card['warning']}")
    if probe := card["probe"]:
        low, high = probe["ci95"]
        lines.append(f"pair head: {probe['kind']} ({probe['task'].upper()}, {probe['pairs']['train']:,} training pairs, "
                     f"{probe['steps']} steps; held-out accuracy {probe['held_out_accuracy']:.3f} [{low:.3f}, {high:.3f}], "
                     f"n={probe['pairs']['held_out']:,})")
    for key, value in card["provenance"].items():
        if key != "train_config":
            lines.append(f"{key}: {value}")
    if card["metrics"]:
        from albert_lab.card import metric_lines

        lines.append("held-out: " + ", ".join(f"{k} {text}" for k, text in metric_lines(card["metrics"])))
    emit(args, card, "\n".join(lines))
    return 0


def _app_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=8501)
    p.epilog = "Other options go to `streamlit run`, e.g. albert-lab app --server.headless true"


def _server_port(port: int, streamlit_args: list[str]) -> tuple[int, list[str]]:
    """The port the server will listen on: `--server.port N` (or `=N`) passed through to
    streamlit wins over --port, as it would in `streamlit run`; the rest of the options."""
    rest, i = [], 0
    while i < len(streamlit_args):
        arg = streamlit_args[i]
        if arg == "--server.port" and i + 1 < len(streamlit_args):
            value, i = streamlit_args[i + 1], i + 2
        elif arg.startswith("--server.port="):
            value, i = arg.split("=", 1)[1], i + 1
        else:
            rest.append(arg)
            i += 1
            continue
        try:
            port = int(value)
        except ValueError:
            raise AlbertLabError(f"--server.port: {value!r} is not a port number") from None
    return port, rest


@command("app", "start the workbench in the browser (streamlit run app/main.py)")(_app_arguments)
def cmd_app(args: argparse.Namespace) -> int:
    import os

    from albert_lab.paths import PROJECT_ROOT

    entry = PROJECT_ROOT / "app" / "main.py"
    if not entry.is_file():
        raise AlbertLabError(f"{entry} not found: run from a checkout of ALBERT Lab")
    port, rest = _server_port(args.port, list(getattr(args, "streamlit_args", [])))
    print(f"ALBERT Lab: http://localhost:{port}", file=sys.stderr)
    # exec: this process becomes the server, so signals (Ctrl-C, SIGTERM) reach it; app.serve
    # is `streamlit run` with the model code importing in the background as the server starts
    os.chdir(PROJECT_ROOT)
    command = [sys.executable, "-m", "app.serve", "run", str(entry), "--server.port", str(port), *rest]
    os.execve(sys.executable, command, {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    return 0  # not reached


# ---- entry point ---------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="albert-lab", description="ALBERT Lab: understand ALBERT-style language models.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (add, handler, help) in COMMANDS.items():
        p = sub.add_parser(name, help=help.replace("%", "%%"), description=help)  # argparse %-formats help
        add(p)
        p.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command != "app":
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "app":  # `albert-lab app --server.headless true`: options for streamlit run
        args.streamlit_args = unknown
    try:
        return args.handler(args)
    except AlbertLabError as err:
        print(f"albert-lab {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
