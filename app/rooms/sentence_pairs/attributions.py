"""The Sentence pairs page's token attributions: integrated gradients of one checkpoint's
decision on the typed pair, on request, with its time estimate."""

from __future__ import annotations

import sys
from typing import Any

import streamlit as st

from albert_lab.analysis.attribution import attribute_pair, attribution_html
from albert_lab.analysis.registry import ATTRIBUTION
from app.rooms.sentence_pairs.common import PairsState, pace_words
from app.shell import costs, draw, pace, rows, runner
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.runner import Part
from app.shell.selection import Selection
from app.shell.state import kept
from app.shell.text import fmt_duration, plain

key = keys(__file__)  # this room's widget keys
# the record's options (bounds, choices, default), as the command line's
FORM = rows.Form(key, {
    "attr_target": (ATTRIBUTION.option("target"), rows.Widget(
        "Explain", kind="radio", names=lambda t: "label 0 (in order / next)" if t == 0 else "label 1")),
    "attr_steps": (ATTRIBUTION.option("n_steps"), rows.Widget("Integration steps", kind="slider", step=10))}, linked=False)


def attribution_estimate(bundle, a: str, b: str, steps: int) -> tuple[float, float]:
    """Integrated gradients of this pair: (units of work, seconds expected), from app.shell.costs."""
    units = ATTRIBUTION.units(bundle, (a, b), n_steps=steps)
    first = costs.FIRST_TIME_SECONDS["attribution"] if "captum" not in sys.modules else 0.0
    return units, pace.estimate("attribution", units, costs.SECONDS_PER_UNIT["attribution"]) + first


def attribute(bundles: list, a: str, b: str, target: int, steps: int, progress: Any) -> Any:
    """Integrated gradients of the one checkpoint of the selection `bundles`, as the runner's Part.of calls it."""
    return attribute_pair(bundles[0], a, b, target, steps, progress=progress)


def attribution_tab(bundles: list, a: str, b: str) -> None:
    """Integrated gradients for the pair typed under 'Type a pair' (`a`, `b`), on request."""
    usable = [bd for bd in bundles if bd.heads.pair_usable]
    if not usable:
        st.warning("None of the picked checkpoints has a usable pair head.")
    else:
        st.markdown(f"Explaining the pair from **Type a pair**: A = *{plain(a[:200])}*, B = *{plain(b[:200])}*")
        with st.form(key("attr_form")):
            cols = st.columns([2, 1, 1])
            name = cols[0].selectbox("Checkpoint", [bd.name for bd in usable], key=key("attr_checkpoint"))
            target, steps = FORM.draw(cols[1], "attr_target"), FORM.draw(cols[2], "attr_steps")
            explain = st.form_submit_button("Explain", type="primary")
        request = (name, a, b, target, steps)
        units, seconds = attribution_estimate(next(bd for bd in usable if bd.name == name), a, b, steps)
        part = Part.of(f"Integrated gradients of {name}, {steps} steps", Selection.read().only([name]), attribute,
                       a, b, target, steps, units=units, progress=True)
        if explain:
            with guard("attribution"):
                # asked anew: computed even if stopped before; the page keeps the result (PairsState), not the runner
                done = runner.run([part], ATTRIBUTION.cost, keep=False, asked=True)
                if done:  # none when stopped
                    kept(PairsState).attribution = (request, done[0])
        stored = kept(PairsState).attribution
        stopped = runner.was_stopped(ATTRIBUTION.cost.kind, part.key)
        if stopped:
            st.info("Stopped before it finished: press Explain to run it again.", icon=":material/stop_circle:")
        if stored is None:
            if not stopped:
                st.info(f"Press Explain to attribute the decision to the tokens: about {fmt_duration(seconds)} for "
                        f"{name} at {steps} steps ({pace_words('attribution')}).")
        else:
            (for_name, for_a, for_b, for_target, _), result = stored
            if (for_name, for_a, for_b, for_target) != request[:4]:
                st.warning("The pair or the settings changed since: press Explain again.", icon=":material/warning:")
            st.html(attribution_html(result.tokens))
            st.caption(f"{plain(for_name)}: green pushes P(label {for_target}) up, red pushes it down. P = {result.probability:.3f} "
                       f"for the input, {result.baseline_probability:.3f} for the baseline ({result.baseline}); convergence "
                       f"delta {result.delta:+.2e} (attributions sum to the difference up to it).")
            draw.download(result.tokens, "attributions.csv")
