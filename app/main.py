"""ALBERT Lab in the browser: `streamlit run app/main.py` (or `albert-lab app`).

The entry point owns what all pages share (page config, the sidebar model picker);
each page is a thin script in pages/ loaded with st.Page.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # pages import `app.ui`
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
import torch  # noqa: E402

from app import ui  # noqa: E402

st.set_page_config(page_title="ALBERT Lab", page_icon=":material/science:", layout="wide")

PAGES = {
    "Models": [
        st.Page(ROOT / "pages" / "model_card.py", title="Model card", icon=":material/badge:", default=True),
        st.Page(ROOT / "pages" / "parameters.py", title="Parameters", icon=":material/calculate:"),
    ],
    "Inside the network": [
        st.Page(ROOT / "pages" / "oscillation.py", title="Oscillation", icon=":material/ssid_chart:"),
        st.Page(ROOT / "pages" / "gradient_flow.py", title="Gradient flow", icon=":material/waterfall_chart:"),
        st.Page(ROOT / "pages" / "shared_block.py", title="Shared layer, applied again", icon=":material/repeat:"),
    ],
    "Tasks": [
        st.Page(ROOT / "pages" / "sentence_pairs.py", title="Sentence pairs", icon=":material/compare_arrows:"),
        st.Page(ROOT / "pages" / "training.py", title="Training", icon=":material/model_training:"),
        st.Page(ROOT / "pages" / "depth_lab.py", title="Depth lab", icon=":material/stacked_line_chart:"),
    ],
}

page = st.navigation(PAGES)
# While a training run uses the cores, the app computes on one thread (see the notes
# on 2-vCPU machines in the reference); otherwise on all of them.
threads = 1 if ui.active_run() else max(1, os.cpu_count() or 1)
if torch.get_num_threads() != threads:
    torch.set_num_threads(threads)
ui.sidebar()
page.run()
ui.warm_up()  # after the page is drawn: model code imports in the background
