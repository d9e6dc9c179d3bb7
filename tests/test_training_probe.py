"""fit-head: a pair head fitted on a frozen encoder (a probe), saved beside it and used by scoring."""

import json

import pytest
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
