"""Training's Compare runs as TensorBoard users read it (AppTest): smoothing over the faint raw line,
step, wall time or tokens on x, a panel per metric, a colour per run in every panel, a log scale,
the runs filtered, all of it restored from a link."""

import base64
import json

import numpy as np
import pytest
from conftest import link_of, opened_by_link, start
from streamlit.testing.v1 import AppTest

from albert_lab.training.curves import smooth

RUNS = {"20261122-000000-sop-lr1-1": ("sop-lr1", "sop", 0.0), "20261122-000001-nsp-lr1-2": ("nsp-lr1", "nsp", 0.5),
        "20261122-000002-sop-lr2-3": ("sop-lr2", "sop", 1.0)}
LOSS = [9.0, 7.0, 8.0, 5.0]  # a noisy fall, so smoothing shows


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """Three finished runs of four logged steps each, a minute apart, the first logged 30 s into training."""
    for run_id, (name, objective, offset) in RUNS.items():
        run = tmp_path / "runs" / run_id
        run.mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({
            "id": run_id, "status": "succeeded", "created": 1.0, "pid": 1, "step": 40, "total_steps": 40,
            "config": {"objective": objective, "name": name, "max_steps": 40}, "spec_label": "ALBERT tiny", "message": ""}))
        (run / "metrics.jsonl").write_text("".join(json.dumps(
            {"kind": "train", "step": 10 * i, "loss": loss + offset, "mlm_loss": loss, "pair_loss": 0.69, "mlm_acc": 0.1 * i,
             "pair_acc": 0.5, "tokens": 1000 * i, "tokens_per_s": 50.0, "elapsed_s": 30.0 + 60 * (i - 1),
             "time": 5000.0 + 60 * i}) + "\n" for i, loss in enumerate(LOSS, 1)))
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))


def values(array) -> list[float]:
    """A trace's numbers as plotly writes them: a list, or a typed array in base64."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def compared(at: AppTest) -> dict:
    assert not at.exception, [e.value for e in at.exception]
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "by run" in c.proto.spec)


def test_a_link_restores_every_control_and_draws_raw_and_smoothed_per_run_and_panel(runs):
    picked = ["20261122-000000-sop-lr1-1", "20261122-000001-nsp-lr1-2"]
    link = {"runs": ",".join(picked), "metric": "loss,mlm_acc", "tr_compare_x": "wall time", "tr_compare_smooth": "0.5",
            "tr_compare_log": "True", "tr_compare_filter": "lr1"}
    at = opened_by_link(link, "training")
    assert at.text_input(key="tr_compare_filter").value == "lr1"
    assert at.multiselect(key="tr_compare_runs").value == picked
    assert at.multiselect(key="tr_compare_metric").value == ["loss", "mlm_acc"]
    assert at.radio(key="tr_compare_x").value == "wall time" and at.slider(key="tr_compare_smooth").value == 0.5
    assert at.toggle(key="tr_compare_log").value is True
    assert {k: v for k, v in link_of(at).items() if k in link} == link  # and back into the link as it came

    spec = compared(at)
    layout, traces = spec["layout"], spec["data"]
    assert layout["yaxis"]["type"] == layout["yaxis2"]["type"] == "log"
    assert layout["xaxis2"]["title"]["text"] == "wall time from the run's start (minutes)"  # 210 s
    # per panel, per run: the raw line, faint, then the smoothed one over it
    assert [(t["name"], t.get("yaxis", "y"), t.get("opacity")) for t in traces] == [
        (name, axis, opacity) for axis in ("y", "y2") for run in ("sop-lr1 (sop)", "nsp-lr1 (nsp)")
        for name, opacity in ((f"{run} (raw)", 0.25), (run, None))]
    colours = {}
    for trace in traces:
        colours.setdefault(trace["legendgroup"], set()).add(trace["line"]["color"])
    assert all(len(c) == 1 for c in colours.values()) and len(set.union(*colours.values())) == 2  # one each, two runs
    assert [t["showlegend"] for t in traces if "opacity" not in t] == [True, True, False, False]  # one legend entry a run
    raw, smoothed = traces[2], traces[3]  # nsp-lr1's loss
    assert values(raw["y"]) == [x + 0.5 for x in LOSS] and values(smoothed["y"]) == pytest.approx(smooth(values(raw["y"]), 0.5))
    assert values(raw["x"]) == [0.5, 1.5, 2.5, 3.5]  # minutes; the first row was logged 30 s into the run


def test_no_smoothing_draws_the_raw_line_alone_against_tokens(runs):
    at = start("training")
    at.slider(key="tr_compare_smooth").set_value(0.0).run()
    at.radio(key="tr_compare_x").set_value("tokens").run()
    spec = compared(at)
    assert all("opacity" not in t for t in spec["data"]) and len(spec["data"]) == 3  # the three newest runs, one line each
    newest = spec["data"][0]  # sop-lr2
    assert values(newest["x"]) == [1000.0, 2000.0, 3000.0, 4000.0] and values(newest["y"])[:2] == [10.0, 8.0]
    assert spec["layout"]["xaxis"]["title"]["text"] == "tokens seen" and "type" not in spec["layout"]["yaxis"]


def test_the_filter_lists_and_picks_the_runs_it_finds(runs):
    at = start("training")
    at.text_input(key="tr_compare_filter").set_value("NSP|lr2").run()
    assert at.multiselect(key="tr_compare_runs").options == ["20261122-000002-sop-lr2-3", "20261122-000001-nsp-lr1-2"]
    assert at.multiselect(key="tr_compare_runs").value == ["20261122-000002-sop-lr2-3", "20261122-000001-nsp-lr1-2"]
    at.multiselect(key="tr_compare_runs").set_value(["20261122-000001-nsp-lr1-2"]).run()  # the pick stays the visitor's
    assert [t["name"] for t in compared(at)["data"] if "opacity" not in t] == ["nsp-lr1 (nsp)"]
    at.text_input(key="tr_compare_filter").set_value("lr(").run()  # not a regular expression: looked for as typed
    assert any("is not a regular expression" in c.value for c in at.caption)
    assert at.multiselect(key="tr_compare_runs").options == []


HOSTILE_PATTERNS = {  # -> (what is said, the runs listed). Python's re raised OverflowError and RecursionError on
    # the first two; RE2 reads a repeat past its limit as text, refuses lookbehinds and nested repeats; a long one is cut
    "a{4294967295}": (None, []), "(" * 1000 + "a" + ")" * 1000: ("characters long", []), "(" * 99 + "a" + ")" * 99:
    (None, ["run", "x"]),
    "(?<=a)b": ("is not a regular expression", ["x"]), "((a{1000}){1000}){1000}": ("is not a regular expression", []),
    "x" * 5000: ("characters long", [])}


@pytest.mark.parametrize("pattern", list(HOSTILE_PATTERNS), ids=["huge-repeat", "deep-nesting", "nesting", "lookbehind", "nested", "long"])
def test_a_hostile_filter_lists_runs_or_says_why_and_never_raises(pattern):
    from types import SimpleNamespace

    from app.rooms.training.compare import matching

    runs = [SimpleNamespace(id="run", name="a" * 60 + "!"), SimpleNamespace(id="x", name="(?<=a)b")]
    listed, problem = matching(runs, pattern)
    said, expected = HOSTILE_PATTERNS[pattern]
    assert (problem is None) if said is None else (said in problem)
    assert listed == expected
