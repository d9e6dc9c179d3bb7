"""Depth lab: vanishing gradients in a deep plain MLP, and what BatchNorm, LayerNorm and
residual connections change; plus the coursework's VGG-8 vs VGG-38 in miniature."""

import plotly.express as px
import streamlit as st

from albert_lab.analysis.depth import DepthConfig, compare_vgg, train_disc
from app import ui

st.title("Depth lab")


@st.cache_data(show_spinner="Training the MLP ...", max_entries=64)
def run_disc(cfg: DepthConfig):
    return train_disc(cfg)


@st.cache_data(show_spinner="Training four conv nets on 8x8 digits (about half a minute) ...", max_entries=4)
def run_vgg(steps: int, lr: float):
    return compare_vgg(steps=steps, lr=lr)


tab_mlp, tab_vgg = st.tabs(["Deep MLP on the disc", "VGG-8 vs VGG-38"])
with tab_mlp:
    cols = st.columns(4)
    depth = cols[0].slider("Hidden layers", 1, 48, 16, key="dl_depth")
    width = cols[1].select_slider("Width", [8, 16, 32, 64, 128], 32, key="dl_width")
    init = cols[2].selectbox("Initialisation", ["gaussian", "pytorch", "he"], key="dl_init",
                             help="gaussian: N(0, std^2), the notes' naive init; he: Kaiming normal")
    std = cols[3].number_input("Gaussian std", 0.001, 2.0, 0.1, format="%.3f", key="dl_std")
    cols = st.columns(4)
    steps = cols[0].slider("SGD steps (lr 0.1)", 50, 2000, 300, 50, key="dl_steps")
    dropout = cols[1].slider("Dropout", 0.0, 0.8, 0.0, 0.1, key="dl_dropout")
    variants = cols[2].multiselect("Compare", ["none", "batchnorm_before", "batchnorm_after", "layernorm", "residual"],
                                   default=["none", "batchnorm_before", "residual"], key="dl_variants")
    with ui.guard("depth lab"):
        histories, flows = [], []
        for variant in variants:
            cfg = DepthConfig(depth=depth, width=width, init=init, init_std=std, steps=steps, dropout=dropout,
                              norm="none" if variant == "residual" else variant, residual=variant == "residual")
            history, flow = run_disc(cfg)
            histories.append(history)
            flows.append(flow)
        if histories:
            import pandas as pd

            history, flow = pd.concat(histories), pd.concat(flows)
            left, right = st.columns(2)
            left.plotly_chart(px.line(history, x="step", y="loss", color="model", title="Training loss"),
                              width="stretch")
            right.plotly_chart(px.line(history, x="step", y="test_accuracy", color="model", range_y=[0, 1],
                                       title="Test accuracy (chance: 0.5)"), width="stretch")
            last = flow[flow.step == flow.step.max()]
            fig = px.line(last, x="layer", y="mean_abs", color="model", markers=True, log_y=True,
                          title=f"Mean |dL/dW| per layer at step {int(flow.step.max())} (input -> output)")
            st.plotly_chart(fig, width="stretch")
            model = st.selectbox("Gradient flow over time for", history.model.unique(), key="dl_heat")
            grid = flow[flow.model == model].pivot(index="layer", columns="step", values="mean_abs")
            st.plotly_chart(px.imshow(grid.apply(lambda c: c.clip(lower=1e-12)).transform("log10"), aspect="auto",
                                      color_continuous_scale="Viridis", labels=dict(color="log10 mean |grad|"),
                                      title=f"{model}: log10 mean |dL/dW| by layer and step"), width="stretch")
            ui.download(flow, "depth-gradflow.csv")
    ui.paper_note("The lecture notes' toy: a 16-layer, width-32 MLP with naive Gaussian initialisation does not train "
                  "with plain SGD; gradients vanish toward the input. BatchNorm (before or after the ReLU; after is "
                  "'the current default' in the notes) and residual connections restore them. Transformers, ALBERT "
                  "included, rely on residual connections and post-LN LayerNorm; ALBERT also drops dropout.")

with tab_vgg:
    cols = st.columns(2)
    steps = cols[0].slider("Steps", 50, 600, 300, 50, key="vgg_steps")
    lr = cols[1].select_slider("SGD learning rate", [0.01, 0.02, 0.05, 0.1, 0.2], 0.1, key="vgg_lr")
    if st.button("Train VGG-8 and VGG-38, with and without BatchNorm", key="vgg_run") or st.session_state.get("vgg_done"):
        st.session_state["vgg_done"] = True
        with ui.guard("VGG comparison"):
            history, flow = run_vgg(steps, lr)
            left, right = st.columns(2)
            left.plotly_chart(px.line(history, x="step", y="test_accuracy", color="model", range_y=[0, 1],
                                      title="Test accuracy on 8x8 digits (chance: 0.1)"), width="stretch")
            last = flow[flow.step == flow.step.max()]
            right.plotly_chart(px.line(last, x="layer", y="mean_abs", color="model", log_y=True, markers=True,
                                       title="Mean |dL/dW| per layer at the last step"), width="stretch")
            ui.download(history, "vgg-history.csv")
    ui.paper_note("The coursework behind this view: VGG_38 without normalisation had average gradients of about 0 in "
                  "every layer and test accuracy around 1% on CIFAR-100 (chance); BatchNorm after every conv layer "
                  "brought it to 47-52%.")
