"""Depth lab: vanishing gradients in a deep plain MLP, and what BatchNorm, LayerNorm and
residual connections change; plus the coursework's VGG-8 vs VGG-38 in miniature."""


import pandas as pd
import streamlit as st

from albert_lab.analysis.registry import DISC_OPTIONS, VGG_OPTIONS
from albert_lab.figures import depth_lab
from albert_lab.figures.depth_lab import cut_at_divergence, divergence
from albert_lab.readings.depth_lab import reading as depth_reading
from app.rooms.depth_lab import cache as depth_cache
from app.rooms.depth_lab import runs as depth_runs
from app.rooms.depth_lab.cache import VARIANTS
from app.shell import draw, links, pace, rows, runner
from app.shell.built import shared
from app.shell.costs import VGG_COST
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.state import kept, set_widget, widget
from app.shell.text import fmt_duration

figures = shared(depth_lab)  # the library's figures, built once for every visitor

state = kept(depth_runs.DepthLabState)
key = keys(__file__)  # this room's widget keys


DISC, VGG = ({row.name: row for row in options} for options in (DISC_OPTIONS, VGG_OPTIONS))
# the nets' option rows, each value from a link checked against its widget's range (a slider refuses 500 of at most 48)
FORM = rows.Form(key, {
    "depth": (DISC["depth"], rows.Widget("Hidden layers", kind="slider")),
    "width": (DISC["width"], rows.Widget("Width", kind="select_slider")),
    "init": (DISC["init"], rows.Widget("Initialisation", help="gaussian: N(0, std^2), the notes' naive init; he: Kaiming normal")),
    "std": (DISC["init_std"], rows.Widget("Gaussian std", format="%.3f")),
    "steps": (DISC["steps"], rows.Widget("SGD steps (lr 0.1)", kind="slider", step=50)),
    "dropout": (DISC["dropout"], rows.Widget("Dropout", kind="slider", step=0.1)),
    "variants": (DISC["variants"], rows.Widget("Compare", kind="multiselect", options=tuple(VARIANTS),
                                               names=lambda v: v.replace("_", " "))),
    "vgg_steps": (VGG["steps"], rows.Widget("Steps", kind="slider", step=50)),
    "vgg_lr": (VGG["lr"], rows.Widget("SGD learning rate", kind="select_slider"))})
