"""Google's original ALBERT and BERT releases, as their tarballs unpack, made checkpoints.

A release folder holds `albert_config.json` + `30k-clean.model` (ALBERT) or
`bert_config.json` + `vocab.txt` (BERT), and a TF1 checkpoint (`model.ckpt-best.*`,
`bert_model.ckpt.*`). Its variables are mapped to transformers' names (ALBERT's shared
blocks are `group_G/inner_group_I`, BERT's layers `layer_N`), every one accounted for: a
weight the model needs and the file lacks, or a variable nobody knows, is refused in one
line; only the optimizer slots (`*/adam_m`, `*/adam_v`) and `global_step` are skipped, and
never read. The weights are written tensor by tensor into a checkpoint folder of this
project (model.safetensors, config.json, the tokenizer, albert_lab.json saying where it came
from), so memory holds one tensor at a time. No TensorFlow, no torch: transformers is
imported for the tokenizer files only.

What the release is decides what its own code computed: its casing (BERT's names say cased or
uncased, as BERT's own `validate_case_matches_checkpoint` reads them; ALBERT is lower-cased) and
BERT's GELU (`bert_gelu`). TF-Hub exports, whose every name is under `module/`, are read with the
prefix taken off (ALBERT's own loader does the same).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from albert_lab.checkpoint.files import CARD, CONFIG, WEIGHTS, check_regular
from albert_lab.checkpoint.sources import sha256
from albert_lab.checkpoint.store import remove_dead_temporaries
from albert_lab.checkpoint.tf1 import WEIGHT_DTYPES, Bundle, read_bundle
from albert_lab.data.textfile import read_json, read_user_file
from albert_lab.errors import AlbertLabError, CheckpointError, DataError
from albert_lab.params import fit_problem
from albert_lab.paths import cache_dir, parents_made_for
from albert_lab.spec import ModelSpec, transformers_fields

CONFIGS = {"albert": "albert_config.json", "bert": "bert_config.json"}
TOKENIZERS = {"albert": "30k-clean.model", "bert": "vocab.txt"}
SKIPPED = ("/adam_m", "/adam_v")  # optimizer slots: never read
SKIPPED_NAMES = ("global_step",)
ORIGIN = "Google's original release"
CONVERSION = 2  # what a converted folder holds (2: the release's own tokenization); a new one is converted anew
ARCHIVE_CARD = ".archive.json"  # in an archive's unpacked folder: {"name", "sha256", "bytes"} of the archive
# ALBERT's modeling.py computes 'gelu' as the tanh approximation (transformers' gelu_new); BERT's: see bert_gelu
ACTIVATIONS = {"gelu": "gelu_new", "gelu_new": "gelu_new", "relu": "relu", "tanh": "tanh"}
HUB_PREFIX = "module/"  # TF-Hub exports hold every variable under it
# BERT's releases of 2018 (google-research/bert's README), trained by its modeling.py of then: gelu = the exact erf form.
# Its commit bee6030 (2019-02-07, "Adding TF Hub support") made gelu the tanh approximation; the releases after it
# (whole word masking, 2019-05-31: wwm_*; the 24 smaller BERTs, 2020-03-11: uncased_L-<n>_H-<n>_A-<n>) were made then.
ERF_RELEASES = ("uncased_L-12_H-768_A-12", "uncased_L-24_H-1024_A-16", "cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
                "multilingual_L-12_H-768_A-12", "multi_cased_L-12_H-768_A-12", "chinese_L-12_H-768_A-12")
# albert_config.json keys of variants transformers has no model for, and the value the releases hold
PLAIN_ALBERT = {"net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0, "down_scale_factor": 1}
Names = dict[str, tuple[str, bool, tuple[int, ...]]]  # transformers key -> (TF variable, transpose, transformers shape)


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
        tensor's CRC-32C, offset and size), the config, the tokenizer and the weights' bytes (the
        optimizer slots, never read, are never hashed). Computed once per Release."""
        files = {"index": self.bundle.index, "config": self.folder / CONFIGS[self.family],
                 "tokenizer": self.folder / TOKENIZERS[self.family]}
        return {**{what: sha256(path) for what, path in files.items()}, "weights": self.bundle.digest(self.variables)}

    def describe(self) -> str:
        data = sum(f.stat().st_size for f in self.bundle.shards)
        return (f"{self.folder.name}: {self.spec.label}; reads {_size(self.read_bytes)} of weights of the {_size(data)} "
                f"data file ({len(self.skipped):,} variables of training skipped, never read: optimizer slots, global_step)")


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 2**10:,.1f} KiB"


