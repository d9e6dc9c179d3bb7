"""Fuzzing Google's release surfaces at depth: release configs with every JSON type in every field,
SentencePiece models and vocab.txt of random, empty and truncated bytes, zip and tar archives with
every compression method and flag, corrupt streams and encrypted members, and TensorBundle indexes
of random entry counts and shapes.

Invariant for every case: a result or the project's own one-line error (never another exception),
within 10 s and 1 GiB, and nothing written outside the cache's own folders; a refused archive leaves
nothing in the cache. Same knob as tests/test_fuzz.py: ALBERT_LAB_FUZZ_EXAMPLES (default 2,400)
scales every test; the shares below add ~600 cases.
"""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from conftest import JSON, fuzz, outcome, scratch_folder
from hypothesis import given
from hypothesis import strategies as st
from tf_bundle import Spec, write_coded_index, write_index

from albert_lab.checkpoint.archive import unpacked_release
from albert_lab.checkpoint.release import open_release
from albert_lab.checkpoint.release_convert import converted_release
from albert_lab.checkpoint.tf1 import DTYPES, read_bundle

FIXTURE = Path(__file__).parent / "fixtures" / "tf_releases"
ALBERT, BERT = FIXTURE / "albert_tiny", FIXTURE / "uncased_L-2_H-16_A-2"
SHARES = {"configs": 0.06, "convert": 0.01, "vocab": 0.03, "archives": 0.08, "indexes": 0.06, "prefix_indexes": 0.02}
CASE_S = 10.0  # seconds a case may take
CASE_BYTES = 1 << 30  # memory a case may add to the process's peak
NASTY = st.sampled_from([0, -1, 1, 2, 7, 2**31, 2**63, 10**40, 1.5, -0.0, 1e308, float("inf"), True, False, None, "", "x",
                         "gelu", "relu", "\ud800", "a\x00b", [], {}, [1], ["gelu"], {"a": 1}, "9" * 400])
VALUE = NASTY | JSON


def _cache() -> Path:
    return Path(os.environ["ALBERT_LAB_CACHE"])


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kilobytes


def bounded(call, *args):
    """outcome(call, *args), failing a case slower than CASE_S or growing the peak memory by CASE_BYTES."""
    before, start = _peak(), time.perf_counter()
    result = outcome(call, *args)
    assert time.perf_counter() - start < CASE_S, f"{call.__name__} took {time.perf_counter() - start:.1f} s"
    assert _peak() - before < CASE_BYTES, f"{call.__name__} grew the peak by {(_peak() - before) / 2**20:,.0f} MiB"
    return result


def _release(source: Path, changes: dict[str, bytes] | None = None) -> Path:
    files = {p.name: p.read_bytes() for p in source.iterdir()}
    folder = scratch_folder({**files, **(changes or {})}) / source.name
    folder.mkdir()
    for name in list(folder.parent.iterdir()):
        if name != folder:
            name.rename(folder / name.name)
    return folder


def _written_outside(folder: Path, before: set[str]) -> set[str]:
    return {p.name for p in folder.iterdir()} - before


# ---- configs: every JSON type in every field -----------------------------------------------------------
ALBERT_KEYS = [*sorted(json.loads((ALBERT / "albert_config.json").read_text())), "net_structure_type", "bogus"]
BERT_KEYS = [*sorted(json.loads((BERT / "bert_config.json").read_text())), "bogus"]


@fuzz(SHARES["configs"])
@given(family=st.sampled_from(["albert", "bert"]), data=st.data())
def test_release_configs_with_any_value_in_any_field(family, data):
    source, name, keys = (ALBERT, "albert_config.json", ALBERT_KEYS) if family == "albert" else (BERT, "bert_config.json", BERT_KEYS)
    config = json.loads((source / name).read_text())
    for key in data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=3, unique=True)):
        config[key] = data.draw(VALUE)
    whole = data.draw(st.sampled_from(["dict", "list", "scalar", "bytes"]))
    text = {"dict": json.dumps(config), "list": json.dumps([config]), "scalar": "7", "bytes": "\x00{\x80"}[whole]
    folder = _release(source, {name: text.encode("utf-8", "surrogatepass")})
    before = {p.name for p in folder.iterdir()}
    bounded(open_release, folder)
    assert not _written_outside(folder, before)


@fuzz(SHARES["convert"])
@given(family=st.sampled_from(["albert", "bert"]), key=st.sampled_from(["hidden_act", "vocab_size", "type_vocab_size",
                                                                        "max_position_embeddings", "layer_norm_eps"]),
       value=NASTY)
