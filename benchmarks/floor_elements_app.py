"""The model card's elements with none of its work: the same navigation, sidebar, widgets,
metrics, chart (SVG, app/rooms/model_card/svg.py) and tables, filled with constants; no torch, no albert_lab,
no checkpoint.

bench_app.py opens it on freshly started servers beside the workbench and the bare floor
(floor_app.py): card minus this page is what our own Python costs the first visit; this
page minus the floor is what the browser needs to draw the card's kinds of elements.
"""

import pandas as pd
import streamlit as st

from app.rooms.model_card.svg import parameters_by_component  # pure Python, the card's own chart

st.set_page_config(page_title="ALBERT Lab", page_icon="\U0001F9EA", layout="wide")

TITLES = [("Model card", ":material/badge:"), ("Parameters", ":material/calculate:"),
          ("Oscillation", ":material/ssid_chart:"), ("Gradient flow", ":material/waterfall_chart:"),
          ("Shared layer, applied again", ":material/repeat:"), ("Sentence pairs", ":material/compare_arrows:"),
          ("Training", ":material/model_training:"), ("Depth lab", ":material/stacked_line_chart:")]


def card() -> None:
    st.title("Model card")
    st.selectbox("Checkpoint", ["albert-sop", "bert-nsp"], key="card_checkpoint")
    left, right = st.columns([3, 2])
    with left:
        st.subheader("ALBERT, E=128 H=256 L=6 (shared all)")
        st.caption("checkpoints/albert-sop · cpu · float32")
        metric = st.columns(3)
        metric[0].metric("Parameters", "3.02M", help="Counted as the paper counts them")
        metric[1].metric("Applied per pass", "6.99M", help="Per forward pass: a shared block counts once per layer")
        metric[2].metric("FLOPs / token", "12.3M", help="forward, at sequence length 128")
        rows = pd.DataFrame({"component": ["embeddings", "encoder", "pooler", "MLM head", "pair head"],
                             "unique": [1_100_000, 790_000, 66_000, 1_000_000, 514],
                             "applied": [1_100_000, 4_740_000, 66_000, 1_000_000, 514]})
        st.markdown(parameters_by_component(rows), unsafe_allow_html=True)
        st.download_button("Download the data (CSV)", rows.to_csv(index=False).encode(), file_name="p.csv", mime="text/csv")
    with right:
        st.markdown("**Heads**")
        st.table(pd.DataFrame([{"head": "MLM", "status": "trained"}, {"head": "pair (SOP)", "status": "trained"}]))
        st.markdown("**Spec**")
        st.table(pd.DataFrame([{"field": f"field {i}", "value": f"{i * 128:,}"} for i in range(12)]))
        st.markdown("**Provenance**")
        st.table(pd.DataFrame([{"field": f"field {i}", "value": f"value {i}"} for i in range(10)]))
        st.markdown("**Held-out metrics**")
        st.table(pd.DataFrame([(f"SOP {i}", "0.81 [0.78, 0.84] n=1,000") for i in range(4)],
                              columns=["metric", "accuracy [95% interval] n"]))
    st.markdown(":material/menu_book: **From the paper.** ALBERT's parameter savings come from two choices.")


def other() -> None:
    st.title("Another page")


pages = [st.Page(card if i == 0 else other, title=title, icon=icon, url_path=f"p{i}", default=i == 0)
         for i, (title, icon) in enumerate(TITLES)]
page = st.navigation({"Models": pages[:2], "Inside the network": pages[2:5], "Tasks": pages[5:]})
with st.sidebar:
    st.markdown("### Checkpoints")
    st.multiselect("Compare", ["albert-sop", "bert-nsp", "albert-nsp", "bert-sop"],
                   default=["albert-sop", "bert-nsp", "albert-nsp", "bert-sop"], key="picked")
    with st.expander("Add a folder or hub id"):
        st.text_input("Folder (inside checkpoints/ or runs/) or hub id", key="add_source")
        st.button("Add", key="add_button")
    st.selectbox("Device", ["auto", "cpu"], key="device")
    st.selectbox("Precision", ["float32", "bfloat16"], key="dtype")
    st.radio("Save figures as", ["png", "svg"], key="image_format", horizontal=True)
    st.caption("Wikipedia text: CC BY-SA 4.0 (Wikipedia contributors).")
with st.sidebar.expander("Classroom presets", icon=":material/school:"):
    for label, target in (("Figure 1", 2), ("Table 4", 1), ("Table 5", 5), ("vanishing gradients", 7)):
        st.page_link(pages[target], label=label, query_params={"preset": label})
page.run()