def open_release(folder: Path) -> Release:
    """Config, tokenizer and checkpoint index of a release folder, checked against each other."""
    family = release_family(folder)
    if family is None:
        raise CheckpointError(f"{folder} is not a release folder (it needs albert_config.json or bert_config.json "
                              "beside a TensorFlow checkpoint's .index file)")
    config_file = folder / CONFIGS[family]
    try:
        config = read_json(read_user_file(config_file, 1 << 20, "the release's config file"), str(config_file))
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
    check_regular(folder / TOKENIZERS[family])
    vocabulary = check_vocabulary(folder / TOKENIZERS[family], family)
    if vocabulary > spec.vocab_size:
        raise CheckpointError(f"{folder / TOKENIZERS[family]} holds {vocabulary:,} pieces, but {config_file.name} says "
                              f"vocab_size {spec.vocab_size:,}: they belong to different models; re-copy the release")
    bundle = read_bundle(_checkpoint_prefix(folder))
    prefix = HUB_PREFIX if bundle.entries and all(n.startswith(HUB_PREFIX) for n in bundle.entries) else ""
    names = {hf: (prefix + tf, transpose, shape) for hf, (tf, transpose, shape) in expected_names(spec).items()}
    skipped = tuple(n for n in bundle.entries if n.endswith(SKIPPED) or n.removeprefix(prefix) in SKIPPED_NAMES)
    _check_names(bundle, names, set(skipped), config_file.name)
    lowercase, casing = release_casing(folder.name, family)
    return Release(folder=folder, family=family, spec=spec, bundle=bundle, names=names, skipped=skipped,
                   lowercase=lowercase, casing=casing, activation=activation)


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


def check_vocabulary(file: Path, family: str) -> int:
    """The size of a release's SentencePiece model or vocab.txt; one line when it is not one, or
    lacks a special token the model's inputs need."""
    try:
        data = read_user_file(file, 64 << 20, "the release's tokenizer file (a few hundred KB)")
    except DataError as err:
        raise CheckpointError(f"{err}; re-copy the release") from None
    if family == "albert":
        import sentencepiece as spm

        model = spm.SentencePieceProcessor()
        try:
            model.LoadFromSerializedProto(data)
            pieces = {model.IdToPiece(i) for i in range(model.get_piece_size())}
        except (RuntimeError, OSError, ValueError, TypeError):  # empty, garbage or truncated; a piece not UTF-8
            raise CheckpointError(f"{file} is not a SentencePiece model (it cannot be read as one); re-copy the release") from None
        wanted = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")
    else:
        try:
            pieces = {line.strip() for line in data.decode("utf-8").splitlines()}
        except UnicodeDecodeError as err:
            raise CheckpointError(f"{file} is not a WordPiece vocabulary ({str(err)[:80]}); re-copy the release") from None
        wanted = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    if missing := [p for p in wanted if p not in pieces]:
        raise CheckpointError(f"{file} lacks {', '.join(missing)}: not the release's {file.name}, "
                              f"whose model inputs need {', '.join(wanted)}; re-copy the release")
    return len(pieces)


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


