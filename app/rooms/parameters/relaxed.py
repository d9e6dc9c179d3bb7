"""The Parameters page's 'Relaxed sharing' view (on real weights): a BERT made into an ALBERT whose
layer applications each add back a rank-r part of their own layer (albert_lab/relax.py, Bae et al.,
ICLR 2025), measured rank by rank against the source (analysis/relaxation.curve_and_energy)
through the runner, and a picked rank's model made and offered in the sidebar; below, the curve after
uptraining (uptrained.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_args

import pandas as pd
import streamlit as st

from albert_lab.analysis.registry import RELAXATION_COST
from albert_lab.errors import AlbertLabError
from albert_lab.figures import parameters
from albert_lab.figures.parameters import CURVE_AXES, MAP_LABELS
from albert_lab.spec import Init, Sharing
from app.rooms.parameters.state import ParametersState
from app.rooms.parameters.uptrained import uptrained_section
from app.shell import costs, draw, links, loading, making, pace, runner
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.runner import Part
from app.shell.selection import Selection
from app.shell.state import kept
from app.shell.text import fmt_duration

figures = shared(parameters)  # the library's figures, built once for every visitor

if TYPE_CHECKING:
    from albert_lab.analysis.common import Progress

key = keys(__file__)  # this room's widget keys
SHARINGS = [s for s in get_args(Sharing) if s != "none"]  # relax relaxes what is shared
INITS = list(get_args(Init))


@dataclass(frozen=True)
class Request:
    """The curve's inputs: what Compute was pressed for."""

    name: str  # the source's name in the sidebar's list
    source: str  # its folder or hub id
    ranks: str  # as typed
    sharing: str
    init: str


def bert_sources() -> dict[str, str]:
    """The BERTs a curve can start from, name -> source: those picked in the sidebar first, then the
    others it lists (shipped, runs, conversions). An added folder whose files cannot tell is offered,
    and refused in one line if it is an ALBERT."""
    listed = {c["name"]: c for c in loading.available_checkpoints()}
    found = {}
    for name, source in Selection.read().checkpoints:
        family = listed[name]["family"] if name in listed else _family(source, name)
        if family in ("bert", None):
            found[name] = source
    return found | {name: c["path"] for name, c in listed.items() if c["family"] == "bert" and name not in found}


def _family(source: str, name: str) -> str | None:
    try:
        described = loading.summary(source, name)
    except AlbertLabError:  # a folder that cannot load says so when the curve loads it
        return None
    return described.spec.family if described is not None else None


def relaxed_view() -> None:
    """Inputs, the Compute button with its estimate, and the curve once asked for."""
    st.markdown("**Relaxed sharing** (Bae et al., ICLR 2025, *Relaxed Recursive Transformers*): the ALBERT `albertize` "
                "makes of a BERT, each of whose layer applications adds back a rank-*r* part of what sharing took from "
                "its own layer (the truncated SVD of the source layer minus the shared block). Rank 0 is the pure "
                "ALBERT; full rank is the source BERT again, with more parameters than it had. Between the two ends: "
                "how much of the BERT each parameter added back buys.")
    sources = bert_sources()
    if not sources:
        st.info("No BERT to start from: pick or add one in the sidebar (the shipped bert-nsp and bert-sop-minilm are "
                "BERTs).", icon=":material/info:")
        return
    loading.import_model_code()  # torch's (relax and its curve): never beside the warm-up's import
    from albert_lab.analysis.relaxation import DEFAULT_PAIRS, DEFAULT_RANKS

    names = list(sources)
    controls = links.Controls(links.Control(key("relax_source"), names[0], options=names),
                              links.Control(key("relax_ranks"), ", ".join(map(str, DEFAULT_RANKS))),
                              links.Control(key("relax_sharing"), SHARINGS[0], options=SHARINGS),
                              links.Control(key("relax_init"), INITS[0], options=INITS))
    controls.restore()
    cols = st.columns([2, 2, 1, 1])
    name = cols[0].selectbox("Source BERT", names, key=key("relax_source"))
    ranks = cols[1].text_input("Ranks", key=key("relax_ranks"), help="whole numbers and 'full', separated by commas")
    sharing = cols[2].selectbox("Sharing", SHARINGS, key=key("relax_sharing"), help="what the shared block holds, and "
                                "so what the corrections give back: every layer's attention and FFN, or one half")
    init = cols[3].selectbox("Shared block from", INITS, key=key("relax_init"),
                             help="average: the mean of the layers; stepwise: the first of them; lower: layer 1")
    controls.share()
    request = Request(name, sources[name], ranks, sharing, init)
    state = kept(ParametersState)
    asked = st.button(f"Compute the curve ({estimate(request, DEFAULT_PAIRS)})", type="primary", key=key("relax_go"),
                      help="Every rank's model and the source read the same held-out pairs (MLM, then the pair task) "
                           "and the built-in sample (oscillation); kept for every visitor once computed")
    if asked:
        state.relax_asked = request
    if state.relax_asked != request:
        st.caption("The curve is computed when asked, in this visitor's turn; the button says how long, "
                   "at this server's own pace.")
    else:
        with guard("the relaxation curve"):
            done = compute(request, asked, DEFAULT_PAIRS)
            if done:
                draw_curve(request, *done[0])
    uptrained_section(request)


