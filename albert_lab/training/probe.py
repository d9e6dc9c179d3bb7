"""A pair head fitted on a frozen encoder: a probe, labelled as one everywhere.

For a checkpoint whose SOP or NSP head is missing or untrained (the model hub's ALBERT
checkpoints, BERT encoders, sentence-transformers models), the encoder stays frozen and
is run once over sentence pairs built from the *training* documents of a corpus; the
[CLS] vectors are cached, and only the pair head (a linear map H -> 2; and the pooler
H -> H with its tanh when that is missing too) is fitted on them by full-batch AdamW.
That takes seconds once the features exist. The probe is scored on the held-out pairs
evaluation uses (data/heldout.py), with a 95% Wilson interval, and written with the
unchanged encoder into a new checkpoint folder whose card says PROBE, never 'trained'.
The fitted head lives in the result, never in the bundle's model: in the app that model
is a cached one other pages and visitors share. A probe fitted before with the same
options is reused (probe_into), as a conversion is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from albert_lab.analysis.common import batch_tokens_for, length_batches
from albert_lab.analysis.intrinsic import wilson_interval
from albert_lab.analysis.pair_encoding import tokenize_pairs
from albert_lab.checkpoint.heads import MLM_KEYS
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.checkpoint.store import made_once, save_checkpoint, source_identity
from albert_lab.data.corpora import evaluation_documents, load_corpus
from albert_lab.data.corpus import MAX_LEN
from albert_lab.data.heldout import build_eval_pairs
from albert_lab.errors import AlbertLabError
from albert_lab.models import Parts, pair_linear, pooler_linear

PROBE = "probe on a frozen encoder"
PairTask = Literal["sop", "nsp"]


@dataclass(frozen=True)
class ProbeResult:
    task: PairTask
    train_pairs: int
    heldout_pairs: int
    steps: int
    hits: int
    accuracy: float
    low: float  # 95% Wilson interval of the held-out accuracy
    high: float
    pooler: Literal["checkpoint", "fitted"]  # the checkpoint's pooler, or fitted with the head (it was missing)
    corpus: str
    seed: int
    train_loss: float
    # the fitted pair head (and pooler, when fitted) by the model's weight names, float32 on the CPU
    weights: dict[str, torch.Tensor] = field(default_factory=dict, compare=False, repr=False)

    def facts(self) -> dict[str, Any]:
        """What a card or --json says of the probe (the weights aside)."""
        return {k: v for k, v in asdict(self).items() if k != "weights"}


def probe_pairs(corpus: str, task: PairTask, train_pairs: int, heldout_pairs: int, seed: int = 0
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training, held-out) pairs of `task`: training pairs built the held-out way from
    training documents, held-out pairs exactly those `evaluate` scores (a sample)."""
    docs = load_corpus(corpus)
    rng = np.random.default_rng(seed)
    train_docs = [docs.train[i] for i in rng.permutation(len(docs.train))]
    train = build_eval_pairs(train_docs[: max(50, train_pairs)], seed=seed)  # about 2 pairs of a task per document
    train = train[train.task == task]
    held = build_eval_pairs(evaluation_documents(docs))
    held = held[held.task == task]
    if len(train) < 8 or len(held) < 8:
        raise AlbertLabError(f"corpus {corpus!r} gives too few {task.upper()} pairs ({len(train)} training, {len(held)} "
                             "held-out); pick a bigger corpus")
    return (train.sample(min(train_pairs, len(train)), random_state=seed), held.sample(min(heldout_pairs, len(held)), random_state=seed))


@torch.no_grad()  # not inference_mode: the features are fitted on afterwards
def cls_features(bundle: ModelBundle, pairs: pd.DataFrame, max_len: int = MAX_LEN) -> torch.Tensor:
    """The frozen encoder's last-layer [CLS] vector of each pair: (N, H) float32 on the CPU."""
    encoder, tokenizer = Parts.of(bundle.model).encoder, bundle.tokenizer
    first, second = list(pairs.a), list(pairs.b)
    max_len = min(max_len, bundle.spec.max_positions)
    out = torch.empty(len(first), bundle.spec.hidden_size)
    encoded = tokenize_pairs(tokenizer, first, second, max_len)
    for idx in length_batches(encoded.lengths, batch_tokens_for(bundle.model), 256):
        enc = encoded.batch(idx, bundle.device)
        out[torch.as_tensor(idx)] = encoder(**enc).last_hidden_state[:, 0].float().cpu()
    return out


