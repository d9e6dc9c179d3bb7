"""The compiled training step: no graph breaks, one graph per batch shape, few shapes an epoch,
the same losses and gradients as the step run eagerly, a compiled run that trains, and its generated
code kept in folders of this user's alone."""

import getpass
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import CORPUS, ROOT, one_line_error, run_cli, tiny_spec

from albert_lab.data.batching import WIDTH_BUCKETS, Batch, PretrainingData, Shapes
from albert_lab.data.masking import masking_config, prediction_budget
from albert_lab.data.tokenized import tokenize_documents
from albert_lab.errors import AlbertLabError
from albert_lab.kernels import tune_for_training
from albert_lab.models import build_model
from albert_lab.objective import PretrainingLoss, padding_mask
from albert_lab.paths import COMPILE_FOLDERS, compile_folders, private_folder
from albert_lab.training.config import TrainConfig


@pytest.fixture(scope="module")
def docs(small_corpus, tokenizer):
    return tokenize_documents(small_corpus.train, tokenizer)


def _data(docs, tokenizer, shapes: Shapes, seq_len: int = 128, batch_size: int = 8) -> PretrainingData:
    tok = tokenizer
    return PretrainingData(docs, "sop", masking_config(tok), (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id),
                           seq_len, batch_size, seed=0, shapes=shapes)


def _inputs(batch) -> tuple:
    return (batch.input_ids, batch.token_type_ids, padding_mask(batch), batch.mlm_positions, batch.mlm_labels,
            batch.pair_labels, False)


def test_bucketed_shapes_are_few_and_hold_every_batch(docs, tokenizer):
    """Widths: WIDTH_BUCKETS of them up to the sequence length; predictions: one count per width, which
    every batch of that width fits (rows x the masking budget of a pair that wide)."""
    cfg = masking_config(tokenizer)
    assert Shapes.bucketed(128, cfg).widths == (32, 64, 96, 128)
    assert Shapes.bucketed(512, cfg).widths == (128, 256, 384, 512)
    assert Shapes.bucketed(100, cfg).widths == (32, 64, 80, 100)  # the last is the sequence length itself
    data = _data(docs, tokenizer, Shapes.bucketed(128, cfg))
    plain = _data(docs, tokenizer, Shapes())
    epoch = len(data.epoch_batches(0))
    shapes, plain_shapes = set(), set()
    for step in range(epoch):
        batch, reference = data.batch(step), plain.batch(step)
        width = batch.input_ids.shape[1]
        shapes.add((width, len(batch.mlm_positions)))
        plain_shapes.add((reference.input_ids.shape[1], len(reference.mlm_positions)))
        assert len(batch.mlm_positions) == 8 * prediction_budget(cfg, width)
        # the same pairs, masks and labels: only the padding differs
        real = batch.mlm_labels != -100
        assert torch.equal(batch.mlm_labels[real], reference.mlm_labels[reference.mlm_labels != -100])
        narrow = reference.input_ids.shape[1]
        assert torch.equal(batch.input_ids[:, :narrow], reference.input_ids)
        assert batch.step_tokens == reference.step_tokens == int(reference.attention_mask.sum())
    assert len(shapes) <= WIDTH_BUCKETS < len(plain_shapes), (shapes, plain_shapes)


@pytest.mark.parametrize("family, objective", [("albert", "sop"), ("bert", "nsp"), ("albert", "none")])
def test_the_step_traces_without_a_graph_break(docs, tokenizer, family, objective):
    """`torch._dynamo.explain` of the model as training tunes it and the losses, on a padded batch and on one without padding
    (which runs attention without a mask): one graph each, no break."""
    spec = tiny_spec(tokenizer.vocab_size, family=family, objective="nsp" if objective == "none" else objective,
                     max_positions=128, **({"embedding_size": 32} if family == "bert" else {}))
    loss = PretrainingLoss(tune_for_training(build_model(spec, seed=0).train()), objective)
    data = _data(docs, tokenizer, Shapes.bucketed(128, masking_config(tokenizer)))
    padded = data.batch(0)
    full = Batch(**{**padded.tensors(), "attention_mask": torch.ones_like(padded.attention_mask)},
                 counts=(padded.input_ids.numel(), padded.num_predictions))  # every position a real token
    assert padding_mask(padded) is not None and padding_mask(full) is None
    for batch in (padded, full):
        explained = torch._dynamo.explain(loss._core)(*_inputs(batch))
        assert explained.graph_break_count == 0, [r.reason for r in explained.break_reasons]
        assert explained.graph_count == 1


def test_an_epoch_compiles_no_more_graphs_than_it_has_shapes(docs, tokenizer):
    """Compiled (a counting backend), an epoch of bucketed batches makes one graph per (width, padded or
    not) it holds, at most 2 x WIDTH_BUCKETS; nothing recompiles for a new count of tokens or predictions."""
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    loss = PretrainingLoss(tune_for_training(build_model(tiny_spec(tokenizer.vocab_size, max_positions=128), seed=0).train()), "sop")
    counter = CompileCounter()
    loss.compile_core(counter)
    data = _data(docs, tokenizer, Shapes.bucketed(128, masking_config(tokenizer)))
    kinds = set()
    for step in range(len(data.epoch_batches(0))):
        batch = data.batch(step)
        out = loss(batch)
        out.loss.backward()
        assert out.mlm_count == batch.num_predictions
        kinds.add((batch.input_ids.shape[1], padding_mask(batch) is None))
    assert counter.frame_count == len(kinds) <= 2 * WIDTH_BUCKETS
    torch._dynamo.reset()


