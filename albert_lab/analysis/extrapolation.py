"""Depth extrapolation: a shared block run for k x L applications, with a verdict in words
(converges, slows down, drifts, cycles). The engine and the masking are reapply.py's."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from albert_lab.analysis.intrinsic import wilson_interval
from albert_lab.analysis.reapply import (
    MLM_MISSING,
    encode,
    masked_accuracy,
    reapply_note,
    run_applications,
    state_geometry,
)
from albert_lab.analysis.registry import Report
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpus import MAX_LEN


def extrapolate(bundles: ModelBundle | Sequence[ModelBundle], texts: Sequence[str], repeat: int = 2,
                max_len: int = MAX_LEN, mask_rate: float = 0.15, seed: int = 0) -> pd.DataFrame:
    """Run each model's block for `repeat` x L applications. One row per (checkpoint,
    application a = 0..kL; 0 = the state entering layer 1): mean over real tokens of
    l2_step = ||h_a - h_{a-1}||, angle_step_deg, l2_to_depth_L = ||h_a - h_L||, norm, and
    l2_return (how close h_a comes back to h_{a-p}, p = 2..L), and masked-token accuracy
    through the model's MLM head; beyond_L marks a > L."""
    frames = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        inputs = encode(bundle, texts, max_len, mask_rate, seed)
        states = run_applications(bundle, inputs, repeat)
        accuracy = masked_accuracy(bundle, states, inputs)
        distance, angle, norm = state_geometry(states, inputs.attention_mask)  # (S, S), (S, S), (S,)
        depth, count = bundle.spec.num_layers, len(states)
        step = [float("nan")] + [float(distance[a, a - 1]) for a in range(1, count)]
        angle_step = [float("nan")] + [float(angle[a, a - 1]) for a in range(1, count)]
        # How close h_a comes back to a recent earlier state h_{a-p}, p = 2..L.
        back = [float("nan")] * min(2, count) + [float(distance[a, max(0, a - depth):a - 1].min()) for a in range(2, count)]
        cannot = reapply_note(bundle.spec)
        note = cannot or ""
        if bundle.heads.mlm == "missing":
            note = "; ".join(filter(None, [note, MLM_MISSING]))
        frames.append(pd.DataFrame(dict(
            checkpoint=bundle.name, family=bundle.spec.family, application=range(len(states)),
            l2_step=step, angle_step_deg=angle_step, l2_to_depth_L=distance[:, depth], l2_return=back, norm=norm,
            mlm_accuracy=accuracy,
            beyond_L=[a > depth for a in range(len(states))], depth_L=depth, repeat=1 if cannot else repeat, reapplicable=cannot is None,
            masked=len(inputs.labels), tokens=int(inputs.attention_mask.sum()), note=note,
        )))
    return pd.concat(frames, ignore_index=True)


