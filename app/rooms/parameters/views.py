"""The Parameters page's tables: the number columns they share, the paper's Tables 1,
3 and 4 with exact counts beside the paper's, and the "On real weights" tab: the same ablations
on real weights, or relaxed sharing (relaxed.py)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_lab import paper
from albert_lab.analysis.ablation import read_ablation
from albert_lab.figures import parameters
from albert_lab.spec import SHARING_LABELS
from app.rooms.parameters.relaxed import relaxed_view
from app.shell import draw, links
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys

figures = shared(parameters)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys
REAL_VIEWS = ["The paper's ablations (all-MiniLM-L6-v2)", "Relaxed sharing (rank r per layer)"]

COUNTS = {name: st.column_config.NumberColumn(format="localized")
          for name in ("unique", "applied", "FLOPs/token", "exact params", "params", "flops_per_token")}
COUNTS["note"] = st.column_config.TextColumn("note", width="large")  # the notes are sentences
# The paper's "Avg" column of Tables 3 and 4 (checked: 82.3 for not-shared E = 768 is the mean of 86.8, 79.0, 84.5,
# 92.8 and 68.2, each SQuAD's F1 and EM averaged first)
PAPER_AVG = ("the paper's average downstream score: the mean of five dev-set results after fine-tuning (SQuAD v1.1 and "
             "v2.0, each the mean of its F1 and exact match; MNLI, SST-2 and RACE accuracy), in percent")
COUNTS["paper avg"] = st.column_config.NumberColumn("paper avg", format="%.1f", help=PAPER_AVG.capitalize())


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
        st.caption(note + (f" **paper avg**: {PAPER_AVG}." if "paper avg" in frame else ""))
    draw.paper_note("Counts are exact for transformers' AlbertModel / BertModel with pooler (V=30,000 or 30,522, 512 "
                  "positions, 2 token types); the paper rounds, sometimes down and sometimes up, and its xxlarge "
                  "numbers disagree with themselves (233M in the text, 235M in the table).")


# ---- the paper's ablations on real weights --------------------------------------------------
CORRECTED = "†"  # marks an uptrained cell that a correction added after the runs qualifies
def interval(value: float, low: float, high: float, digits: int = 3) -> str:
    """An accuracy with its 95% interval to `digits` places, as the table shows it; a dash where there is none."""
    return "-" if pd.isna(value) else f"{value:.3f} [{low:.{digits}f}, {high:.{digits}f}]"


def ablation_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows as the page shows them: one per (E, sharing), accuracies with intervals; a
    failed row says 'failed' where its numbers would be, and an uptrained cell that a later
    correction qualifies carries a dagger (both explained below the table)."""
    def acc(name: str, uptrained: bool = True) -> pd.Series:
        digits = 3 if "mlm" in name else 2  # MLM intervals are +-0.002 (43,003 tokens), SOP ones +-0.02
        cells = rows.apply(lambda r: interval(r[name], r[f"{name}_low"], r[f"{name}_high"], digits), axis=1)
        if uptrained:
            cells = cells.where(rows.uptrain_note == "", cells + " " + CORRECTED)
        return cells.where(~rows.failed, "failed")

    return pd.DataFrame({
        "E": rows["E"], "sharing": rows.sharing.map(SHARING_LABELS),
        "parameters": [f"{n:,.0f}" if pd.notna(n) else "-" for n in rows.parameters],  # '-', not Streamlit's 'None'
        "SVD energy": [f"{e:.2f}" if pd.notna(e) else "-" for e in rows.energy_kept],
        "probe MLM": acc("probe_mlm", uptrained=False), "uptrained MLM": acc("mlm"),
        "SOP interior": acc("sop_interior"), "SOP out of domain": acc("sop_ood"),
        "paper": [f"{m:g}M, {avg:.1f}" if pd.notna(avg) else "-" for m, avg in zip(rows.paper_params_m, rows.paper_avg)]})


