"""The checkpoints this project ships: loadable, honest about heads and origin, their published numbers evaluate's."""

import importlib.util
import json

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, run_cli

from albert_lab.analysis.intrinsic import pair_probabilities
from albert_lab.checkpoint.discover import discover_checkpoints
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.data.corpus import load_builtin
from albert_lab.data.heldout import build_eval_pairs

SHIPPED = ROOT / "checkpoints"
NAMES = ["albert-sop", "albert-nsp", "albert-none", "bert-nsp", "bert-sop-minilm", "albert-sop-minilm", "albert-nsp-minilm"]


@pytest.fixture
def real_checkpoints(monkeypatch):
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(SHIPPED))


def test_all_seven_are_listed_and_load(real_checkpoints):
    assert [c.name for c in discover_checkpoints() if c.origin == "shipped"] == sorted(NAMES)
    listed = json.loads(run_cli("checkpoints", "--json", env={"ALBERT_LAB_CHECKPOINTS": str(SHIPPED)}).stdout)
    assert sorted(c["name"] for c in listed) == sorted(NAMES)
    for name in NAMES:
        bundle = load_checkpoint(SHIPPED / name, device="cpu")
        assert bundle.heads.mlm == "trained"
        assert bundle.heads.pair == ("untrained" if name == "albert-none" else "trained")
        provenance = bundle.card["provenance"]
        for key in ("command", "seed", "corpus", "steps", "tokens", "wall_time_s", "machine", "corpus_credit"):
            assert provenance[key] not in (None, ""), (name, key)
        assert "CC BY-SA 4.0" in provenance["corpus_credit"]
        if "first_stage" in provenance:  # an albertized MiniLM's first stage, continued distilling bert-sop-minilm
            first = provenance["first_stage"]
            assert first["init_from"]["conversion"]["init"] == "average" and "--distil-from minilm " in first["command"]
            teacher = provenance["distilled_from"]  # the order-knowing teacher passes its pair signal only to SOP
            sop = bundle.spec.objective == "sop"
            assert teacher["name"] == "bert-sop-minilm" and teacher["pair_distribution_matched"] == sop
            assert ("--distil-pair" in provenance["command"]) == sop and f"--objective {bundle.spec.objective} " in provenance["command"]
            start = f"runs/{name}-{round(first['tokens'] / 1e6)}m"  # the first stage as train_checkpoints.sh exports it
            assert provenance["init_from"]["name"] == name and f"--init-from {start} " in provenance["command"]
            assert provenance["tokens_total"] == first["tokens"] + provenance["tokens"] and "Apache-2.0" in provenance["source_model"]
            assert bundle.spec.label.startswith("ALBERT L=6 H=384 E=128 all-shared") and provenance["corpus"] == "long-mix"
        elif "distilled_from" in provenance:  # MiniLM made an ALBERT, then uptrained while distilling MiniLM
            conversion = provenance["init_from"]["conversion"]
            assert (conversion["embedding_size"], conversion["sharing"], conversion["init"]) == (128, "all", "average")
            assert provenance["distilled_from"]["name"] == "all-MiniLM-L6-v2" and "Apache-2.0" in provenance["source_model"]
            assert bundle.spec.label.startswith("ALBERT L=6 H=384 E=128 all-shared") and provenance["corpus"] == "long-mix"
            assert f"--steps {provenance['steps']} " in provenance["command"] and "--distil-from minilm " in provenance["command"]
        elif "--init-from" in provenance["command"]:  # uptrained from a real pretrained encoder, credited as such
            assert provenance["init_from"]["name"] == "all-MiniLM-L6-v2" and "Apache-2.0" in provenance["source_model"]
            assert provenance["corpus"] == "long-mix" and "H100" in provenance["machine"]
            assert "--steps 1800 " in provenance["command"] and "1,790" in provenance["stopped"]  # its time budget ended it
        else:
            assert f"--steps {provenance['steps']} " in provenance["command"]  # trained to the end
            assert f"--corpus {provenance['corpus']} " in provenance["command"]
        assert not list((SHIPPED / name).glob("trainer_state.*"))  # no optimizer state shipped


def test_published_numbers_are_the_evaluate_output():
    export = _export_script()
    results = pd.DataFrame(json.loads((SHIPPED / "results.json").read_text()))
    assert sorted(results.checkpoint.unique()) == sorted(NAMES)
    assert {"in", "out"} <= set(results.domain) and "all" in set(results.source)
    commands = set()
    for name, group in results[results.source == "all"].groupby("checkpoint"):
        card = json.loads((SHIPPED / name / "albert_lab.json").read_text())
        commands.add(card["metrics_source"])
        for row in group.itertuples():
            key = ("" if row.domain == "in" else "ood_") + row.metric
            if row.note:
                assert key not in card["metrics"]  # an untrained head has no number
                continue
            published = {"accuracy": row.accuracy, "low": row.low, "high": row.high, "n": row.n}
            assert card["metrics"][key] == pytest.approx(published, abs=1e-9)  # JSON keeps 10 digits
            assert row.low <= row.accuracy <= row.high and row.n > 0
    (command,) = commands
    # the full evaluation (a run's own final evaluation may score a sample): every held-out pair, no --limit
    assert command.startswith("albert-lab evaluate ") and "--limit" not in command
    assert command.startswith("albert-lab evaluate")
    page = (ROOT / "docs" / "results.md").read_text()
    published = page.split(export.START, 1)[1].split(export.END, 1)[0].strip()
    assert published == export.table(results, command).strip()
    readme = (ROOT / "README.md").read_text()
    assert readme.split(export.SUMMARY_START, 1)[1].split(export.SUMMARY_END, 1)[0].strip() == export.summary(results).strip()


def _export_script():
    spec = importlib.util.spec_from_file_location("export_checkpoints", ROOT / "scripts" / "export_checkpoints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sop_model_prefers_the_original_order():
    bundle = load_checkpoint(SHIPPED / "albert-sop", device="cpu")
    pairs = build_eval_pairs(load_builtin().heldout)
    lead = pairs[(pairs.task == "sop") & pairs.natural & ~pairs.interior & (pairs.label == 0)].head(60)
    forward = pair_probabilities(bundle.model, bundle.tokenizer, list(lead.a), list(lead.b))
    backward = pair_probabilities(bundle.model, bundle.tokenizer, list(lead.b), list(lead.a))
    assert np.mean(forward > backward) > 0.8  # P(original order) is higher for the true order


def test_every_card_command_can_be_run_again():
    """scripts/check_rerun.py re-runs a card's command: it failed on every card whose command
    carries a '# ...' note with an apostrophe ('No closing quotation'), and passed "$MINILM" on
    as a literal folder name."""
    spec = importlib.util.spec_from_file_location("check_rerun", ROOT / "scripts" / "check_rerun.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in NAMES:
        card = json.loads((SHIPPED / name / "albert_lab.json").read_text())
        args = module.rerun_command(card, name, f"rerun-{name}")
        assert args[1:4] == ["-m", "albert_lab", "train"] and args[-4:] == ["--name", f"{name}-rerun", "--run-id", f"rerun-{name}"]
        assert not [a for a in args[1:] if a.startswith(("#", "$", "/"))], (name, args)  # minilm: a name the CLI resolves
