"""The paper's Table 5 for checkpoints: MLM, NSP and SOP accuracy on held-out pairs,
with 95% intervals, per source and on an out-of-domain source, honest about heads.

A metric that needs a head the checkpoint does not have (weights missing, so
transformers would initialise them randomly) is not computed: its row carries the
reason instead of a number. An untrained pair head (a model trained without a pair
loss) is scored, as the paper's "none" row is, and its status is in every row.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from albert_lab.analysis.intrinsic import SUBSETS, TASKS, Task, accuracy_table, score_eval_pairs
from albert_lab.checkpoints import ModelBundle
from albert_lab.data.corpora import OOD, evaluation_documents, load_corpus
from albert_lab.data.heldout import build_eval_pairs
from albert_lab.data.sources import is_installed

COLUMNS = ["checkpoint", "trained_with", "mlm_head", "pair_head", "domain", "metric", "source", "hits", "n", "accuracy",
           "low", "high", "note"]


def evaluation_pairs(corpus: str = "long-mix", out_of_domain: bool = True) -> pd.DataFrame:
    """Held-out pairs of `corpus` (domain 'in') and, when installed, pairs from every
    document of the out-of-domain sources, never trained on (domain 'out')."""
    frames = [build_eval_pairs(evaluation_documents(load_corpus(corpus))).assign(domain="in")]
    if out_of_domain:
        for name in OOD:
            if is_installed(name) and name != corpus:
                frames.append(build_eval_pairs(evaluation_documents(load_corpus(name))).assign(domain="out"))
    return pd.concat(frames, ignore_index=True)


def usable_tasks(bundle: ModelBundle) -> tuple[list[Task], dict[Task, str]]:
    """The tasks a checkpoint's heads can be scored on, and why the others cannot."""
    skipped: dict[Task, str] = {}
    if bundle.heads.mlm == "missing":
        skipped["mlm"] = "not scored: the MLM head is missing from the checkpoint"
    if bundle.heads.pair == "missing":
        for task in ("nsp", "sop"):
            skipped[task] = f"not scored: the {bundle.heads.pair_kind.upper()} head is missing from the checkpoint"
    return [t for t in TASKS if t not in skipped], skipped


def evaluate(bundles: ModelBundle | Sequence[ModelBundle], pairs: pd.DataFrame, max_len: int = 128,
             limit: int | None = None, by_source: bool = False) -> pd.DataFrame:
    """Tidy accuracies (COLUMNS), one row per checkpoint, domain, metric and source."""
    rows = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        tasks, skipped = usable_tasks(bundle)
        info = dict(checkpoint=bundle.name, trained_with=bundle.spec.objective, mlm_head=bundle.heads.mlm,
                    pair_head=bundle.heads.pair)
        for domain, part in pairs.groupby("domain", sort=True):
            if tasks:
                scored = score_eval_pairs(bundle.model, bundle.tokenizer, part, min(max_len, bundle.spec.max_positions),
                                          None, limit, tasks)
                for row in accuracy_table(scored, by_source=by_source).to_dict("records"):
                    rows.append({**info, "domain": domain, **row, "note": ""})
            for metric, (task, _) in SUBSETS.items():
                if task in skipped:
                    rows.append({**info, "domain": domain, "metric": metric, "source": "all", "note": skipped[task]})
    return pd.DataFrame(rows, columns=COLUMNS)


def table5(results: pd.DataFrame) -> pd.DataFrame:
    """One row per checkpoint: each metric as accuracy, with its interval and count in
    neighbouring columns (in-domain, all sources; out-of-domain SOP interior)."""
    rows = []
    for name, group in results[results.source == "all"].groupby("checkpoint", sort=False):
        row = {"checkpoint": name, "trained_with": group.trained_with.iloc[0], "pair_head": group.pair_head.iloc[0]}
        for r in group.itertuples():
            key = r.metric if r.domain == "in" else f"ood_{r.metric}"
            row[key] = r.accuracy
            row[f"{key}_ci"] = (r.low, r.high) if pd.notna(r.accuracy) else None
            row[f"{key}_n"] = r.n
        rows.append(row)
    return pd.DataFrame(rows)
