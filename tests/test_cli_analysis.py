"""The analysis commands end to end: JSON frames with every column, the text tables, progress on stderr."""

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


def test_evaluate_shows_its_progress(shipped):
    """`evaluate` was silent for minutes."""
    from conftest import run_cli

    result = run_cli("evaluate", "--checkpoint", str(shipped / "albert-sop"), "--corpus", "wiki-vital[:600]", "--no-ood",
                     "--limit", "5")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "building the held-out pairs" in result.stderr
    assert "scoring albert-sop: held-out SOP pairs" in result.stderr and "scoring albert-sop: held-out MLM pairs" in result.stderr


def test_cli_commands_json(shipped):
    env = {"ALBERT_LAB_CHECKPOINTS": str(shipped)}
    text = ["--text", "The river is long. It flows north to the sea.", "--text", "Paris is a city. It is old."]
    both = ["--checkpoint", "albert-sop", "--checkpoint", "bert-nsp"]
    for args, check in (
        (["extrapolate", *both, "--repeat", "2"], lambda rows: {r["checkpoint"] for r in rows} == {"albert-sop", "bert-nsp"}),
        (["logit-lens", *both], lambda rows: all(0 <= r["mlm_accuracy"] <= 1 for r in rows)),
        (["lens-top", *both, "--top-k", "3"], lambda rows: {r["rank"] for r in rows} == {1, 2, 3}),
        (["attention", "--checkpoint", "albert-sop", "--repeat", "2"], lambda rows: max(r["application"] for r in rows) == 6),
        (["cka", *both], lambda rows: all(r["unit"] == "token" for r in rows)),
    ):
        result = run_cli(*args, *text, "--json", env=env)
        assert result.returncode == 0, result.stderr
        assert check(json.loads(result.stdout)), args
    plain = run_cli("extrapolate", "--checkpoint", "albert-sop", "--repeat", "2", *text, env=env)
    assert plain.returncode == 0 and any(v in plain.stdout for v in ("converges", "cycles", "slows down", "drifts"))
    bad = run_cli("extrapolate", "--checkpoint", "albert-sop", "--repeat", "9", *text, env=env)
    assert bad.returncode == 2 and "repeat" in bad.stderr
