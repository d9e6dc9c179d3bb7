"""The Relaxed sharing view's curve after uptraining: a sweep (albert_lab/training/sweep.py) trains each
rank's model, the source and, where asked, BERTs of fewer of its layers alike, and measures them before
and after; drawn here beside the curve at initialisation, with its table and CSV. A sweep is started
from the page as a queued training run, with its estimate; the picked sweep is in the link."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from albert_lab.figures import parameters
from albert_lab.figures.parameters import CURVE_AXES
from albert_lab.paths import runs_dir
from app.shell import draw, links, owner
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.state import set_widget
from app.shell.text import fmt_duration, fmt_tokens

figures = shared(parameters)  # the library's figures, built once for every visitor

if TYPE_CHECKING:
    from albert_lab.training.config import TrainConfig
    from albert_lab.training.sweep_plan import SweepPlan

key = keys(__file__)  # this room's widget keys
STEPS = 300  # a sweep's steps unless changed: the bert-nsp sweep of docs/results.md
CORPUS: str | None = None  # what a sweep started here trains on (None: the default corpus, long-mix); a test makes it small


def uptrained_section(request) -> None:
    """Start a sweep of this source at these ranks; pick one of its sweeps and draw both curves."""
    from albert_lab.training.sweep import list_sweeps

    st.markdown("#### After uptraining")
    st.markdown("Bae et al. uptrain the relaxed model: the shared block and the corrections train together. A *sweep* "
                "trains every rank's model, the source itself and, where asked, BERTs of fewer of its layers for the same "
                "steps, from the same batches and seed, then measures them all again against the source as it was: what "
                "rank buys after training, told apart from what the training alone buys.")
    started = start_form(request)
    sweeps = [r for r in list_sweeps(runs_dir(), request.source)
              if (r.raw["sweep"].get("sharing"), r.raw["sweep"].get("init")) == (request.sharing, request.init)]
    if not sweeps:
        st.caption(f"No sweep of {request.name} ({request.sharing} shared, from {request.init}) in this server's runs yet.")
        return
    ids = [r.id for r in sweeps]
    control = links.Control(key("relax_sweep"), ids[0], options=ids)
    control.restore()
    if started is not None:
        set_widget(control.key, started)
    by_id = {r.id: r for r in sweeps}
    chosen = st.selectbox("Sweep", ids, key=control.key, format_func=lambda i: sweep_label(by_id[i]))
    links.Controls(control).share()
    with guard("the sweep"):
        st.fragment(run_every=5 if by_id[chosen].active else None)(draw_sweep)(runs_dir() / chosen, request.name)


def sweep_label(run) -> str:
    plan = run.raw["sweep"]
    layers = f", BERTs of {','.join(map(str, plan['layers']))} layers" if plan.get("layers") else ""
    return (f"{run.id}: ranks {','.join(map(str, plan['ranks']))}{layers}, {run.config.get('max_steps', 0):,} steps "
            f"({run.status})")


def draw_sweep(folder: Path, name: str) -> None:
    """A sweep's progress while it runs; its curves before and after once measured."""
    from albert_lab.analysis.relaxation import uptrain_report
    from albert_lab.training.sweep import read_sweep

    result = read_sweep(folder)
    run = result.run
    if run.active:
        st.progress(min(1.0, run.step / max(1, run.total_steps or 1)), text=f"{run.status}: {run.message or 'waiting'}")
        st.caption("One run trains at a time on this server: the sweep is one turn of the queue (Training page, Runs).")
    elif run.status != "succeeded":
        st.warning(f"The sweep {run.status}: {run.message or 'no message'}. Resume it with `albert-lab relax --resume "
                   f"{run.id}`.", icon=":material/warning:")
    if result.before is None or result.after is None:
        return
    steps = int(run.config.get("max_steps") or 0)
    x = st.radio("Parameters as", list(CURVE_AXES), horizontal=True, format_func=CURVE_AXES.get, key=key("relax_sweep_x"))
    title = f"{name}: at initialisation and after {steps:,} steps<br><sup>{run.id}</sup>"
    draw.chart(figures.uptrain_figure(result.before, result.after, x, title), f"relaxation-uptrained-{run.id}")
    tokens = f"{fmt_tokens(result.tokens)} tokens each" if result.tokens else "the same tokens"
    st.caption(f"Every model trained {steps:,} steps on the same batches ({tokens}), seed {run.config.get('seed', 0)}; "
               f"measured before and after on the same {int(result.after.pair_n.max()):,} held-out pairs per task (95% "
               "Wilson intervals; MLM's over its masked tokens). KL: the source's MLM distribution *before training* "
               "against each model's.")
    for remark in uptrain_report(result.before, result.after).remarks:
        st.markdown(f"- {remark}.")
    both = both_curves(result.before, result.after)
    st.dataframe(both_table(both), hide_index=True, width="stretch")
    draw.download(both, f"relaxation-uptrained-{run.id}.csv", "Download both curves (CSV)")


