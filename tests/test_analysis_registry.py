"""The analyses' records (albert_lab.analysis.registry): each names real functions whose parameters,
defaults and choices are its options'; the command line is built from them; the app's time guesses
and gradient flow's default pair loss are read from them."""

from __future__ import annotations

import argparse
import inspect
import subprocess
import sys
import typing

import pandas as pd
import pytest
from conftest import ROOT, TEXTS, run_cli

from albert_lab.analysis.registry import ANALYSES, GRADFLOW, OSCILLATION, Analysis, analysis

RECORDS = [pytest.param(a, id=a.name) for a in ANALYSES]


def _parameters(function) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(function).parameters)


@pytest.mark.parametrize("record", RECORDS)
def test_each_record_names_a_function_that_takes_its_options_with_their_defaults_and_choices(record: Analysis):
    """A default or a choice written in the record and again in the function's signature: a drift
    between them fails here (the command line shows the record's, a library caller gets the function's)."""
    function = record.load()
    parameters, hints = _parameters(function), typing.get_type_hints(function)
    for option in record.used("run"):
        assert option.name in parameters, f"{record.name}: {option.name} is not a parameter of {record.function}"
        default = parameters[option.name].default
        if default is not inspect.Parameter.empty:
            assert default == option.default, (record.name, option.name, default, option.default)
        literals = [typing.get_args(t) for t in (hints[option.name], *typing.get_args(hints[option.name]))
                    if typing.get_origin(t) is typing.Literal]
        if option.choices is not None and literals:
            assert set(option.choices) == set(literals[0]), (record.name, option.name)
    if record.progress:
        assert "progress" in parameters
    for name in (record.report, *(o.writes for o in record.used("output")), *(o.follows for o in record.options)):
        if name:
            assert callable(record.load(name)), (record.name, name)


def test_the_held_out_inputs_are_the_reader_s_parameters():
    from albert_lab.analysis.evaluation import evaluation_pairs

    parameters = _parameters(evaluation_pairs)
    for option in analysis("evaluate").used("inputs"):
        assert parameters[option.name].default == option.default


