"""Google's original ALBERT and BERT releases, as their tarballs unpack, read and planned.

A release folder holds `albert_config.json` + `30k-clean.model` (ALBERT) or
`bert_config.json` + `vocab.txt` (BERT), and a TF1 checkpoint (`model.ckpt-best.*`,
`bert_model.ckpt.*`). `open_release` reads its config into a spec, checks its tokenizer and
maps its variables to transformers' names (`release_names`), reading none of the weights;
`release_convert` writes the checkpoint folder. No TensorFlow, no torch.

What the release is decides what its own code computed: its casing (BERT's names say cased or
uncased, as BERT's own `validate_case_matches_checkpoint` reads them; ALBERT is lower-cased) and
BERT's GELU (`bert_gelu`).
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from albert_lab.checkpoint.files import check_regular
from albert_lab.checkpoint.release_names import Names, mapped_names
from albert_lab.checkpoint.tf1 import Bundle, read_bundle
from albert_lab.data.textfile import read_json, read_user_file
from albert_lab.errors import AlbertLabError, CheckpointError, DataError
from albert_lab.params import fit_problem
from albert_lab.spec import ModelSpec

CONFIGS = {"albert": "albert_config.json", "bert": "bert_config.json"}
TOKENIZERS = {"albert": "30k-clean.model", "bert": "vocab.txt"}
# ALBERT's modeling.py computes 'gelu' as the tanh approximation (transformers' gelu_new); BERT's: see bert_gelu
ACTIVATIONS = {"gelu": "gelu_new", "gelu_new": "gelu_new", "relu": "relu", "tanh": "tanh"}
# BERT's releases of 2018 (google-research/bert's README), trained by its modeling.py of then: gelu = the exact erf form.
# Its commit bee6030 (2019-02-07, "Adding TF Hub support") made gelu the tanh approximation; the releases after it
# (whole word masking, 2019-05-31: wwm_*; the 24 smaller BERTs, 2020-03-11: uncased_L-<n>_H-<n>_A-<n>) were made then.
ERF_RELEASES = ("uncased_L-12_H-768_A-12", "uncased_L-24_H-1024_A-16", "cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
                "multilingual_L-12_H-768_A-12", "multi_cased_L-12_H-768_A-12", "chinese_L-12_H-768_A-12")
# albert_config.json keys of variants transformers has no model for, and the value the releases hold
PLAIN_ALBERT = {"net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0, "down_scale_factor": 1}


def release_family(folder: Path) -> str | None:
    """'albert' or 'bert' for a folder that holds a release's config and a TF checkpoint, else None."""
    if not folder.is_dir() or not any(folder.glob("*.index")):
        return None
    return next((family for family, name in CONFIGS.items() if (folder / name).exists()), None)


@dataclass(frozen=True)
class Release:
    """A release folder, read and planned: nothing of the weights read yet."""

    folder: Path
    family: str
    spec: ModelSpec
    bundle: Bundle
    names: Names
    skipped: tuple[str, ...]
    lowercase: bool
    tokenizer_bytes: bytes  # the tokenizer file as it was read and checked: what the conversion writes
    file_sha256: dict[str, str]  # "index", "config", "tokenizer": of the very bytes read, parsed and written
    casing: str = ""  # where the casing came from, in words
    activation: str = ""  # which GELU is computed and why, in words (BERT); ALBERT's tanh otherwise

    @property
    def read_bytes(self) -> int:
        return self.bundle.bytes_of(self.variables)

    @property
    def variables(self) -> list[str]:
        """The TensorFlow variables a conversion reads, in the order it writes them."""
        return [tf for tf, _, _ in self.names.values()]

    @cached_property
    def content_sha256(self) -> dict[str, str]:
        """SHA-256 of everything a conversion reads, file by file: the index (which records every
        tensor's CRC-32C, offset and size), the config and the tokenizer, each of the bytes read once
        and used (a file swapped after it was read changes nothing), and the weights' bytes (the
        optimizer slots, never read, are never hashed), which the conversion reads again and checks
        against this hash. Computed once per Release."""
        return {**self.file_sha256, "weights": self.bundle.digest(self.variables)}

    def describe(self) -> str:
        data = sum(f.stat().st_size for f in self.bundle.shards)
        return (f"{self.folder.name}: {self.spec.label}; reads {size_words(self.read_bytes)} of weights of the {size_words(data)} "
                f"data file ({len(self.skipped):,} variables of training skipped, never read: optimizer slots, global_step)")


def size_words(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 2**10:,.1f} KiB"