def both_curves(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The two curves in one frame, a `stage` column first: what the table shows and the CSV holds."""
    return pd.concat([before.assign(stage="before"), after.assign(stage="after")], ignore_index=True)[
        ["stage", *before.columns]]


def both_table(both: pd.DataFrame) -> pd.DataFrame:
    interval = lambda a, lo, hi: f"{a:.3f} [{lo:.3f}, {hi:.3f}]" if pd.notna(a) else "-"
    task = (next((t for t in both.pair_task if t), "") or "pair").upper()
    return pd.DataFrame({"stage": both.stage, "model": both.model, "parameters": [f"{p:,}" for p in both.parameters],
                         "share of source": [f"{s:.1%}" for s in both.share_of_source],
                         "MLM accuracy": [interval(*r) for r in zip(both.mlm_accuracy, both.mlm_low, both.mlm_high)],
                         f"{task} accuracy": [interval(*r) for r in zip(both.pair_accuracy, both.pair_low, both.pair_high)],
                         "KL": [f"{k:.3f}" if pd.notna(k) else "-" for k in both.kl.clip(lower=0)],
                         "roughness": [f"{r:.3f}" if pd.notna(r) else "-" for r in both.roughness]})


def plan_of(request, steps: int, layers: str) -> tuple[SweepPlan, TrainConfig]:
    """The sweep the form describes: the view's ranks, sharing and init; the source's own settings."""
    from albert_lab.analysis.relaxation import DEFAULT_PAIRS
    from albert_lab.relax import parse_ranks
    from albert_lab.training.sweep_plan import SweepPlan, check_plan, parse_layers, sweep_config

    plan = SweepPlan(source=str(request.source), ranks=tuple(map(str, parse_ranks(request.ranks))), pairs=DEFAULT_PAIRS,
                     layers=parse_layers(layers), sharing=request.sharing, init=request.init)
    check_plan(plan)
    config = sweep_config(request.source, steps, name=f"sweep-{request.name.replace(':', '-')}",
                          **({"corpus": CORPUS} if CORPUS else {}))
    return plan, config


def start_form(request) -> str | None:
    """Steps, BERTs of fewer layers, the estimate on the button; the id of a sweep started now."""
    from albert_lab.limits import APP_MAX_STEPS, check_disk_quota
    from albert_lab.training.queue import app_budget
    from albert_lab.training.sweep import start_sweep
    from albert_lab.training.sweep_plan import sweep_seconds

    with st.expander("Start a sweep"):
        cols = st.columns([1, 2])
        steps = cols[0].number_input("Steps", 1, APP_MAX_STEPS, STEPS, key=key("relax_sweep_steps"))
        layers = cols[1].text_input("BERTs of fewer layers", "", key=key("relax_sweep_layers"),
                                    help="numbers of the source's layers, such as 1,3: BERTs of a relaxed model's size, "
                                         "trained alike (evenly spaced layers kept)")
        with guard("the sweep's settings"):
            plan, config = plan_of(request, int(steps), layers)
            seconds = sweep_seconds(plan, config)
            st.caption(f"{len(plan.members())} models ({', '.join(m.name for m in plan.members())}), {int(steps):,} steps of "
                       f"{config.batch_size} pairs each, on {config.corpus}; a queued training run (Training page, Runs).")
            if st.button(f"Start the sweep (about {fmt_duration(seconds)} on two free cores)", key=key("relax_sweep_go")):
                check_disk_quota(runs_dir(), what="a new sweep")
                command = (f"albert-lab relax --checkpoint {request.source} --ranks {','.join(plan.ranks)} --uptrain {int(steps)}"
                           + (f" --layers {','.join(map(str, plan.layers))}" if plan.layers else "")
                           + f" --sharing {plan.sharing} --init {plan.init} (started from the app)")
                info = start_sweep(config, plan, runs_dir(), command=command, owner=owner.digest(), budget=app_budget(),
                                   address=owner.address())
                owner.claim(info.id)
                st.success(f"Sweep {info.id} {info.status}: follow it below, or under Training, Runs.")
                return info.id
    return None
