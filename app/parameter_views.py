"""The Parameters page's tables: the number columns they share, and the paper's Tables 1,
3 and 4 with exact counts beside the paper's."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_lab import paper
from app import ui

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
