"""Sentence pairs: SOP and NSP heads side by side on pairs typed or uploaded, token
attributions for one decision, and the paper's Table 5 in miniature."""

import html
import json

import pandas as pd
import plotly.express as px
import streamlit as st

from albert_lab.analysis.attribution import attribute_pair
from albert_lab.analysis.intrinsic import intrinsic_eval
from albert_lab.analysis.pairs import pairs_frame, read_pairs, score_pairs, summarize
from albert_lab.data.corpus import load_builtin
from albert_lab.data.heldout import build_eval_pairs
from albert_lab.paper import TABLE5
from albert_lab.paths import checkpoints_dir
from app import ui

st.title("Sentence pairs: SOP vs NSP")
st.caption("P(label 0) from each checkpoint's pair head: for an SOP head, P(A then B is the original order); "
           "for an NSP head, P(B is the next segment after A). Each pair is also scored swapped (B -> A).")

EXAMPLE_A = "The Nile is a major north-flowing river in northeastern Africa."
EXAMPLE_B = "It flows into the Mediterranean Sea and is among the longest rivers in the world."


def show_scores(scores: pd.DataFrame, key: str) -> None:
    flagged = scores[scores.note != ""]
    for name in flagged.checkpoint.unique():
        st.warning(f"{name}: {flagged[flagged.checkpoint == name].note.iloc[0]} (see its model card)",
                   icon=":material/warning:")
    shown = scores[["row", "checkpoint", "head", "head_status", "p_ab", "p_ba", "prediction", "label", "correct",
                    "sentence_a", "sentence_b"]]
    st.dataframe(shown, hide_index=True, width="stretch",
                 column_config={"p_ab": st.column_config.ProgressColumn("P(label 0 | A->B)", min_value=0, max_value=1,
                                                                         format="%.3f"),
                                "p_ba": st.column_config.ProgressColumn("P(label 0 | B->A)", min_value=0, max_value=1,
                                                                         format="%.3f")})
    ui.download(scores, f"pair-scores-{key}.csv", "Download the scores (CSV)")