def test_release_configs_that_plan_are_converted_or_refused(family, key, value):
    """What open_release accepts goes through the conversion: its result loads, or one line."""
    source, name = (ALBERT, "albert_config.json") if family == "albert" else (BERT, "bert_config.json")
    config = {**json.loads((source / name).read_text()), key: value}
    folder = _release(source, {name: json.dumps(config).encode("utf-8", "surrogatepass")})
    if bounded(open_release, folder) is not None:
        out = bounded(converted_release, folder)
        assert out is None or (out / "model.safetensors").is_file()


# ---- tokenizer files: random, empty, truncated ---------------------------------------------------------
@fuzz(SHARES["vocab"])
@given(family=st.sampled_from(["albert", "bert"]), kind=st.sampled_from(["random", "empty", "truncated", "flipped"]),
       data=st.data())
def test_tokenizer_files_of_random_empty_or_truncated_bytes(family, kind, data):
    source, name = (ALBERT, "30k-clean.model") if family == "albert" else (BERT, "vocab.txt")
    raw = (source / name).read_bytes()
    if kind == "random":
        raw = data.draw(st.binary(max_size=2000))
    elif kind == "empty":
        raw = b""
    elif kind == "truncated":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        at = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255))]) + raw[at + 1:]
    folder = _release(source, {name: raw})
    if bounded(open_release, folder) is not None:
        bounded(converted_release, folder)


# ---- archives: every method and flag, corrupt streams, encrypted members ------------------------------
ZIP_METHODS = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
TAR_MODES = ["w", "w:gz", "w:bz2", "w:xz"]


def _members(source: Path, data) -> dict[str, bytes]:
    files = {f"{source.name}/{p.name}": p.read_bytes() for p in sorted(source.iterdir())}
    names = data.draw(st.lists(st.sampled_from(sorted(files)), min_size=1, unique=True))
    extra = data.draw(st.dictionaries(st.sampled_from(["./", "x/../y", "/abs", "a\\b", "dir/", "release.txt", ".", "c:x"]),
                                      st.binary(max_size=20), max_size=2))
    return {**{n: files[n] for n in names}, **extra}


def _mutate(raw: bytes, data) -> bytes:
    raw = bytearray(raw)
    for _ in range(data.draw(st.integers(0, 3))):
        how = data.draw(st.sampled_from(["flip", "truncate", "flag", "method"]))
        if not raw:
            break
        at = data.draw(st.integers(0, len(raw) - 1))
        if how == "flip":
            raw[at] ^= data.draw(st.integers(1, 255))
        elif how == "truncate":
            del raw[at:]
        else:  # a zip header's flag bits (encrypted, descriptor, ...) or method, wherever a header starts
            starts = [i for i in range(len(raw) - 30) if raw[i:i + 4] in (b"PK\x03\x04", b"PK\x01\x02")]
            if starts:
                i = data.draw(st.sampled_from(starts))
                offset = (6 if raw[i + 2] == 3 else 8) + (0 if how == "flag" else 2)
                raw[i + offset:i + offset + 2] = data.draw(st.integers(0, 0xFFFF)).to_bytes(2, "little")
    return bytes(raw)


@fuzz(SHARES["archives"])
@given(source=st.sampled_from([ALBERT, BERT]), kind=st.sampled_from(["zip", "tar"]), data=st.data())
def test_archives_of_every_method_and_flag_unpack_or_refuse_and_leave_nothing(source, kind, data):
    members = _members(source, data)
    buffer = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buffer, "w", compression=data.draw(st.sampled_from(ZIP_METHODS))) as handle:
            for name, raw in members.items():
                handle.writestr(name, raw)
        suffix = ".zip"
    else:
        mode = data.draw(st.sampled_from(TAR_MODES))
        with tarfile.open(fileobj=buffer, mode=mode) as handle:
            for name, raw in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(raw)
                handle.addfile(info, io.BytesIO(raw))
        suffix = {"w": ".tar", "w:gz": ".tar.gz", "w:bz2": ".tar.gz", "w:xz": ".tgz"}[mode]  # a name need not say the truth
    folder = scratch_folder({f"{source.name}{suffix}": _mutate(buffer.getvalue(), data)})
    archive = next(folder.iterdir())
    unpacked = _cache() / "releases" / "unpacked"
    before = set(os.listdir(unpacked)) if unpacked.is_dir() else set()
    found = bounded(unpacked_release, archive)
    after = set(os.listdir(unpacked)) if unpacked.is_dir() else set()
    assert [p.name for p in folder.iterdir()] == [archive.name]  # nothing written beside the archive
    assert not [n for n in after if n.startswith(".") and ".tmp-" in n]  # no half-unpacked folder left
    if found is None:
        assert after == before, "a refused archive left its unpacked files in the cache"
    else:
        assert found.is_dir() and unpacked in found.parents
        bounded(open_release, found)
        shutil.rmtree(next(p for p in [found, *found.parents] if p.parent == unpacked))  # the next case starts bare