def open_release(folder: Path) -> Release:
    """Config, tokenizer and checkpoint index of a release folder, checked against each other."""
    family = release_family(folder)
    if family is None:
        raise CheckpointError(f"{folder} is not a release folder (it needs albert_config.json or bert_config.json "
                              "beside a TensorFlow checkpoint's .index file)")
    config_file = folder / CONFIGS[family]
    config_bytes = _read(config_file, 1 << 20, "the release's config file")
    try:
        config = read_json(config_bytes, str(config_file))
    except DataError as err:
        raise CheckpointError(f"{err}; re-copy the release") from None
    gelu, activation = bert_gelu(folder.name) if family == "bert" else ("gelu_new", "")
    spec = release_spec(config, family, config_file, gelu)
    if spec.activation != gelu:
        activation = ""
    try:
        problem = fit_problem(spec)
    except (OverflowError, ValueError) as err:  # sizes past what any machine holds
        problem = f"its sizes are out of range ({str(err)[:80]})"
    if problem:
        raise CheckpointError(f"{folder}: this machine cannot load it: {problem}")
    tokenizer_file = folder / TOKENIZERS[family]
    check_regular(tokenizer_file)
    tokenizer_bytes = _read(tokenizer_file, 64 << 20, "the release's tokenizer file (a few hundred KB)")
    vocabulary = check_vocabulary(tokenizer_bytes, tokenizer_file, family)
    if vocabulary != spec.vocab_size:
        raise CheckpointError(f"{tokenizer_file} holds {vocabulary:,} pieces, but {config_file.name} says vocab_size "
                              f"{spec.vocab_size:,}: {'it is cut short, or they' if vocabulary < spec.vocab_size else 'they'} "
                              "belong to different models; re-copy the release")
    bundle = read_bundle(_checkpoint_prefix(folder))
    names, skipped = mapped_names(spec, bundle, config_file.name)
    lowercase, casing = release_casing(folder.name, family)
    hashes = {"index": bundle.index_sha256, "config": hashlib.sha256(config_bytes).hexdigest(),
              "tokenizer": hashlib.sha256(tokenizer_bytes).hexdigest()}
    return Release(folder=folder, family=family, spec=spec, bundle=bundle, names=names, skipped=skipped,
                   lowercase=lowercase, tokenizer_bytes=tokenizer_bytes, file_sha256=hashes, casing=casing,
                   activation=activation)


def _read(file: Path, limit: int, what: str) -> bytes:
    try:
        return read_user_file(file, limit, what)
    except DataError as err:
        raise CheckpointError(f"{err}; re-copy the release") from None


def release_casing(name: str, family: str) -> tuple[bool, str]:
    """(lower-cases, why): ALBERT's releases are lower-cased; a BERT release's name says cased or
    uncased (as BERT's own validate_case_matches_checkpoint reads it), and uncased when it says neither
    (multilingual_..., chinese_...: BERT's lower-cased ones)."""
    if family == "albert":
        return True, "lower-cased: ALBERT's releases are (its SentencePiece model was made from lower-cased text)"
    said = "uncased" if "uncased" in name.lower() else "cased" if "cased" in name.lower() else None
    if said is None:
        return True, f"lower-cased: the release's name {name!r} does not say cased (BERT's default); give --cased if it is"
    return said == "uncased", f"{'lower-cased' if said == 'uncased' else 'cased'}: the release's name {name!r} says {said}"


def with_casing(card: dict[str, Any], casing: str | None, given: str | None = None) -> dict[str, Any]:
    """The card (albert_lab.json's, or a model card) of a release loaded with the casing the user gave
    ('cased' or 'uncased'), saying where it came from: `given` ('cased given in the sidebar'), else
    '--cased given'; the casing the release says follows in brackets."""
    provenance = card.get("provenance")
    if casing is None or not isinstance(provenance, dict):
        return card
    said = provenance.get("casing", "")
    words = f"{'lower-cased' if casing == 'uncased' else 'cased'}: {given or f'--{casing} given'}"
    words += f" (the release says {said})" if said else ""
    return {**card, "provenance": {**provenance, "casing": words}}


def bert_gelu(name: str) -> tuple[str, str]:
    """The GELU a BERT release computes for its config's 'gelu' (transformers' name), and why, from its name."""
    if name.startswith("wwm_") or (re.fullmatch(r"uncased_L-\d+_H-\d+_A-\d+", name) and name not in ERF_RELEASES):
        return "gelu_new", (f"gelu_new (tanh GELU): {name!r} is named as Google's BERT releases of 2019-2020 (whole word "
                            "masking, the smaller BERTs) were, made after google-research/bert's modeling.py computed "
                            "gelu as the tanh approximation (commit bee6030, 2019-02-07)")
    why = "is one of BERT's releases of 2018" if name in ERF_RELEASES else "is not named as a later release"
    return "gelu", (f"gelu (exact erf GELU): {name!r} {why}, trained by google-research/bert's modeling.py of 2018, whose "
                    "gelu is the erf form (the tanh approximation came with commit bee6030, 2019-02-07)")


