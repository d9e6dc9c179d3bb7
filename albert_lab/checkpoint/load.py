"""Loading a checkpoint (a local folder or, when online, a hub id) into a ModelBundle.

Every model loads into its pretraining class so
that missing heads show up as missing keys instead of passing silently: hub ALBERT
checkpoints ship without SOP head weights, and their SOP scores are noise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from transformers import AlbertConfig, AlbertForPreTraining, AutoConfig, BertConfig, BertForPreTraining
from transformers.utils import logging as hf_logging

from albert_lab.checkpoint.discover import checkpoint_name
from albert_lab.checkpoint.files import PICKLE_SUFFIXES, is_local_source, read_card, read_spec, read_transformers_config
from albert_lab.checkpoint.heads import HeadStatus, encoder_keys, head_status
from albert_lab.checkpoint.loadable import make_loadable
from albert_lab.checkpoint.release import with_casing
from albert_lab.devices import one_thread, resolve_device, resolve_dtype
from albert_lab.errors import AlbertLabError, CheckpointError
from albert_lab.kernels import tune_for_inference
from albert_lab.models import PretrainingModel, one_token_type, spec_from_config, tie_shared_modules
from albert_lab.params import fit_problem
from albert_lab.paths import user_path
from albert_lab.spec import ModelSpec
from albert_lab.tokenizer import load_tokenizer

Casing = Literal["cased", "uncased"]
hf_logging.set_verbosity_error()
hf_logging.disable_progress_bar()


@dataclass
class ModelBundle:
    """A loaded checkpoint: model (eval mode, on `device`), tokenizer, spec and card."""

    name: str
    source: str
    model: PretrainingModel
    tokenizer: Any
    spec: ModelSpec
    heads: HeadStatus
    card: dict[str, Any] = field(default_factory=dict)
    device: torch.device = torch.device("cpu")  # noqa: RUF009 - immutable
    dtype: torch.dtype = torch.float32
    missing_keys: frozenset[str] = frozenset()  # weights transformers initialised randomly on load


# ---- loading --------------------------------------------------------------------------
def load_checkpoint(source: str | Path, device: str = "auto", dtype: str = "float32",
                    allow_pickle: bool = False, name: str | None = None, casing: Casing | None = None,
                    casing_given: str | None = None) -> ModelBundle:
    """Load a checkpoint folder (or a hub id, when online) into its pretraining class. `casing`
    overrides what a Google release's name says (its card then says so, in the words `casing_given`:
    by default '--cased given'); other checkpoints refuse it."""
    text = str(source).strip()
    if not text:
        raise CheckpointError("no checkpoint given: name a shipped one (`albert-lab checkpoints` lists them), a folder or a hub id")
    path = user_path(text, "checkpoint")
    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    if is_local_source(text):
        folder = make_loadable(path, allow_pickle)
        card = read_card(folder)
        config = read_transformers_config(folder)
        spec = read_spec(folder, card, config)
        model, (missing, unused) = _load_relaxed(folder, spec) if spec.relaxed else _load_weights(folder, config, allow_pickle)
        tokenizer = load_tokenizer(folder, None if casing is None else casing == "uncased")
        card = with_casing(card, casing, casing_given)
        label = checkpoint_name(path, name)  # the folder given, not a sentence-transformers module in it
    else:
        if casing is not None:
            raise CheckpointError(f"{text}: --{casing} applies to Google's original releases; a hub checkpoint's "
                                  "tokenizer carries its own casing")
        card, (config, model, (missing, unused), tokenizer) = {}, _load_from_hub(text)
        spec = spec_from_config(config, card)
        label = name or text
    # Ids past the embedding table: an IndexError, or another model's reading. The base vocabulary only: tokens
    # added on top of it (and never resized into the table) are tolerated, as transformers tolerates them.
    if tokenizer.vocab_size > spec.vocab_size:
        raise CheckpointError(f"{source}: the tokenizer has {tokenizer.vocab_size:,} pieces but the model's word "
                              f"embeddings hold {spec.vocab_size:,}; the tokenizer files belong to another model")
    tie_shared_modules(model, spec, check_equal=True)
    one_token_type(model, spec)
    tune_for_inference(model)  # same math, faster CPU kernels (see analysis/common.py)
    model.to(device=torch_device, dtype=torch_dtype).eval()
    with one_thread():  # a moment's work (loading albert-sop beside other jobs on 2 cores: 0.2-0.8 s, not 0.6-1.6 s)
        check_finite_outputs(model, spec, text)
    return ModelBundle(name=label, source=text, model=model, tokenizer=tokenizer, spec=spec,
                       heads=head_status(spec, missing, card, unused), card=card, device=torch_device, dtype=torch_dtype,
                       missing_keys=frozenset(missing))


def _load_weights(folder: Path, config: AlbertConfig | BertConfig, allow_pickle: bool) -> tuple[PretrainingModel, tuple[set[str], set[str]]]:
    cls = AlbertForPreTraining if config.model_type == "albert" else BertForPreTraining
    try:
        if any(folder.glob("*.safetensors")):
            model, info = cls.from_pretrained(str(folder), output_loading_info=True, use_safetensors=True)
        else:  # allowed pickles only, and never with code execution
            weights = next(p for p in sorted(folder.iterdir()) if p.suffix in PICKLE_SUFFIXES)
            state = torch.load(weights, weights_only=True, map_location="cpu")
            model, info = cls.from_pretrained(None, config=config, state_dict=state, output_loading_info=True)
    except Exception as err:  # pickles and broken files fail in many types (UnpicklingError, EOFError, SafetensorError, ...)
        first = str(err).splitlines()[0][:200] if str(err) else ""
        raise CheckpointError(f"{folder}: the weights cannot be loaded ({type(err).__name__}: {first}); "
                              "re-copy or re-train the checkpoint") from None
    return model, checked_keys(folder, model, info)


def _load_relaxed(folder: Path, spec: ModelSpec) -> tuple[PretrainingModel, tuple[set[str], set[str]]]:
    """A relaxed checkpoint's model, built from its spec and filled from its safetensors (transformers'
    from_pretrained knows no RelaxedLinear). The tied copies of shared matrices, never on disk, are not missing."""
    from safetensors.torch import load_file

    from albert_lab.models import build_model
    from albert_lab.relaxed import shared_keys

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"{folder}: a relaxed model's weights are read from safetensors files, and there are none")
    try:
        state = {k: v for path in files for k, v in load_file(str(path)).items()}
        if copies := sorted(set(state) & shared_keys(spec)):  # loading them would overwrite the one matrix in turn
            raise CheckpointError(f"{folder}: the weights hold copies of shared matrices ({copies[0]}{', ...' * (len(copies) > 1)}), "
                                  "which a relaxed model writes once per group; the folder was edited or its albert_lab.json is wrong")
        model = build_model(spec, seed=0)
        result = model.load_state_dict(state, strict=False)
        model.tie_weights()
        tied = set(getattr(model, "_tied_weights_keys", None) or ()) | shared_keys(spec)
        info = {"missing_keys": [k for k in result.missing_keys if k not in tied], "unexpected_keys": list(result.unexpected_keys)}
    except CheckpointError:
        raise
    except Exception as err:  # a broken file fails in SafetensorError, a wrong shape in RuntimeError
        first = str(err).splitlines()[0][:200] if str(err) else ""
        raise CheckpointError(f"{folder}: the weights cannot be loaded ({type(err).__name__}: {first}); "
                              "re-copy or re-make the checkpoint") from None
    return model, checked_keys(folder, model, info)


def checked_keys(source: str | Path, model: PretrainingModel, info: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(missing, unused) weight names of a load. Missing head weights are the heads'
    business (HeadStatus); a missing encoder weight would be random: refused, as are
    weights that are NaN or infinite."""
    family = "albert" if isinstance(model, AlbertForPreTraining) else "bert"
    missing, unused = set(info["missing_keys"]), set(info.get("unexpected_keys", ()))
    if encoder := encoder_keys(family, missing):
        shown = ", ".join(encoder[:3]) + (", ..." if len(encoder) > 3 else "")
        raise CheckpointError(f"{source}: {len(encoder):,} encoder weight{'s' * (len(encoder) != 1)} the model needs "
                              f"{'are' if len(encoder) != 1 else 'is'} not in the weights file ({shown}); transformers would "
                              "initialise them randomly. config.json may not match the weights (model_type, num_hidden_groups): "
                              "restore it, or re-copy the checkpoint")
    with one_thread():  # a moment's work, as check_finite_outputs
        bad = [name for name, p in model.named_parameters() if not bool(torch.isfinite(p).all())]
    if bad:
        tensors = f"{len(bad):,} weight tensor{'s hold' if len(bad) != 1 else ' holds'}"
        raise CheckpointError(f"{source}: {tensors} NaN or infinite values "
                              f"({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''}); every score would be NaN. "
                              "Was it saved from a run that diverged? Use an earlier checkpoint")
    return missing, unused