def estimate(request: Request, pairs: int) -> str:
    """'about 2 min' for this source and these ranks, from the measured cost (app.shell.costs)."""
    try:
        described = loading.summary(request.source, request.name)
    except AlbertLabError:  # said when the curve loads it
        described = None
    if described is None:  # a hub id: only loading it would tell
        return "a minute or more"
    count = len([r for r in request.ranks.split(",") if r.strip()])
    units = costs.relaxation_units(described.spec, count, pairs)
    return f"about {fmt_duration(pace.estimate(RELAXATION_COST.kind, units, RELAXATION_COST.seconds))}"


def compute(request: Request, asked: bool, pairs: int) -> list:
    """[(curve, energy)] through the runner (a turn, a bar, a Stop; kept for every visitor), or [] when stopped."""
    from albert_lab.relax import parse_ranks

    ranks = parse_ranks(request.ranks)
    selection = Selection.read().on_cpu(request.name, request.source)
    described = loading.summary(request.source, request.name)
    spec = described.spec if described is not None else selection.bundles()[0].spec
    part = Part.of(f"The relaxation curve of {request.name}", selection, curve_of, ranks, request.sharing, request.init,
                   pairs, units=costs.relaxation_units(spec, len(ranks), pairs), progress=True)
    return runner.run([part], RELAXATION_COST, asked=asked)


def curve_of(bundles: list, ranks: list, sharing: str, init: str, pairs: int, progress: Progress) -> tuple:
    """The curve and the energy of the selection's one BERT (`bundles`), as the runner's Part.of calls it."""
    from albert_lab.analysis.relaxation import curve_and_energy

    [bundle] = bundles
    return curve_and_energy(bundle.source, ranks, sharing=sharing, init=init, pairs=pairs, progress=progress)


def draw_curve(request: Request, curve: pd.DataFrame, energy: pd.DataFrame) -> None:
    """The curve (figure and table), which maps need rank most, and a rank's model made."""
    from albert_lab.analysis.relaxation import report

    for remark in report(curve).remarks:
        st.markdown(f"- {remark}.")
    x = st.radio("Parameters as", list(CURVE_AXES), horizontal=True, format_func=CURVE_AXES.get, key=key("relax_x"))
    pairs = int(curve.pair_n.max())
    draw.chart(figures.relaxation_figure(curve, x, f"{request.name}: what each rank gives back<br><sup>{request.sharing} shared, "
                                           f"shared blocks start from: {request.init}</sup>"), f"relaxation-{request.name.replace(':', '-')}")
    st.caption(f"MLM on {int(curve.mlm_n.max()):,} masked tokens, the pair task on {pairs:,} held-out pairs (95% Wilson "
               "intervals); KL: the source's MLM distribution against each model's at those tokens; roughness: "
               "Figure 1's zig-zag on the built-in sample; energy kept: of what sharing took from the layers (the "
               "squared norm of each layer's weights minus the shared block's), the share the rank-r corrections give "
               "back. The dotted line in each panel is the source BERT's value.")
    st.dataframe(curve_table(curve), hide_index=True, width="stretch")
    draw.download(curve, "relaxation-curve.csv", "Download the curve (CSV)")
    energy_section(energy)
    make_section(request, [r for r in curve["rank"] if r != "source"])


def curve_table(curve: pd.DataFrame) -> pd.DataFrame:
    """The curve as the page shows it: numbers rounded, the accuracies with their intervals."""
    pair, mlm = ([f"{a:.3f} [{lo:.3f}, {hi:.3f}]" if pd.notna(a) else "-" for a, lo, hi in zip(curve[f"{t}_accuracy"],
                 curve[f"{t}_low"], curve[f"{t}_high"])] for t in ("pair", "mlm"))
    return pd.DataFrame({"model": curve.model, "end": curve.end, "parameters": [f"{p:,}" for p in curve.parameters],
                         "share of source": [f"{s:.1%}" for s in curve.share_of_source],
                         "energy kept": [f"{e:.1%}" for e in curve.energy_kept],
                         "MLM accuracy": mlm,
                         f"{(next((t for t in curve.pair_task if t), '') or 'pair').upper()} accuracy": pair,
                         "KL": [f"{k:.3f}" if pd.notna(k) else "-" for k in curve.kl.clip(lower=0)],
                         "roughness": [f"{r:.3f}" if pd.notna(r) else "-" for r in curve.roughness]})