if ui.need_checkpoints():
    bundles = ui.selected_bundles()
    tab_type, tab_upload, tab_attr, tab_table5 = st.tabs(["Type a pair", "Upload pairs", "Token attributions",
                                                          "Table 5 in miniature"])
    with tab_type:
        a = st.text_area("Sentence A", EXAMPLE_A, key="pair_a")
        b = st.text_area("Sentence B", EXAMPLE_B, key="pair_b")
        with ui.guard("scoring"):
            scores = score_pairs(bundles, pairs_frame([a], [b]))
            long = scores.melt(id_vars=["checkpoint", "head"], value_vars=["p_ab", "p_ba"], var_name="order")
            long["order"] = long["order"].map({"p_ab": "A -> B", "p_ba": "B -> A"})
            fig = px.bar(long.dropna(), x="checkpoint", y="value", color="order", barmode="group", range_y=[0, 1],
                         hover_data=["head"], labels={"value": "P(label 0)"},
                         title="P(original order) for SOP heads, P(is next) for NSP heads")
            fig.add_hline(y=0.5, line_dash="dot")
            st.plotly_chart(fig, width="stretch")
            show_scores(scores, "typed")

    with tab_upload:
        st.markdown("A **.csv**, **.tsv** or **.jsonl** file with columns `sentence_a`, `sentence_b` and, optionally, "
                    "`label` (0 = A then B is the original order / B follows A, 1 = not). Up to 5 MB and 5,000 rows.")
        uploaded = st.file_uploader("Pairs file", type=["csv", "tsv", "jsonl"], key="pairs_file")
        if uploaded is not None:
            with ui.guard(f"reading {uploaded.name}"):
                parsed = read_pairs(ui.read_upload(uploaded), uploaded.name)
                for problem in parsed.problems[:20]:
                    st.warning(problem, icon=":material/warning:")
                if len(parsed.problems) > 20:
                    st.warning(f"... and {len(parsed.problems) - 20} more problems")
                scores = score_pairs(bundles, parsed.pairs)
                st.session_state["uploaded_scores"] = scores
                summary = summarize(scores)
                st.subheader(f"{len(parsed.pairs):,} pairs scored")
                st.dataframe(summary, hide_index=True, width="stretch")
                show_scores(scores, "uploaded")
        ui.paper_note("Table 5: a model trained with NSP cannot do SOP (52.0%, chance), while a model trained with SOP "
                      "does NSP well (78.9%). NSP mostly learns topic shift; SOP forces a model to learn coherence.")

    with tab_attr:
        usable = [bd for bd in bundles if bd.heads.pair_usable]
        if not usable:
            st.warning("None of the picked checkpoints has a usable pair head.")
        else:
            cols = st.columns([2, 1, 1])
            name = cols[0].selectbox("Checkpoint", [bd.name for bd in usable], key="attr_checkpoint")
            target = cols[1].radio("Explain", [0, 1], key="attr_target", horizontal=True,
                                   format_func=lambda t: "label 0 (in order / next)" if t == 0 else "label 1")
            steps = cols[2].slider("Integration steps", 10, 200, 50, 10, key="attr_steps")
            a = st.text_input("Sentence A", st.session_state.get("pair_a", EXAMPLE_A), key="attr_a")
            b = st.text_input("Sentence B", st.session_state.get("pair_b", EXAMPLE_B), key="attr_b")
            with ui.guard("attribution"):
                result = attribute_pair(next(bd for bd in usable if bd.name == name), a, b, target, steps)
                scale = max(1e-12, float(result.tokens.attribution.abs().max()))
                spans = []
                for row in result.tokens.itertuples():
                    strength = row.attribution / scale
                    color = f"rgba(44,160,44,{abs(strength):.2f})" if strength > 0 else f"rgba(214,39,40,{abs(strength):.2f})"
                    spans.append(f'<span title="{row.attribution:+.4f} ({row.segment})" style="background:{color};'
                                 f'padding:2px 1px;border-radius:3px">{html.escape(row.token.replace(chr(9601), " "))}</span>')
                st.html(f'<div style="line-height:2.2;font-size:1.05em">{"".join(spans)}</div>')
                st.caption(f"Green pushes P(label {target}) up, red pushes it down. P = {result.probability:.3f} for the "
                           f"input, {result.baseline_probability:.3f} for the baseline ({result.baseline}); convergence "
                           f"delta {result.delta:+.2e} (attributions sum to the difference up to it).")
                ui.download(result.tokens, "attributions.csv")

    with tab_table5:
        committed = checkpoints_dir() / "results.json"
        paper = pd.DataFrame([{"trained with": k.upper(), "MLM": v[0], "NSP": v[1], "SOP": v[2], "downstream avg": v[3]}
                              for k, v in TABLE5.items()])
        st.markdown("**The paper (ALBERT-base, accuracy %)**")
        st.dataframe(paper, hide_index=True)
        if committed.is_file():
            ours = pd.DataFrame(json.loads(committed.read_text()))
            st.markdown("**The shipped checkpoints** (`albert-lab evaluate`, held-out Wikipedia pairs)")
            st.dataframe(ours, hide_index=True)
        if st.button("Evaluate the picked checkpoints now", key="t5_run"):
            with ui.guard("evaluation"), st.spinner("Scoring held-out pairs ..."):
                pairs = build_eval_pairs(load_builtin().heldout)
                rows = [{"checkpoint": bd.name, "trained with": bd.spec.objective.upper(), "pair head": bd.heads.pair,
                         **intrinsic_eval(bd.model, bd.tokenizer, pairs, limit=200)} for bd in bundles]
                st.dataframe(pd.DataFrame(rows), hide_index=True)
                st.caption("200 pairs per task for speed; `albert-lab evaluate` scores all of them.")
