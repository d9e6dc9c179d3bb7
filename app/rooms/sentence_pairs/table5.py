"""The Sentence pairs page's Table 5: the paper's, the shipped checkpoints' (results.json), and
one measured now through the runner."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from albert_lab.analysis import evaluation  # through the module: a test stands in for evaluation_pairs
from albert_lab.analysis.evaluation import evaluate, paper_table5, read_results, table5_cells
from albert_lab.analysis.registry import EVALUATE
from app.rooms.sentence_pairs.common import PairsState, model_size, pace_words, results_path
from app.shell import costs, draw, pace, rows, runner
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.runner import Part
from app.shell.selection import Selection
from app.shell.state import kept
from app.shell.text import fmt_duration

if TYPE_CHECKING:
    from pathlib import Path

    from albert_lab.analysis.common import Progress

key = keys(__file__)  # this room's widget keys
# evaluate's limit, as `albert-lab evaluate --limit`, in the page's steps
FORM = rows.Form(key, {"t5_limit": (EVALUATE.option("limit"), rows.Widget(
    "Pairs per task", kind="select_slider", options=(50, 100, 200, 500), default=100,
    help="A fixed random sample per task (SOP, NSP, MLM) and pairs set; more pairs, narrower intervals, longer wait"))},
    linked=False)


def live_table5(bundles: list) -> None:
    """Table 5 measured now on a sample of the held-out pairs, when asked: one checkpoint at a time
    through the runner (a bar with the time left, a Stop that keeps the checkpoints finished)."""
    cols = st.columns([1, 3])
    limit = FORM.draw(cols[0], "t5_limit")
    sets = evaluation.planned_sets(limit)
    units = {bd.name: evaluation.pairs_scored(bd, sets, limit) * model_size(bd) for bd in bundles}
    eta = pace.estimate("table5", sum(units.values()), costs.SECONDS_PER_UNIT["table5"])
    eta += 0.0 if pairs_built() else costs.FIRST_TIME_SECONDS["table5"]
    said = pace_words("table5")
    state = kept(PairsState)
    names = tuple(bd.name for bd in bundles)
    asked = cols[1].button(f"Evaluate the picked checkpoints now (about {fmt_duration(eta)} {said})", key=key("t5_run"))
    if asked:
        state.t5_asked = (limit, names)
    if state.t5_asked is None or state.t5_asked[1] != names:  # other checkpoints picked since: asked anew
        return
    limit, done = state.t5_asked[0], []
    with guard("evaluation"):
        chosen = Selection.read()
        done = runner.run([Part.of(bd.name, chosen.only([bd.name]), _evaluate, limit, units=units[bd.name],
                                   progress=True) for bd in bundles], EVALUATE.cost, each=True, asked=asked)
    if done:
        live = pd.concat(done, ignore_index=True)
        cells, notes = table5_cells(live)
        st.dataframe(cells, hide_index=True, width="stretch")
        st.caption(f"A fixed sample of {limit:,} pairs per task and pairs set, so each cell's n counts what it "
                   "holds: MLM counts masked tokens; NSP all the pairs sampled; SOP those made as training makes "
                   "them; SOP lead those of them that hold a document's first sentence; SOP interior the others, and "
                   "interior pairs SOP does not score, one from inside each longer document (out of domain, few pairs "
                   "are lead pairs). "
                   "`albert-lab evaluate` scores every pair.")
        for note in notes:
            st.caption(note)
        draw.download(live, "table5.csv")


def _evaluate(bundles: list, limit: int, progress: Progress) -> pd.DataFrame:
    """One checkpoint's Table 5 (`bundles`: the selection's one) on `limit` pairs per task, telling which
    pairs it scores."""
    [bundle] = bundles
    return evaluate([bundle], held_out_pairs(), limit=limit,
                    progress=lambda done, what: progress(done, f"scoring {what.removeprefix(bundle.name + ': ')}"))


PAIRS_KEPT_SECONDS = 600  # held_out_pairs' ttl
_BUILT_AT: list[float] = []  # when held_out_pairs last built them in this process


@st.cache_data(show_spinner=False, max_entries=1, ttl=PAIRS_KEPT_SECONDS)
def held_out_pairs() -> pd.DataFrame:
    """The held-out pairs Table 5 is measured on, built once for every visitor (in the first turn that needs them)."""
    pairs = evaluation.evaluation_pairs()
    _BUILT_AT[:] = [time.monotonic()]
    return pairs


def pairs_built() -> bool:
    """Whether held_out_pairs holds them (else the first evaluation builds them: the record's Cost.first)."""
    return bool(_BUILT_AT) and time.monotonic() - _BUILT_AT[0] < PAIRS_KEPT_SECONDS


@st.cache_data(show_spinner=False, max_entries=4)
def shipped_table5(path: Path, stamp: float) -> tuple[pd.DataFrame, list[str]] | None:
    """The shipped checkpoints' Table 5 cells and notes (results.json), read once per version of the
    file for every visitor: read and laid out again on every visit and every typed pair, they were a
    quarter of the Sentence pairs page's script with twenty visitors (py-spy, benchmarks/bench_class.py)."""
    results = read_results(path)
    return table5_cells(results) if results is not None else None


def table5_tab(bundles: list) -> None:
    """The paper's Table 5, the shipped checkpoints' (results.json), and one measured now."""
    st.markdown("**The paper** (ALBERT-base, 125k steps; accuracy as a fraction)")
    st.dataframe(paper_table5(), hide_index=True, column_config={c: st.column_config.NumberColumn(format="%.3f")
                                                                 for c in ("MLM", "NSP", "SOP", "downstream avg")})
    st.caption("The paper's own models load here with their trained heads: Google's original ALBERT releases (SOP) and "
               "BERT's (NSP), as their archives unpack. Add the folder in the sidebar and evaluate it below, or run "
               "`albert-lab evaluate --checkpoint albert_base --checkpoint uncased_L-12_H-768_A-12` (README: "
               "\"The paper's own models\"); nothing is downloaded.")
    path = results_path()
    shipped = shipped_table5(path, path.stat().st_mtime if path.is_file() else 0.0)
    if shipped is not None:
        cells, notes = shipped
        st.markdown("**The shipped checkpoints** (`albert-lab evaluate`; accuracy [95% interval] and number of pairs "
                    "or masked tokens)")
        st.dataframe(cells, hide_index=True, width="stretch")
        for note in notes:
            st.caption(note)
    elif path.is_file():
        st.info(f"{path} is from an older version and lacks per-task intervals: regenerate it with "
                "`albert-lab evaluate --json --by-source` (scripts/export_checkpoints.py), or evaluate below.")
    live_table5(bundles)
