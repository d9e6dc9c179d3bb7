"""fit-head: a pair head fitted on a frozen encoder (a probe), saved beside it and used by scoring."""

import json

import pytest
import torch
from conftest import one_line_error, run_cli


def test_fit_head_on_hub_albert_writes_a_probe(shipped, tmp_path):
    out = tmp_path / "hub-albert-sop-probe"
    args = ("fit-head", "--checkpoint", str(shipped / "hub-albert"), "--corpus", "wiki-vital[:600]", "--train-pairs", "64",
            "--heldout-pairs", "48", "--steps", "30", "--out", str(out), "--json")
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["task"] == "sop" and summary["pooler"] == "fitted"  # AlbertForMaskedLM has no pooler
    assert summary["heldout_pairs"] == 48 and 0 <= summary["low"] <= summary["accuracy"] <= summary["high"] <= 1
    card = json.loads((out / "albert_lab.json").read_text())
    assert card["probe"]["kind"] == "probe on a frozen encoder" and card["heads"] == {"mlm": "present", "pair": "probe"}
    assert card["probe"]["pairs"] == {"train": 64, "held_out": 48} and card["probe"]["steps"] == 30
    assert card["provenance"]["origin"].startswith("probe on a frozen encoder") and "trained" not in json.dumps(card["heads"])
    shown = run_cli("card", str(out))
    assert "pair (SOP) probe" in shown.stdout and "pair head: probe on a frozen encoder (SOP, 64 training pairs" in shown.stdout
    assert "exists" in one_line_error(run_cli(*args), alone=True)  # never overwrites


def test_fit_head_probe_is_deterministic_and_used_by_scoring(shipped, tmp_path):
    from albert_lab.analysis.pairs import pairs_frame, score_pairs
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.training.probe import fit_probe, save_probe

    results = []
    for _ in range(2):
        bundle = load_checkpoint(shipped / "hub-albert", device="cpu")
        results.append(fit_probe(bundle, corpus="wiki-vital[:600]", train_pairs=40, heldout_pairs=40, steps=10, seed=1))
    assert results[0] == results[1]
    folder = save_probe(bundle, results[1], tmp_path / "probe")
    reloaded = load_checkpoint(folder, device="cpu")
    assert reloaded.heads.pair == "probe" and reloaded.heads.pair_usable and "probe on a frozen encoder" in reloaded.heads.warning
    scores = score_pairs(reloaded, pairs_frame(["The sun rose."], ["Birds sang."]))
    assert scores.p_ab.notna().all() and (scores.head_status == "probe").all()


def test_fit_head_refuses_a_trained_head_of_the_same_kind(shipped):
    line = one_line_error(run_cli("fit-head", "--checkpoint", str(shipped / "albert-sop"), "--corpus", "wiki-vital[:600]"), alone=True)
    assert "SOP head is trained" in line and "--replace" in line


@pytest.mark.parametrize("flags, words", [
    (("--seq-len", "3"), "--seq-len must be at least 8, got 3"),  # fitted a probe on [CLS][SEP][SEP] alone
    (("--seq-len", "-5"), "--seq-len must be at least 8, got -5"),  # an IndexError traceback
    (("--out", "/proc/fh"), "--out /proc/fh cannot be made"),  # a FileNotFoundError after the fit
])
def test_fit_head_refuses_bad_flags_before_the_work(minilm, flags, words):
    one_line_error(run_cli("fit-head", "--checkpoint", str(minilm), "--task", "sop", *flags), words)


def test_fit_head_on_minilm_keeps_the_mlm_head_missing(minilm, tmp_path):
    out = tmp_path / "minilm-nsp"
    result = run_cli("fit-head", "--checkpoint", str(minilm), "--corpus", "wiki-vital[:600]", "--train-pairs", "24",
                     "--heldout-pairs", "16", "--steps", "5", "--out", str(out))
    assert result.returncode == 0, result.stderr
    card = json.loads(run_cli("card", str(out), "--json").stdout)
    assert card["heads"] == {"mlm": "missing", "pair": "probe", "pair_kind": "nsp"}  # no random MLM weights written
    assert card["probe"]["pooler"] == "checkpoint" and "MLM head weights are missing" in card["warning"]


def test_fitting_a_probe_leaves_the_encoders_model_as_it_was(shipped, tmp_path):
    """fit_probe wrote the fitted head and pooler into bundle.model: in the app a cached model that
    the other pages and visitors share, which then answered with this visitor's probe."""
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.training.probe import fit_probe, save_probe

    bundle = load_checkpoint(shipped / "hub-albert", device="cpu")
    before = {k: v.clone() for k, v in bundle.model.state_dict().items()}
    result = fit_probe(bundle, corpus="wiki-vital[:600]", train_pairs=40, heldout_pairs=40, steps=10, seed=1)
    after = bundle.model.state_dict()
    assert [k for k in before if not torch.equal(before[k], after[k])] == []
    assert sorted(result.weights) == ["albert.pooler.bias", "albert.pooler.weight", "sop_classifier.classifier.bias",
                                      "sop_classifier.classifier.weight"]  # the pooler was missing: fitted too
    saved = load_checkpoint(save_probe(bundle, result, tmp_path / "probe"), device="cpu").model.state_dict()
    assert all(torch.equal(saved[k], v) for k, v in result.weights.items())  # the folder has the probe, the model not
    assert torch.equal(saved["albert.embeddings.word_embeddings.weight"], before["albert.embeddings.word_embeddings.weight"])


def test_an_identical_probe_is_reused_and_a_changed_one_fitted_afresh(shipped, tmp_path):
    """Each 'Fit the probe' wrote a new runs/probes/NAME-TASK-probe-N folder, the same probe again and again."""
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.errors import AlbertLabError
    from albert_lab.training.probe import probe_into

    root, source, loads = tmp_path / "runs" / "probes", str(shipped / "hub-albert"), []

    def load():
        loads.append(1)
        return load_checkpoint(source, device="cpu")

    def fit(steps: int, quota: int | None = None):
        return probe_into(root, "hub-albert-sop-probe", source, load, "sop", "wiki-vital[:600]", train_pairs=40,
                          heldout_pairs=40, steps=steps, seed=1, quota=quota)

    first = fit(10)
    assert first == (root / "hub-albert-sop-probe", False)
    assert fit(10) == (first[0], True) and fit(10, quota=1) == (first[0], True)  # reusing costs no disk: never refused
    assert len(loads) == 1  # a reused probe loads no model
    options = json.loads((first[0] / "albert_lab.json").read_text())["probe"]["options"]
    assert options["steps"] == 10 and options["task"] == "sop" and options["dtype"] == "float32"
    assert options["source"].startswith("hub-albert (a folder outside the project") and str(tmp_path) not in options["source"]
    assert fit(11) == (root / "hub-albert-sop-probe-2", False)  # another step count: another probe
    with pytest.raises(AlbertLabError, match=r"disk quota: .* this probe needs"):
        fit(12, quota=1)
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["hub-albert-sop-probe", "hub-albert-sop-probe-2"]
    assert len(loads) == 2  # refused before the model was loaded