def energy_section(energy: pd.DataFrame) -> None:
    """A heatmap of the energy kept per application and map at a picked rank, each map's share of
    what sharing took, and a sentence naming the maps that carry most of a layer's own."""
    st.markdown("#### Which maps need rank most")
    ranks = list(dict.fromkeys(energy["rank"]))
    middle = [r for r in ranks if r not in ("0", "full")] or ranks
    rank = st.select_slider("At rank", ranks, value=middle[len(middle) // 2], key=key("relax_energy_rank"))
    left, right = st.columns([3, 2])  # side by side on a wide screen, one above the other on a phone
    draw.chart(figures.energy_figure(energy, rank), f"relaxation-energy-rank-{rank}", container=left, share=0.6)
    draw.chart(figures.taken_figure(energy), "relaxation-energy-by-map", container=right, share=0.4)
    st.markdown(energy_sentence(energy, rank))
    draw.download(energy, "relaxation-energy.csv", "Download the energy per application and map (CSV)")


def energy_sentence(energy: pd.DataFrame, rank: str) -> str:
    """Which maps sharing took most from, and which keep least at `rank`."""
    at = energy[energy["rank"] == rank]
    taken = at.groupby("map").energy.sum().sort_values(ascending=False)
    share = taken / taken.sum()
    kept_by = (at.energy * at.energy_kept).groupby(at["map"]).sum() / taken
    first, second = share.index[:2] if len(share) > 1 else (share.index[0], None)
    least = kept_by.idxmin()
    also = f", then {MAP_LABELS[second]} ({share[second]:.0%})" if second is not None else ""
    return (f"**{MAP_LABELS[first]}** carries most of what makes each layer its own: {share[first]:.0%} of the residual "
            f"energy, summed over the {at.application.nunique()} applications{also} (an FFN matrix has four times the "
            f"entries of an attention one). At rank {rank}, {MAP_LABELS[least]} keeps least of its residual "
            f"({kept_by[least]:.0%}): the map a rank budget should go to first.")


def make_section(request: Request, ranks: list[str]) -> None:
    """A picked rank's model saved under runs/relaxed/ (relax_into) and offered in the sidebar, as the
    Model card's albertize does."""
    st.markdown("#### Make this model")
    state = kept(ParametersState)
    cols = st.columns([1, 2], vertical_alignment="bottom")
    rank = cols[0].selectbox("Rank", ranks, index=min(1, len(ranks) - 1), key=key("relax_make_rank"))
    if cols[1].button(f"Make the rank-{rank} model (seconds)", key=key("relax_make")):
        with guard("relaxing"), st.spinner("Relaxing ..."):
            made = relax_into_runs(request, rank)
            state.relax_made = (made.converted, str(made.folder))
    if state.relax_made is not None:
        made_name, path = state.relax_made
        from albert_lab.checkpoint.files import read_card
        from albert_lab.checkpoint.sources import portable_name

        facts = read_card(Path(path)).get("relaxation", {})
        st.success(f"Saved {portable_name(path)}: ranks {facts.get('rank_attention')} (attention) and {facts.get('rank_ffn')} "
                   f"(FFN), {facts.get('parameters', 0):,} parameters ({facts.get('parameters_added', 0):+,} on the ALBERT), "
                   f"{facts.get('energy_kept', 0):.1%} of the residual energy kept. Converted, not trained: uptrain it "
                   "with `albert-lab train --init-from`.")
        making.offer(made_name, path, key("relax_pick"))


def relax_into_runs(request: Request, rank: str) -> making.Made:
    """relax into a fresh folder under runs/relaxed/ (named after the source and the choices), or the
    folder of the same model made before, in this visitor's turn (app/shell/making.py)."""
    loading.import_model_code()
    from albert_lab.relax import parse_rank, relax_into

    stem = f"{request.name.replace('/', '-').replace(':', '-')}-r{rank}-{request.sharing}-{request.init}"
    return making.make(f"The rank-{rank} model of {request.name}", relax_into, "relaxed", stem, request.source,
                       parse_rank(rank), sharing=request.sharing, init=request.init,
                       reused="The same model was made before")
