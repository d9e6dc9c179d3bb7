"""Sentence pairs: SOP and NSP heads side by side on pairs typed or uploaded, token
attributions for one decision, and the paper's Table 5 beside ours."""

import streamlit as st

from albert_lab.analysis.pairs import pairs_frame, score_pairs
from app.rooms.sentence_pairs import figures as pair_figures
from app.rooms.sentence_pairs import views as pair_views
from app.rooms.sentence_pairs.views import EXAMPLE_A, EXAMPLE_B
from app.shell import links, stoppable, ui
from app.shell.guard import guard
from app.shell.selection import Selection

st.caption("P(label 0) from each checkpoint's pair head: for an SOP head, P(A then B is the original order); "
           "for an NSP head, P(B is the next segment after A). Each pair is also scored swapped (B → A).")

if ui.need_checkpoints():
    bundles = Selection.read().usable_bundles()
    tab_type, tab_upload, tab_attr, tab_table5 = st.tabs(["Type a pair", "Upload pairs", "Token attributions", "Table 5"])
    with tab_type:
        # A form: typing does not rerun the models; the pair is scored (and explained) when submitted.
        typed = links.Controls(links.Control("pair_a", EXAMPLE_A), links.Control("pair_b", EXAMPLE_B))
        typed.restore()
        with st.form("pair_form"):
            st.text_area("Sentence A", key="pair_a")
            st.text_area("Sentence B", key="pair_b")
            st.form_submit_button("Score this pair", type="primary")
        typed.share()
        with guard("scoring"):
            with stoppable.queued():  # one pair: a moment of the cores, in turn with others' uploads
                scores = score_pairs(bundles, pairs_frame([typed["pair_a"]], [typed["pair_b"]]))
            ui.chart(pair_figures.pair_figure(scores), "pair-probabilities")
            pair_views.show_scores(scores, "typed", bundles)
        pair_views.trust_caption()

    with tab_upload:
        pair_views.upload_tab(bundles)
        ui.paper_note("Table 5: a model trained with NSP cannot do SOP (0.520, chance), while a model trained with SOP "
                      "does NSP well (0.789). NSP mostly learns topic shift; SOP forces a model to learn coherence.")

    with tab_attr:
        pair_views.attribution_tab(bundles, typed["pair_a"], typed["pair_b"])

    with tab_table5:
        pair_views.table5_tab(bundles)
