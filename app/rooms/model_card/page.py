"""Model card: what a checkpoint is, where it came from, what it costs, what its heads can do."""

from collections.abc import Callable

import pandas as pd
import streamlit as st

from albert_lab.card import count_notes, metric_counts, metric_lines
from albert_lab.checkpoint.sources import portable_name
from app.rooms.model_card.albertize_form import albertize_section
from app.rooms.model_card.state import ModelCardState
from app.rooms.model_card.svg import parameters_by_component
from app.shell import draw, links, loading, making
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.selection import Selection
from app.shell.state import kept
from app.shell.text import field_label, fmt_value, metric_label, plain, provenance_view, si

key = keys(__file__)  # this room's widget keys


RELAXED_RANKS = ("rank_attention", "rank_ffn")  # a relaxed model's spec fields: 0 (none) on every other card


def _table(frame: pd.DataFrame) -> None:
    """st.table, which draws its cells as markdown, with each cell drawn as text: a card's fields and values
    come from the checkpoint's own files (its command, corpus, names), which a folder from elsewhere can fill."""
    st.table(frame.map(plain))


def probe_into_runs(chosen: Selection, name: str, task: str, train_pairs: int, held_pairs: int, steps: int,
                    log: Callable[[str], None]) -> making.Made:
    """Fit a probe into a fresh folder under runs/probes/, or give the folder of the same probe fitted
    before (the encoder's files, dtype and every choice alike), in this visitor's turn (app/shell/making.py).
    The cached model the other pages share is only read."""
    loading.import_model_code()  # the probe trains with torch: never beside the warm-up's import
    from albert_lab.training.probe import probe_into

    source = dict(chosen.checkpoints)[name]
    return making.make(f"The {task.upper()} probe of {name}", probe_into, "probes", f"{name.replace('/', '-')}-{task}-probe",
                       source, lambda: chosen.only([name]).bundles()[0], task, train_pairs=train_pairs,
                       heldout_pairs=held_pairs, steps=steps, dtype=chosen.dtype, log=log,
                       reused="The same probe was fitted before")


def probe_section(chosen: Selection, name: str, heads: dict) -> None:
    """Fit the missing or untrained pair head of `name` on its frozen encoder (albert-lab fit-head)."""
    from albert_lab.checkpoint.files import read_card

    with st.expander(f"Fit a pair head on the frozen encoder (a probe): the {heads['pair_kind'].upper()} head is {heads['pair']}"):
        st.markdown("Only a linear pair head (and the pooler, if it is missing) is trained, on [CLS] vectors of the frozen "
                    "encoder for pairs from the training documents of the built-in corpus; it is scored on held-out "
                    "pairs. The result is a new checkpoint whose card says **probe**, never 'trained'.")
        with st.form(key("probe_form")):
            cols = st.columns(4)
            task = cols[0].radio("Task", ["sop", "nsp"], index=["sop", "nsp"].index(heads["pair_kind"]), horizontal=True,
                                 format_func=str.upper, key=key("probe_task"))
            train_pairs = cols[1].number_input("Training pairs", 100, 20_000, 1000, step=100, key=key("probe_train"))
            held_pairs = cols[2].number_input("Held-out pairs", 100, 5_000, 500, step=100, key=key("probe_held"))
            steps = cols[3].number_input("Steps", 10, 5_000, 300, step=10, key=key("probe_steps"))
            go = st.form_submit_button("Fit the probe (about a minute)", type="primary")
        if go:
            with guard("fitting the probe"), st.status("Fitting the probe ...", expanded=True) as status:
                made = probe_into_runs(chosen, name, task, int(train_pairs), int(held_pairs), int(steps), status.write)
                out, reused = made.folder, made.reused
                probe = read_card(out)["probe"]
                status.update(label=f"{task.upper()} probe: held-out accuracy {probe['held_out_accuracy']:.3f} "
                                    f"[{probe['ci95'][0]:.2f}, {probe['ci95'][1]:.2f}] n={probe['pairs']['held_out']:,}"
                                    + (" (fitted before: reused)" if reused else ""), state="complete")
                kept(ModelCardState).probe_done = (out.name, str(out), probe["held_out_accuracy"])
        if kept(ModelCardState).probe_done is not None:
            probe_name, probe_path, accuracy = kept(ModelCardState).probe_done
            st.success(f"Saved {portable_name(probe_path)} (held-out accuracy {accuracy:.3f}).")
            making.offer(probe_name, probe_path, key("probe_pick"))