def test_compiled_losses_and_gradients_equal_the_eager_ones(docs, tokenizer):
    """Through AOTAutograd (the graphs inductor would compile, run by eager kernels): the losses, hits
    and gradients of the eager step. fp32; the bound is a sum of K = 48 products (the widest
    contraction) through 3 layers: 3 x 48 x 2^-24 relative, x 8 for the backward's longer paths."""
    torch._dynamo.reset()
    spec = tiny_spec(tokenizer.vocab_size, max_positions=128)
    eager = PretrainingLoss(tune_for_training(build_model(spec, seed=0).train()), "sop")
    compiled = PretrainingLoss(tune_for_training(build_model(spec, seed=0).train()), "sop")
    compiled.compile_core("aot_eager")
    data = _data(docs, tokenizer, Shapes.bucketed(128, masking_config(tokenizer)))
    bound = 8 * 3 * 48 * 2.0 ** -24
    for batch in (data.batch(0), data.batch(1)):
        a, b = eager(batch), compiled(batch)
        a.loss.backward()
        b.loss.backward()
        assert abs(a.loss.item() - b.loss.item()) <= bound * abs(a.loss.item())
        assert (a.mlm_correct.item(), a.pair_correct.item()) == (b.mlm_correct.item(), b.pair_correct.item())
        for (name, p), q in zip(eager.model.named_parameters(), compiled.model.parameters()):
            scale = p.grad.abs().max().item()
            assert (p.grad - q.grad).abs().max().item() <= bound * max(scale, 1e-30), name
    torch._dynamo.reset()


def test_a_compiled_run_trains(monkeypatch, capfd):
    """--compile on: the log says so, the batches come bucketed, and the loss falls as the eager run's."""
    from albert_lab.training import loop
    from albert_lab.training.jobs import start_run
    from albert_lab.training.runs import read_run

    torch._dynamo.reset()
    monkeypatch.setattr(loop, "COMPILE_BACKEND", "aot_eager")
    settings = dict(spec=tiny_spec(1000, num_layers=2, hidden_size=32).to_dict(), corpus=CORPUS, vocab_size=1000,
                    max_seq_len=64, batch_size=8, max_steps=12, warmup_steps=2, lr=2e-3, log_every=4, eval_every=100,
                    eval_limit=16, checkpoint_every=100, gradflow_every=100, seed=0, threads=1)
    losses = {}
    for mode in ("off", "on"):
        info = start_run(TrainConfig(**settings, compile=mode, name=f"compile-{mode}"), foreground=True)
        assert read_run(info.folder.path).status == "succeeded"
        losses[mode] = [m["loss"] for m in read_run(info.folder.path).metrics() if m["kind"] == "train"]
    assert "compiled" in capfd.readouterr().out
    assert losses["on"][-1] < losses["on"][0]
    # the same batches padded wider: the same losses to float rounding, compounded over 12 steps
    assert np.allclose(losses["on"], losses["off"], rtol=1e-3), losses
    torch._dynamo.reset()


def test_auto_compiles_only_long_runs_on_a_gpu():
    from albert_lab.training.config import COMPILE_MIN_STEPS

    assert TrainConfig(max_steps=COMPILE_MIN_STEPS).compiled("cuda")
    assert not TrainConfig(max_steps=20).compiled("cuda")  # a short run from the page: compiling would cost more
    assert not TrainConfig(max_steps=COMPILE_MIN_STEPS).compiled("cpu")
    assert TrainConfig(max_steps=20, compile="on").compiled("cpu")
    assert not TrainConfig(max_steps=10 ** 6, compile="off").compiled("cuda")


# ---- where compiled code is kept: folders of this user's alone -----------------------------------------

def _tree(folder: Path) -> dict[str, tuple[int, float, bytes]]:
    """Every path under `folder` (itself too): its mode, mtime and, for a file, its bytes."""
    return {str(p.relative_to(folder)): (p.stat().st_mode, p.stat().st_mtime, p.read_bytes() if p.is_file() else b"")
            for p in [folder, *folder.rglob("*")]}


