"""The Parameters page's tables: the number columns they share, the paper's Tables 1,
3 and 4 with exact counts beside the paper's, and the same ablations on real weights."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_lab import paper
from albert_lab.analysis.ablation import read_ablation
from albert_lab.spec import SHARING_LABELS
from app import ui
from app.ablation_figures import ablation_figure
from app.guard import guard

COUNTS = {name: st.column_config.NumberColumn(format="localized")
          for name in ("unique", "applied", "FLOPs/token", "exact params", "params", "flops_per_token")}
COUNTS["note"] = st.column_config.TextColumn("note", width="large")  # the notes are sentences


def paper_tables() -> None:
    """The paper's tables, each with what it shows."""
    for title, rows, note in (
        ("Table 1: configurations (and Table 2's speedups)", paper.table1(),
         "The paper's speedup is measured training throughput against BERT-large; beside it, the ratio of forward "
         "FLOPs per token, which explains most of it (ALBERT-xxlarge is slower despite fewer parameters)."),
        ("Table 3: embedding size E on ALBERT-base", paper.table3(),
         "Factorisation matters most when layers are shared: not-shared, E=768 -> 64 saves 22M; all-shared, 22M of 31M."),
        ("Table 4: sharing strategies on ALBERT-base", paper.table4(),
         "Sharing the FFN costs most of the parameters' value (and downstream accuracy); sharing attention costs little."),
    ):
        st.subheader(title)
        frame = pd.DataFrame(rows).drop(columns=["spec"])
        st.dataframe(frame, hide_index=True, width="stretch", column_config=COUNTS)
        st.caption(note)
    ui.paper_note("Counts are exact for transformers' AlbertModel / BertModel with pooler (V=30,000 or 30,522, 512 "
                  "positions, 2 token types); the paper rounds, sometimes down and sometimes up, and its xxlarge "
                  "numbers disagree with themselves (233M in the text, 235M in the table).")


# ---- the paper's ablations on real weights --------------------------------------------------
def interval(value: float, low: float, high: float) -> str:
    """An accuracy with its 95% interval, as the table shows it; a dash where there is none."""
    return "-" if pd.isna(value) else f"{value:.3f} [{low:.3f}, {high:.3f}]"


def ablation_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows as the page shows them: one per (E, sharing), accuracies with intervals; a
    failed row says 'failed' where its numbers would be (the reason is said below the table)."""
    def acc(name: str) -> pd.Series:
        cells = rows.apply(lambda r: interval(r[name], r[f"{name}_low"], r[f"{name}_high"]), axis=1)
        return cells.where(~rows.failed, "failed")

    return pd.DataFrame({
        "E": rows["E"], "sharing": rows.sharing.map(SHARING_LABELS), "parameters": rows.parameters,
        "SVD energy": rows.energy_kept, "probe MLM": acc("probe_mlm"), "uptrained MLM": acc("mlm"),
        "SOP interior": acc("sop_interior"), "SOP out of domain": acc("sop_ood"),
        "paper": [f"{m:g}M, {avg:.1f}" if pd.notna(avg) else "-" for m, avg in zip(rows.paper_params_m, rows.paper_avg)]})


def ablation_headline(rows: pd.DataFrame, tokens: int) -> str:
    """Two sentences: what the uptrained rows reached, and what the paper found from scratch."""
    done, hidden = rows[~rows.failed], rows["E"].max()

    def pick(frame: pd.DataFrame, e: int, sharing: str, column: str) -> float:
        found = frame[(frame["E"] == e) & (frame.sharing == sharing)][column]
        return float(found.iloc[0]) if len(found) else float("nan")

    small, sop = done[done["E"] < hidden].mlm, done.sop_interior
    return (f"Made into ALBERTs and uptrained on the same {tokens / 1e6:.1f}M tokens, only the E = H rows learned: "
            f"not shared reached {pick(done, hidden, 'none', 'mlm'):.3f} masked-token accuracy and all-shared "
            f"{pick(done, hidden, 'all', 'mlm'):.3f}, while every E < H row stopped at {small.min():.3f}-{small.max():.3f}, "
            f"and SOP on interior pairs stayed near chance ({sop.min():.2f}-{sop.max():.2f}) in every row. "
            f"The paper, training ALBERT-base from scratch, found E = 128 nearly free (average score "
            f"{pick(rows, 128, 'none', 'paper_avg'):.1f} against {pick(rows, hidden, 'none', 'paper_avg'):.1f} not shared, "
            f"{pick(rows, 128, 'all', 'paper_avg'):.1f} against {pick(rows, hidden, 'all', 'paper_avg'):.1f} all-shared): "
            "here an embedding cut by truncated SVD from a pretrained H-wide table is what did not recover.")


def real_weights() -> None:
    """The paper's Tables 3 and 4 measured on all-MiniLM-L6-v2 (docs/ablation.json)."""
    with guard("the ablation on real weights"):
        results = read_ablation()
        rows = results.rows
        half = float(((rows.mlm_high - rows.mlm_low) / 2).max())
        st.markdown(ablation_headline(rows, results.tokens))
        ui.chart(ablation_figure(rows, results.tokens), "ablation-real-weights")
        st.dataframe(ablation_table(rows), hide_index=True, width="stretch", column_config={
            "parameters": st.column_config.NumberColumn(format="localized"),
            "SVD energy": st.column_config.NumberColumn(format="%.2f", help="share of the word embeddings' energy "
                                                        "the truncated SVD to E kept"),
            "paper": st.column_config.TextColumn(help="ALBERT-base from scratch: parameters, average downstream score "
                                                      "(Tables 3 and 4; E = H is 768 there)")})
        for _, row in rows[rows.failed].iterrows():
            st.warning(f"E = {row.E}, {SHARING_LABELS[row.sharing]}: no result, the run failed on {results.device} "
                       f"({row.failure.rstrip('.')}).", icon=":material/error:")
        st.caption(f"{results.source} converted with `albert-lab albertize` (truncated SVD of the word embeddings to E, "
                   "shared blocks from the average of the layers they replace). **probe**: only the MLM and SOP heads "
                   "trained on the frozen converted encoder, what the conversion kept; **uptrained**: everything "
                   f"trained with MLM + SOP on long-mix, {results.tokens / 1e6:.1f}M tokens, the same recipe for every "
                   "row. Held-out long-mix (MLM, SOP on interior pairs) and the out-of-domain book (SOP), 95% Wilson "
                   f"intervals (the MLM ones, at most ±{half:.3f}, are narrower than the figure's markers). The paper's "
                   "columns: ALBERT-base trained from scratch (Tables 3 and 4): parameters and average downstream score, "
                   "where E = H means 768.")
        st.markdown(f"Made on {results.device} by `{results.command}`. The discussion is in **docs/ablation.md**, whose "
                    "table `scripts/make_ablation.py` writes from the same file.")
        ui.download(rows, "ablation-real-weights.csv")
