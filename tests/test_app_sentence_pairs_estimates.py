"""Table 5's 'Evaluate now' says the time of the work evaluate() does (AppTest)."""

from conftest import goto


def test_table5s_estimate_counts_every_pair_evaluate_scores(app, shipped):
    """The walk: 'about 24 s', then 108 s (4 checkpoints, 100 pairs per task): the estimate counted 100 pairs a
    checkpoint, evaluate scores 100 per task and pairs set."""
    from albert_lab.analysis import evaluation
    from albert_lab.analysis.registry import EVALUATE
    from albert_lab.checkpoint.load import load_checkpoint
    from app.shell import costs
    from app.shell.text import fmt_duration

    at = goto(app, "sentence_pairs")
    at.select_slider(key="pair_t5_limit").set_value(200).run()
    picked = at.sidebar.multiselect(key="picked").value
    sets = evaluation.planned_sets(200)
    bundles = [load_checkpoint(shipped / name) for name in picked]
    scored = {bundle.name: evaluation.pairs_scored(bundle, sets, 200) for bundle in bundles}
    assert scored["albert-sop"] == 200 * 3 * len({domain for domain, _ in sets})  # MLM, NSP and SOP in each pairs set
    units = sum(scored[bundle.name] * costs.size(bundle.spec) for bundle in bundles)
    # the record's seconds per unit until this process has timed an evaluation, then its own pace; building
    # the held-out pairs counted until they are built (an earlier test in this process may have done either)
    from app.rooms.sentence_pairs.table5 import pairs_built
    from app.shell import pace

    seconds = pace.estimate("table5", units, EVALUATE.cost.seconds) + (0.0 if pairs_built() else EVALUATE.cost.first)
    assert f"(about {fmt_duration(seconds)} " in at.button(key="pair_t5_run").label
