"""Oscillation: L2 distance and angle between each layer's input and output (the paper's
Figure 1), for several checkpoints overlaid."""

import pandas as pd
import streamlit as st

from albert_lab.analysis.oscillation import oscillation, similarity_matrix, verdict
from albert_lab.analysis.registry import OSCILLATION
from albert_lab.data.samples import sample_texts
from albert_lab.figures import oscillation as oscillation_figures
from albert_lab.readings.oscillation import PAPER, against_the_paper, smoother_sentence, verdict_words
from app.shell import costs, draw, links, loading, rows, runner
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.runner import Part
from app.shell.selection import Selection

figures = shared(oscillation_figures)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys
INPUTS = ["Built-in sample (held-out Wikipedia)", "My text"]
EXAMPLE = "The river flows through the old town. Its bridges date from the middle ages."
# the record's options, as `albert-lab oscillation`'s (its choices and default)
FORM = rows.Form(key, {"agg": (OSCILLATION.option("aggregate"), rows.Widget(
    "Aggregate over tokens", help="Per-token distances and angles, then the mean (or median) over all non-padding tokens"))})
CONTROLS = links.Controls(links.Control(key("input"), INPUTS[0], options=INPUTS), links.Control(key("text"), EXAMPLE)) \
    + FORM.controls()


if loading.need_checkpoints():
    CONTROLS.restore()
    source = st.radio("Input", INPUTS, horizontal=True, key=key("input"))
    if source.startswith("My"):
        text = st.text_area("Texts, separated by blank lines", height=150, key=key("text"))
        texts = [t for t in text.split("\n\n") if t.strip()]
        draw.warn_unreadable(texts)
    else:
        text = None
        texts = sample_texts(16)
        st.caption(f"{len(texts)} held-out lead sections, e.g. \u201c{texts[0][:140]}...\u201d")
    aggregate = FORM.draw(st, "agg")
    CONTROLS.share(text=text)  # a typed text travels; the built-in sample needs none
    with guard("oscillation"):
        chosen = Selection.read()
        frames = runner.run([Part.of(n, chosen.only([n]), oscillation, list(texts), aggregate,
                                     units=costs.record_units(OSCILLATION, chosen.card(n), texts)) for n in chosen.names],
                            OSCILLATION.cost, each=True)
        if frames:  # none when a Stop came before the first checkpoint was done
            frame = pd.concat(frames, ignore_index=True)
            verdicts = verdict(frame)
            where = (f"on your {len(texts)} text{'s' if len(texts) != 1 else ''}" if text is not None
                     else f"on {len(texts)} held-out Wikipedia lead sections")
            st.markdown("**Input vs output of each layer**")
            for column, fig, name in zip(st.columns(2), figures.oscillation_panels(frame), ("oscillation-l2", "oscillation-angle")):
                draw.chart(fig, name, container=column, share=0.5)  # columns: side by side, stacked on a phone
            for row in verdicts.itertuples():
                st.markdown(f"**{row.checkpoint}**: {verdict_words(row)}")
            left, right = st.columns([2, 3])
            draw.chart(figures.roughness_figure(verdicts), "oscillation-roughness", container=left, share=0.4)
            right.markdown(smoother_sentence(verdicts, where))
            right.caption("Roughness measures the zig-zag of the L2 curve: the share of its path (all its ups and downs "
                          "added) beyond the shortest path that turns at most once. A curve that only falls or only rises "
                          "scores 0, and so does one that turns once (falls, then rises: a smooth U); each extra bump up and "
                          "back adds twice its height to the path. A run of changes under 5% of the distance is not "
                          "counted (a bump no one sees), and the first transition (embeddings to the first layer), large "
                          "in every model, is left out. The verdicts above name each curve's shape.")
            draw.download(frame, "oscillation.csv")
            draw.paper_note(PAPER + " Neither goes to 0: the embeddings 'oscillate rather than converge' to the fixed point "
                          "that Deep Equilibrium Models posit (oscillate in the sense of never settling, which a smooth "
                          "decline does too). The paper does not say how tokens are aggregated; here: per token, then the "
                          + aggregate + " over non-padding tokens.")
            families = dict(zip(frame.checkpoint, frame.family, strict=False))
            st.markdown(against_the_paper(verdicts, families, {n: chosen.card(n) for n in verdicts.checkpoint}))

            with st.expander("Layer-by-layer cosine similarity"):
                name = st.selectbox("Checkpoint", chosen.names, key=key("sim"))
                [sim] = runner.run([Part.of(name, chosen.only([name]), similarity_matrix, list(texts))])
                sim = sim.pivot(index="layer_i", columns="layer_j", values="cosine")
                draw.chart(figures.similarity_figure(sim, name), f"{name}-layer-similarity")