def check_finite_outputs(model: PretrainingModel, spec: ModelSpec, source: str) -> None:
    """Refuse a model whose forward pass on a short probe input is NaN or infinite somewhere
    (finite weights x 1e30, an edited LayerNorm): every score it gave would be NaN, read as a prediction."""
    device = next(model.parameters()).device
    ids = torch.tensor([[(7 * i + 5) % spec.vocab_size for i in range(min(8, spec.max_positions))]], device=device)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), token_type_ids=torch.zeros_like(ids))
    logits = [t for t in (getattr(out, "prediction_logits", None), getattr(out, "sop_logits", None),
                          getattr(out, "seq_relationship_logits", None)) if t is not None]
    if not all(bool(torch.isfinite(t).all()) for t in logits):
        raise CheckpointError(f"{source}: the model computes NaN or infinite outputs on a probe input (its weights are finite); "
                              "every score would be NaN. Were its weights or config.json edited? Re-copy it or use another")


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the model hub can be reached (checked once per process, quickly): the
    endpoint huggingface_hub uses, so a mirror set in HF_ENDPOINT is the one tried."""
    global _HUB_REACHABLE
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    if _HUB_REACHABLE is None:
        import socket
        from urllib.parse import urlsplit

        from huggingface_hub import constants

        endpoint = urlsplit(constants.ENDPOINT)
        try:
            socket.create_connection((endpoint.hostname, endpoint.port or (80 if endpoint.scheme == "http" else 443)), timeout=timeout).close()
            _HUB_REACHABLE = True
        except OSError:
            _HUB_REACHABLE = False
    return _HUB_REACHABLE


_HUB_REACHABLE: bool | None = None


def _load_from_hub(hub_id: str) -> tuple[Any, PretrainingModel, tuple[set[str], set[str]], Any]:
    from transformers import AutoTokenizer

    if not hub_reachable():
        import difflib

        from albert_lab.checkpoint.discover import discover_checkpoints

        names = [info.name for info in discover_checkpoints()]
        close = difflib.get_close_matches(hub_id, names, n=1, cutoff=0.75)
        raise CheckpointError(f"{hub_id!r} is not a local folder, and the model hub is unreachable from this machine "
                              "(offline); " + (f"did you mean {close[0]!r}?" if close else
                              "give the path of a checkpoint folder, or one of: " + ", ".join(names[:12])))
    try:
        config = AutoConfig.from_pretrained(hub_id)
        if config.model_type not in ("albert", "bert"):
            raise CheckpointError(f"unsupported model type {config.model_type!r} for {hub_id}; ALBERT Lab loads albert and bert")
        if problem := fit_problem(spec_from_config(config, {})):
            raise CheckpointError(f"{hub_id}: this machine cannot load it: {problem}")
        cls = AlbertForPreTraining if config.model_type == "albert" else BertForPreTraining
        model, info = cls.from_pretrained(hub_id, output_loading_info=True, use_safetensors=True)
        tokenizer = AutoTokenizer.from_pretrained(hub_id)
    except AlbertLabError:
        raise
    except Exception as err:  # hub errors come in many types: offline, unknown id, gated, no safetensors
        raise CheckpointError(f"could not load {hub_id!r} from the model hub ({type(err).__name__}: "
                              f"{str(err).splitlines()[0][:160]}); the hub is unreachable offline: give a local folder") from None
    return config, model, checked_keys(hub_id, model, info), tokenizer
