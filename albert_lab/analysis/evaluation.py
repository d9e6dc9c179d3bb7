"""The paper's Table 5 for checkpoints: MLM, NSP and SOP accuracy on held-out pairs,
with 95% intervals, per source and on an out-of-domain source, honest about heads.

A metric that needs a head the checkpoint does not have (weights missing, so
transformers would initialise them randomly) is not computed: its row carries the
reason instead of a number. An untrained pair head (a model trained without a pair
loss) is scored, as the paper's "none" row is, and its status is in every row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from albert_lab.analysis.intrinsic import SUBSETS, TASKS, Task, accuracy_table, score_eval_pairs
from albert_lab.analysis.registry import Report, text_table
from albert_lab.card import count_notes
from albert_lab.checkpoint.heads import trained_with
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpora import OOD, evaluation_documents, load_corpus
from albert_lab.data.corpus import MAX_LEN
from albert_lab.data.heldout import build_eval_pairs
from albert_lab.data.sources import is_installed
from albert_lab.errors import DataError

COLUMNS = ["checkpoint", "trained_with", "mlm_head", "pair_head", "domain", "metric", "source", "hits", "n", "accuracy",
           "low", "high", "note"]


def out_of_domain_sources(corpus: str = "long-mix", out_of_domain: bool = True) -> list[str]:
    """The out-of-domain sources evaluation_pairs adds (domain 'out'): those installed, the corpus aside."""
    return [name for name in OOD if out_of_domain and is_installed(name) and name != corpus]


def evaluation_pairs(corpus: str = "long-mix", out_of_domain: bool = True) -> pd.DataFrame:
    """Held-out pairs of `corpus` (domain 'in') and, when installed, pairs from every
    document of the out-of-domain sources, never trained on (domain 'out')."""
    documents = evaluation_documents(load_corpus(corpus))
    frames = [build_eval_pairs(documents).assign(domain="in")]
    if frames[0].empty:
        raise DataError(f"{corpus}: no held-out pairs to evaluate ({len(documents)} held-out document"
                        f"{'s' * (len(documents) != 1)} of two or more sentences); give a corpus of more documents")
    for name in out_of_domain_sources(corpus, out_of_domain):
        frames.append(build_eval_pairs(evaluation_documents(load_corpus(name))).assign(domain="out"))
    return pd.concat(frames, ignore_index=True)


def pair_sets(pairs: pd.DataFrame) -> dict[tuple[str, str], int]:
    """(domain, task) -> the pairs of `pairs` in that set: what `evaluate` samples from."""
    return {(str(domain), str(task)): int(n) for (domain, task), n in pairs.groupby(["domain", "task"]).size().items()}


def planned_sets(limit: int, corpus: str = "long-mix", out_of_domain: bool = True) -> dict[tuple[str, str], int]:
    """pair_sets before the pairs are built (that takes seconds): every task in the held-out domain and, when an
    out-of-domain source is installed, in that one, each taken to hold at least `limit` pairs (long-mix's held-out
    sets hold 2,481 or more, the out-of-domain ones 763 or more)."""
    domains = ["in", *(["out"] if out_of_domain_sources(corpus, out_of_domain) else [])]
    return {(domain, task): limit for domain in domains for task in TASKS}


def pairs_scored(bundle: ModelBundle, sets: dict[tuple[str, str], int], limit: int | None = None) -> int:
    """The pairs `evaluate` scores for one checkpoint, each one forward pass (MLM's masked pair, NSP's or SOP's
    pair): in every set of `sets` (pair_sets) of a task its heads can be scored on, the set's pairs, at most `limit`."""
    tasks, _ = usable_tasks(bundle)
    return sum(min(n, limit) if limit else n for (_, task), n in sets.items() if task in tasks)


def usable_tasks(bundle: ModelBundle) -> tuple[list[Task], dict[Task, str]]:
    """The tasks a checkpoint's heads can be scored on, and why the others cannot."""
    skipped: dict[Task, str] = {}
    if bundle.heads.mlm == "missing":
        skipped["mlm"] = "not scored: the MLM head is missing from the checkpoint"
    if bundle.heads.pair == "missing":
        for task in ("nsp", "sop"):
            skipped[task] = f"not scored: the {bundle.heads.pair_kind.upper()} head is missing from the checkpoint"
    return [t for t in TASKS if t not in skipped], skipped


