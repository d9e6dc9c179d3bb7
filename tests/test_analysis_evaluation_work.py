"""Table 5's estimate counts the work evaluate() does: the pairs it scores per checkpoint, each one forward pass,
in every task its heads can be scored on and every pairs set (held-out, out-of-domain)."""

import pandas as pd

import albert_lab.analysis.evaluation as evaluation
from albert_lab.data.heldout import build_eval_pairs
from albert_lab.data.sources import is_installed


def scored_by_evaluate(bundle, pairs, limit, monkeypatch) -> int:
    """The pairs evaluate() hands its checkpoint, counted as score_eval_pairs returns them."""
    counted = []
    real = evaluation.score_eval_pairs

    def spy(*args, **kwargs):
        frame = real(*args, **kwargs)
        counted.append(len(frame))
        return frame

    monkeypatch.setattr(evaluation, "score_eval_pairs", spy)
    evaluation.evaluate([bundle], pairs, limit=limit)
    return sum(counted)


def test_the_estimates_pairs_are_the_pairs_evaluate_scores(bundles, small_corpus, monkeypatch):
    """The walk: 'about 24 s', then 108 s; the estimate counted `limit` pairs a checkpoint where evaluate scores
    `limit` per task (MLM, NSP, SOP) and per pairs set (held-out and out-of-domain): six times as many."""
    held = build_eval_pairs(small_corpus.train[:60]).assign(domain="in")
    other = build_eval_pairs(small_corpus.train[60:70]).assign(domain="out")  # a set smaller than the limit
    pairs = pd.concat([held, other], ignore_index=True)
    sets = evaluation.pair_sets(pairs)
    assert {domain for domain, _ in sets} == {"in", "out"} and {task for _, task in sets} == {"mlm", "nsp", "sop"}
    assert min(sets.values()) < 50 < max(sets.values())  # some sets cut by the limit, some not
    for bundle in bundles:
        for limit in (50, None):
            assert evaluation.pairs_scored(bundle, sets, limit) == scored_by_evaluate(bundle, pairs, limit, monkeypatch)
    assert evaluation.pairs_scored(bundles[0], sets, 50) == sum(min(n, 50) for n in sets.values())


def test_a_missing_pair_head_is_not_counted(bundles):
    """Only the tasks a checkpoint's heads can be scored on are scored, and counted."""
    import dataclasses

    bundle = dataclasses.replace(bundles[0], heads=dataclasses.replace(bundles[0].heads, pair="missing"))
    sets = {("in", "mlm"): 80, ("in", "nsp"): 80, ("in", "sop"): 90}
    assert evaluation.pairs_scored(bundle, sets, 50) == 50


def test_the_planned_sets_are_the_domains_evaluation_pairs_builds():
    """Before the pairs are built the page plans on every task in the held-out set and, when an out-of-domain source
    is installed, in that one too: the sets evaluation_pairs makes."""
    installed = any(is_installed(name) for name in evaluation.OOD if name != "long-mix")
    planned = evaluation.planned_sets(100)
    assert set(planned) == {(d, t) for d in ["in", *(["out"] if installed else [])] for t in ("mlm", "nsp", "sop")}
    assert set(planned.values()) == {100}
    assert evaluation.planned_sets(100, out_of_domain=False) == {("in", t): 100 for t in ("mlm", "nsp", "sop")}
