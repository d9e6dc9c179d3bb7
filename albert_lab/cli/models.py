"""Commands about models: a spec's exact counts (params), the presets, the checkpoints
found here, and one checkpoint's model card."""

from __future__ import annotations

import argparse

from albert_lab.cli.arguments import add_casing_arguments, add_device_argument, add_spec_arguments, spec_from_args, whole_number
from albert_lab.cli.common import command, emit, table
from albert_lab.errors import AlbertLabError


def _params_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p)
    p.add_argument("--rank-attention", type=whole_number, default=0, metavar="R", help="relaxed sharing: each application's "
                   "correction rank on Q, K, V and the attention output (albert-lab relax; default 0, not relaxed)")
    p.add_argument("--rank-ffn", type=whole_number, default=0, metavar="R", help="relaxed sharing: the FFN matrices' correction rank")
    p.add_argument("--seq-len", type=whole_number, default=512, help="sequence length for attention FLOPs (default 512)")
    p.add_argument("--json", action="store_true")


@command("params", "exact parameter and FLOP counts of a spec (no weights allocated)")(_params_arguments)
def cmd_params(args: argparse.Namespace) -> int:
    from albert_lab.params import count, human
    from albert_lab.spec import derived_ffn, derived_heads

    if args.seq_len <= 0:
        raise AlbertLabError(f"--seq-len must be positive, got {args.seq_len}")
    spec = spec_from_args(args)
    if args.rank_attention or args.rank_ffn:
        spec = spec.replace(rank_attention=args.rank_attention, rank_ffn=args.rank_ffn)
    report = count(spec, seq_len=args.seq_len)
    spec = report.spec
    heads = f"{spec.num_heads} head{'s' if spec.num_heads != 1 else ''}"
    rule = "H // 64" if spec.num_heads == max(1, spec.hidden_size // 64) else "the divisor of H nearest H/64"
    moved = {"heads": spec.num_heads == derived_heads(spec.hidden_size), "ffn": spec.ffn_size == derived_ffn(spec.hidden_size)}
    derived = [words for flag, words in (("heads", f"{heads} ({rule})"), ("ffn", f"FFN {spec.ffn_size:,} (4H)"))
               if args.hidden is not None and getattr(args, flag) is None and moved[flag]]  # --hidden moved them: say so
    rows = [(c.name, c.unique, c.applied, human(c.flops_per_token)) for c in report.components]
    text = "\n".join([
        f"{spec.label}; {heads}, FFN {spec.ffn_size:,}"
        + (f"\n{' and '.join(derived)}: derived from --hidden; give --heads or --ffn to set them" if derived else ""),
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


@command("checkpoints", "checkpoints shipped in checkpoints/, finished runs and conversions in runs/ (another runs folder: set "
         "ALBERT_LAB_RUNS, for every command)")(_json_only)
def cmd_checkpoints(args: argparse.Namespace) -> int:
    from albert_lab.checkpoint.discover import discover_checkpoints  # file reads only: no torch, no transformers

    found = discover_checkpoints()
    rows = [(c.name, c.origin, c.label, str(c.path)) for c in found]
    emit(args, [c.to_dict() for c in found], table(rows, ["name", "origin", "spec", "path"]) if rows else "no checkpoints found")
    return 0


def _card_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoint", help="checkpoint folder, name from `albert-lab checkpoints`, or hub id")
    p.add_argument("--allow-pickle", action="store_true", help="load pickled weights (only if you trust the source)")
    add_device_argument(p)
    add_casing_arguments(p)
    p.add_argument("--json", action="store_true")


@command("card", "model card of a checkpoint: spec, provenance, parameters, head status")(_card_arguments)
def cmd_card(args: argparse.Namespace) -> int:
    from albert_lab.card import model_card
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(resolve_checkpoint(args.checkpoint), device=args.device, allow_pickle=args.allow_pickle,
                             casing=args.casing)
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
    if relaxed := card["relaxation"]:
        lines.append(f"relaxation: corrections of rank {relaxed['rank_attention']} (attention) and {relaxed['rank_ffn']} (FFN) "
                     f"add {relaxed['parameters_added']:,} parameters to the ALBERT and keep {relaxed['energy_kept']:.1%} of "
                     "what sharing took from the source's layers")
    for key, value in card["provenance"].items():
        if key != "train_config":
            lines.append(f"{key}: {value}")
    if card["metrics"]:
        from albert_lab.card import metric_lines

        lines.append("held-out: " + ", ".join(f"{k} {text}" for k, text in metric_lines(card["metrics"])))
    emit(args, card, "\n".join(lines))
    return 0