def evaluate(bundles: ModelBundle | Sequence[ModelBundle], pairs: pd.DataFrame, max_len: int = MAX_LEN,
             limit: int | None = None, by_source: bool = False,
             progress: Callable[[float, str], None] | None = None) -> pd.DataFrame:
    """Tidy accuracies (COLUMNS), one row per checkpoint, domain, metric and source.
    `progress(fraction, what)` is called before each checkpoint and pairs set."""
    rows = []
    bundles = [bundles] if isinstance(bundles, ModelBundle) else list(bundles)
    domains = sorted(pairs.domain.unique())
    for b, bundle in enumerate(bundles):
        tasks, skipped = usable_tasks(bundle)
        info = dict(checkpoint=bundle.name, trained_with=trained_with(bundle.spec, bundle.heads, bundle.card), mlm_head=bundle.heads.mlm,
                    pair_head=bundle.heads.pair)
        for d, (domain, part) in enumerate(pairs.groupby("domain", sort=True)):
            where = "held-out" if domain == "in" else "out-of-domain"
            scored_tasks = []
            for t, task in enumerate(tasks):  # one call per task: a progress bar moves (and can be stopped) between them
                if progress is not None:
                    done = (b * len(domains) + d + t / len(tasks)) / (len(bundles) * len(domains))
                    progress(done, f"{bundle.name}: {where} {task.upper()} pairs")
                scored_tasks.append(score_eval_pairs(bundle.model, bundle.tokenizer, part,
                                                     min(max_len, bundle.spec.max_positions), None, limit, [task]))
            if tasks:
                scored = pd.concat(scored_tasks, ignore_index=True)
                for row in accuracy_table(scored, by_source=by_source).to_dict("records"):
                    rows.append({**info, "domain": domain, **row, "note": ""})
            for metric, (task, _) in SUBSETS.items():
                if task in skipped:
                    rows.append({**info, "domain": domain, "metric": metric, "source": "all", "note": skipped[task]})
    return pd.DataFrame(rows, columns=COLUMNS)


METRICS = ["mlm", "nsp", "sop", "sop_lead", "sop_interior"]
METRIC_TITLES = {"mlm": "MLM", "nsp": "NSP", "sop": "SOP", "sop_lead": "SOP lead", "sop_interior": "SOP interior"}


def cell(accuracy: float, low: float, high: float, n: int) -> str:
    """'0.912 [0.89, 0.93] n=515', the way every accuracy is shown."""
    return f"{accuracy:.3f} [{low:.2f}, {high:.2f}] n={int(n):,}"


def table5_cells(results: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """For reading: one row per checkpoint, pairs set (held-out, out-of-domain, per
    source) with one text cell per metric (accuracy [95% interval] n), '-' where not
    scored; and the notes saying why."""
    rows, notes = [], []
    for (name, domain, source), group in results.groupby(["checkpoint", "domain", "source"], sort=False):
        by_metric = {r.metric: r for r in group.itertuples()}
        row = {"checkpoint": name, "trained with": str(group.trained_with.iloc[0]).upper(),
               "pairs": ("held-out" if domain == "in" else "out-of-domain") + ("" if source == "all" else f" {source}")}
        for metric in METRICS:
            r = by_metric.get(metric)
            scored = r is not None and not r.note and pd.notna(r.accuracy)
            row[METRIC_TITLES[metric]] = cell(r.accuracy, r.low, r.high, r.n) if scored else "-"
            if r is not None and r.note:
                notes.append(f"{name}: {METRIC_TITLES[metric]}: {r.note}")
        rows.append(row)
    first = results[(results.checkpoint == results.checkpoint.iloc[0]) & (results.source == "all")] if len(results) else results
    counts = {str(dom): {r.metric: int(r.n) for r in part.itertuples() if pd.notna(r.n) and not r.note}
              for dom, part in first.groupby("domain", sort=True)}
    return pd.DataFrame(rows), sorted(set(notes)) + count_notes(counts)


def paper_table5() -> pd.DataFrame:
    """The paper's Table 5 (ALBERT-base, 125k steps) as fractions, like ours."""
    from albert_lab.paper import TABLE5

    return pd.DataFrame([{"trained with": k.upper(), "MLM": v[0] / 100, "NSP": v[1] / 100, "SOP": v[2] / 100,
                          "downstream avg": v[3] / 100} for k, v in TABLE5.items()])


def read_results(path: Path) -> pd.DataFrame | None:
    """Committed evaluation rows (checkpoints/results.json, written by
    scripts/export_checkpoints.py from `albert-lab evaluate --json`), or None when the
    file is missing or from an older layout."""
    if not path.is_file():
        return None
    frame = pd.DataFrame(json.loads(path.read_text()))
    return frame if set(COLUMNS) <= set(frame.columns) else None


def interior_accuracy(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of `read_results` that say how well each checkpoint orders held-out pairs
    from inside documents (SOP interior, in domain, all sources), untrained pair heads
    left out (their number confuses)."""
    trained = results.pair_head == "trained" if "pair_head" in results else True
    rows = results[(results.metric == "sop_interior") & (results.domain == "in") & (results.source == "all") & trained]
    return rows[rows.accuracy.notna()]


def report(results: pd.DataFrame) -> Report:
    """What `albert-lab evaluate` prints: one line per checkpoint and pairs set (accuracy [95% interval] n per
    metric), then the notes."""
    cells, notes = table5_cells(results)
    return Report(text="\n".join([text_table([tuple(r) for r in cells.itertuples(index=False)], list(cells.columns)), *notes]))
