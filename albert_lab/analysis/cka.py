"""Linear CKA between layer applications, within a model and across two models.

Centered kernel alignment (Kornblith et al. 2019) with a linear kernel: for states X
(N, D1) and Y (N, D2) of the same N tokens, column-centred,
    CKA(X, Y) = ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F) = <K, L> / (||K|| ||L||)
with K = X X^T and L = Y Y^T (the HSIC form; the 1/(N-1)^2 factors cancel). It is 1
for states equal up to rotation and isotropic scaling and 0 for unrelated ones.

Caution: CKA can mislead. It is dominated by the few directions of largest variance
(one outlier dimension can make unrelated layers look alike), it is biased upward when
N is small against D, and it can be pushed to almost any value by transformations that
leave a model's function unchanged (Davari et al. 2022, "Reliability of CKA as a
similarity measure in deep learning"). Read it beside other measures (the cosine
matrix of the oscillation page, the logit lens), never alone.

Tokens are the unit: both models must tokenise the texts identically. When they do not
(different tokenizers), each text's mean state is the unit instead, and `note` says
that N is then only the number of texts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from albert_lab.analysis.reapply import Inputs, encode, reapply_note, run_applications
from albert_lab.analysis.registry import Report
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpus import MAX_LEN
from albert_lab.errors import AlbertLabError, DataError

CAUTION = ("CKA can mislead: a few high-variance directions dominate it, it is biased upward for few tokens, and "
           "function-preserving changes can move it (Davari et al. 2022); compare with other measures")
MAX_TOKENS = 1024  # tokens drawn by default (the command line takes up to limits.MAX_CKA_TOKENS)


def linear_cka(xs: Sequence[torch.Tensor], ys: Sequence[torch.Tensor]) -> np.ndarray:
    """(Sx, Sy) linear CKA between states xs[i] (N, Dx) and ys[j] (N, Dy) of the same N
    tokens, in feature space: with X, Y column-centred in float64,
        CKA = ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F),
    equal to the Gram (HSIC) form <X X^T, Y Y^T> / (||X X^T|| ||Y Y^T||) but holding D x D
    matrices, not N x N ones: memory grows with the tokens, not with their square (8,192
    tokens were seven 0.5 GB Grams; here each state is N x D)."""
    def centred(states: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [(x := s.double().cpu()) - x.mean(0, keepdim=True) for s in states]

    cx = centred(xs)
    cy = cx if ys is xs else centred(ys)
    norm_x = torch.stack([torch.linalg.matrix_norm(x.T @ x) for x in cx])
    norm_y = norm_x if cy is cx else torch.stack([torch.linalg.matrix_norm(y.T @ y) for y in cy])
    cross = torch.tensor([[float((y.T @ x).square().sum()) for y in cy] for x in cx], dtype=torch.float64)
    return (cross / torch.outer(norm_x, norm_y).clamp_min(1e-300)).numpy()


def _states(bundle: ModelBundle, inputs: Inputs, repeat: int, unit: str, max_tokens: int, seed: int) -> list[torch.Tensor]:
    """Per application (N, H) float32 rows: real tokens (at most `max_tokens`, drawn
    with `seed`) or each text's mean state."""
    states = run_applications(bundle, inputs, repeat)
    keep = inputs.attention_mask.bool()
    if unit == "text":
        weights = keep.float() / keep.sum(-1, keepdim=True)
        return [torch.einsum("bt,bth->bh", weights, s.float()) for s in states]
    n = int(keep.sum())
    if n <= max_tokens:
        return [s[keep].float() for s in states]
    pick = torch.from_numpy(np.sort(np.random.default_rng(seed).choice(n, size=max_tokens, replace=False)))
    return [s[keep].float()[pick.to(s.device)] for s in states]


def layer_cka(bundle: ModelBundle, texts: Sequence[str], other: ModelBundle | None = None, repeat: int = 1,
              max_len: int = MAX_LEN, max_tokens: int = MAX_TOKENS, seed: int = 0) -> pd.DataFrame:
    """Linear CKA between every pair of states (0 = entering layer 1, a = after
    application a) of `bundle`, or between `bundle`'s and `other`'s. One row per
    (application_x, application_y) with cka, the unit (token or text), N and a note.
    At most `max_tokens` tokens, drawn with `seed`, enter CKA."""
    if not texts:
        raise DataError("no text to analyse: type some sentences or pick the built-in sample")
    notes = [CAUTION]
    inputs_x = encode(bundle, texts, max_len, mask_rate=0.0)
    inputs_y = inputs_x if other is None else encode(other, texts, max_len, mask_rate=0.0)
    same = inputs_x.input_ids.shape == inputs_y.input_ids.shape and torch.equal(inputs_x.input_ids.cpu(),
                                                                                inputs_y.input_ids.cpu())
    unit = "token" if same else "text"
    if not same:
        notes.insert(0, f"the two tokenizers split the texts differently: the unit is each text's mean state, so N is only "
                        f"{len(texts)} texts (few points inflate CKA)")
    if repeat > 1:
        notes += [f"{b.name}: {reapply_note(b.spec)}" for b in (bundle, other) if b is not None and reapply_note(b.spec)]
    xs = _states(bundle, inputs_x, repeat, unit, max_tokens, seed)
    ys = xs if other is None else _states(other, inputs_y, repeat, unit, max_tokens, seed)
    note = "; ".join(notes)
    cka = linear_cka(xs, ys)
    name_y = bundle.name if other is None else other.name
    rows = [dict(checkpoint_x=bundle.name, checkpoint_y=name_y, application_x=i, application_y=j, cka=float(cka[i, j]),
                 unit=unit, n=xs[0].shape[0], note=note) for i in range(len(xs)) for j in range(len(ys))]
    return pd.DataFrame(rows)


def cka_between(bundles: Sequence[ModelBundle], texts: Sequence[str], repeat: int = 1, max_len: int = MAX_LEN,
                max_tokens: int = MAX_TOKENS) -> pd.DataFrame:
    """CKA of the first checkpoint's applications with each other, or with the second's (layer_cka)."""
    if not 1 <= len(bundles) <= 2:
        raise AlbertLabError(f"CKA compares one checkpoint with itself or two with each other, not {len(bundles)}")
    return layer_cka(bundles[0], texts, bundles[1] if len(bundles) == 2 else None, repeat, max_len, max_tokens)


def report(frame: pd.DataFrame) -> Report:
    """What `albert-lab cka` prints: the grid of CKA values, rows the first checkpoint's applications, and its
    caution on standard error."""
    grid = frame.pivot(index="application_x", columns="application_y", values="cka")
    heading = (f"linear CKA, rows: {frame.checkpoint_x.iloc[0]}, columns: {frame.checkpoint_y.iloc[0]} "
               f"(unit: {frame.unit.iloc[0]}, N = {frame.n.iloc[0]})")
    return Report(text=heading + "\n" + grid.to_string(float_format=lambda v: f"{v:.2f}"),
                  remarks=(f"caution: {frame.note.iloc[0]}",))