def expected_names(spec: ModelSpec) -> Names:
    """Every weight of transformers' pretraining model (the tied MLM decoder aside), its TF name and shape."""
    h, e, f, v = spec.hidden_size, spec.embedding_size, spec.ffn_size, spec.vocab_size
    names: Names = {}

    def norm(hf: str, tf: str, n: int) -> None:
        names[f"{hf}.weight"], names[f"{hf}.bias"] = (f"{tf}/gamma", False, (n,)), (f"{tf}/beta", False, (n,))

    def dense(hf: str, tf: str, n_in: int, n_out: int) -> None:
        names[f"{hf}.weight"], names[f"{hf}.bias"] = (f"{tf}/kernel", True, (n_out, n_in)), (f"{tf}/bias", False, (n_out,))

    model = spec.family  # 'albert.' or 'bert.' prefixes transformers' encoder
    for table, rows in (("word", v), ("position", spec.max_positions), ("token_type", spec.type_vocab_size)):
        names[f"{model}.embeddings.{table}_embeddings.weight"] = (f"bert/embeddings/{table}_embeddings", False, (rows, e))
    norm(f"{model}.embeddings.LayerNorm", "bert/embeddings/LayerNorm", e)
    if spec.family == "albert":
        dense("albert.encoder.embedding_hidden_mapping_in", "bert/encoder/embedding_hidden_mapping_in", e, h)
        groups = transformers_fields(spec)["num_hidden_groups"]
        for g in range(groups):
            for i in range(spec.inner_group_num):
                hf, tf = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{i}", f"bert/encoder/transformer/group_{g}/inner_group_{i}"
                for part in ("query", "key", "value"):
                    dense(f"{hf}.attention.{part}", f"{tf}/attention_1/self/{part}", h, h)
                dense(f"{hf}.attention.dense", f"{tf}/attention_1/output/dense", h, h)
                norm(f"{hf}.attention.LayerNorm", f"{tf}/LayerNorm", h)
                dense(f"{hf}.ffn", f"{tf}/ffn_1/intermediate/dense", h, f)
                dense(f"{hf}.ffn_output", f"{tf}/ffn_1/intermediate/output/dense", f, h)
                norm(f"{hf}.full_layer_layer_norm", f"{tf}/LayerNorm_1", h)
        dense("albert.pooler", "bert/pooler/dense", h, h)
        mlm, pair = "predictions", "sop_classifier.classifier"
        dense(f"{mlm}.dense", "cls/predictions/transform/dense", h, e)
        norm(f"{mlm}.LayerNorm", "cls/predictions/transform/LayerNorm", e)
    else:
        for n in range(spec.num_layers):
            hf, tf = f"bert.encoder.layer.{n}", f"bert/encoder/layer_{n}"
            for part in ("query", "key", "value"):
                dense(f"{hf}.attention.self.{part}", f"{tf}/attention/self/{part}", h, h)
            dense(f"{hf}.attention.output.dense", f"{tf}/attention/output/dense", h, h)
            norm(f"{hf}.attention.output.LayerNorm", f"{tf}/attention/output/LayerNorm", h)
            dense(f"{hf}.intermediate.dense", f"{tf}/intermediate/dense", h, f)
            dense(f"{hf}.output.dense", f"{tf}/output/dense", f, h)
            norm(f"{hf}.output.LayerNorm", f"{tf}/output/LayerNorm", h)
        dense("bert.pooler.dense", "bert/pooler/dense", h, h)
        mlm, pair = "cls.predictions", "cls.seq_relationship"
        dense(f"{mlm}.transform.dense", "cls/predictions/transform/dense", h, h)
        norm(f"{mlm}.transform.LayerNorm", "cls/predictions/transform/LayerNorm", h)
    names[f"{mlm}.bias"] = ("cls/predictions/output_bias", False, (v,))
    names[f"{pair}.weight"] = ("cls/seq_relationship/output_weights", False, (2, h))  # already (out, in)
    names[f"{pair}.bias"] = ("cls/seq_relationship/output_bias", False, (2,))
    return names


