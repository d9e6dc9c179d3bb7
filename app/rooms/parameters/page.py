"""Parameters: a calculator over V/E/H/L/heads/FFN/sharing/groups, the paper's tables
with exact counts, curves of cost against E, H and L, and the paper's ablations on real weights."""

from typing import get_args

import pandas as pd
import streamlit as st

from albert_lab.figures import parameters
from albert_lab.params import count, sweep
from albert_lab.spec import PRESETS, SHARING_LABELS, Family, ModelSpec, derived_ffn, derived_heads
from app.rooms.parameters import views as parameter_views
from app.rooms.parameters.state import ParametersState
from app.rooms.parameters.views import COUNTS
from app.shell import draw, links
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.state import kept, set_widget, widget
from app.shell.text import plural, si

figures = shared(parameters)  # the library's figures, built once for every visitor

CALCULATOR_LABELS = {"vocab_size": "V (vocabulary)", "hidden_size": "H (hidden)", "num_layers": "L (layers)",
                     "embedding_size": "E (embedding)", "num_heads": "Heads", "ffn_size": "FFN size",
                     "num_groups": "Groups (N)", "inner_group_num": "Inner blocks per layer"}
key = keys(__file__)  # this room's widget keys


def follow_hidden(hidden_key: str, heads_key: str, ffn_key: str) -> None:
    """Heads and FFN follow a new H while they hold what the previous H derives (H/64, 4H): the CLI's rule.
    H = 4,096 from albert-base had kept 12 heads and FFN 3,072, and counted 524M against the CLI's 1.83B."""
    old, new = kept(ParametersState).previous_h.get(hidden_key), int(widget(hidden_key))
    if old is None:
        return
    if int(widget(heads_key)) == derived_heads(old):
        set_widget(heads_key, derived_heads(new))
    if int(widget(ffn_key)) == derived_ffn(old):
        set_widget(ffn_key, min(derived_ffn(new), 65536))


TABS = ["Calculator", "Paper tables", "Curves", "On real weights"]
# tabs that track state: a link can open one, hidden ones can wait; the link's names (params_tab, curve_axis) are
# those of the links made before the keys were derived
links.from_url(key("tab"), TABS[0], options=TABS, param="params_tab")
tab_calc, tab_tables, tab_curves, tab_real = st.tabs(TABS, key=key("tab"), on_change="rerun")

