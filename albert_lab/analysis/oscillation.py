"""Layer-wise oscillation of hidden states: the paper's L2-distance / angle figure.

For each layer l = 1..L (each block application when inner_group_num > 1), compare
the hidden state entering the layer, h_{l-1}, with the one leaving it, h_l, token by
token: the L2 distance ||h_l - h_{l-1}|| and the angle arccos(cos(h_l, h_{l-1})) in
degrees. For ALBERT h_0 is the state after the E -> H projection.

The paper does not say how tokens are aggregated. Our documented choice: per-token
values, then the mean (or median) over all non-padding tokens of the batch ([CLS]
and [SEP] included); `spread` is the standard deviation across input texts of each
text's own mean, so a reader can see how much the curve depends on the input.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from albert_lab.analysis.reapply import encode, run_applications, token_geometry
from albert_lab.analysis.registry import Aggregate, Report
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpus import MAX_LEN
from albert_lab.errors import DataError


def hidden_states(bundle: ModelBundle, texts: Sequence[str], max_len: int = MAX_LEN) -> tuple[list[torch.Tensor], torch.Tensor]:
    """(L+1) hidden states, each (B, T, H) in float32, and the (B, T) padding mask: the
    layer-application engine's states (reapply.run_applications) on the unmasked texts."""
    inputs = encode(bundle, texts, max_len, mask_rate=0.0)
    return [h.float() for h in run_applications(bundle, inputs)], inputs.attention_mask.bool()