def _check_names(bundle: Bundle, names: Names, skipped: set[str], config: str) -> None:
    """Every weight present with the shape and a dtype the config implies; no variable left over."""
    index = bundle.index
    wanted = {tf for tf, _, _ in names.values()}
    if missing := sorted(wanted - set(bundle.entries)):
        raise CheckpointError(f"{index} lacks {len(missing):,} variable{'s' * (len(missing) != 1)} the config's model needs "
                              f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); it would be random: "
                              "re-copy the release, or check that the config file belongs to this checkpoint")
    if unknown := sorted(set(bundle.entries) - wanted - skipped):
        raise CheckpointError(f"{index} holds {len(unknown):,} variable{'s' * (len(unknown) != 1)} the config's model has no "
                              f"place for ({', '.join(unknown[:3])}{', ...' if len(unknown) > 3 else ''}); it is not the "
                              "release the config describes (or a variant ALBERT Lab does not know)")
    for tf, transpose, shape in names.values():
        entry = bundle.entries[tf]
        stored = shape[::-1] if transpose else shape
        if entry.dtype not in WEIGHT_DTYPES or entry.sliced:
            raise CheckpointError(f"{index}: entry {tf!r} is {'partitioned' if entry.sliced else entry.dtype}, "
                                  f"expected one of {', '.join(WEIGHT_DTYPES)}; re-copy the release")
        if entry.shape != stored:
            raise CheckpointError(f"{index}: entry {tf!r} has shape {list(entry.shape)}, but {config} describes "
                                  f"{list(stored)}; the config file belongs to another model")


# ---- writing the checkpoint folder ---------------------------------------------------------------
def convert_release(release: Release, out: Path, verify: bool = True) -> Path:
    """Write `release` as a checkpoint folder at `out` (a new folder; written beside it and
    renamed into place, so no reader sees half of it)."""
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with parents_made_for(out):  # removed again if the conversion fails
            return _convert_into(release, out, tmp, verify)
    except OSError as err:  # the folders above `out` could not be made
        raise CheckpointError(f"cannot write the converted release to {out} ({err.strerror or err})") from None