def check_vocabulary(data: bytes, file: Path, family: str) -> int:
    """The size of a release's SentencePiece model or vocab.txt (`data`, read from `file`): the ids it
    gives; one line when it is not one, or lacks a special token the model's inputs need."""
    if family == "albert":
        import sentencepiece as spm

        model = spm.SentencePieceProcessor()
        try:
            model.LoadFromSerializedProto(data)
            size = model.get_piece_size()
            pieces = {model.IdToPiece(i) for i in range(size)}
        except (RuntimeError, OSError, ValueError, TypeError):  # empty, garbage or truncated; a piece not UTF-8
            raise CheckpointError(f"{file} is not a SentencePiece model (it cannot be read as one); re-copy the release") from None
        wanted = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")
    else:
        try:  # one id a line, as the tokenizer reads it (text mode: \n, \r\n or \r ends a line)
            lines = io.StringIO(data.decode("utf-8"), newline=None).readlines()
            pieces, size = {line.strip() for line in lines}, len(lines)
        except UnicodeDecodeError as err:
            raise CheckpointError(f"{file} is not a WordPiece vocabulary ({str(err)[:80]}); re-copy the release") from None
        wanted = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    if missing := [p for p in wanted if p not in pieces]:
        raise CheckpointError(f"{file} lacks {', '.join(missing)}: not the release's {file.name}, "
                              f"whose model inputs need {', '.join(wanted)}; re-copy the release")
    return size


def release_spec(config: Any, family: str, file: Path, gelu: str = "gelu_new") -> ModelSpec:
    """The spec of a release config; one line naming the file for what the project cannot build."""
    if not isinstance(config, dict):
        raise CheckpointError(f"{file} does not hold a JSON object; re-copy the release")
    for key, plain in (PLAIN_ALBERT.items() if family == "albert" else ()):
        if config.get(key, plain) != plain:
            raise CheckpointError(f"{file}: {key} {config[key]!r} is a variant transformers has no model for "
                                  f"(the releases hold {plain}); ALBERT Lab cannot load it")
    act = config.get("hidden_act", "gelu")
    if not isinstance(act, str) or act not in ACTIVATIONS:
        raise CheckpointError(f"{file}: hidden_act {str(act)[:40]!r} is not one of {', '.join(ACTIVATIONS)}")
    try:
        layers, groups = config["num_hidden_layers"], config.get("num_hidden_groups", 1)
        activation = gelu if act == "gelu" else ACTIVATIONS[act]
        fields: dict[str, Any] = dict(
            family=family, vocab_size=config["vocab_size"], hidden_size=config["hidden_size"], num_layers=layers,
            num_heads=config["num_attention_heads"], ffn_size=config["intermediate_size"], activation=activation,
            max_positions=config.get("max_position_embeddings", 512), type_vocab_size=config.get("type_vocab_size", 2),
            dropout=float(config.get("hidden_dropout_prob", 0.0)), objective="sop" if family == "albert" else "nsp")
        if family == "albert":  # transformers' own reading of num_hidden_groups (models.spec_from_config)
            fields |= dict(embedding_size=config.get("embedding_size", 128), inner_group_num=config.get("inner_group_num", 1),
                           sharing="none" if groups == layers and groups > 1 else "all", num_groups=groups)
        return ModelSpec(**fields)
    except KeyError as err:
        raise CheckpointError(f"{file} has no {err.args[0]!r}; re-copy the release") from None
    except AlbertLabError as err:
        raise CheckpointError(f"{file}: not a model ALBERT Lab can build ({err})") from None
    except (TypeError, ValueError, OverflowError) as err:
        raise CheckpointError(f"{file}: a value has the wrong type or is out of range ({str(err)[:120]}); re-copy the release") from None


def _checkpoint_prefix(folder: Path) -> Path:
    indexes = sorted(folder.glob("*.index"))
    if len(indexes) > 1:  # ALBERT's tarballs hold model.ckpt-best; a folder with more says which
        best = [i for i in indexes if i.name == "model.ckpt-best.index"]
        if not best:
            raise CheckpointError(f"{folder} holds {len(indexes)} TensorFlow checkpoints ({', '.join(i.name for i in indexes[:4])}); "
                                  "keep one in the folder")
        indexes = best
    return indexes[0].with_suffix("")
