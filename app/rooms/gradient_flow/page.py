"""Gradient flow: mean and max |grad| per layer for the pretraining loss, per application of
a shared block, the summed gradient the optimizer sees, and gradients w.r.t. hidden states."""

from typing import Any

import streamlit as st

from albert_lab.analysis import gradflow
from albert_lab.analysis.gradflow import applied_components, gradient_flow, snapshot_frame
from albert_lab.analysis.registry import GRADFLOW
from albert_lab.data.samples import sample_texts
from albert_lab.figures import gradient_flow as gradient_flow_figures
from albert_lab.paths import runs_dir
from albert_lab.spec import Objective
from albert_lab.training.runs import list_runs
from app.shell import draw, links, loading, rows, runner
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.runner import Part
from app.shell.selection import Selection
from app.shell.state import set_widget, widget
from app.shell.text import plain

figures = shared(gradient_flow_figures)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys
SEED = GRADFLOW.option("seed")
# the controls' bounds, choices and defaults: the record's, as `albert-lab gradflow`'s
FORM = rows.Form(key, {
    "objective": (GRADFLOW.option("objective"), rows.Widget(
        "Pair loss", help="MLM + this inter-sentence loss, as in pretraining; it starts at the checkpoint's own (as "
                          "`albert-lab gradflow` does)")),
    "seed": (SEED, rows.Widget("Seed (pairs and masks)", help=f"{SEED.bounds.words()}, as `albert-lab gradflow --seed`"))})


def gradients(bundles: list, texts: tuple[str, ...], objective: Objective, seed: int, progress: Any) -> Any:
    """Gradient flow of the one checkpoint of the selection `bundles`, as the runner's Part.of calls it."""
    return gradient_flow(bundles[0], list(texts), objective=objective, seed=seed, progress=progress)


def own_objective(name: str) -> str:
    """The pair loss the checkpoint was trained with, by the library's one rule (the CLI's default too)."""
    with guard(f"reading {name}"):
        card = Selection.read().card(name)
        return gradflow.own_objective(card["heads"]["pair"], card["trained_with"])
    return "none"


def follow_checkpoint() -> None:
    """Another checkpoint picked: the pair loss follows to its own."""
    set_widget(key("objective"), own_objective(widget(key("checkpoint"))))


(tab_now, tab_runs), _ = links.tabs(["A checkpoint, now", "Over a training run"], key("tab"))
with tab_now:
    if loading.need_checkpoints():
        names = Selection.read().names
        checkpoint = links.Control(key("checkpoint"), names[0], options=names)
        checkpoint.restore()
        controls = links.Controls(checkpoint) + FORM.controls(defaults={"objective": own_objective(checkpoint.value)})
        controls.restore()
        cols = st.columns(3)
        name = cols[0].selectbox("Checkpoint", names, key=key("checkpoint"), on_change=follow_checkpoint)
        objective, seed = FORM.draw(cols[1], "objective"), FORM.draw(cols[2], "seed")
        controls.share()
        texts = sample_texts(16)
        with guard("gradient flow"):
            selection = Selection.read().only([name])
            card = selection.card(name)
            size, heads = card["params"]["applied"], card["heads"]
            own = card["trained_with"]
            if objective != "none" and heads["pair"] == "trained" and own in ("sop", "nsp") and objective != own:
                st.warning(f"{name}'s pair head was trained for {own.upper()}, not {objective.upper()}: this loss asks "
                           f"it a question it never learned, and its gradients are not the ones {name} trained with. "
                           f"Pick '{own}' for its own pretraining loss.", icon=":material/warning:")
            if objective != "none" and heads["pair"] == "untrained":
                st.warning(f"{name}'s {heads['pair_kind'].upper()} head was never trained (a random head, as its model card "
                           f"says): the {objective.upper()} part of this loss, and the gradients it sends into the encoder, "
                           "come from a random classifier. Pick 'none' for the MLM loss alone.", icon=":material/warning:")
            frames = runner.run([Part.of(f"Gradients of {name} on {len(texts)} texts", selection, gradients, tuple(texts),
                                         objective, int(seed), units=size / 1e6, progress=True)], GRADFLOW.cost)
            if frames:  # none when stopped
                [frame] = frames
                draw.chart(figures.gradflow_figure(frame, name), f"gradflow-{name}")
                left, right = st.columns(2)
                draw.chart(figures.hidden_grad_figure(frame), f"gradflow-hidden-{name}", container=left, share=0.5)
                shared = frame[frame.view == "shared_sum"]
                if len(shared):
                    draw.chart(figures.shared_sum_figure(frame), f"gradflow-shared-{name}", container=right, share=0.5)
                else:
                    right.info("This model shares no layers: each layer's gradient is its own.")
                outside = frame[frame.view == "outside"]
                st.dataframe(outside[["component", "mean_abs", "max_abs", "numel"]], hide_index=True,
                             column_config={"mean_abs": st.column_config.NumberColumn("mean |dL/dW|", format="%.3e"),
                                            "max_abs": st.column_config.NumberColumn("max |dL/dW|", format="%.3e"),
                                            "numel": st.column_config.NumberColumn("parameters", format="localized")})
                draw.download(frame, f"gradflow-{name}.csv")
                draw.paper_note("With cross-layer sharing, a parameter's .grad is the sum of what every layer that applies "
                              "it contributes, which hides how gradient flows through depth. The per-application curves "
                              "undo that sum: each layer application gets its own copy of the weights (same storage), and "
                              "the copies' gradients add up exactly to the shared .grad. The coursework behind this view "
                              "found VGG-38's gradients at ~0 in every layer without BatchNorm; transformers keep them "
                              "healthy with residual connections and post-LN LayerNorm.")

with tab_runs:
    every_run = list_runs(runs_dir())
    runs = [r for r in every_run if r.folder.gradflow.is_file()]
    if without := [r.name for r in every_run if r not in runs and r.status != "queued"]:
        st.caption(f"Not listed, no snapshot recorded: {plain(', '.join(without[:5]))}{' ...' if len(without) > 5 else ''}. A run "
                   "records one every `gradflow_every` steps (the Training page: a tenth of the run, at least 10) and one "
                   "at its last step, so a run has none until then, nor one cancelled before its first.")
    if not runs:
        st.info("No training run has recorded gradient-flow snapshots yet; start one on the Training page.")
    else:
        watched = st.selectbox("Run", runs, format_func=lambda r: f"{r.name} ({r.status})", key=key("run"))
        frame = snapshot_frame(watched.gradflow())
        component = st.radio("Component", applied_components(frame), horizontal=True, key=key("run_comp"))
        title = f"{watched.name}: mean |dL/dW| of {component} per layer application, over training"
        draw.chart(figures.gradflow_steps_figure(frame, component, title), f"gradflow-{watched.id}-{component}")
        draw.download(frame, f"gradflow-{watched.id}.csv")
