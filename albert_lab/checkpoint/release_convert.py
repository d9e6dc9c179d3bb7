"""A release, opened and checked (`release.open_release`), written as a checkpoint folder of this
project, once, into the cache.

The weights are written tensor by tensor (model.safetensors, config.json, the tokenizer,
albert_lab.json saying where it came from), so memory holds one tensor at a time; a folder is
written beside its place and renamed into it. The cache folder is keyed on the SHA-256 of
everything the conversion reads. No TensorFlow, no torch: transformers is imported for the
tokenizer files only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from albert_lab.checkpoint.archive import unpacked_from
from albert_lab.checkpoint.files import CARD, CONFIG, WEIGHTS, file_identity
from albert_lab.checkpoint.release import CONFIGS, TOKENIZERS, Release, open_release, size_words
from albert_lab.checkpoint.release_names import skipped_words
from albert_lab.checkpoint.sources import sha256
from albert_lab.checkpoint.store import remove_dead_temporaries
from albert_lab.errors import CheckpointError
from albert_lab.paths import cache_dir, parents_made_for
from albert_lab.spec import transformers_fields

ORIGIN = "Google's original release"
CONVERSION = 3  # what a converted folder holds (2: the release's own tokenization; 3: MANIFEST); a new one is converted anew
MANIFEST = ".sha256.json"  # in a converted folder: {file name: SHA-256} of every other file, checked before it is served
_VERIFIED: set[tuple[Any, ...]] = set()  # (folder, each file's dev, inode, size, mtime, ctime) verified in this process


def convert_release(release: Release, out: Path, verify: bool = True, manifest: bool = False) -> Path:
    """Write `release` as a checkpoint folder at `out` (a new folder; written beside it and
    renamed into place, so no reader sees half of it); with `manifest`, the SHA-256 of each of its
    files beside them (MANIFEST: the cache's entries are checked against it before they are served)."""
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with parents_made_for(out):  # removed again if the conversion fails
            return _convert_into(release, out, tmp, verify, manifest)
    except OSError as err:  # the folders above `out` could not be made
        raise CheckpointError(f"cannot write the converted release to {out} ({err.strerror or err})") from None


def _convert_into(release: Release, out: Path, tmp: Path, verify: bool, manifest: bool) -> Path:
    try:
        tmp.mkdir()
        _write_weights(release, tmp / WEIGHTS, verify)
        config = {**transformers_fields(release.spec), "pad_token_id": 0,
                  "architectures": ["AlbertForPreTraining" if release.family == "albert" else "BertForPreTraining"]}
        (tmp / CONFIG).write_text(json.dumps(config, indent=2))
        _write_tokenizer(release, tmp)
        (tmp / CARD).write_text(json.dumps(release_card(release), indent=2))
        if manifest:
            (tmp / MANIFEST).write_text(json.dumps({p.name: sha256(p) for p in sorted(tmp.iterdir())}, indent=1))
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
    """A safetensors file written one tensor at a time (float32, transformers' names and layouts), from
    bytes hashed as they are read: bytes other than those the cache key hashed are never kept under it."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for key, (_, _, shape) in release.names.items():
        size = 4 * int(np.prod(shape))
        header[key] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    digest = hashlib.sha256()
    with open(file, "wb") as handle:
        handle.write(len(text).to_bytes(8, "little") + text)
        for tf, transpose, _ in release.names.values():
            tensor = release.bundle.read(tf, verify=verify, digest=digest).astype(np.float32, copy=False)
            if not np.isfinite(tensor).all():
                raise CheckpointError(f"{release.bundle.index}: entry {tf!r} holds NaN or infinite values; re-copy the release")
            handle.write(np.ascontiguousarray(tensor.T if transpose else tensor).tobytes())
    if digest.hexdigest() != release.content_sha256["weights"]:
        raise CheckpointError(f"{release.folder}: its weights changed while they were converted (their bytes are not the "
                              "ones hashed first); nothing was kept: convert it again once the release is whole")


def _write_tokenizer(release: Release, out: Path) -> None:
    from transformers import AlbertTokenizer, BertTokenizer

    from albert_lab.tokenizer import save_release_tokenizer

    # the bytes read, checked and hashed when the release was opened: not the file again, which may have changed
    if release.family == "albert":  # ALBERT's SentencePiece: lower-cased, accents stripped, as its own code does
        (out / "spiece.model").write_bytes(release.tokenizer_bytes)
        tokenizer = AlbertTokenizer.from_pretrained(str(out), do_lower_case=True, keep_accents=False)
    else:
        (out / "vocab.txt").write_bytes(release.tokenizer_bytes)
        tokenizer = BertTokenizer.from_pretrained(str(out), do_lower_case=release.lowercase)
    tokenizer.save_pretrained(str(out))  # transformers' files, for other programs; this project reads the mark below
    save_release_tokenizer(out, release.family, release.lowercase)


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
            "weights_sha256": f"{hashes['weights']} (the {len(release.variables):,} variables read, {size_words(release.read_bytes)} "
                              f"of {', '.join(f'{f.name} ({size_words(f.stat().st_size)})' for f in data)}; slots not read)",
            "tokenizer_sha256": f"{TOKENIZERS[release.family]} {hashes['tokenizer']}",
            "config": CONFIGS[release.family],
            "tokenizer": f"{TOKENIZERS[release.family]}, tokenised as the release's own tokenization.py does",
            "casing": release.casing,
            "heads": f"MLM (cls/predictions) and {kind} (cls/seq_relationship) from the release: trained",
            "skipped": skipped_words(release.skipped),
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
    digest.update(json.dumps(unpacked_from(release.folder)).encode())  # the card names the archive it came from
    digest.update(json.dumps(release.spec.to_dict(), sort_keys=True).encode() + str(release.lowercase).encode())
    return f"{release.family}-{digest.hexdigest()[:32]}"


def converted_release(folder: Path) -> Path:
    """The converted checkpoint folder of a release folder, from the cache or made now (once)."""
    release = open_release(folder)
    out = cache_dir() / "releases" / release_cache_key(release)
    remove_dead_temporaries(out.parent)
    if (out / CARD).is_file() and (out / WEIGHTS).is_file():
        if verified(out):
            return out
        _discard(out)  # edited since it was written: converted again below
    free = shutil.disk_usage(_existing_parent(out)).free
    if free < release.read_bytes + (64 << 20):
        raise CheckpointError(f"{release.describe()}; converting it needs {release.read_bytes / 2**20:,.0f} MiB in "
                              f"{cache_dir()}, which has {free / 2**20:,.0f} MiB free: free space, or move the cache "
                              "(ALBERT_LAB_CACHE)")
    return convert_release(release, out, manifest=True)


def verified(folder: Path) -> bool:
    """Whether a converted folder holds exactly the files its MANIFEST lists, each with its SHA-256
    (hashed once per process while every file keeps its stamp: a change of a file's bytes changes its
    change time, which no user can set back)."""
    try:
        files = sorted(p for p in folder.iterdir() if p.name != MANIFEST)
        key = (str(folder), *[(p.name, *file_identity(p)) for p in files])
        if key in _VERIFIED:
            return True
        listed = json.loads((folder / MANIFEST).read_text())
        if not isinstance(listed, dict) or sorted(listed) != [p.name for p in files]:
            return False
        if any(not p.is_file() or p.is_symlink() or sha256(p) != listed[p.name] for p in files):
            return False
    except (OSError, ValueError):
        return False
    _VERIFIED.add(key)
    return True


def _discard(out: Path) -> None:
    """Take a cache entry out of view at once (renamed aside), then remove it."""
    aside = out.parent / f".{out.name}-edited.tmp-{os.getpid()}"
    try:
        os.replace(out, aside)
    except OSError:
        return  # gone already, or another process took it aside
    shutil.rmtree(aside, ignore_errors=True)


def _existing_parent(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path
