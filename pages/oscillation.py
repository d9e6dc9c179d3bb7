"""Oscillation: L2 distance and angle between each layer's input and output (the paper's
Figure 1), for several checkpoints overlaid."""

import plotly.express as px
import streamlit as st

from albert_lab.analysis.oscillation import oscillation, similarity_matrix, verdict
from albert_lab.data.samples import sample_texts
from app import ui
from app.figures import oscillation_figure

st.title("Layer-wise oscillation")


@st.cache_data(show_spinner="Running the models ...", max_entries=32)
def compute(sources: tuple, texts: tuple, aggregate: str, device: str, dtype: str):
    bundles = [ui.load_bundle(source, name) for name, source in sources]
    frame = oscillation(bundles, list(texts), aggregate)
    return frame, verdict(frame)


if ui.need_checkpoints():
    source = st.radio("Input", ["Built-in sample (held-out Wikipedia)", "My text"], horizontal=True, key="osc_input")
    if source.startswith("My"):
        text = st.text_area("Texts, separated by blank lines", height=150, key="osc_text",
                            value="The river flows through the old town. Its bridges date from the middle ages.")
        texts = [t for t in text.split("\n\n") if t.strip()]
    else:
        texts = sample_texts(16)
        st.caption(f"{len(texts)} held-out lead sections, e.g. \u201c{texts[0][:140]}...\u201d")
    aggregate = st.selectbox("Aggregate over tokens", ["mean", "median"], key="osc_agg",
                             help="Per-token distances and angles, then the mean (or median) over all non-padding tokens")
    with ui.guard("oscillation"):
        frame, verdicts = compute(tuple(ui.selected_sources()), tuple(texts), aggregate,
                                  st.session_state.get("device"), st.session_state.get("dtype"))
        fig = oscillation_figure(frame)
        st.plotly_chart(fig, width="stretch")
        for row in verdicts.itertuples():
            st.markdown(f"**{row.checkpoint}**: {row.verdict}; roughness {row.roughness:.2f} "
                        "(mean change between layers / mean distance: lower is smoother)")
        ui.download(frame, "oscillation.csv")
        ui.paper_note("Lan et al. plot these two curves for BERT-large and ALBERT-large (Figure 1): ALBERT's "
                      "transitions are much smoother than BERT's, and neither goes to 0, so the embeddings oscillate "
                      "rather than converge to the fixed point that Deep Equilibrium Models posit. The paper does not say "
                      "how tokens are aggregated; here: per token, then the " + aggregate + " over non-padding tokens.")

        with st.expander("Layer-by-layer cosine similarity"):
            name = st.selectbox("Checkpoint", [n for n, _ in ui.selected_sources()], key="osc_sim")
            bundle = ui.load_bundle(dict(ui.selected_sources())[name], name)
            sim = similarity_matrix(bundle, texts).pivot(index="layer_i", columns="layer_j", values="cosine")
            st.plotly_chart(px.imshow(sim, zmin=0, zmax=1, color_continuous_scale="Blues", text_auto=".2f",
                                      labels=dict(x="layer", y="layer", color="cosine"),
                                      title=f"{name}: mean cosine similarity of token states (0 = input to layer 1)"),
                            width="stretch")
