"""The Sentence pairs page's Table 5: the paper's, the shipped checkpoints' (results.json), and
one measured now behind a Stop."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from albert_lab.analysis import evaluation  # evaluation_pairs through the module: a test stands in for it
from albert_lab.analysis.evaluation import evaluate, paper_table5, read_results, table5_cells
from app.rooms.sentence_pairs.common import PairsState, model_size, pace_words, results_path
from app.shell import costs, ui
from app.shell.guard import guard
from app.shell.state import kept
from app.shell.text import fmt_duration


def _stop_t5() -> None:
    kept(PairsState).t5_stopped = True


def live_table5(bundles: list) -> None:
    """Table 5 measured now on a sample of the held-out pairs, one checkpoint at a time
    behind a progress bar with a Stop button (the checkpoints finished are kept)."""
    cols = st.columns([1, 3])
    limit = cols[0].select_slider("Pairs per task", [50, 100, 200, 500], 100, key="t5_limit",
                                  help="A fixed random sample per task (SOP, NSP, MLM) and pairs set; more pairs, "
                                       "narrower intervals, longer wait")
    size = sum(map(model_size, bundles))
    eta = ui.estimate("table5", limit * size, costs.SECONDS_PER_UNIT["table5"])
    pace = pace_words("table5")
    if cols[1].button(f"Evaluate the picked checkpoints now (about {fmt_duration(eta)} {pace})", key="t5_run"):
        state = kept(PairsState)
        state.t5_live, state.t5_stopped = {}, False
        bar, stop = st.progress(0.0, text="Building held-out pairs ..."), st.empty()
        stop.button("Stop", key="t5_stop", icon=":material/stop:", on_click=_stop_t5,
                    help="Stops after the task being scored; the checkpoints finished are kept")
        with guard("evaluation"):
            pairs, start = evaluation.evaluation_pairs(), time.perf_counter()
            for i, bundle in enumerate(bundles):
                def progress(f: float, what: str, i: int = i) -> None:
                    bar.progress((i + f) / len(bundles), text=f"Scoring {what} ({i + 1} of {len(bundles)}) ...")

                state.t5_live[bundle.name] = evaluate([bundle], pairs, limit=limit, progress=progress)
            ui.learn("table5", time.perf_counter() - start, limit * size)
        bar.empty()
        stop.empty()
    state = kept(PairsState)
    if done := state.t5_live:
        if state.t5_stopped:
            st.info(f"Stopped: {len(done)} of {len(bundles)} checkpoints scored.", icon=":material/stop_circle:")
        live = pd.concat(done.values(), ignore_index=True)
        cells, notes = table5_cells(live)
        st.dataframe(cells, hide_index=True, width="stretch")
        st.caption(f"A fixed sample of {limit:,} pairs per task and pairs set, so each cell's n counts what it "
                   "holds: MLM counts masked tokens; NSP all the pairs sampled; SOP those made as training makes "
                   "them, lead and interior their subsets (out of domain, few pairs are lead pairs). "
                   "`albert-lab evaluate` scores every pair.")
        for note in notes:
            st.caption(note)
        ui.download(live, "table5.csv")


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
    results = read_results(path)
    if results is not None:
        cells, notes = table5_cells(results)
        st.markdown("**The shipped checkpoints** (`albert-lab evaluate`; accuracy [95% interval] and number of pairs "
                    "or masked tokens)")
        st.dataframe(cells, hide_index=True, width="stretch")
        for note in notes:
            st.caption(note)
    elif path.is_file():
        st.info(f"{path} is from an older version and lacks per-task intervals: regenerate it with "
                "`albert-lab evaluate --json --by-source` (scripts/export_checkpoints.py), or evaluate below.")
    live_table5(bundles)