def fit_probe(bundle: ModelBundle, task: PairTask | None = None, corpus: str = "long-mix", train_pairs: int = 2000,
              heldout_pairs: int = 1000, steps: int = 300, lr: float = 1e-2, weight_decay: float = 1e-2, seed: int = 0,
              max_len: int = MAX_LEN, log=lambda line: None) -> ProbeResult:
    """Fit the pair head (and a missing pooler) on the frozen encoder. The fitted weights are
    the result's (`weights`); `bundle.model` is left as it was. Deterministic for a seed."""
    task = task or bundle.heads.pair_kind
    train, held = probe_pairs(corpus, task, train_pairs, heldout_pairs, seed)
    log(f"encoding {len(train):,} training and {len(held):,} held-out {task.upper()} pairs with the frozen encoder")
    x_train, x_held = cls_features(bundle, train, max_len), cls_features(bundle, held, max_len)
    y_train, y_held = torch.tensor(train.label.to_numpy(dtype=np.int64)), torch.tensor(held.label.to_numpy(dtype=np.int64))
    model = bundle.model
    fit_pooler = any(k.startswith(("albert.pooler.", "bert.pooler.")) for k in bundle.missing_keys)
    torch.manual_seed(seed)
    pooler, head = nn.Linear(x_train.shape[1], x_train.shape[1]), nn.Linear(x_train.shape[1], 2)
    if not fit_pooler:
        pooler.load_state_dict({k: v.float().cpu() for k, v in pooler_linear(model).state_dict().items()})
        pooler.requires_grad_(False)
    params = [*head.parameters(), *(pooler.parameters() if fit_pooler else ())]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    log(f"fitting the {task.upper()} head" + (" and the missing pooler" if fit_pooler else "") + f": {steps} full-batch steps")
    loss = torch.zeros(())
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(head(torch.tanh(pooler(x_train))), y_train)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        hits = int((head(torch.tanh(pooler(x_held))).argmax(-1) == y_held).sum())
    names = {module: name for name, module in model.named_modules()}
    fitted = ((pair_linear(model), head), *(((pooler_linear(model), pooler),) if fit_pooler else ()))
    weights = {f"{names[target]}.{k}": v.detach().clone() for target, module in fitted for k, v in module.state_dict().items()}
    low, high = wilson_interval(hits, len(held))
    return ProbeResult(task=task, train_pairs=len(train), heldout_pairs=len(held), steps=steps, hits=hits,
                       accuracy=hits / len(held), low=low, high=high, pooler="fitted" if fit_pooler else "checkpoint",
                       corpus=corpus, seed=seed, train_loss=float(loss.detach()), weights=weights)


def check_probe_allowed(bundle: ModelBundle, task: PairTask, replace: bool) -> None:
    """A trained head of the same kind is not replaced by a probe unless asked."""
    if bundle.heads.pair in ("trained", "present", "probe") and task == bundle.heads.pair_kind and not replace:
        raise AlbertLabError(f"{bundle.name}: its {task.upper()} head is {bundle.heads.pair}, not missing or untrained; "
                             "pass --replace to fit a probe in its place anyway (the new folder gets the probe)")


def save_probe(bundle: ModelBundle, result: ProbeResult, out: str | Path, options: dict[str, Any] | None = None) -> Path:
    """The encoder with the fitted head as a new checkpoint; the card says PROBE and records
    `options` (probe_options) when given. A missing MLM head stays missing (its random
    weights are not written)."""
    card = {
        "name": Path(out).name,
        "heads": {"mlm": bundle.heads.mlm, "pair": "probe"},
        "probe": {"kind": PROBE, "task": result.task, "encoder": bundle.source, "encoder_frozen": True,
                  "pairs": {"train": result.train_pairs, "held_out": result.heldout_pairs}, "steps": result.steps,
                  "held_out_accuracy": result.accuracy, "hits": result.hits, "ci95": [result.low, result.high],
                  "pooler": result.pooler, "corpus": result.corpus, "seed": result.seed, "train_loss": result.train_loss,
                  **({"options": options} if options is not None else {})},
        "provenance": {"origin": f"{PROBE}: the {result.task.upper()} head" + (" and pooler" if result.pooler == "fitted" else "")
                       + f" fitted on the frozen encoder of {bundle.source}"},
        "encoder_card": {k: v for k, v in bundle.card.items() if k not in ("spec", "heads", "probe")},
    }
    omit = (MLM_KEYS[bundle.spec.family],) if bundle.heads.mlm == "missing" else ()
    return save_checkpoint(bundle.model, bundle.tokenizer, bundle.spec.replace(objective=result.task), out, card,
                           tokenizer_source=bundle.source, omit=omit, new=True, weights=result.weights)


def probe_options(source: str | Path, task: PairTask, corpus: str = "long-mix", train_pairs: int = 2000,
                  heldout_pairs: int = 1000, steps: int = 300, lr: float = 1e-2, weight_decay: float = 1e-2,
                  seed: int = 0, max_len: int = MAX_LEN, dtype: str = "float32") -> dict[str, Any]:
    """What makes two probes the same: the encoder (store.source_identity), the dtype its
    features were computed in, and every choice of fit_probe. The device changes only the
    last bits of the features and is left out. The card of each probe records them (`probe.options`)."""
    return {**source_identity(source), "dtype": dtype, "task": task, "corpus": corpus, "train_pairs": int(train_pairs),
            "heldout_pairs": int(heldout_pairs), "steps": int(steps), "lr": float(lr), "weight_decay": float(weight_decay),
            "seed": int(seed), "max_len": int(max_len)}


def probe_into(root: Path, stem: str, source: str | Path, load: Callable[[], ModelBundle], task: PairTask,
               corpus: str = "long-mix", train_pairs: int = 2000, heldout_pairs: int = 1000, steps: int = 300,
               seed: int = 0, dtype: str = "float32", quota: int | None = None,
               log: Callable[[str], None] = lambda line: None) -> tuple[Path, bool]:
    """Fit a probe of the encoder `source` into a new folder `root/stem` (`stem-2`, ... when taken),
    or give the folder of an identical probe already under `root`: (folder, reused). `load()` gives
    the encoder at `dtype` (the app's cached one: it is not changed), and is called only when a fit
    is needed. One probe at a time per `root` (store.made_once), as albertize_into converts; with
    `quota` (bytes), refused before the work when `root`'s parent would hold more."""
    from albert_lab.paths import unique_folder

    options = probe_options(source, task, corpus, train_pairs, heldout_pairs, steps, seed=seed, dtype=dtype)

    def fit() -> Path:
        bundle = load()
        result = fit_probe(bundle, task, corpus, train_pairs, heldout_pairs, steps, seed=seed, log=log)
        return save_probe(bundle, result, unique_folder(root / stem), options)

    return made_once(root, "probe", options, source, fit, quota)
