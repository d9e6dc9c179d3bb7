"""experiments/order_limit.py: the curves it keeps of a run, and the committed experiments/order-limit.json."""

from __future__ import annotations

import importlib.util
import json

import pytest
from conftest import ROOT


@pytest.fixture(scope="module")
def order_limit():
    spec = importlib.util.spec_from_file_location("order_limit", ROOT / "experiments" / "order_limit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_curve_averages_the_last_window_of_steps_and_places_evaluations_by_tokens(tmp_path, order_limit):
    run = tmp_path / "run"
    (run / "checkpoint").mkdir(parents=True)
    rows = [{"kind": "train", "step": s, "tokens": 100 * s, "pair_acc": 1.0 if s > 20 else 0.0} for s in range(10, 50, 10)]
    rows += [{"kind": "eval", "step": 25, "eval_sop_acc": 0.7, "eval_sop_interior_acc": 0.6, "eval_mlm_acc": 0.3,
              "eval_sop_interior_pairs": 469},
             {"kind": "eval", "step": 40, "final": True, "eval_sop_acc": 0.72, "eval_sop_interior_acc": 0.61,
              "eval_mlm_acc": 0.31, "eval_sop_interior_pairs": 2376}]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (run / "checkpoint" / "albert_lab.json").write_text(json.dumps({"provenance": {
        "command": "albert-lab train --init-from nowhere", "init_from": {"name": "not-shipped"}}}))
    curve = order_limit.curve(run, window=20)
    # steps 20 (0, 0) -> 0; 30 (0, 1) -> 0.5; 40 (1, 1) -> 1; from the first full window on, every second
    assert [(r["step"], r["pair_acc"]) for r in curve["train"]] == [(20, 0.0), (40, 1.0)]
    assert [(e["tokens"], e["final"], e["pairs"]) for e in curve["eval"]] == [(2500, False, 469), (4000, True, 2376)]
    assert curve["start_tokens"] == 0 and curve["command"].startswith("albert-lab train")


def test_committed_numbers_hold_what_the_results_page_says(order_limit):
    data = json.loads((order_limit.DOCS / "order-limit.json").read_text())
    memo = {m["checkpoint"]: m for m in data["memorisation"]}
    shipped, continued = memo["bert-sop-minilm"], memo["teacher-pw10"]
    for m in memo.values():
        assert m["train"]["n"] == m["held-out"]["n"] == order_limit.PAIRS
        assert m["train"]["low"] <= m["train"]["accuracy"] <= m["train"]["high"]
    # the shipped teacher scores training and held-out documents alike; continued, it memorised
    assert abs(shipped["train"]["accuracy"] - shipped["held-out"]["accuracy"]) < 0.03
    assert continued["train"]["low"] > continued["held-out"]["high"]
    teacher = next(c for c in data["curves"] if c["run"] == "teacher-pw10")
    assert "--pair-weight 10" in teacher["command"] and teacher["start_tokens"] == shipped["tokens"]
    assert teacher["train"][-1]["pair_acc"] > 0.9 > max(e["sop"] for e in teacher["eval"])