# ---- TensorBundle indexes: random entry counts and shapes ----------------------------------------------
DTYPE_NAMES = sorted({name for name, _ in DTYPES.values()} | {"string"})
SHAPE = st.lists(st.integers(0, 2**40) | st.integers(0, 64), max_size=5)


@fuzz(SHARES["indexes"])
@given(family=st.sampled_from(["albert", "bert"]), data=st.data())
def test_indexes_of_random_entries_and_shapes(family, data):
    source = ALBERT if family == "albert" else BERT
    folder = _release(source)
    prefix = next(folder.glob("*.index")).with_suffix("")
    bundle = read_bundle(prefix)
    entries = {n: Spec(e.dtype, e.shape, e.offset, e.size, e.crc) for n, e in bundle.entries.items()}
    names = sorted(entries)
    for _ in range(data.draw(st.integers(0, 4))):  # existing entries rewritten, removed, or new ones added
        how = data.draw(st.sampled_from(["shape", "dtype", "offset", "size", "crc", "remove", "add", "shard"]))
        name = data.draw(st.sampled_from(names))
        if how == "remove":
            entries.pop(name, None)
        elif how == "add":
            entries[data.draw(st.text(min_size=1, max_size=30))] = Spec(data.draw(st.sampled_from(DTYPE_NAMES)), tuple(data.draw(SHAPE)),
                                                                         data.draw(st.integers(0, 2**63)), data.draw(st.integers(0, 2**63)))
        elif name in entries:
            value = {"shape": lambda: tuple(data.draw(SHAPE)), "dtype": lambda: data.draw(st.sampled_from(DTYPE_NAMES)),
                     "offset": lambda: data.draw(st.integers(0, 2**64 - 1)), "size": lambda: data.draw(st.integers(0, 2**64 - 1)),
                     "crc": lambda: data.draw(st.none() | st.integers(0, 2**32 - 1)), "shard": lambda: data.draw(st.integers(0, 3))}[how]()
            setattr(entries[name], how, value)
    many = data.draw(st.integers(0, 3000))  # a large table: an entry count no release has
    for i in range(many):
        entries[f"zz/extra_{i:05d}"] = Spec("float32", (1,), 0, 4)
    write_index(Path(f"{prefix}.index"), entries, shards=data.draw(st.sampled_from([1, 1, 1, 2, 10_001])))
    if bounded(open_release, folder) is not None:
        bounded(converted_release, folder)


@pytest.mark.parametrize("count", [0, 1, 50_000])
def test_indexes_of_extreme_entry_counts(count, tmp_path):
    prefix = tmp_path / "model.ckpt-best"
    write_index(Path(f"{prefix}.index"), {f"v{i:06d}": Spec("float32", (1,), 0, 4) for i in range(count)})
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"\0" * 4)
    started = time.perf_counter()
    bundle = bounded(read_bundle, prefix)
    assert bundle is not None and len(bundle.entries) == count and time.perf_counter() - started < CASE_S


# ---- prefix-coded keys: what each key shares with the one before is stored as a count --------------
PREFIX_SECONDS = 2.0  # a hostile index is refused within this (tests/test_checkpoint_hostile.py: and 256 MiB)
HEADER = b"\x08\x01\x1a\x02\x08\x01"  # num_shards 1, version 1


@fuzz(SHARES["prefix_indexes"])
@given(family=st.sampled_from(["grow", "long", "blocks"]), records=st.integers(1, 30_000), length=st.integers(1, 6000),
       blocks=st.integers(1, 300), step=st.integers(1, 64))
def test_prefix_coded_indexes_are_read_or_refused_within_bounds(family, records, length, blocks, step):
    """Keys that grow by `step` bytes a record, keys of a long shared prefix and a counter, and many
    blocks each restarting a long key: read or refused in one line, within 2 s and 1 GiB."""
    folder = scratch_folder({"model.ckpt-best.data-00000-of-00001": b""})
    head = [(0, b"", HEADER)]
    if family == "grow":
        coded = [(0, b"a" * length, b"")] + [(length + i * step, b"a" * step, b"") for i in range(records - 1)]
        layout = [(b"b", head + coded)]
    else:
        per_block = records if family == "long" else max(1, records // blocks)
        count = 1 if family == "long" else blocks
        layout = [(b"\0", head)]
        for b in range(count):
            first = b * per_block
            keys = [(0, b"p" * length + first.to_bytes(4, "big"), b"")]
            keys += [(length + 2, (first + i).to_bytes(4, "big")[-2:], b"") for i in range(1, per_block)]
            layout.append((b"p" * length + (first + per_block - 1).to_bytes(4, "big"), keys))
    write_coded_index(folder / "model.ckpt-best.index", layout)
    started = time.perf_counter()
    bounded(read_bundle, folder / "model.ckpt-best")
    assert time.perf_counter() - started < PREFIX_SECONDS
