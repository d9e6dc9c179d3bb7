"""Oscillation: L2 distance and angle between each layer's input and output (the paper's
Figure 1), for several checkpoints overlaid."""

import pandas as pd
import streamlit as st

from albert_lab.analysis.oscillation import oscillation, similarity_matrix, verdict
from albert_lab.data.samples import sample_texts
from app import links, ui
from app.guard import guard
from app.registry import room
from app.rooms.oscillation.figures import oscillation_figure, roughness_figure, similarity_figure
from app.selection import Selection, run
from app.stoppable import each_checkpoint
from app.text import smoother_sentence

st.title(room("oscillation").heading)

INPUTS = ["Built-in sample (held-out Wikipedia)", "My text"]
AGGREGATES = ["mean", "median"]
EXAMPLE = "The river flows through the old town. Its bridges date from the middle ages."
CONTROLS = links.Controls(links.Control("osc_input", INPUTS[0], options=INPUTS),
                          links.Control("osc_agg", "mean", options=AGGREGATES), links.Control("osc_text", EXAMPLE))


if ui.need_checkpoints():
    CONTROLS.restore()
    source = st.radio("Input", INPUTS, horizontal=True, key="osc_input")
    if source.startswith("My"):
        text = st.text_area("Texts, separated by blank lines", height=150, key="osc_text")
        texts = [t for t in text.split("\n\n") if t.strip()]
        ui.warn_unreadable(texts)
    else:
        text = None
        texts = sample_texts(16)
        st.caption(f"{len(texts)} held-out lead sections, e.g. \u201c{texts[0][:140]}...\u201d")
    aggregate = st.selectbox("Aggregate over tokens", AGGREGATES, key="osc_agg",
                             help="Per-token distances and angles, then the mean (or median) over all non-padding tokens")
    CONTROLS.share(osc_text=text)  # a typed text travels; the built-in sample needs none
    with guard("oscillation"):
        chosen = Selection.read()
        frames, _ = each_checkpoint("oscillation", (chosen, tuple(texts), aggregate), chosen.names,
                                    lambda n: run(oscillation, chosen.only([n]), list(texts), aggregate), 3.0)
        frame = pd.concat(frames, ignore_index=True)
        verdicts = verdict(frame)
        ui.chart(oscillation_figure(frame), "oscillation")
        for row in verdicts.itertuples():
            st.markdown(f"**{row.checkpoint}**: {row.verdict}; roughness {row.roughness:.2f} (lower is smoother)")
        left, right = st.columns([2, 3])
        ui.chart(roughness_figure(verdicts), "oscillation-roughness", container=left)
        right.markdown(smoother_sentence(verdicts))
        right.caption("Roughness measures how much the L2 curve goes back and forth: of all the change from one "
                      "layer to the next, the share that a later change in the other direction undoes. A curve that "
                      "only falls (steadily or in one big drop) scores 0; one that goes up and down scores up to 1. "
                      "As in the verdict, a run of changes under 5% of the distance is not counted (a bump no one "
                      "sees), and the first transition (embeddings to the first layer), large in every model, is left "
                      "out.")
        ui.download(frame, "oscillation.csv")
        ui.paper_note("Lan et al. plot these two curves for BERT-large and ALBERT-large (Figure 1): ALBERT's "
                      "transitions are much smoother than BERT's, and neither goes to 0, so the embeddings 'oscillate "
                      "rather than converge' to the fixed point that Deep Equilibrium Models posit: oscillate in the sense "
                      "of never settling, which a smooth decline does too. The paper does not say "
                      "how tokens are aggregated; here: per token, then the " + aggregate + " over non-padding tokens.")

        with st.expander("Layer-by-layer cosine similarity"):
            name = st.selectbox("Checkpoint", chosen.names, key="osc_sim")
            sim = run(similarity_matrix, chosen.only([name]), list(texts)).pivot(index="layer_i", columns="layer_j",
                                                                              values="cosine")
            ui.chart(similarity_figure(sim, name), f"{name}-layer-similarity")