if loading.need_checkpoints():
    chosen = Selection.read()
    names = chosen.names
    controls = links.Controls(links.Control(key("checkpoint"), names[0], options=names))
    controls.restore()
    name = st.selectbox("Checkpoint", names, key=key("checkpoint"))
    controls.share()
    with guard(f"reading {name}"):
        card = chosen.card(name)
        if card["warning"]:
            st.warning(plain(f"{name}: {card['warning']}"), icon=":material/warning:")
        left, right = st.columns([3, 2])
        with left:
            st.subheader(plain(card["spec_label"]))
            st.caption(plain(f"{portable_name(card['source'])} · {card['device']} · {card['dtype']}"))  # no server path
            params = card["params"]
            metric = st.columns(3)
            # labels short enough for a third of the left column at 1280 px (longer ones were cut: "Applied per forwar...")
            metric[0].metric("Parameters", si(params["total"]), help="Counted as the paper counts them")
            metric[1].metric("Applied per pass", si(params["applied"]),
                             help="Per forward pass: a shared block counts once per layer that applies it")
            metric[2].metric("FLOPs / token", si(params["flops_per_token"]),
                             help=f"forward, at sequence length {params['seq_len']}")
            heads_count = params["total_with_heads"] - params["total"]
            st.caption(f"The encoder as the paper counts it, without its heads: the MLM and pair heads add "
                       f"{si(heads_count)}, drawn below ({si(params['total_with_heads'])} in all).")
            rows = pd.DataFrame([{"component": k, **v} for k, v in params["by_component"].items()])
            # Drawn on the server (app/rooms/model_card/svg.py): plotly.js would cost the landing page a second.
            figure = parameters_by_component(rows)
            st.markdown(figure, unsafe_allow_html=True)
            draw.download(rows, f"{name}-parameters.csv")
            st.download_button("Download the figure (SVG)", lambda: figure, on_click="ignore",
                               file_name=draw.file_name(f"{name}-parameters.svg"), mime="image/svg+xml",
                               icon=":material/download:", key=key("svg"))
        with right:
            heads = card["heads"]
            st.markdown("**Heads**")
            _table(pd.DataFrame([{"head": "MLM", "status": heads["mlm"]},
                                   {"head": f"pair ({heads['pair_kind'].upper()})", "status": heads["pair"]}]))
            st.markdown("**Spec**")
            _table(pd.DataFrame([{"field": field_label(k), "value": fmt_value(k, v)} for k, v in card["spec"].items()
                                    if not (k in RELAXED_RANKS and not v)]))  # a plain ALBERT has no relaxed ranks to list
            st.markdown("**Provenance**")
            rows, records = provenance_view(card)
            _table(pd.DataFrame(rows))
            for title, record in records.items():
                with st.expander(plain(title)):
                    _table(pd.DataFrame([{"field": field_label(k), "value": fmt_value(k, v)} for k, v in record.items()
                                           if v not in (None, "", [], {})]))
            if card["metrics"]:
                st.markdown("**Held-out metrics**")
                _table(pd.DataFrame([(metric_label(k), text) for k, text in metric_lines(card["metrics"])],
                                      columns=["metric", "accuracy [95% interval] n"]))
                for note in count_notes(metric_counts(card["metrics"])):
                    st.caption(note)
        if heads["pair"] in ("missing", "untrained"):
            probe_section(chosen, name, heads)
        if card["spec"]["family"] == "bert":
            albertize_section(name, dict(chosen.checkpoints)[name], card["spec"])
        draw.paper_note("ALBERT's parameter savings come from two choices you can see above: the factorised "
                      "embedding (V x E + E x H instead of V x H) and cross-layer sharing (one block held in memory, "
                      "applied L times, so 'applied' exceeds 'held'). ALBERT-base has 12M parameters against "
                      "BERT-base's 108M (Table 1), yet runs about as many FLOPs per token.")