def ablation_headline(rows: pd.DataFrame, tokens: int) -> str:
    """Two sentences: what the conversion kept (the probe), and what uptraining measured,
    leaving out what a correction says was measured wrongly."""
    done, hidden = rows[~rows.failed], rows["E"].max()

    def pick(e: int, sharing: str, column: str) -> float:
        found = rows[(rows["E"] == e) & (rows.sharing == sharing)][column]
        return float(found.iloc[0]) if len(found) else float("nan")

    small = done[done["E"] < hidden]
    best = small.loc[small.probe_mlm.idxmax()]
    kept = (f"Right after conversion, all-shared at E = H kept {pick(hidden, 'all', 'probe_mlm'):.3f} masked-token accuracy "
            f"for a probe (MiniLM itself: {pick(hidden, 'none', 'probe_mlm'):.3f}), the E < H rows at most "
            f"{best.probe_mlm:.3f} (E = {best['E']}). ")
    uptrained = (f"After the same {tokens / 1e6:.1f}M tokens of uptraining, not shared reached {pick(hidden, 'none', 'mlm'):.3f} "
                 f"and all-shared {pick(hidden, 'all', 'mlm'):.3f} at E = H")
    paper = (f"the paper's from-scratch finding that E = 128 costs little ({pick(128, 'none', 'paper_avg'):.1f} against "
             f"{pick(hidden, 'none', 'paper_avg'):.1f} average score, not shared)")
    if (small.uptrain_note != "").any():
        return kept + uptrained + (f"; the E < H uptraining runs ({CORRECTED}) measured a conversion bug fixed since (the "
                                   f"note under the table says what the fixed conversion did on a CPU), so {paper} is not "
                                   "yet tested on real weights at this budget.")
    at_128 = done[done["E"] == 128]
    sharing = (f" (at E = 128, every sharing strategy {at_128.mlm.min():.3f}-{at_128.mlm.max():.3f})"
               if at_128.sharing.nunique() > 1 else "")
    return kept + uptrained + f", the E < H rows {small.mlm.min():.3f}-{small.mlm.max():.3f}{sharing}; compare {paper}."


def corrected_rows(rows: pd.DataFrame) -> str:
    """'E = 64 all-shared, ... and E = 128 shared-FFN': the rows, as a phrase."""
    names = [f"E = {r['E']} {SHARING_LABELS[r['sharing']]}" for _, r in rows.iterrows()]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def real_weights_tab() -> None:
    """One view at a time (a curve is a minute of work): the paper's ablations, measured once, or relaxed sharing."""
    controls = links.Controls(links.Control(key("real_view"), REAL_VIEWS[0],
                                            lambda raw: next((v for v in REAL_VIEWS if v.lower().startswith(raw.lower())), None)))
    controls.restore()
    view = st.radio("View", REAL_VIEWS, horizontal=True, key=key("real_view"), label_visibility="collapsed")
    controls.share(real_view=view.split(" ")[0].lower())
    (relaxed_view if view == REAL_VIEWS[1] else real_weights)()


def real_weights() -> None:
    """The paper's Tables 3 and 4 measured on all-MiniLM-L6-v2 (docs/ablation.json)."""
    with guard("the ablation on real weights"):
        results = read_ablation()
        rows = results.rows
        half = float(((rows.mlm_high - rows.mlm_low) / 2).max())
        st.markdown(ablation_headline(rows, results.tokens))
        draw.chart(figures.ablation_figure(rows, results.tokens), "ablation-real-weights")
        st.dataframe(ablation_table(rows), hide_index=True, width="stretch", column_config={
            "SVD energy": st.column_config.TextColumn(help="share of the word embeddings' energy the truncated SVD to "
                                                      "E kept"),
            "paper": st.column_config.TextColumn(help="ALBERT-base from scratch: parameters, then " + PAPER_AVG
                                                 + " (Tables 3 and 4; E = H is 768 there)")})
        for note, corrected in rows[rows.uptrain_note != ""].groupby("uptrain_note", sort=False):
            st.warning(f"{CORRECTED} The uptrained columns of {corrected_rows(corrected)} {note}", icon=":material/report:")
        for _, row in rows[rows.failed].iterrows():
            crowded = " while the other rows ran beside it on the same GPU" if "memory" in row.failure else ""
            st.warning(f"E = {row.E}, {SHARING_LABELS[row.sharing]}: no result, the run failed on {results.device}{crowded} "
                       f"({row.failure.rstrip('.')}).", icon=":material/error:")
        st.caption(f"{results.source} converted with `albert-lab albertize` (truncated SVD of the word embeddings to E, "
                   "shared blocks from the average of the layers they replace). **probe**: only the MLM and SOP heads "
                   "trained on the frozen converted encoder, what the conversion kept; **uptrained**: everything "
                   f"trained with MLM + SOP on long-mix, {results.tokens / 1e6:.1f}M tokens, the same recipe for every "
                   "row. Held-out long-mix (MLM, SOP on interior pairs) and the out-of-domain book (SOP), 95% Wilson "
                   f"intervals (the MLM ones, at most ±{half:.3f}, are narrower than the figure's markers). The paper's "
                   "columns: ALBERT-base trained from scratch (Tables 3 and 4): parameters and " + PAPER_AVG
                   + ", where E = H means 768.")
        st.markdown(f"Made on {results.device} by `{results.command}`. The discussion is in **docs/ablation.md**, whose "
                    "table `scripts/make_ablation.py` writes from the same file.")
        draw.download(rows, "ablation-real-weights.csv")