def extrapolation_verdict(frame: pd.DataFrame, converge: float = 0.02, slow: float = 0.5, cycle: float = 0.5) -> pd.DataFrame:
    """In plain words, per checkpoint, what the block does beyond depth L (needs k >= 2).

    With s = the median step distance ||h_a - h_{a-1}|| over applications a = 2..L (the
    trained depth; the first step, out of the embeddings, is large in every model) and
    d = the last step distance:
    - converges: d < `converge` x s: the state has all but stopped moving (a fixed point).
    - cycles: not converging, and the last state lies closer to a state 2..L applications
      back than `cycle` x d (l2_return < cycle x d): it comes back where it was.
    - slows down: d < `slow` x s: the steps shrink, but the state still moves on.
    - drifts: none of these: the state keeps moving to new places at the pace within L.
    The bands are wide on purpose: two curves that look alike get the same word (a single
    cut between 'converges' and 'drifts' once split 8.8% from 11%). Checkpoints that cannot
    be applied again (see `note`) and k = 1 are 'not judged'.
    """
    rows = []
    for name, group in frame.groupby("checkpoint", sort=False):
        group = group.sort_values("application")
        depth, note = int(group.depth_L.iloc[0]), str(group.note.iloc[0])
        if not group.reapplicable.iloc[0] or not group.beyond_L.any():
            why = note.split("; ")[0] if not group.reapplicable.iloc[0] else "apply the block beyond L (k >= 2) to judge"
            rows.append(dict(checkpoint=name, verdict="not judged", words=why))
            continue
        steps = group.l2_step.to_numpy()
        reference = float(np.median(steps[2:depth + 1])) if depth > 1 else float(steps[1])
        last, back = float(steps[-1]), float(group.l2_return.iloc[-1])
        away = float(group.l2_to_depth_L.iloc[-1])
        norm = float(group.norm.iloc[depth])  # the state's size at depth L: the scale `away` is read against
        ends = (f"it ends at L2 distance {away:.3g} from its state at depth L, {away / norm:.0%} of that state's norm "
                f"({norm:.3g})") if norm > 0 else f"it ends at L2 distance {away:.3g} from its state at depth L"
        if last < converge * reference:
            verdict, words = "converges", step_words(last, reference, depth, f"{last / reference:.1%}")
        elif back < cycle * last:
            verdict, words = "cycles", (f"the last state is at L2 distance {back:.3g} from a state 2 to {depth} applications "
                                        f"back, under {cycle:g} of its last step ({last:.3g})")
        elif last < slow * reference:
            verdict, words = "slows down", (f"{step_words(last, reference, depth, f'only {last / reference:.0%}')}, but the "
                                            f"state still moves on: {ends}")
        else:
            verdict, words = "drifts", f"{step_words(last, reference, depth, f'still {last / reference:.0%}')}, and {ends}"
        acc = group.mlm_accuracy.to_numpy(dtype=float, na_value=np.nan)
        if not np.isnan(acc[-1]):
            words += "; " + accuracy_words(acc[depth], acc[-1], int(group.masked.iloc[0]), len(group) - 1)
        rows.append(dict(checkpoint=name, verdict=verdict, words=words))
    return pd.DataFrame(rows, columns=["checkpoint", "verdict", "words"])


def step_words(last: float, reference: float, depth: int, share: str) -> str:
    """'the last step (the L2 distance ...) is 11% of a typical step within the trained depth L = 6 (...)': each term
    defined where it is used."""
    typical = f"the median over applications 2 to {depth}" if depth > 1 else "the first application's"
    return (f"the last step (the L2 distance the state moves in the last application, {last:.3g}) is {share} of a "
            f"typical step within the trained depth L = {depth} ({typical}, {reference:.3g})")


def accuracy_words(at_depth: float, last: float, masked: int, applications: int) -> str:
    """Masked-token accuracy at depth L and after the last application, each with its 95%
    interval over the `masked` tokens, and a trend named only when the intervals do not
    overlap (3.1% -> 1.5% of a few hundred tokens was read as a fall)."""
    (lo_l, hi_l), (lo_e, hi_e) = (wilson_interval(round(a * masked), masked) for a in (at_depth, last))
    text = (f"masked-token accuracy {at_depth:.1%} [{lo_l:.1%}, {hi_l:.1%}] at depth L and {last:.1%} [{lo_e:.1%}, "
            f"{hi_e:.1%}] after {applications} applications, of {masked:,} masked token{'s' if masked != 1 else ''}")
    if hi_e < lo_l:
        return text + ": a fall beyond the 95% intervals"
    if lo_e > hi_l:
        return text + ": a rise beyond the 95% intervals"
    return text + ": the 95% intervals overlap, so no trend can be told on this many tokens"


def report(frame: pd.DataFrame) -> Report:
    """What `albert-lab extrapolate` prints below its table: each checkpoint's verdict and its words."""
    return Report(after=tuple(f"{row.checkpoint}: {row.verdict}: {row.words}" for row in extrapolation_verdict(frame).itertuples()))