with tab_calc:
    links.from_url(key("preset"), "albert-base", options=list(PRESETS))
    preset = st.selectbox("Start from", list(PRESETS), key=key("preset"))
    base = PRESETS[preset]

    def linked(option: str, default, low: int = 0, high: int = 0, options=None) -> str:
        """The widget key of `option` for this preset, its value taken from the link (?calc_<option>=) when given."""
        widget_key = key(option, preset)
        links.from_url(widget_key, default, str if options else links.parse_int(low, high), param=key(option), options=options)
        return widget_key

    cols = st.columns(4)
    family = cols[0].selectbox("Family", get_args(Family), key=linked("fam", base.family, options=get_args(Family)))
    bert = family == "bert"
    vocab = cols[1].number_input("V (vocabulary)", 100, 1_000_000, step=1000, key=linked("v", base.vocab_size, 100, 1_000_000))
    # H moves by the number of heads, so every step lands on a valid H (heads must divide H)
    heads_key, ffn_key = linked("heads", base.num_heads, 1, 256), linked("ffn", base.ffn_size, 16, 65536)
    heads_now = int(widget(heads_key))
    hidden_key = linked("h", base.hidden_size, 16, 16384)
    hidden = cols[2].number_input("H (hidden)", 16, 16384, step=heads_now, key=hidden_key,
                                  on_change=follow_hidden, args=(hidden_key, heads_key, ffn_key),
                                  help=f"Steps by the number of heads ({heads_now}): H must be a multiple of it. Heads "
                                       "and FFN follow H (H/64 and 4H, as `albert-lab params --hidden` does) until "
                                       "you set them.")
    kept(ParametersState).previous_h[hidden_key] = int(hidden)
    layers = cols[3].number_input("L (layers)", 1, 96, key=linked("l", base.num_layers, 1, 96))
    cols = st.columns(4)
    if bert:  # one rule (E = H, no sharing, no groups): shown, not editable
        embedding = cols[0].number_input("E (embedding) = H", value=int(hidden), disabled=True,
                                         help="BERT has no factorisation: E = H")
    else:
        embedding = cols[0].number_input("E (embedding)", 8, 16384, step=32, key=linked("e", base.embedding_size, 8, 16384))
    heads = cols[1].number_input("Heads", 1, 256, key=heads_key)
    ffn = cols[2].number_input("FFN size", 16, 65536, step=256, key=ffn_key)
    links.from_url(key("seq"), 512, links.parse_int(8, 8192))
    seq_len = cols[3].number_input("Sequence length (for FLOPs)", 8, 8192, step=64, key=key("seq"))
    cols = st.columns(4)
    if bert:
        cols[0].selectbox("Sharing", ["none"], format_func=SHARING_LABELS.get, disabled=True, key=key("share_bert", preset),
                          help="BERT shares no layers")
        sharing, groups, inner = "none", int(layers), 1
    else:
        sharing = cols[0].selectbox("Sharing", list(SHARING_LABELS), format_func=SHARING_LABELS.get,
                                    key=linked("share", base.sharing, options=list(SHARING_LABELS)))
        groups = cols[1].number_input("Groups (N)", 1, 96, key=linked("groups", base.num_groups, 1, 96),
                                      help="L layers in N groups; layers in a group share (sec. 4.5)")
        inner = cols[2].number_input("Inner blocks per layer", 1, 8, key=linked("inner", base.inner_group_num, 1, 8))
    hidden = typed_hidden = int(hidden)
    if hidden % int(heads):
        snapped = max(int(heads), round(hidden / int(heads)) * int(heads))
        st.warning(f"H = {hidden:,} is not a multiple of the {int(heads)} heads; the results below use H = {snapped:,}, "
                   "the nearest multiple.", icon=":material/straighten:")
        hidden = snapped
    with guard("spec", labels=CALCULATOR_LABELS):
        spec = ModelSpec(family=family, vocab_size=int(vocab), hidden_size=hidden, num_layers=int(layers),
                         embedding_size=hidden if bert else int(embedding), num_heads=int(heads),
                         ffn_size=int(ffn), sharing=sharing,
                         num_groups=int(layers) if sharing == "none" else int(groups), inner_group_num=int(inner))
        report = count(spec, int(seq_len))
        st.caption(f"Counted: {spec.label}, {plural(spec.num_heads, 'head')}, FFN "
                   f"{spec.ffn_size:,}, V = {spec.vocab_size:,}. A field outlined in red holds a value outside its "
                   "range and is not counted.")
        m = st.columns(4)
        m[0].metric("Parameters (paper's count)", f"{report.total:,}")
        m[1].metric("With pretraining heads", f"{report.total_with_heads:,}")
        m[2].metric("Applied per forward pass", f"{report.applied:,}")
        m[3].metric("Forward FLOPs / token", si(report.flops_per_token))
        rows = pd.DataFrame([{"component": c.name, "unique": c.unique, "applied": c.applied,
                              "FLOPs/token": c.flops_per_token} for c in report.components])
        draw.chart(figures.parameter_bars(rows, f"{spec.label}: parameters by component (log scale)"), "parameters-by-component")
        st.dataframe(rows, hide_index=True, width="stretch", column_config=COUNTS)
        draw.download(rows, "parameters.csv")

with tab_tables:
    parameter_views.paper_tables()

with tab_curves:
    base = PRESETS["albert-base"]
    choices = {"E (embedding)": ("embedding_size", [32, 64, 128, 256, 512, 768, 1024]),
               "H (hidden)": ("hidden_size", [256, 512, 768, 1024, 2048, 4096]),
               "L (layers)": ("num_layers", [1, 3, 6, 12, 24, 48])}
    links.from_url(key("curve_axis"), "E (embedding)", options=list(choices), param="curve_axis")
    axis = st.radio("Vary", list(choices), horizontal=True, key=key("curve_axis"))
    links.share(calc_preset=preset, calc_fam=family, calc_v=int(vocab), calc_h=typed_hidden, calc_l=int(layers),
                calc_e=None if bert else int(embedding), calc_heads=int(heads), calc_ffn=int(ffn), calc_seq=int(seq_len),
                calc_share=None if bert else sharing, calc_groups=None if bert else int(groups),
                calc_inner=None if bert else int(inner), curve_axis=axis, params_tab=widget(key("tab")))
    field, values = choices[axis]
    frame = pd.DataFrame(sweep(base, field, values))
    frame["sharing"] = frame["sharing"].map(SHARING_LABELS)
    left, right = st.columns(2)
    draw.chart(figures.sweep_figure(frame, field, axis, "params"), f"params-vs-{field}", container=left, share=0.5)
    draw.chart(figures.sweep_figure(frame, field, axis, "flops_per_token"), f"flops-vs-{field}", container=right, share=0.5)
    draw.download(frame, f"sweep-{field}.csv")
    xxlarge, large = (count(PRESETS[name]).total / 1e6 for name in ("albert-xxlarge", "bert-large"))
    draw.paper_note("Sharing changes the parameter curves, not the FLOPs: every strategy applies the same L blocks. "
                  f"That is why ALBERT-xxlarge ({xxlarge:.1f}M parameters as specified; the paper's table says 235M) "
                  f"trains slower than BERT-large ({large:.1f}M; 334M in the paper): speed follows H and L, memory "
                  "follows what is shared.")

with tab_real:
    if tab_real.open:  # read and drawn only when chosen
        parameter_views.real_weights_tab()
