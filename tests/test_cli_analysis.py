"""Analysis commands end to end: JSON frames, CSV output, one-line errors."""

import json

import pandas as pd
from conftest import run_cli


def test_oscillation_and_gradflow_json(shipped):
    env = {"ALBERT_LAB_CHECKPOINTS": str(shipped)}
    osc = run_cli("oscillation", "--checkpoint", "albert-sop", "--checkpoint", "bert-nsp", "--text",
                  "The river is long. It flows north.", "--json", env=env)
    assert osc.returncode == 0, osc.stderr
    rows = json.loads(osc.stdout)
    assert {r["checkpoint"] for r in rows} == {"albert-sop", "bert-nsp"} and all(r["l2"] > 0 for r in rows)
    # --json prints every column the library returns (the table's choice of columns left out norm_in, tokens, texts)
    from albert_lab.analysis.oscillation import oscillation
    from albert_lab.checkpoint.load import load_checkpoint

    library = oscillation([load_checkpoint(shipped / "albert-sop", device="cpu")], ["The river is long. It flows north."])
    assert set(rows[0]) == set(library.columns) and {"norm_in", "tokens", "texts"} <= set(rows[0])
    flow = run_cli("gradflow", "--checkpoint", "albert-sop", "--text", "The river is long. It flows north. It is wide.",
                   "--text", "Paris is a city. It is old.", "--json", env=env)
    assert flow.returncode == 0, flow.stderr
    views = {r["view"] for r in json.loads(flow.stdout)}
    assert views == {"per_application", "shared_sum", "hidden", "outside"}


def test_score_writes_csv_and_warns(shipped, tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("sentence_a\tsentence_b\tlabel\nThe cat sat.\tIt purred.\t0\nIt purred.\tThe cat sat.\t1\n\tx\t0\n")
    out = tmp_path / "scores.csv"
    result = run_cli("score", str(pairs), "--checkpoint", str(shipped / "albert-sop"), "--checkpoint",
                     str(shipped / "hub-albert"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "row 4: sentence_a is empty; skipped" in result.stderr and "SOP head weights are missing" in result.stderr
    scores = pd.read_csv(out)
    assert len(scores) == 4 and scores[scores.checkpoint == "hub-albert"].p_ab.isna().all()
    assert scores[scores.checkpoint == "albert-sop"].p_ab.between(0, 1).all()
    assert "accuracy" in result.stdout


def test_score_bad_input(shipped, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("sentence_a;sentence_b\nx;y\n")
    result = run_cli("score", str(bad), "--checkpoint", str(shipped / "albert-sop"))
    assert result.returncode == 2 and "semicolons as delimiter" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("score", str(tmp_path / "missing.csv"), "--checkpoint", str(shipped / "albert-sop"))
    assert result.returncode == 2 and "no such file" in result.stderr


def test_evaluate_json(shipped):
    result = run_cli("evaluate", "--checkpoint", str(shipped / "bert-nsp"), "--checkpoint", str(shipped / "hub-albert"),
                     "--corpus", "wiki-vital[:600]", "--limit", "20", "--json")
    assert result.returncode == 0, result.stderr
    rows = pd.DataFrame(json.loads(result.stdout))
    assert set(rows.domain) == {"in", "out"}  # the out-of-domain source (cfi) is installed by the test command
    bert = rows[(rows.checkpoint == "bert-nsp") & (rows.domain == "in")].set_index("metric")
    assert (bert.trained_with == "nsp").all() and bert.loc["nsp", "n"] == 20 and 0 < bert.loc["sop", "n"] <= 20
    for metric in ("mlm", "nsp", "sop"):
        row = bert.loc[metric]
        assert 0 <= row.low <= row.accuracy <= row.high <= 1 and row.accuracy == row.hits / row.n
    hub = rows[(rows.checkpoint == "hub-albert") & (rows.domain == "in")].set_index("metric")  # no pair head weights: no pair numbers
    assert hub.loc["sop"].accuracy is None or pd.isna(hub.loc["sop"].accuracy)
    assert "head is missing" in hub.loc["sop"].note and not hub.loc["mlm"].note