CONTROLS = FORM.controls("depth", "width", "init", "std", "steps", "dropout", "variants")
VGG_CONTROLS = FORM.controls("vgg_steps", "vgg_lr")
(tab_mlp, tab_vgg), _ = links.tabs(["Deep MLP on the disc", "VGG-8 vs VGG-38"], key("tab"))
with tab_mlp:
    CONTROLS.restore()
    depth, width, init, std = (FORM.draw(col, name) for col, name in zip(st.columns(4), ("depth", "width", "init", "std")))
    # room for the compared variants
    steps, dropout, variants = (FORM.draw(col, name) for col, name in zip(st.columns([1, 1, 2]), ("steps", "dropout", "variants")))
    CONTROLS.share()
    with guard("depth lab"):
        configs = [depth_cache.config(v, depth, width, init, std, steps, dropout) for v in variants]
        results = depth_runs.mlp_results(configs)  # after a Stop, those trained: the runner says so, and offers the others
        if results:
            history, flow = pd.concat([h for h, _ in results]), pd.concat([f for _, f in results])
            diverged = divergence(history)
            for model, step in diverged.items():
                st.warning(f"{model} diverged at step {step} (loss not finite or above 1,000): its curves stop there. "
                           + ("Try a smaller Gaussian std or add normalisation." if init == "gaussian" else
                              "Try fewer layers" + (" or less dropout" if dropout else "") + ", or add normalisation."),
                           icon=":material/trending_up:")
            if cut_at_divergence(history, diverged).empty:  # every variant diverged at its first step: no curve to draw
                start = f"a Gaussian initialisation of std {std:g}" if init == "gaussian" else f"the {init} initialisation"
                remedy = ("a smaller std (e.g. 0.1), the 'he' initialisation" if init == "gaussian" and std > 0.1
                          else "fewer layers")
                st.error(f"Every variant diverged at its first step, so there is nothing to draw: with {depth} layers "
                         f"and {start}, the loss exploded at once. Try {remedy}, or a variant with batchnorm.",
                         icon=":material/error:")
            else:
                figs = figures.depth_figures(history, flow)
                left, right = st.columns(2)
                draw.chart(figs["loss"], "depth-loss", container=left, share=0.5)
                draw.chart(figs["accuracy"], "depth-accuracy", container=right, share=0.5)
                draw.chart(figs["layers"], "depth-gradient-per-layer")
                trained_first = sorted(history.model.unique(), key=lambda m: m in diverged)  # a diverged model has a column or two
                if state.heat_for != repr(configs):  # new results: leave a model that now diverged
                    state.heat_for = repr(configs)
                    if widget(key("heat")) in diverged:
                        set_widget(key("heat"), trained_first[0])
                model = st.selectbox("Gradient flow over time for", trained_first, key=key("heat"),
                                     format_func=lambda m: f"{m} (diverged at step {diverged[m]})" if m in diverged else m)
                draw.chart(figures.flow_heatmap(flow, model), "depth-gradient-heatmap")
            draw.download(flow, "depth-gradflow.csv")
            if any(depth_cache.is_shipped(c) for c in configs):
                st.caption(depth_cache.shipped_note())
    draw.paper_note("The toy: a width-32 MLP of 16 hidden layers, naively initialised (Gaussian), does not train with "
                  "plain SGD; gradients vanish toward the input. BatchNorm (before or after the ReLU; after is "
                  "'the current default' in the notes) and residual connections restore them. Transformers, ALBERT "
                  "included, rely on residual connections and post-LN LayerNorm; ALBERT also drops dropout.",
                  source="the lecture notes (F. Fleuret, EE-559, 'Going deeper')")

with tab_vgg:
    VGG_CONTROLS.restore()
    steps, lr = (FORM.draw(col, name) for col, name in zip(st.columns(2), ("vgg_steps", "vgg_lr")))
    VGG_CONTROLS.share()
    missing = [part for part in depth_runs.vgg_parts(steps, lr) if not runner.is_kept(part)]
    if not missing:  # drawn below without a click: nothing to train
        st.caption("Ready for these settings (shipped with the app, or trained here earlier): drawn below, nothing to "
                   "train. " + (depth_cache.shipped_note() if depth_cache.is_shipped(steps=steps, lr=lr) else ""))
    else:
        eta = fmt_duration(pace.estimate(VGG_COST.kind, sum(part.units for part in missing), VGG_COST.seconds))
        said = (f"about {eta} at this machine's pace last time" if pace.measured(VGG_COST.kind) else
                f"about {eta} on two cores, longer when others use them")
        st.caption(f"Training {len(missing)} conv nets of {steps} steps takes {said}; a progress bar gives the time "
                   "left as it goes, and Stop keeps the nets already trained.")
    pressed = bool(missing) and st.button("Train VGG-8 and VGG-38, with and without BatchNorm", key=key("vgg_run"))
    if pressed:
        state.vgg_asked = (steps, lr)
    if state.vgg_asked == (steps, lr) or not missing:
        with guard("VGG comparison"):  # after a Stop, the nets trained: the runner says so, and offers the others
            results = depth_runs.vgg_results(steps, lr, asked=pressed or not missing)
            if results:
                history, flow = pd.concat([h for h, _ in results]), pd.concat([f for _, f in results])
                figs = figures.vgg_figures(history, flow)
                left, right = st.columns(2)
                draw.chart(figs["accuracy"], "vgg-accuracy", container=left, share=0.5)
                draw.chart(figs["layers"], "vgg-gradient-per-layer", container=right, share=0.5)
                st.markdown(depth_reading(history, flow, steps, lr))  # read off the curves drawn
                draw.download(history, "vgg-history.csv")
    draw.paper_note("VGG_38 without normalisation had average gradients of about 0 in "
                  "every layer and test accuracy around 1% on CIFAR-100 (chance); BatchNorm after every conv layer "
                  "brought it to 47-52%.", source="the coursework behind this view")
