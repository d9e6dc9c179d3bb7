"""ALBERT Lab in the browser: `streamlit run app/main.py` (or `albert-lab app`).

The entry point owns what all pages share (page config, the sidebar model picker);
each page is a thin script in pages/ loaded with st.Page.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # pages import `app.ui`
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app import browser, links, owner, picker, presets, ui  # noqa: E402

st.set_page_config(page_title="ALBERT Lab", page_icon=ui.PAGE_ICON, layout="wide")

BY_STEM = {stem: st.Page(ROOT / "pages" / f"{stem}.py", title=title, icon=icon, default=stem == "model_card")
           for stem, title, icon in (
               ("model_card", "Model card", ":material/badge:"),
               ("parameters", "Parameters", ":material/calculate:"),
               ("oscillation", "Oscillation", ":material/ssid_chart:"),
               ("gradient_flow", "Gradient flow", ":material/waterfall_chart:"),
               ("shared_block", "Shared layer, applied again", ":material/repeat:"),
               ("sentence_pairs", "Sentence pairs", ":material/compare_arrows:"),
               ("training", "Training", ":material/model_training:"),
               ("depth_lab", "Depth lab", ":material/stacked_line_chart:"))}
PAGES = {
    "Models": [BY_STEM["model_card"], BY_STEM["parameters"]],
    "Inside the network": [BY_STEM["oscillation"], BY_STEM["gradient_flow"], BY_STEM["shared_block"]],
    "Tasks": [BY_STEM["sentence_pairs"], BY_STEM["training"], BY_STEM["depth_lab"]],
}

page = st.navigation(PAGES)
ui.use_threads(wait=False)  # one thread while a training run uses the cores
picker.sidebar()
presets.presets(BY_STEM)
st.session_state["_shared"] = False
page.run()
if not st.session_state["_shared"]:  # a page without inputs of its own still links the checkpoints picked
    links.share()
owner.remember()  # the browser keeps its owner token: a reload still owns the runs it started
browser.prefetch_plotly()  # the browser loads plotly.js while idle; the landing page has no plotly chart
ui.warm_up()  # after the page is drawn: model code imports in the background
