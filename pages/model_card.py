"""Model card: what a checkpoint is, where it came from, what it costs, what its heads can do."""

import pandas as pd
import plotly.express as px
import streamlit as st

from albert_lab.card import metric_lines
from app import ui
from app.figures import fmt_value, style

st.title("Model card")
if ui.need_checkpoints():
    names = [name for name, _ in ui.selected_sources()]
    ui.from_url("card_checkpoint", names[0], options=names)
    if st.session_state["card_checkpoint"] not in names:
        st.session_state["card_checkpoint"] = names[0]
    name = st.selectbox("Checkpoint", names, key="card_checkpoint")
    ui.share(card_checkpoint=name)
    source = dict(ui.selected_sources())[name]
    with ui.guard(f"reading {name}"):
        card = ui.checkpoint_card(source, name)
        if card["warning"]:
            st.warning(card["warning"], icon=":material/warning:")
        left, right = st.columns([3, 2])
        with left:
            st.subheader(card["spec_label"])
            st.caption(f"{card['source']} · {card['device']} · {card['dtype']}")
            params = card["params"]
            metric = st.columns(3)
            metric[0].metric("Parameters (paper's count)", f"{params['total'] / 1e6:.2f}M")
            metric[1].metric("Applied per forward pass", f"{params['applied'] / 1e6:.2f}M",
                             help="A shared block counts once per layer that applies it")
            metric[2].metric("FLOPs / token", f"{params['flops_per_token'] / 1e6:.1f}M",
                             help=f"forward, at sequence length {params['seq_len']}")
            rows = pd.DataFrame([{"component": k, **v} for k, v in params["by_component"].items()])
            long = rows.melt(id_vars="component", value_vars=["unique", "applied"], var_name="count", value_name="parameters")
            long["count"] = long["count"].map({"unique": "held in memory", "applied": "applied per forward pass"})
            fig = px.bar(long, x="parameters", y="component", color="count", barmode="group", orientation="h",
                         title="Parameters by component: held in memory vs applied")
            fig.update_yaxes(categoryorder="array", categoryarray=list(rows.component)[::-1])
            fig.update_xaxes(tickformat="~s")
            fig.update_traces(hovertemplate="%{y}: %{x:,} parameters")
            ui.chart(style(fig, x="parameters (count)", y="component", height=420, legend_title=""), f"{name}-parameters")
            ui.download(rows, f"{name}-parameters.csv")
        with right:
            heads = card["heads"]
            st.markdown("**Heads**")
            st.table(pd.DataFrame([{"head": "MLM", "status": heads["mlm"]},
                                   {"head": f"pair ({heads['pair_kind'].upper()})", "status": heads["pair"]}]))
            st.markdown("**Spec**")
            st.table(pd.DataFrame([{"field": k, "value": fmt_value(k, v)} for k, v in card["spec"].items()]))
            st.markdown("**Provenance**")
            provenance = {k: v for k, v in card["provenance"].items() if k != "train_config"}
            st.table(pd.DataFrame([{"field": k, "value": fmt_value(k, v)} for k, v in provenance.items()]))
            if card["metrics"]:
                st.markdown("**Held-out metrics**")
                st.table(pd.DataFrame(metric_lines(card["metrics"]), columns=["metric", "accuracy [95% interval] n"]))
        ui.paper_note("ALBERT's parameter savings come from two choices you can see above: the factorised "
                      "embedding (V x E + E x H instead of V x H) and cross-layer sharing (one block held in memory, "
                      "applied L times, so 'applied' exceeds 'held'). ALBERT-base has 12M parameters against "
                      "BERT-base's 108M (Table 1), yet runs about as many FLOPs per token.")
