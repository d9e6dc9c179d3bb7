"""Sentence pairs: SOP and NSP heads side by side on pairs typed or uploaded, token
attributions for one decision, and the paper's Table 5 beside ours."""

import streamlit as st

from albert_lab.analysis.pairs import pairs_frame, score_pairs, summarize
from albert_lab.data.pairs_file import read_pairs
from albert_lab.data.textfile import MAX_PAIR_ROWS, MAX_UPLOAD_MB
from app import links, pair_figures, pair_views, ui
from app.guard import guard
from app.pair_views import EXAMPLE_A, EXAMPLE_B
from app.text import plural

st.title("Sentence pairs: SOP vs NSP")
st.caption("P(label 0) from each checkpoint's pair head: for an SOP head, P(A then B is the original order); "
           "for an NSP head, P(B is the next segment after A). Each pair is also scored swapped (B -> A).")

if ui.need_checkpoints():
    bundles = ui.selected_bundles()
    tab_type, tab_upload, tab_attr, tab_table5 = st.tabs(["Type a pair", "Upload pairs", "Token attributions", "Table 5"])
    with tab_type:
        # A form: typing does not rerun the models; the pair is scored (and explained) when submitted.
        links.from_url("pair_a", EXAMPLE_A)
        links.from_url("pair_b", EXAMPLE_B)
        with st.form("pair_form"):
            st.text_area("Sentence A", key="pair_a")
            st.text_area("Sentence B", key="pair_b")
            st.form_submit_button("Score this pair", type="primary")
        links.share(pair_a=st.session_state.pair_a, pair_b=st.session_state.pair_b)
        with guard("scoring"):
            scores = score_pairs(bundles, pairs_frame([st.session_state.pair_a], [st.session_state.pair_b]))
            ui.chart(pair_figures.pair_figure(scores), "pair-probabilities")
            pair_views.show_scores(scores, "typed")
        pair_views.trust_caption()

    with tab_upload:
        st.markdown("A **.csv**, **.tsv** or **.jsonl** file with columns `sentence_a`, `sentence_b` and, optionally, "
                    f"`label` (0 = A then B is the original order / B follows A, 1 = not). Up to {MAX_UPLOAD_MB} MB "
                    f"and {MAX_PAIR_ROWS:,} rows.")
        uploaded = st.file_uploader("Pairs file", type=["csv", "tsv", "jsonl"], key="pairs_file", max_upload_size=MAX_UPLOAD_MB)
        if uploaded is not None:
            with guard("reading the upload"):  # the reader's messages name the file
                parsed = read_pairs(ui.read_upload(uploaded), uploaded.name)
                for problem in parsed.problems[:20]:
                    st.warning(problem, icon=":material/warning:")
                if len(parsed.problems) > 20:
                    st.warning(f"... and {len(parsed.problems) - 20:,} more problems")
                with st.spinner(f"Scoring {len(parsed.pairs):,} pairs with {len(bundles)} checkpoint(s) ..."):
                    scores = score_pairs(bundles, parsed.pairs)
                summary = summarize(scores)
                summary = summary[summary.pairs > 0]  # checkpoints not scored are named in the warnings above
                st.subheader(f"{plural(len(parsed.pairs), 'pair')} scored from {uploaded.name}")
                pair_views.upload_chart(summary, scores)
                st.dataframe(summary, hide_index=True, width="stretch",
                             column_config={"head_status": "head is", "pairs": "pairs scored",
                                            "accuracy": st.column_config.NumberColumn("accuracy (labelled)", format="%.3f"),
                                            "labelled": "labelled pairs",
                                            "mean_p_ab": st.column_config.NumberColumn("mean P(label 0 | A->B)", format="%.3f"),
                                            "mean_p_ba": st.column_config.NumberColumn("mean P(label 0 | B->A)", format="%.3f"),
                                            "prefers_ab": st.column_config.NumberColumn(
                                                "prefers A->B", format="%.3f",
                                                help="Share of pairs with P(label 0) higher as given than swapped")})
                pair_views.show_scores(scores, "uploaded")
        ui.paper_note("Table 5: a model trained with NSP cannot do SOP (0.520, chance), while a model trained with SOP "
                      "does NSP well (0.789). NSP mostly learns topic shift; SOP forces a model to learn coherence.")

    with tab_attr:
        pair_views.attribution_tab(bundles)

    with tab_table5:
        pair_views.table5_tab(bundles)