def _convert_into(release: Release, out: Path, tmp: Path, verify: bool) -> Path:
    try:
        tmp.mkdir()
        _write_weights(release, tmp / WEIGHTS, verify)
        config = {**transformers_fields(release.spec), "pad_token_id": 0,
                  "architectures": ["AlbertForPreTraining" if release.family == "albert" else "BertForPreTraining"]}
        (tmp / CONFIG).write_text(json.dumps(config, indent=2))
        _write_tokenizer(release, tmp)
        (tmp / CARD).write_text(json.dumps(release_card(release), indent=2))
        os.replace(tmp, out)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if (out / CARD).is_file():  # another process converted the same release first
            return out
        raise CheckpointError(f"cannot write the converted release to {out} ({err.strerror or err})") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _write_weights(release: Release, file: Path, verify: bool) -> None:
    """A safetensors file written one tensor at a time (float32, transformers' names and layouts)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for key, (_, _, shape) in release.names.items():
        size = 4 * int(np.prod(shape))
        header[key] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(file, "wb") as handle:
        handle.write(len(text).to_bytes(8, "little") + text)
        for tf, transpose, _ in release.names.values():
            tensor = release.bundle.read(tf, verify=verify).astype(np.float32, copy=False)
            if not np.isfinite(tensor).all():
                raise CheckpointError(f"{release.bundle.index}: entry {tf!r} holds NaN or infinite values; re-copy the release")
            handle.write(np.ascontiguousarray(tensor.T if transpose else tensor).tobytes())


def _write_tokenizer(release: Release, out: Path) -> None:
    from transformers import AlbertTokenizer, BertTokenizer

    from albert_lab.tokenizer import save_release_tokenizer

    source = release.folder / TOKENIZERS[release.family]
    if release.family == "albert":  # ALBERT's SentencePiece: lower-cased, accents stripped, as its own code does
        shutil.copyfile(source, out / "spiece.model")
        tokenizer = AlbertTokenizer.from_pretrained(str(out), do_lower_case=True, keep_accents=False)
    else:
        shutil.copyfile(source, out / "vocab.txt")
        tokenizer = BertTokenizer.from_pretrained(str(out), do_lower_case=release.lowercase)
    tokenizer.save_pretrained(str(out))  # transformers' files, for other programs; this project reads the mark below
    save_release_tokenizer(out, release.family, release.lowercase)


def unpacked_from(folder: Path) -> dict[str, Any] | None:
    """The archive a release folder was unpacked from ({"name", "sha256", "bytes"}), or None."""
    root = cache_dir() / "releases" / "unpacked"
    for above in [folder, *folder.parents]:
        if above.parent == root:
            try:
                return json.loads((above / ARCHIVE_CARD).read_text())
            except (OSError, ValueError):
                return None
        if above == root:
            break
    return None


def release_card(release: Release) -> dict[str, Any]:
    hashes, data = release.content_sha256, release.bundle.shards
    kind = "SOP" if release.family == "albert" else "NSP"
    archive = unpacked_from(release.folder)
    return {
        "format": 1, "spec": release.spec.to_dict(), "objective": release.spec.objective,
        "heads": {"mlm": "trained", "pair": "trained"},
        "provenance": {
            "origin": ORIGIN, "release": release.folder.name,
            **({"archive_sha256": f"{archive['name']} {archive['sha256']}"} if archive else {}),
            "index_sha256": f"{release.bundle.index.name} {hashes['index']}",
            "weights_sha256": f"{hashes['weights']} (the {len(release.variables):,} variables read, {_size(release.read_bytes)} "
                              f"of {', '.join(f'{f.name} ({_size(f.stat().st_size)})' for f in data)}; slots not read)",
            "tokenizer_sha256": f"{TOKENIZERS[release.family]} {hashes['tokenizer']}",
            "config": CONFIGS[release.family],
            "tokenizer": f"{TOKENIZERS[release.family]}, tokenised as the release's own tokenization.py does",
            "casing": release.casing,
            "heads": f"MLM (cls/predictions) and {kind} (cls/seq_relationship) from the release: trained",
            "skipped": f"{len(release.skipped):,} variables never read: optimizer slots (*/adam_m, */adam_v) and global_step",
            "activation": release.activation or f"{release.spec.activation}: "
                          + ("the tanh GELU ALBERT's modeling.py computes for 'gelu'" if release.spec.activation == "gelu_new"
                             else "as the config says"),
        },
    }



def release_cache_key(release: Release) -> str:
    """The cache folder's name: the content of everything the conversion reads (`content_sha256`:
    a file's name, size or time can be copied, its bytes cannot be forged under one hash), the
    spec and casing read from them, and the release folder's name, which its card carries. About
    a second per GB of weights (ALBERT-base: 45 MB), paid on every load and worth it: a cache hit
    is another model's answers when the key can be forged."""
    digest = hashlib.sha256(json.dumps({**release.content_sha256, "conversion": CONVERSION}, sort_keys=True).encode())
    digest.update(release.folder.name.encode())
    digest.update(json.dumps(release.spec.to_dict(), sort_keys=True).encode() + str(release.lowercase).encode())
    return f"{release.family}-{digest.hexdigest()[:32]}"


def converted_release(folder: Path) -> Path:
    """The converted checkpoint folder of a release folder, from the cache or made now (once)."""
    release = open_release(folder)
    out = cache_dir() / "releases" / release_cache_key(release)
    remove_dead_temporaries(out.parent)
    if (out / CARD).is_file() and (out / WEIGHTS).is_file():
        return out
    free = shutil.disk_usage(_existing_parent(out)).free
    if free < release.read_bytes + (64 << 20):
        raise CheckpointError(f"{release.describe()}; converting it needs {release.read_bytes / 2**20:,.0f} MiB in "
                              f"{cache_dir()}, which has {free / 2**20:,.0f} MiB free: free space, or move the cache "
                              "(ALBERT_LAB_CACHE)")
    return convert_release(release, out)


def _existing_parent(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path
