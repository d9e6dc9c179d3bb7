"""Parameters: a calculator over V/E/H/L/heads/FFN/sharing/groups, the paper's tables
with exact counts, curves of cost against E, H and L, and the paper's ablations on real weights."""

import pandas as pd
import streamlit as st

from albert_lab.analysis.registry import AnalysisOption
from albert_lab.fields import Range
from albert_lab.figures import parameters
from albert_lab.params import count, sweep
from albert_lab.spec import PRESETS, SHARING_LABELS, ModelSpec, derived_ffn, derived_heads
from albert_lab.training.options import SPEC_OPTIONS
from app.rooms.parameters import views as parameter_views
from app.rooms.parameters.state import ParametersState
from app.rooms.parameters.views import COUNTS
from app.shell import draw, links, rows
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.state import kept, set_widget, widget
from app.shell.text import plural, si

figures = shared(parameters)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys
SPEC = {row.name: row for row in SPEC_OPTIONS}  # the spec's rows, as `albert-lab params` takes them
# The calculator's options: a spec row each (its widget keyed by the preset, named in the link as the option: calc_v),
# in the page's ranges; and the sequence length its FLOPs are counted at
FORM = rows.Form(key, {
    "fam": (SPEC["family"], rows.Widget("Family")),
    "v": (SPEC["vocab_size"], rows.Widget("V (vocabulary)", low=100, high=1_000_000, step=1000)),
    "h": (SPEC["hidden_size"], rows.Widget("H (hidden)", low=16, high=16384)),
    "l": (SPEC["num_layers"], rows.Widget("L (layers)", high=96)),
    "e": (SPEC["embedding_size"], rows.Widget("E (embedding)", low=8, high=16384, step=32)),
    "heads": (SPEC["num_heads"], rows.Widget("Heads", high=256)),
    "ffn": (SPEC["ffn_size"], rows.Widget("FFN size", low=16, high=65536, step=256)),
    "share": (SPEC["sharing"], rows.Widget("Sharing", options=tuple(SHARING_LABELS), names=SHARING_LABELS.get)),
    "groups": (SPEC["num_groups"], rows.Widget("Groups (N)", high=96, help="L layers in N groups; layers in a group share (sec. 4.5)")),
    "inner": (SPEC["inner_group_num"], rows.Widget("Inner blocks per layer", high=8)),
    "seq": (AnalysisOption("seq_len", int, 512, bounds=Range(8, 8192)), rows.Widget("Sequence length (for FLOPs)", step=64))})
PER_PRESET = ("fam", "v", "h", "l", "e", "heads", "ffn", "share", "groups", "inner")
CALCULATOR_LABELS = {FORM.row(name).name: FORM.widget(name).label for name in PER_PRESET if name not in ("fam", "share")}


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
CURVES = {"E (embedding)": ("embedding_size", [32, 64, 128, 256, 512, 768, 1024]),
          "H (hidden)": ("hidden_size", [256, 512, 768, 1024, 2048, 4096]),
          "L (layers)": ("num_layers", [1, 3, 6, 12, 24, 48])}
# tabs that track state: a link can open one, hidden ones can wait; the link's names (params_tab, curve_axis) are
# those of the links made before the keys were derived
PAGE = links.Controls(links.Control(key("tab"), TABS[0], options=TABS, param="params_tab"),
                      links.Control(key("preset"), "albert-base", options=list(PRESETS)),
                      links.Control(key("curve_axis"), next(iter(CURVES)), options=list(CURVES), param="curve_axis"))
PAGE.restore()
tab_calc, tab_tables, tab_curves, tab_real = st.tabs(TABS, key=key("tab"), on_change="rerun")

with tab_calc:
    preset = st.selectbox("Start from", list(PRESETS), key=key("preset"))
    base = PRESETS[preset]
    calculator = links.Controls(*(FORM.control(name, getattr(base, FORM.row(name).name), preset) for name in PER_PRESET)) \
        + FORM.controls("seq")
    calculator.restore()
    hidden_key, heads_key, ffn_key = (key(name, preset) for name in ("h", "heads", "ffn"))

    cols = st.columns(4)
    family = FORM.draw(cols[0], "fam", preset)
    bert = family == "bert"
    vocab = FORM.draw(cols[1], "v", preset)
    # H moves by the number of heads, so every step lands on a valid H (heads must divide H)
    heads_now = int(widget(heads_key))
    hidden = FORM.draw(cols[2], "h", preset, step=heads_now, on_change=follow_hidden, args=(hidden_key, heads_key, ffn_key),
                       help=f"Steps by the number of heads ({heads_now}): H must be a multiple of it. Heads and FFN follow "
                            "H (H/64 and 4H, as `albert-lab params --hidden` does) until you set them.")
    kept(ParametersState).previous_h[hidden_key] = int(hidden)
    layers = FORM.draw(cols[3], "l", preset)
    cols = st.columns(4)
    if bert:  # one rule (E = H, no sharing, no groups): shown, not editable
        embedding = cols[0].number_input("E (embedding) = H", value=int(hidden), disabled=True,
                                         help="BERT has no factorisation: E = H")
    else:
        embedding = FORM.draw(cols[0], "e", preset)
    heads, ffn = FORM.draw(cols[1], "heads", preset), FORM.draw(cols[2], "ffn", preset)
    seq_len = FORM.draw(cols[3], "seq")
    cols = st.columns(4)
    if bert:
        cols[0].selectbox("Sharing", ["none"], format_func=SHARING_LABELS.get, disabled=True, key=key("share_bert", preset),
                          help="BERT shares no layers")
        sharing, groups, inner = "none", int(layers), 1
    else:
        sharing, groups, inner = (FORM.draw(col, name, preset) for col, name in zip(cols, ("share", "groups", "inner")))
    hidden = int(hidden)
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
    axis = st.radio("Vary", list(CURVES), horizontal=True, key=key("curve_axis"))
    # BERT's E, sharing, groups and inner blocks are its rule's, not the visitor's: none in the link
    (PAGE + calculator).share(**(dict(e=None, share=None, groups=None, inner=None) if bert else {}))
    field, values = CURVES[axis]
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
