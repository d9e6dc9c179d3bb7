"""Classroom presets: links in the sidebar that open a page on a known view."""

from __future__ import annotations

from typing import Any

import streamlit as st

# Classroom presets: (label, page file stem, link parameters). Labels fit the sidebar's width
# (about 26 characters; longer ones are cut off), the link's tooltip says more.
PRESETS: list[tuple[str, str, dict[str, str]]] = [
    ("Figure 1: ALBERT vs BERT", "oscillation",
     {"ckpt": "albert-sop,bert-nsp", "osc_input": "Built-in sample (held-out Wikipedia)", "osc_agg": "mean"}),
    ("Vanishing gradients (MLP)", "depth_lab",
     {"dl_depth": "16", "dl_width": "32", "dl_init": "gaussian", "dl_std": "0.1", "dl_steps": "300", "dl_dropout": "0.0",
      "dl_variants": "none,batchnorm_before,residual"}),
    ("Gradients, shared layer", "gradient_flow",
     {"ckpt": "albert-sop,bert-nsp", "gf_checkpoint": "albert-sop", "gf_objective": "sop", "gf_seed": "0"}),
]

PRESET_HELP = {"oscillation": "The paper's Figure 1: layer-wise oscillation of ALBERT (shared) against BERT (not shared)",
               "depth_lab": "Vanishing gradients in a 16-layer MLP, and what BatchNorm and residual connections do",
               "gradient_flow": "Gradient flow through a shared layer, per application, for albert-sop"}


def presets(pages: dict[str, Any]) -> None:
    """Links that open a page on a known view (the sidebar's 'Classroom presets')."""
    with st.sidebar.expander("Classroom presets", icon=":material/school:"):
        for label, stem, params in PRESETS:
            if stem in pages:
                st.page_link(pages[stem], label=label, query_params=params, help=PRESET_HELP.get(stem))
