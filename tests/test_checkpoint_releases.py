"""Google's original ALBERT and BERT releases: the TF1 reader against what TensorFlow wrote, the
conversion against transformers 4.46's own TF loaders, and every damaged file as one line.

The fixture (tests/fixtures/tf_releases) was written by TensorFlow 2.21 and transformers 4.46 in a
throwaway environment (tests/fixtures/make_tf_releases.py); neither is needed here."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import one_line_error, run_cli
from tf_bundle import Spec, spiece_of_size, write_index
from tolerance import probability_bound, relative_bound

from albert_lab.checkpoint.crc32c import _scalar, crc32c, unmask
from albert_lab.checkpoint.release import open_release
from albert_lab.checkpoint.tf1 import Bundle, read_bundle

FIXTURE = Path(__file__).parent / "fixtures" / "tf_releases"
ALBERT, BERT = FIXTURE / "albert_tiny", FIXTURE / "uncased_L-2_H-16_A-2"
PREFIX = {"albert": ALBERT / "model.ckpt-best", "bert": BERT / "bert_model.ckpt"}
REFERENCE = json.loads((FIXTURE / "reference.json").read_text())
TENSORS = np.load(FIXTURE / "tensors.npz")


def test_crc32c_is_castagnoli_at_every_size():
    assert crc32c(b"123456789") == 0xE3069283 and crc32c(b"") == 0
    data = np.random.default_rng(0).integers(0, 256, (1 << 17) + 7, dtype=np.uint8)  # the lane path and its tail
    assert crc32c(data) == _scalar(0xFFFFFFFF, data) ^ 0xFFFFFFFF
    assert unmask(0xA282EAD8) == 0


@pytest.mark.parametrize("family", ["albert", "bert"])
def test_every_tensor_equals_what_tensorflow_wrote(family):
    bundle = read_bundle(PREFIX[family])
    assert "global_step" in bundle.entries and bundle.read("global_step") == 125000
    for name in bundle.entries:
        value = bundle.read(name)
        if name.endswith(("/adam_m", "/adam_v")):  # the fixture's slots are float32(0.01) times their variable
            assert np.array_equal(value, np.float32(0.01) * TENSORS[f"{family}:{name.rsplit('/', 1)[0]}"]), name
        else:
            expected = TENSORS[f"{family}:{name}"]
            assert value.dtype == expected.dtype and np.array_equal(value, expected), name
    assert len(bundle.entries) == {"albert": 97, "bert": 139}[family]


@pytest.mark.parametrize("family", ["albert", "bert"])
def test_release_scores_equal_transformers_446(family):
    """The pair head's probabilities and the MLM logits, loaded through the project, equal what
    transformers 4.46's load_tf_weights_in_albert / _bert give; the tokenizer makes the same ids."""
    from albert_lab.analysis.intrinsic import pair_probabilities
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(PREFIX[family].parent, device="cpu")
    ref = REFERENCE[family]
    assert (bundle.heads.mlm, bundle.heads.pair, bundle.heads.pair_kind) == ("trained", "trained", "sop" if family == "albert" else "nsp")
    assert not bundle.missing_keys and not bundle.heads.unused and bundle.heads.warning is None
    first, second = [a for a, _ in ref["pairs"]], [b for _, b in ref["pairs"]]
    probabilities = pair_probabilities(bundle.model, bundle.tokenizer, first, second)
    spec = bundle.spec.to_dict()
    assert bundle.model.config.hidden_act == "gelu_new"  # ALBERT's tanh GELU; the small-BERT-named BERT's too (bert_gelu)
    for i, (a, b) in enumerate(ref["pairs"]):
        assert bundle.tokenizer(a, b)["input_ids"] == ref["inputs"][i]["input_ids"]
        with torch.no_grad():
            out = bundle.model(**{k: torch.tensor([v]) for k, v in ref["inputs"][i].items()})
        # Tolerances from the computation, not from one CPU (tests/tolerance.py): each output may move by
        # path_length * 2^-24 relative to the largest value of its row (~4e-5 here; an AMX Xeon measured 5.6e-6)
        tokens = len(ref["inputs"][i]["input_ids"])
        pair = (out.sop_logits if family == "albert" else out.seq_relationship_logits)[0].tolist()
        assert abs(probabilities[i] - ref["pair_probabilities"][i]) <= probability_bound(relative_bound(family, spec, tokens), pair)
        mlm, expected = out.prediction_logits[0].numpy(), TENSORS[f"{family}:mlm_logits:{i}"]
        scale = np.maximum(1.0, np.abs(expected).max(axis=1, keepdims=True))
        assert np.all(np.abs(mlm - expected) <= relative_bound(family, spec, tokens, head="mlm") * scale), np.abs(mlm - expected).max()


