"""A checkpoint folder's files: their names, their readers, and whether a source is a
local folder or a hub id. No torch, no transformers at import."""

from __future__ import annotations

import json
import os
import re
import stat
import struct
from pathlib import Path
from typing import Any, get_args

from albert_lab.checkpoint.heads import HeadState
from albert_lab.data.textfile import read_json, read_user_file
from albert_lab.errors import AlbertLabError, CheckpointError, DataError
from albert_lab.importing import MODEL_CODE
from albert_lab.params import fit_problem
from albert_lab.paths import user_path
from albert_lab.spec import ModelSpec, transformers_fields

HEAD_STATES = get_args(HeadState)

CARD = "albert_lab.json"
CONFIG = "config.json"
WEIGHTS = "model.safetensors"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
READ_SUFFIXES = (".safetensors", ".json", ".model", ".txt")  # weights, config, card, tokenizer files and vocabularies
MAX_JSON_BYTES = 50_000_000  # config, card and tokenizer JSON; a tokenizer.json of 250,000 pieces is ~20 MB
# config.json keys that decide which weights a model has: an edit under albert_lab.json's spec leaves weights random
STRUCTURE = ("model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "max_position_embeddings", "type_vocab_size", "embedding_size", "num_hidden_groups", "inner_group_num")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def is_local_source(text: str) -> bool:
    """A hub id is `name` or `org/name`; anything else, an existing path, or a path whose
    first part exists here (`checkpoints/typo`) is a local folder."""
    if text.startswith((".", "/", "~")) or not HUB_ID.match(text):
        return True
    try:
        return user_path(text).exists() or Path(text.split("/")[0]).is_dir()
    except AlbertLabError:  # the loader refuses it with the same words
        return True


def stamp(source: str | Path) -> float:
    """Changes when a folder's weights or card are rewritten (a cache key), or a release's
    checkpoint index or archive; 0 for a hub id."""
    path = Path(source)
    files = [path / WEIGHTS, path / CARD, path, *(path.glob("*.index") if path.is_dir() else ())]
    return max((f.stat().st_mtime for f in files if f.is_file()), default=0.0)


def file_identity(path: Path) -> tuple[int, ...]:
    """(device, inode, size, mtime, ctime) of `path` itself (a link not followed): a file whose bytes change
    gets a new change time, which no user can set back, so a memo keyed on it is never stale."""
    info = path.lstat()
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def read_card(folder: Path) -> dict[str, Any]:
    file = folder / CARD
    if not file.exists():
        return {}
    card = _read_json_object(file, "fix or delete it")
    for key in ("spec", "heads", "metrics"):
        if key in card and not isinstance(card[key], dict):
            raise CheckpointError(f"{file}: {key!r} is {_kind(card[key])}, expected an object; fix or delete the file")
    for head, state in card.get("heads", {}).items():
        if not isinstance(state, str) or state not in HEAD_STATES:
            shown = _kind(state) if isinstance(state, (dict, list)) or len(repr(state)) > 40 else repr(state)
            raise CheckpointError(f"{file}: heads.{str(head)[:40]} is {shown}; allowed: {', '.join(HEAD_STATES)}; fix or delete the file")
    return card


def _read_json_object(file: Path, advice: str) -> dict[str, Any]:
    """A JSON file that must hold an object; one-line CheckpointError naming the file otherwise
    (read bounded: a FIFO or a folder in its place never blocks, a huge file is refused)."""
    try:
        data = read_json(read_user_file(file, MAX_JSON_BYTES), str(file))
    except DataError as err:
        raise CheckpointError(f"{err}; {advice}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{file} holds {_kind(data)}, expected a JSON object; {advice}")
    return data


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def check_regular(file: Path) -> None:
    """Refuse a file the loaders would read that is not a regular file: a folder
    (IsADirectoryError), a symlink loop (ELOOP), a FIFO or device (open() blocks for ever)."""
    try:
        mode = os.stat(file).st_mode
    except OSError as err:
        raise CheckpointError(f"{file} cannot be read ({err.strerror or err}); re-copy the checkpoint") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise CheckpointError(f"{file} is {kind}, not a file; re-copy the checkpoint")


def check_file_kinds(folder: Path) -> None:
    """check_regular for every file of a folder that a loader reads (weights, JSON, vocabularies)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)[:10_000]
    except OSError as err:
        raise CheckpointError(f"{folder} cannot be read ({err.strerror or err})") from None
    for entry in entries:
        if entry.name.endswith(READ_SUFFIXES) or entry.name.endswith(PICKLE_SUFFIXES):
            check_regular(Path(entry.path))


# safetensors dtypes and their sizes in bytes (the format's own list)
SAFETENSORS_DTYPES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
                      "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
FLOAT_DTYPES = ("F8_E5M2", "F8_E4M3", "F16", "BF16", "F32", "F64")


def safetensors_keys(file: Path) -> set[str]:
    """Tensor names from a safetensors header (8-byte length, JSON), checking what the
    loader would trip on: an object of tensors with a known dtype, a shape, and byte
    offsets that tile the data exactly (no overlaps, no gaps), all of it in the file."""
    damaged = f"{file} is damaged or truncated"
    advice = "re-copy or re-train the checkpoint"
    check_regular(file)
    try:
        with file.open("rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > 100_000_000:
                raise CheckpointError(f"{damaged} (header of {length} bytes); {advice}")
            header = json.loads(handle.read(length))
    except (struct.error, ValueError, RecursionError, OSError) as err:  # JSONDecodeError, UnicodeDecodeError are ValueErrors
        raise CheckpointError(f"{damaged} (unreadable header: {type(err).__name__}); {advice}") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{damaged} (the header is {_kind(header)}, not an object of tensors); {advice}")
    spans = sorted(_tensor_span(file, name, entry) for name, entry in header.items() if name != "__metadata__")
    end = 0
    for begin, stop, name in spans:
        if begin != end:
            what = "overlaps the tensor before it" if begin < end else "leaves a gap before it"
            raise CheckpointError(f"{damaged} (tensor {name!r} {what}: bytes {begin}-{stop}); {advice}")
        end = stop
    expected, actual = 8 + length + end, file.stat().st_size
    if actual < expected:
        raise CheckpointError(f"{damaged} ({actual:,} of {expected:,} bytes); {advice}")
    return {name for name in header if name != "__metadata__"}


def _tensor_span(file: Path, name: str, entry: object) -> tuple[int, int, str]:
    """(begin, end, name) of one header entry, after checking its dtype, shape and size."""
    def bad(what: str) -> CheckpointError:
        return CheckpointError(f"{file} is damaged: tensor {name[:80]!r} {what}; re-copy or re-train the checkpoint")

    if not isinstance(entry, dict):
        raise bad(f"is described by {_kind(entry)}, not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in SAFETENSORS_DTYPES:
        raise bad(f"has an unknown dtype {str(dtype)[:20]!r}; known: {', '.join(SAFETENSORS_DTYPES)}")
    if dtype not in FLOAT_DTYPES and name.endswith((".weight", ".bias")):  # every parameter of ALBERT and BERT is a float
        raise bad(f"is stored as {dtype}, an integer type, but it is a float parameter (its values would be read as "
                  "whole numbers)")
    is_count = lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0
    if not isinstance(shape, list) or not all(is_count(d) for d in shape):
        raise bad("has a shape that is not a list of sizes")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(is_count(o) for o in offsets) and offsets[0] <= offsets[1]):
        raise bad("has data_offsets that are not two increasing byte positions")
    size = SAFETENSORS_DTYPES[dtype]
    for dim in shape:
        size *= dim
    if offsets[1] - offsets[0] != size:
        raise bad(f"takes {offsets[1] - offsets[0]} bytes, but its dtype and shape need {size}")
    return offsets[0], offsets[1], name


def read_config(folder: Path) -> dict[str, Any]:
    return _read_json_object(folder / CONFIG, "fix it or re-save the checkpoint")


def read_spec(folder: Path, card: dict[str, Any], config: Any = None) -> ModelSpec:
    """From albert_lab.json when this project wrote the folder (and config.json must build
    the same model); otherwise from config.json through transformers (its defaults fill
    what the file leaves out). Refused when this machine cannot hold or run the model:
    bounded from the spec, before any weight is allocated."""
    spec = _card_spec(folder, card) if "spec" in card else _config_spec(folder, config)
    if problem := fit_problem(spec):
        raise CheckpointError(f"{folder}: this machine cannot load it: {problem}")
    return spec


def _card_spec(folder: Path, card: dict[str, Any]) -> ModelSpec:
    try:
        spec = ModelSpec.from_dict(card["spec"])
    except AlbertLabError as err:
        raise CheckpointError(f"{folder / CARD}: the spec is not valid ({err}); fix or delete the file") from None
    except (TypeError, ValueError, OverflowError, RecursionError) as err:
        raise CheckpointError(f"{folder / CARD}: the spec is not valid ({type(err).__name__}: "
                              f"{str(err)[:120]}); fix or delete the file") from None
    if (folder / CONFIG).exists():
        config, expected = read_config(folder), transformers_fields(spec)
        defaults = {"num_hidden_groups": 1, "inner_group_num": 1} if spec.family == "albert" else {}
        for key in STRUCTURE:
            if key in expected and config.get(key, defaults.get(key)) != expected[key] and (key in config or key in defaults):
                found = config.get(key, defaults.get(key))
                shown = _kind(found) if isinstance(found, (dict, list)) else repr(found)[:40]
                raise CheckpointError(f"{folder / CONFIG} says {key} {shown}, but the spec in {CARD} builds {expected[key]!r}: "
                                      "the model it builds would not match its weights; restore the file (re-copy the checkpoint)")
    return spec


def _config_spec(folder: Path, config: Any) -> ModelSpec:
    with MODEL_CODE:  # torch and transformers, never beside another thread's import of them
        from albert_lab.models import spec_from_config

        config = config if config is not None else read_transformers_config(folder)
    try:
        return spec_from_config(config, {})
    except AlbertLabError as err:
        raise CheckpointError(f"{folder / CONFIG}: not a model ALBERT Lab can build ({err})") from None
    except (TypeError, ValueError, AttributeError, ArithmeticError) as err:
        raise CheckpointError(f"{folder / CONFIG}: not a model ALBERT Lab can build ({type(err).__name__}: "
                              f"{str(err)[:120]})") from None


def read_transformers_config(folder: Path) -> Any:
    """transformers' config object for a folder, or a CheckpointError naming config.json
    (a config.json of the right shape can still hold values transformers rejects)."""
    with MODEL_CODE:  # transformers' modules, never beside another thread's import of them
        from transformers import AutoConfig
    try:
        with MODEL_CODE:  # from_pretrained imports the config's module of its model type
            config = AutoConfig.from_pretrained(str(folder))
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                     "type_vocab_size", "max_position_embeddings"):
            value = getattr(config, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {str(value)[:40]!r}")
        eps = getattr(config, "layer_norm_eps", 1e-12)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:  # NaN fails both
            raise ValueError(f"layer_norm_eps must be a small positive number (BERT: 1e-12), got {str(eps)[:40]!r}; "
                             "at 0 or below every LayerNorm can divide by zero and every score is NaN")
    except Exception as err:  # transformers raises many types for bad values (KeyError, TypeError, ...)
        said = " ".join(str(err).split())  # its strict validation says why on the second line
        raise CheckpointError(f"{folder / CONFIG}: transformers cannot read it ({type(err).__name__}: "
                              f"{said[:200]}); fix it or re-save the checkpoint") from None
    return config


GENERIC_FOLDERS = {"model", "models", "checkpoint", "weights", "snapshot", "output", "outputs", "final", "best", "hf"}


def checkpoint_label(folder: Path, name: str | None = None) -> str:
    """A run's checkpoint is named after its run folder; others after their folder, unless
    its name says nothing (all-MiniLM-L6-v2's package folder is 'model'; a hub cache's is a
    commit hash): then after the model card's title (README.md's first heading), else the
    hub cache's repository, else the folder above."""
    if name:
        return name
    if folder.name == "checkpoint":
        return folder.parent.name
    if folder.name.lower() not in GENERIC_FOLDERS and not re.fullmatch(r"[0-9a-f]{40}", folder.name):
        return folder.name
    if title := _card_title(folder / "README.md"):
        return title
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name.removeprefix("models--").replace("--", "/")
    return folder.parent.name or folder.name


def _card_title(readme: Path) -> str | None:
    """The first '# ' heading of a model card, when it reads as a name (one short line)."""
    try:
        if not readme.is_file():  # never open a FIFO or a folder
            return None
        with readme.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(65536)
    except OSError:
        return None
    for line in head.splitlines():
        if line.startswith("# "):
            title = re.sub(r"^model card(\s+(for|of)\b)?:?\s*", "", line[2:].strip().strip("`*"), flags=re.I)
            return title if 0 < len(title) <= 80 and not any(c in title for c in "/\\,") else None
    return None
