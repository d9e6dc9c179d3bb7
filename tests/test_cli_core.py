"""The command line: numbers, JSON, and one-line errors without tracebacks."""

import json

import pytest
from conftest import run_cli


def test_help_lists_every_command_and_each_has_help():
    """`albert-lab --help` is the first thing a new user types (a '95%' in one command's
    help once made argparse crash on it)."""
    from albert_lab.cli import COMMANDS

    out = run_cli("--help")
    assert out.returncode == 0, out.stderr
    assert all(name in out.stdout for name in COMMANDS)
    for name in COMMANDS:
        sub = run_cli(name, "--help")
        assert sub.returncode == 0 and "usage: albert-lab " + name in sub.stdout, (name, sub.stderr)


def test_no_command_shows_the_commands_and_version_is_there():
    bare = run_cli(isolated=True)
    assert bare.returncode == 0 and "COMMAND" in bare.stdout and "score" in bare.stdout, bare.stderr
    from albert_lab import __version__

    assert run_cli("--version", isolated=True).stdout.strip() == f"albert-lab {__version__}"


def test_params_json_paper_numbers():
    result = run_cli("params", "--preset", "albert-base", "--json", isolated=True)  # the entry point itself, once
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["total"] == 11_683_584
    assert data["applied"] > data["total"]
    assert set(data["by_component"]) >= {"word embeddings", "E->H projection", "attention", "FFN", "pair head"}
    assert data["flops_per_token"] > 0
    bert = json.loads(run_cli("params", "--family", "bert", "--vocab", "30522", "--hidden", "768", "--layers", "12",
                              "--json").stdout)
    assert bert["total"] == 109_482_240


def test_params_text_and_presets():
    out = run_cli("params", "--preset", "albert-xxlarge").stdout
    assert "222,595,584" in out
    presets = json.loads(run_cli("presets", "--json").stdout)
    assert presets["albert-large"]["total"] == 17_683_968


@pytest.mark.parametrize("args, message", [
    (["params", "--preset", "albert-base", "--groups", "5"], "num_groups: 5 must divide num_layers 12"),
    (["params", "--preset", "nope"], "unknown preset 'nope'"),
    (["params", "--hidden", "100", "--heads", "3"], "num_heads"),
    (["params", "--layers", "0"], "num_layers: must be a positive integer"),
    (["card", "/definitely/not/here"], "no such folder"),
    (["card", "albert-base-v2"], "unreachable"),
])
def test_errors_are_one_line_with_status_2(args, message, tmp_path):
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_card_of_a_checkpoint(make_checkpoint):
    folder, _ = make_checkpoint("carded", card={"name": "carded", "metrics": {"sop_acc": 0.9}})
    data = json.loads(run_cli("card", str(folder), "--json").stdout)
    assert data["heads"] == {"mlm": "trained", "pair": "trained", "pair_kind": "sop"}
    assert data["params"]["total_with_heads"] > data["params"]["total"]
    assert data["metrics"]["sop_acc"] == 0.9


def test_train_defaults_are_the_configs():
    """`albert-lab train` with no options trains what TrainConfig() describes (the default
    corpus is the long-document mix, not the Wikipedia leads alone)."""
    from albert_lab.cli import build_parser
    from albert_lab.training.config import TrainConfig

    args = build_parser().parse_args(["train"])
    config = TrainConfig()
    pairs = {"corpus": "corpus", "vocab_size": "vocab_size", "seq_len": "max_seq_len", "batch_size": "batch_size",
             "lr": "lr", "optimizer": "optimizer", "weight_decay": "weight_decay", "warmup": "warmup_steps",
             "seed": "seed", "chunk_start": "chunk_start", "precision": "precision", "eval_every": "eval_every",
             "eval_limit": "eval_limit", "checkpoint_every": "checkpoint_every", "gradflow_every": "gradflow_every",
             "log_every": "log_every"}
    assert {flag: getattr(args, flag) for flag in pairs} == {flag: getattr(config, field) for flag, field in pairs.items()}
    assert args.corpus == "long-mix"