def test_card_says_where_the_release_came_from():
    result = run_cli("card", str(ALBERT), "--json", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    card = json.loads(result.stdout)
    provenance = card["provenance"]
    assert provenance["origin"] == "Google's original release" and provenance["release"] == "albert_tiny"
    index, data = ALBERT / "model.ckpt-best.index", ALBERT / "model.ckpt-best.data-00000-of-00001"
    assert provenance["index_sha256"] == f"{index.name} {hashlib.sha256(index.read_bytes()).hexdigest()}"
    # the weights' hash covers exactly the bytes converted, as TensorFlow reads them, and no optimizer slot
    weights = b"".join(TENSORS[f"albert:{tf}"].astype("<f4").tobytes() for tf in open_release(ALBERT).variables)
    assert provenance["weights_sha256"].startswith(f"{hashlib.sha256(weights).hexdigest()} (the 32 variables read")
    assert data.name in provenance["weights_sha256"]
    assert provenance["skipped"].startswith("65 variables never read")  # 32 weights x 2 slots + global_step
    assert card["heads"] == {"mlm": "trained", "pair": "trained", "pair_kind": "sop"} and card["name"] == "albert_tiny"
    assert card["spec"]["activation"] == "gelu_new" and card["spec"]["num_layers"] == 3 and card["spec"]["sharing"] == "all"


def test_commands_run_on_release_folders(tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sentence_a,sentence_b\nthe city of paris is the capital of france.,it is known for its museums and its river.\n")
    result = run_cli("score", str(pairs), "--checkpoint", str(ALBERT), "--checkpoint", str(BERT), "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["checkpoint"]: r for r in json.loads(result.stdout)}
    assert rows["albert_tiny"]["head_status"] == "trained"
    for name, family in (("albert_tiny", "albert"), ("uncased_L-2_H-16_A-2", "bert")):  # pairs 0 and 1: A->B and B->A
        expected = REFERENCE[family]["pair_probabilities"][:2]
        assert [rows[name]["p_ab"], rows[name]["p_ba"]] == pytest.approx(expected, abs=1e-5)
    for args in (["oscillation", "--text", "the city of paris is the capital of france."],
                 ["lens-top", "--text", "the capital of france is [MASK].", "--top-k", "2"]):
        result = run_cli(*args, "--checkpoint", str(BERT), "--json")
        assert result.returncode == 0 and json.loads(result.stdout), result.stderr


def test_import_tf_keeps_a_checkpoint_folder(tmp_path):
    out = tmp_path / "bert-release"
    result = run_cli("import-tf", str(BERT), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "Google's original release" in result.stdout and "93 variables of training skipped" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == ["albert_lab.json", "config.json", "model.safetensors", "tokenizer.json",
                                                     "tokenizer_config.json", "vocab.txt"]
    card = json.loads(run_cli("card", str(out), "--json").stdout)
    assert card["provenance"]["origin"] == "Google's original release" and card["heads"]["pair"] == "trained"
    one_line_error(run_cli("import-tf", str(BERT), "--out", str(out)), "exists")


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_archives_as_downloaded(tmp_path, kind):
    archive = tmp_path / f"albert_tiny.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as handle:
            for file in ALBERT.iterdir():
                handle.write(file, f"albert_tiny/{file.name}")
    else:
        with tarfile.open(archive, "w:gz") as handle:
            handle.add(ALBERT, "albert_tiny")
    result = run_cli("card", str(archive), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["provenance"]["release"] == "albert_tiny"


def test_an_archive_is_named_after_the_release_it_holds_as_import_tf_names_it(tmp_path):
    """load_checkpoint named an archive after its file ('albert_base_v2.tar.gz'), import-tf and the card after
    the release folder inside it ('albert_base', as Google's albert_base_v2.tar.gz holds); a flat zip's folder
    is its name less the suffix."""
    from albert_lab.checkpoint.archive import unpacked_release
    from albert_lab.checkpoint.discover import summarize_checkpoint
    from albert_lab.checkpoint.load import load_checkpoint

    nested, flat = tmp_path / "albert_base_v2.tar.gz", tmp_path / "albert_tiny_v2.zip"
    with tarfile.open(nested, "w:gz") as handle:
        handle.add(ALBERT, "albert_base")
    with zipfile.ZipFile(flat, "w") as handle:
        for file in ALBERT.iterdir():
            handle.write(file, file.name)
    for archive, release in ((nested, "albert_base"), (flat, "albert_tiny_v2")):
        bundle = load_checkpoint(archive, device="cpu")
        assert bundle.name == release == bundle.card["provenance"]["release"], bundle.name
        assert open_release(unpacked_release(archive)).describe().startswith(f"{release}: ")  # import-tf's first line
        assert summarize_checkpoint(archive).name == release
    assert load_checkpoint(nested, device="cpu", name="mine").name == "mine"


def _tar_with(tmp_path: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    archive = tmp_path / "albert_base.tar.gz"
    with tarfile.open(archive, "w:gz") as handle:
        config = tarfile.TarInfo("albert_base/albert_config.json")
        config.size = 2
        handle.addfile(config, io.BytesIO(b"{}"))
        handle.addfile(member, io.BytesIO(data) if data else None)
    return archive


def test_archive_members_never_land_outside_the_cache(tmp_path):
    escape = tarfile.TarInfo("../../evil.txt")
    escape.size = 4
    one_line_error(run_cli("card", str(_tar_with(tmp_path, escape, b"evil"))), "would land outside")
    assert not (tmp_path / "evil.txt").exists()
    link = tarfile.TarInfo("albert_base/30k-clean.model")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    one_line_error(run_cli("card", str(_tar_with(tmp_path, link))), "is a link")


# ---- damaged and lying files ---------------------------------------------------------------------
@pytest.fixture
def copy(tmp_path) -> Path:
    folder = tmp_path / "albert_base"
    shutil.copytree(ALBERT, folder)
    return folder


def _rewrite(folder: Path, change) -> None:
    """Rewrite the index of `folder`'s checkpoint with `change(entries)` applied to what it records."""
    prefix = folder / "model.ckpt-best"
    bundle = read_bundle(prefix)
    entries = {n: Spec(e.dtype, e.shape, e.offset, e.size, e.crc) for n, e in bundle.entries.items()}
    change(entries)
    write_index(Path(f"{prefix}.index"), entries)


SOP = "cls/seq_relationship/output_weights"


def _extra(entries):
    entries["cls/seq_relationship/extra"] = entries["cls/seq_relationship/output_bias"]


@pytest.mark.parametrize(("change", "words"), [
    (lambda e: setattr(e[SOP], "offset", 10**9), ("truncated or the index lies", SOP)),
    (lambda e: setattr(e[SOP], "shape", (3, 16)) or setattr(e[SOP], "size", 192), ("shape [3, 16]", SOP)),
    (lambda e: setattr(e[SOP], "dtype", "int32"), ("int32", SOP)),
    (lambda e: e.pop(SOP), ("lacks 1 variable", SOP)),
    (_extra, ("no place for", "cls/seq_relationship/extra")),
    (lambda e: setattr(e[SOP], "crc", 12345), ("CRC-32C", SOP)),
], ids=["offset-past-end", "wrong-shape", "wrong-dtype", "missing-sop", "unknown-variable", "crc-mismatch"])
def test_a_lying_index_is_one_line(copy, change, words):
    _rewrite(copy, change)
    one_line_error(run_cli("card", str(copy)), *words)


def test_a_damaged_file_is_one_line(copy):
    data = copy / "model.ckpt-best.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    data.write_bytes(bytes(raw[:1000]))
    one_line_error(run_cli("card", str(copy)), "truncated", str(data.name))
    raw[1000] ^= 1
    data.write_bytes(bytes(raw))  # the same size as before: converted (and checked) again all the same
    one_line_error(run_cli("card", str(copy)), "do not match their recorded CRC-32C")
    index = copy / "model.ckpt-best.index"
    damaged = bytearray(index.read_bytes())
    damaged[40] ^= 1
    index.write_bytes(bytes(damaged))
    one_line_error(run_cli("card", str(copy)), "is damaged", "CRC-32C")
    index.write_bytes(bytes(damaged[:-3]))
    one_line_error(run_cli("card", str(copy)), "magic number")


def test_a_fifo_or_folder_in_place_of_a_file_is_one_line(copy):
    data = copy / "model.ckpt-best.data-00000-of-00001"
    data.unlink()
    data.mkdir()
    one_line_error(run_cli("card", str(copy)), "is a folder")
    index = copy / "model.ckpt-best.index"
    index.unlink()
    os.mkfifo(index)
    one_line_error(run_cli("card", str(copy)), "is a FIFO")


def test_a_config_of_another_model_is_one_line(copy):
    config = json.loads((copy / "albert_config.json").read_text())
    (copy / "albert_config.json").write_text(json.dumps({**config, "hidden_size": 32}))
    one_line_error(run_cli("card", str(copy)), "albert_config.json", "shape")


# ---- xxlarge: the plan reads the model's weights only --------------------------------------------
def test_xxlarge_index_reads_no_optimizer_slot(tmp_path, monkeypatch):
    """An index of ALBERT-xxlarge's shapes with its Adam slots, over a sparse data file: the release
    is planned from the index alone, and what it would read is the model's weights, not the slots."""
    from albert_lab.checkpoint.release import release_spec
    from albert_lab.checkpoint.release_names import expected_names

    folder = tmp_path / "albert_xxlarge"
    folder.mkdir()
    config = {"hidden_size": 4096, "embedding_size": 128, "num_hidden_layers": 12, "num_attention_heads": 64,
              "intermediate_size": 16384, "vocab_size": 30000, "num_hidden_groups": 1, "inner_group_num": 1,
              "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 2}
    (folder / "albert_config.json").write_text(json.dumps(config))
    (folder / "30k-clean.model").write_bytes(spiece_of_size((ALBERT / "30k-clean.model").read_bytes(), 30000))
    spec = release_spec(config, "albert", folder / "albert_config.json")
    entries, offset = {}, 0
    for tf, transpose, shape in expected_names(spec).values():
        for name in (tf, f"{tf}/adam_m", f"{tf}/adam_v"):
            stored = shape[::-1] if transpose else shape
            size = 4 * int(np.prod(stored))
            entries[name] = Spec("float32", stored, offset, size)
            offset += size
    entries["global_step"] = Spec("int64", (), offset, 8)
    write_index(folder / "model.ckpt-best.index", entries)
    with open(folder / "model.ckpt-best.data-00000-of-00001", "wb") as handle:
        handle.truncate(offset + 8)  # sparse: no bytes on disk
    monkeypatch.setattr(Bundle, "read", lambda *a, **k: pytest.fail("planning read a tensor"))
    release = open_release(folder)
    weights = sum(4 * int(np.prod(shape)) for _, _, shape in expected_names(spec).values())
    assert release.read_bytes == weights and weights * 3 == offset
    assert 222_000_000 < weights / 4 < 224_000_000  # the paper's 223M parameters (with the heads)
    assert len(release.skipped) == 2 * len(release.names) + 1
    assert "reads 851.3 MiB of weights of the 2,553.8 MiB data file" in release.describe()


def test_a_copy_under_another_name_is_carded_under_its_own_name(tmp_path):
    """The conversion cache is keyed by the files' content: a copy named albert_base (mtimes kept)
    found albert_tiny's conversion and was carded as albert_tiny (or the other way round)."""
    copy = tmp_path / "albert_base"
    shutil.copytree(ALBERT, copy)
    for folder, name in ((ALBERT, "albert_tiny"), (copy, "albert_base"), (ALBERT, "albert_tiny")):
        result = run_cli("card", str(folder), "--json", "--device", "cpu")
        assert result.returncode == 0, result.stderr
        card = json.loads(result.stdout)
        assert card["name"] == name and card["provenance"]["release"] == name