def test_the_records_and_the_app_s_estimates_import_no_torch():
    """The parser and the app's first page read the records: they must not wait for torch."""
    code = ("import sys\nimport albert_lab.analysis.registry, app.shell.costs\n"
            "assert 'torch' not in sys.modules and 'albert_lab.analysis.oscillation' not in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_command_line_has_one_command_per_record_with_its_help_flags_and_defaults():
    from albert_lab.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for record in ANALYSES:
        if not record.command:
            assert record.name not in commands
            continue
        sub = commands[record.name]
        assert sub.description == record.help
        actions = {a.dest: a for a in sub._actions}
        for option in record.options:
            action = actions[option.dest]
            assert (action.option_strings or [action.dest])[0] == option.flag
            if not option.switch:
                assert action.default == option.default and (action.help or "") == option.help_text().replace("%", "%%")
        assert actions["checkpoint"].required


def test_the_app_reads_its_time_guesses_from_the_records():
    from app.shell import costs

    for kind, name in (("table5", "evaluate"), ("score_upload", "score"), ("attribution", "attribution"),
                       ("oscillation", "oscillation"), ("gradflow", "gradflow"), ("extrapolation", "extrapolate")):
        assert costs.SECONDS_PER_UNIT[kind] == analysis(name).cost.seconds > 0
    assert {"attribution": analysis("attribution").cost.first, "table5": analysis("evaluate").cost.first} == \
        costs.FIRST_TIME_SECONDS


def test_the_estimates_benchmark_times_every_kind_of_work_the_app_estimates():
    """The Depth lab's VGG and disc estimates were guesses no benchmark timed (5e-4 s per unit, 4 to 90 times too
    short): bench_estimates.py --only takes every kind the app estimates, and times each."""
    from app.shell import costs

    bench = (ROOT / "benchmarks" / "bench_estimates.py").read_text()
    assert {"depth", "vgg"} <= set(costs.SECONDS_PER_UNIT)
    looped = {a.cost.kind for a in ANALYSES if a.cost is not None}  # works() loops over the records with a cost
    assert "for record in (r for r in ANALYSES if r.cost is not None)" in bench
    for kind in set(costs.SECONDS_PER_UNIT) - looped:
        assert f'"{kind}"' in bench, kind  # work of no record: named in works() or depth_works()


def test_every_cost_counts_its_units_from_the_record(shipped):
    """A record's Cost counts its own units of work (what the page estimates and the benchmark times): a new Cost
    had failed the benchmark's test until a row was added to bench_estimates.py by hand."""
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.data.samples import sample_texts

    bundle = load_checkpoint(shipped / "albert-sop")
    inputs = {"texts": sample_texts(4), "text": sample_texts(1)[0], "pair": ("It rained.", "The roads were wet."),
              "pairs": pd.DataFrame(dict(sentence_a=["a."] * 3, sentence_b=["b."] * 3)),
              "held-out": pd.DataFrame(dict(domain=["held-out"] * 4, task=["sop", "sop", "nsp", "mlm"]))}
    for record in (a for a in ANALYSES if a.cost is not None):
        assert record.cost.units is not None, record.name
        assert record.units(bundle, inputs[record.inputs]) > 0, record.name
    assert OSCILLATION.units(bundle, sample_texts(8)) == 2 * OSCILLATION.units(bundle, sample_texts(4))
    assert analysis("extrapolate").units(bundle, sample_texts(4), repeat=3) == 3 * OSCILLATION.units(bundle, sample_texts(4))


def test_the_units_of_the_texts_pages_grow_with_the_model_and_the_texts():
    """Oscillation and extrapolation were one unit per checkpoint whatever its size and the texts:
    a BERT-base was guessed as long as albert-sop on 16 texts, and 16 texts as long as one."""
    from dataclasses import asdict

    from albert_lab.spec import ModelSpec
    from app.shell import costs

    small = {"spec": asdict(ModelSpec.from_name("lab-tiny"))}
    large = {"spec": asdict(ModelSpec.from_name("bert-base"))}
    assert costs.card_units(small, 16) == 16 * costs.card_units(small, 1)
    ratio = costs.card_units(large, 1) / costs.card_units(small, 1)
    assert ratio == (768 ** 2 * 12) / (small["spec"]["hidden_size"] ** 2 * small["spec"]["num_layers"]
                                       * small["spec"]["inner_group_num"]) > 10


def test_a_closed_range_is_checked_as_it_is_read_and_an_open_one_before_any_work(shipped):
    """--repeat 9 was refused by the library after the checkpoint had loaded; the record's bounds refuse it at once."""
    env = {"ALBERT_LAB_CHECKPOINTS": str(shipped)}
    for args, words in ((["extrapolate", "--repeat", "9"], "argument --repeat: must be 1..4, got 9"),
                        (["lens-top", "--top-k", "101"], "argument --top-k: must be 1..100, got 101"),
                        (["logit-lens", "--seq-len", "7"], "--seq-len must be at least 8, got 7")):
        result = run_cli(*args, "--checkpoint", "no-such-checkpoint", env=env)  # refused before the name is looked up
        assert result.returncode == 2 and words in result.stderr and "no-such-checkpoint" not in result.stderr, result.stderr


def test_gradient_flow_defaults_to_the_rule_in_the_record(shipped):
    """The library's default pair loss was the spec's (a hub ALBERT without its SOP head: 'sop', refused), the
    page's the checkpoint's own ('none' there): one rule now, `own_objective`, read by the library, the command
    line (through the library) and the page."""
    from albert_lab.analysis.gradflow import default_objective, gradient_flow
    from albert_lab.checkpoint.load import load_checkpoint

    expected = {"albert-sop": "sop", "bert-nsp": "nsp", "hub-albert": "none"}
    for name, objective in expected.items():
        bundle = load_checkpoint(shipped / name, device="cpu")
        assert default_objective(bundle) == GRADFLOW.default("objective", bundle) == objective
    hub = load_checkpoint(shipped / "hub-albert", device="cpu")
    by_default, asked = gradient_flow(hub, TEXTS[:2]), gradient_flow(hub, TEXTS[:2], objective="none")
    assert by_default.equals(asked)  # the same computation twice in one process: bit-identical
    env = {"ALBERT_LAB_CHECKPOINTS": str(shipped)}
    cli = run_cli("gradflow", "--checkpoint", "hub-albert", "--text", TEXTS[0], "--text", TEXTS[1], "--json", env=env)
    explicit = run_cli("gradflow", "--checkpoint", "hub-albert", "--text", TEXTS[0], "--text", TEXTS[1], "--json",
                       "--objective", "none", env=env)
    assert cli.returncode == 0 and cli.stdout == explicit.stdout, cli.stderr