@pytest.mark.slow
def test_a_compiled_run_leaves_a_shared_temp_folder_alone(tmp_path):
    """The adversary's F6: `torchinductor_<user>` made first by someone else in the temporary folder, writable
    by all, with a module planted in it. A run compiled by inductor (on the CPU: C++ built by the compiler)
    neither reads nor writes it: its generated code is in the project's cache, in folders of mode 0700."""
    shared = tmp_path / "shared-tmp"
    planted = shared / f"torchinductor_{getpass.getuser()}"
    (planted / "ab").mkdir(parents=True)
    (planted / "ab" / "cabplanted.py").write_text("raise SystemExit('planted code ran')\n")
    for folder in (shared, planted, planted / "ab"):
        folder.chmod(0o777)
    before = _tree(planted)
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in COMPILE_FOLDERS}  # as in a shell: never set
    env.update(TMPDIR=str(shared), ALBERT_LAB_CACHE=str(cache), TORCHINDUCTOR_COMPILE_THREADS="1")
    result = subprocess.run([sys.executable, "-m", "albert_lab", "train", "--foreground", "--compile", "on", "--corpus", CORPUS,
                             "--vocab-size", "1000", "--embedding", "8", "--hidden", "16", "--layers", "1", "--heads", "2",
                             "--ffn", "16", "--max-positions", "32", "--seq-len", "32", "--batch-size", "4", "--steps", "1",
                             "--optimizer", "adamw", "--precision", "fp32", "--threads", "1", "--eval-limit", "4",
                             "--eval-every", "100", "--checkpoint-every", "100"],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert result.returncode == 0 and "compiled" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]
    assert _tree(planted) == before  # nothing in it written, added or touched
    assert list(shared.iterdir()) == [planted]  # its own temporary folders (mkdtemp: private, random names) gone
    for name in ("compile", "compile/inductor", "compile/triton", "compile/tmp"):
        assert stat.S_IMODE((cache / name).stat().st_mode) == 0o700, name
    generated = {p.suffix for p in (cache / "compile" / "inductor").rglob("*") if p.is_file()}
    assert {".py", ".cpp", ".so"} <= generated, generated  # the wrappers and kernels inductor made, and ran


def test_a_private_folder_is_made_0700_and_one_others_can_write_refused(tmp_path):
    made = private_folder(tmp_path / "new" / "code", "do this")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    open_ = tmp_path / "open"
    open_.mkdir()
    (open_ / "planted.py").write_text("x = 1\n")
    open_.chmod(0o777)
    with pytest.raises(AlbertLabError, match=r"open can be written by others \(mode 0777\).*; do this$") as err:
        private_folder(open_, "do this")
    assert "\n" not in str(err.value) and (open_ / "planted.py").read_text() == "x = 1\n"  # refused, not emptied
    open_.chmod(0o775)  # group-writable: the group's other members could write it too
    with pytest.raises(AlbertLabError, match="mode 0775"):
        private_folder(open_, "do this")


def test_a_private_folder_of_another_user_or_in_a_folder_others_can_change_refused(tmp_path, monkeypatch):
    folder = private_folder(tmp_path / "mine", "do this")
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)  # the folder now belongs to someone else
    with pytest.raises(AlbertLabError, match=rf"mine belongs to another user \(uid {real_uid}\)"):
        private_folder(folder, "do this")
    monkeypatch.undo()
    parent = tmp_path / "shared"
    private_folder(parent / "cache", "do this")
    parent.chmod(0o777)  # others could rename the private folder away and put theirs in its place
    with pytest.raises(AlbertLabError, match=r"cache lies in .*shared, which others can change \(mode 0777"):
        private_folder(parent / "cache", "do this")
    parent.chmod(0o1777)  # as /tmp: others may add their own, never move ours
    assert private_folder(parent / "cache", "do this") == parent / "cache"


def test_the_compilers_folders_are_the_projects_unless_the_user_named_them(tmp_path, monkeypatch):
    """Under the cache by default; TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR where the user set them, checked
    alike; TMPDIR always the project's (inductor names folders in it whatever its cache variable says)."""
    from albert_lab.paths import cache_dir

    for name in COMPILE_FOLDERS:
        monkeypatch.delenv(name, raising=False)
    base = cache_dir() / "compile"
    assert compile_folders() == {name: base / sub for name, sub in COMPILE_FOLDERS.items()}
    mine = tmp_path / "my-inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(mine))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    folders = compile_folders()
    assert folders["TORCHINDUCTOR_CACHE_DIR"] == mine and folders["TMPDIR"] == base / "tmp"
    # torch's defaults, as torch leaves them in the environment of a process that imports it (the app's) for the runs it starts
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "torchinductor_me" / "triton" / "0"))
    assert compile_folders()["TRITON_CACHE_DIR"] == base / "triton"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / f"torchinductor_{getpass.getuser()}"))
    assert compile_folders()["TORCHINDUCTOR_CACHE_DIR"] == base / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(mine))
    mine.chmod(0o777)
    with pytest.raises(AlbertLabError, match=r"my-inductor can be written by others .*set TORCHINDUCTOR_CACHE_DIR to a folder"):
        compile_folders()


def test_train_refuses_a_compiler_cache_others_can_write_in_one_line(tmp_path):
    """Before any work and before a run folder: one line naming the folder and what to do."""
    shared = tmp_path / "inductor"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    result = run_cli("train", "--compile", "on", "--steps", "1", "--foreground", "--corpus", CORPUS,
                     env={"TORCHINDUCTOR_CACHE_DIR": str(shared)})
    one_line_error(result, str(shared), "can be written by others", "chmod 700")
    assert not list((tmp_path / "runs").glob("*"))  # no run folder
