"""The checkpoints this project ships: present, loadable, honest about their heads and
where they came from, and their published numbers are the evaluate output."""

import json

import numpy as np
import pytest
from conftest import ROOT, run_cli

from albert_lab.analysis.intrinsic import pair_probabilities
from albert_lab.checkpoints import discover_checkpoints, load_checkpoint
from albert_lab.data.corpus import load_builtin
from albert_lab.data.heldout import build_eval_pairs

SHIPPED = ROOT / "checkpoints"
NAMES = ["albert-sop", "albert-nsp", "albert-none", "bert-nsp"]


@pytest.fixture
def real_checkpoints(monkeypatch):
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(SHIPPED))


def test_all_four_are_listed_and_load(real_checkpoints):
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
        assert provenance["steps"] == 4000 and "CC BY-SA 4.0" in provenance["corpus_credit"]
        assert not list((SHIPPED / name).glob("trainer_state.*"))  # no optimizer state shipped


def test_published_numbers_are_the_evaluate_output():
    results = json.loads((SHIPPED / "results.json").read_text())
    assert [r["checkpoint"] for r in results] == NAMES
    for row in results:
        card = json.loads((SHIPPED / row["checkpoint"] / "albert_lab.json").read_text())
        assert card["metrics"]["sop_acc"] == row["sop_acc"] and card["metrics"]["mlm_acc"] == row["mlm_acc"]
        assert row["command"].startswith("albert-lab evaluate")
    readme = (ROOT / "README.md").read_text()
    for row in results:
        assert f"| {row['checkpoint']} | {row['trained_with'].upper()} | {row['mlm_acc']:.3f} |" in readme


def test_the_sop_model_prefers_the_original_order():
    bundle = load_checkpoint(SHIPPED / "albert-sop", device="cpu")
    pairs = build_eval_pairs(load_builtin().heldout)
    lead = pairs[(pairs.task == "sop") & pairs.natural & ~pairs.interior & (pairs.label == 0)].head(60)
    forward = pair_probabilities(bundle.model, bundle.tokenizer, list(lead.a), list(lead.b))
    backward = pair_probabilities(bundle.model, bundle.tokenizer, list(lead.b), list(lead.a))
    assert np.mean(forward > backward) > 0.8  # P(original order) is higher for the true order