def per_token_transitions(states: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """L2 distance and angle (degrees) of every token at every layer, two (L, B, T) tensors,
    and every state's norm, (L+1, B, T): reapply.token_geometry of consecutive states, in
    the states' dtype (float32 from `hidden_states`: the frame's numbers, and the exact
    ties of the verdict's roughness between equal curves, are float32's)."""
    geometry = token_geometry(torch.stack(states))  # (B, T, L+1, L+1), float64

    def consecutive(pairs: torch.Tensor) -> torch.Tensor:  # (B, T, L+1, L+1) -> (L, B, T)
        return pairs.diagonal(offset=1, dim1=-2, dim2=-1).permute(2, 0, 1).to(states[0].dtype)

    return consecutive(geometry.distance), consecutive(geometry.angle), geometry.norm.permute(2, 0, 1).to(states[0].dtype)


def oscillation(bundles: ModelBundle | Sequence[ModelBundle], texts: Sequence[str], aggregate: Aggregate = "mean",
                max_len: int = MAX_LEN) -> pd.DataFrame:
    """Tidy frame, one row per (checkpoint, layer): l2, angle_deg, their spread across
    texts, and the norms of the hidden states entering and leaving the layer."""
    if aggregate not in ("mean", "median"):
        raise DataError(f"aggregate: {aggregate!r} is not allowed; allowed: 'mean', 'median'")
    frames = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        states, mask = hidden_states(bundle, texts, max_len)
        distance, angle, norms = per_token_transitions(states)  # (L, B, T), (L, B, T), (L+1, B, T)
        rows = []
        for layer in range(distance.shape[0]):
            rows.append(dict(
                checkpoint=bundle.name, family=bundle.spec.family, layer=layer + 1,
                l2=_reduce(distance[layer][mask], aggregate), angle_deg=_reduce(angle[layer][mask], aggregate),
                l2_spread=_spread(distance[layer], mask), angle_spread=_spread(angle[layer], mask),
                norm_in=_reduce(norms[layer][mask], aggregate), norm_out=_reduce(norms[layer + 1][mask], aggregate),
                tokens=int(mask.sum()), texts=len(texts), aggregate=aggregate,
            ))
        frames.append(pd.DataFrame(rows))
    return pd.concat(frames, ignore_index=True)


def _reduce(values: torch.Tensor, aggregate: Aggregate) -> float:
    return float(values.mean() if aggregate == "mean" else values.median())


def _spread(values: torch.Tensor, mask: torch.Tensor) -> float:
    """Standard deviation across texts of each text's mean over its tokens."""
    per_text = (values * mask).sum(-1) / mask.sum(-1)
    return float(per_text.std()) if len(per_text) > 1 else 0.0


def similarity_matrix(bundles: ModelBundle | Sequence[ModelBundle], texts: Sequence[str], max_len: int = MAX_LEN) -> pd.DataFrame:
    """Mean per-token cosine similarity between the hidden states after every pair of
    layers (0 = input to layer 1): tidy rows (checkpoint, layer_i, layer_j, cosine)."""
    rows = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        states, mask = hidden_states(bundle, texts, max_len)
        cos = token_geometry(torch.stack([h[mask] for h in states])).cosine.mean(0)  # (L+1, L+1), from (N, L+1, L+1)
        n = len(states)
        rows += [dict(checkpoint=bundle.name, layer_i=i, layer_j=j, cosine=float(cos[i, j])) for i in range(n) for j in range(n)]
    return pd.DataFrame(rows)


def verdict(frame: pd.DataFrame) -> pd.DataFrame:
    """Per checkpoint, in plain words: do the transitions shrink toward 0 (converging
    to a fixed point, as Deep Equilibrium Models would have it), fall or grow steadily,
    turn once, or zig-zag (the paper's BERT)? `shape` names it in one word ('falls', 'zig-zag', ...),
    `headline` in the words `verdict` starts with ('falls steadily, never settles', 'zig-zag', ...) and
    `detail` the words after it (the page sets them apart: `verdict` is "headline: detail"),
    `turns` counts the L2 curve's changes of direction and `roughness` (`_roughness`: the share of
    its path beyond one turn; lower is smoother) measures the zig-zag, both on the same runs
    (`_turning_points`)."""
    rows = []
    for name, group in frame.groupby("checkpoint", sort=False):
        l2 = group.sort_values("layer")["l2"].to_numpy()
        angle = group.sort_values("layer")["angle_deg"].to_numpy()
        # The first transition (embeddings -> first layer) is large in every model; judge
        # convergence against the second one, and the shape from the second one on (BERT's
        # zig-zag is in its early layers as much as in its last ones).
        reference = l2[1] if len(l2) > 2 else l2[0]
        first = 1 if len(l2) > 2 else 0
        judged = l2[first:]
        # A run of changes of one sign counts as one (a fall of 7.0 -> 6.7 -> 6.45 is a fall, though neither step
        # is); a run under 5% of the distance (a bump no one sees) is no change of direction.
        tolerance = 0.05 * float(np.mean(judged))
        points = _turning_points(judged, tolerance)
        runs = np.diff(judged[points])
        turns = len(runs) - 1
        rises, level = bool(np.any(runs > 0)), turns == 0 and abs(runs[0]) <= tolerance
        converging = l2[-1] < 0.1 * reference and not rises
        numbers = (f"last layer {l2[-1]:.2f}, smallest {l2.min():.2f}, largest {l2.max():.2f}; "
                   f"angles {angle.min():.1f}-{angle.max():.1f} degrees")
        shape = ("converging" if converging else "zig-zag" if turns >= 2 else "one turn" if turns == 1 else "level" if level
                 else "grows" if rises else "falls")
        # The headline (before the colon, bold on the page) names the shape, never 'oscillating' alone: the paper
        # says ALBERT's embeddings 'oscillate rather than converge' of a smooth decline, not of BERT's zig-zag.
        if converging:
            headline, rest = "converging", "the distances shrink toward 0 over the last layers"
        elif turns >= 2:  # the paper's BERT in Figure 1
            headline, rest = "zig-zag", (f"from layer to layer the distances go up and down, changing direction {turns} "
                                         f"times, and do not go to 0 ({numbers}): the shape of BERT's curve in the paper's "
                                         "Figure 1")
        elif turns == 1:
            turn = first + int(points[1]) + 1  # the layer where the curve turns
            first_way, then = ("fall", "grow") if runs[0] < 0 else ("grow", "fall")
            headline, rest = "one turn", (f"the distances {first_way} to layer {turn}, then {then} to the last layer, "
                                          f"no zig-zag, and do not go to 0 ({numbers})")
        elif level:
            headline, rest = "level", f"the distances stay level from layer to layer, within 5%, far from 0 ({numbers})"
        elif rises:  # the first transition left out, and any dip under the tolerance: said, as the chart shows them
            dips = [f"layer {first + k + 2} ({judged[k]:.2f} to {judged[k + 1]:.2f})"
                    for k in range(len(judged) - 1) if judged[k + 1] < judged[k]]
            aside = f" but for a dip under 5% of their mean at {', '.join(dips)}" if dips else ""
            headline, rest = "grows", (f"from layer {first + 1} on the distances grow{aside} to the last layer, away "
                                       f"from 0 ({numbers})")
        else:  # what the paper's Figure 1 shows for ALBERT, in its words 'oscillating rather than converging'
            headline, rest = "falls steadily, never settles", (
                f"the distances fall from layer to layer (no rise over 5%) but stay far from 0 ({numbers}): a smooth "
                "decline that never settles at a fixed point, the shape of ALBERT's curve in the paper's Figure 1, "
                "which the paper calls oscillating rather than converging")
        words = f"{headline}: {rest}"
        rows.append(dict(checkpoint=name, converging=converging, last_l2=float(l2[-1]), min_l2=float(l2.min()),
                         turns=turns, shape=shape, roughness=_roughness(judged, tolerance), headline=headline,
                         detail=rest, verdict=words))
    return pd.DataFrame(rows)


def _turning_points(curve: np.ndarray, tolerance: float = 0.0) -> list[int]:
    """Indices of the curve's first point, its turning points and its last point, once every
    run (consecutive changes of one sign, summed; a level step belongs to the run it is in)
    of at most `tolerance` is smoothed away, the smallest first: an inner run is merged with
    its two neighbours (its two ends dropped), a run at either end with its one neighbour.
    Runs between the points alternate in sign."""
    points, direction, run_end = [0], 0.0, 0
    for i, step in enumerate(np.diff(curve)):
        if step == 0:
            continue
        if direction and np.sign(step) != direction:
            points.append(run_end)
        direction, run_end = np.sign(step), i + 1
    points.append(len(curve) - 1)
    while len(points) > 2:
        runs = np.abs(np.diff(curve[points]))
        k = int(np.argmin(runs))  # the run from points[k] to points[k + 1]
        if runs[k] > tolerance:
            break
        del points[1 if k == 0 else -2 if k == len(runs) - 1 else slice(k, k + 2)]
    return points


def _roughness(curve: np.ndarray, tolerance: float = 0.0) -> float:
    """How much the L2 curve zig-zags, in [0, 1): the share of its path (sum |runs|, with
    runs of at most `tolerance` smoothed away, `_turning_points`) beyond the shortest path
    that turns at most once, from its first value to one of its turning points and on to its
    last. A bump of height b on a path adds 2b to it: [0, 1, 0, 1, 0] scores 1 - 2/4 = 0.5.

    0 for any curve that only falls or only rises (steadily or in one big drop: what the
    paper's Figure 1 shows for ALBERT) and for one that turns once (a dip, then a rise: a
    smooth U, however steep, which the share of change undone, used before, scored 0.51
    as if it zig-zagged); high for one that goes up and down (BERT's in the paper's
    Figure 1). The verdict passes the curve from the second layer on: the first transition
    is large in every model (embeddings -> first layer)."""
    values = curve[_turning_points(curve, tolerance)]
    path = float(np.abs(np.diff(values)).sum())
    if path == 0 or len(values) <= 3:
        return 0.0
    one_turn = max(abs(v - values[0]) + abs(values[-1] - v) for v in values)
    return max(0.0, 1.0 - one_turn / path)


def report(frame: pd.DataFrame) -> Report:
    """What `albert-lab oscillation` says beside its table: each checkpoint's verdict, on standard error."""
    return Report(remarks=tuple(f"{row.checkpoint}: {row.verdict}" for row in verdict(frame).itertuples()))
