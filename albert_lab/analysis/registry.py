"""Every analysis declared once: a record each (`Analysis`) naming its function, its options
with their bounds, defaults and help (`AnalysisOption`), the inputs it reads, what the command
line prints of its frame, what a unit of its work costs, its figure and its page's words. The
command line builds its analysis commands from ANALYSES in one loop, the front door
(albert_lab.lab) its verbs, and the app's time estimates read the costs here.
Adding an analysis is its module (the function, and a report if it prints more than a table),
its figure (albert_lab/figures/) and one record below.

This module imports neither torch nor an analysis module: `albert-lab --help` and the app's
first page read the records without them. A record names its functions by name in its module;
`Analysis.load` imports them when the analysis runs (tests/test_analysis_registry.py checks
that each names a function whose parameters, defaults and choices are the options')."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from albert_lab.data.corpus import MAX_LEN
from albert_lab.data.textfile import MAX_PAIR_ROWS, MAX_UPLOAD_MB
from albert_lab.fields import OptionRow, Range
from albert_lab.limits import MAX_CKA_TOKENS, MAX_REPEAT, MAX_SEED, MIN_SEQ_LEN, SCORE_TOLERANCE
from albert_lab.spec import ModelSpec, Objective, forward_cost

Inputs = Literal["texts", "text", "pairs", "held-out", "pair"]
"""What an analysis reads besides its checkpoints: texts (the command line's --text or --file,
else the built-in sample), the first of them, a pairs file, the held-out pairs of a corpus, one
typed pair."""
Use = Literal["run", "inputs", "output"]
Aggregate = Literal["mean", "median"]  # how oscillation takes each layer's per-token values together


@dataclass(frozen=True)
class AnalysisOption(OptionRow):
    """One option of an analysis: a keyword of its function (use 'run'), of the reading of its
    inputs ('inputs'), or a file the front end writes ('output')."""

    name: str  # the keyword
    type: Any = int  # int, float, str, bool (a switch), a Literal (its choices), Path (a file)
    default: Any = None
    help: str = ""  # the command line's help; {default} is the default (with a format spec: {default:,})
    bounds: Range | None = None  # a number's; a closed range is checked as it is read, else before any work
    flag: str | None = None  # the command-line flag; None: '--' and the name with dashes; no dashes: positional
    metavar: str | None = None
    use: Use = "run"
    follows: str | None = None  # the function (in the record's module) of a checkpoint that gives the default
    writes: str | None = None  # an output: the function whose frame it writes (None: the analysis's own frame)

    def __post_init__(self) -> None:
        if self.flag is None:
            object.__setattr__(self, "flag", "--" + self.name.replace("_", "-"))

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value`, as an error's words after the flag; None if nothing."""
        if value is None or self.bounds is None or self.bounds.holds(value):
            return None
        return f"must be {self.bounds.words()}, got {value}"


@dataclass(frozen=True)
class Cost:
    """What an analysis's work costs, for the app's time estimates: seconds per unit, guessed (on the
    2-core CPU the app is served from, busy) until the app has timed this server's own pace under
    `kind` (app.shell.pace.estimate); benchmarks/bench_estimates.py checks the guesses."""

    kind: str  # the name the app times this work under
    seconds: float  # seconds per unit
    unit: str  # what one unit is
    first: float = 0.0  # seconds the first run in a process adds (imports, hooks)
    units: Callable[..., float] | None = None  # (bundle, *inputs, **options) -> the units of one checkpoint's work


@dataclass(frozen=True)
class Report:
    """What the command line prints of a frame without --json, where a record says more than its table."""

    text: str | None = None  # instead of the table of the record's columns
    after: tuple[str, ...] = ()  # lines after it, on standard output
    remarks: tuple[str, ...] = ()  # lines on standard error


@dataclass(frozen=True)
class Analysis:
    """One analysis, declared once."""

    name: str  # the command ('oscillation')
    help: str  # what it does, in one line
    module: str  # its module in albert_lab.analysis
    function: str  # (checkpoints, inputs, **options) -> a tidy frame; one bundle where `most` is 1
    inputs: Inputs
    options: tuple[AnalysisOption, ...] = ()
    columns: tuple[str, ...] = ()  # the command line's table (none: every column); --json prints every column
    report: str | None = None  # frame -> Report, where it prints more than the table
    notes: bool = False  # says each checkpoint's note (analysis.common.checkpoint_notes) on standard error
    progress: bool = False  # the command line shows its progress (the function takes `progress`)
    most: int | None = None  # checkpoints it takes at most (1: exactly one); None: any number
    most_words: str = ""  # the error past `most`
    cost: Cost | None = None
    command: bool = True  # a command of the command line (attribution is the app's alone)
    figure: str | None = None  # its figure, 'module.function' in albert_lab.figures: a function of its frame (al's Result.figure)
    reading: str | None = None  # what its page says, 'module.function' in albert_lab.readings: (frame, cards) -> markdown
    epilog: str = ""  # said after the options in the command's --help

    def option(self, name: str) -> AnalysisOption:
        return next(o for o in self.options if o.name == name)

    def used(self, use: Use) -> tuple[AnalysisOption, ...]:
        return tuple(o for o in self.options if o.use == use)

    def load(self, name: str | None = None) -> Callable[..., Any]:
        """The record's function (or another of its module's by `name`), imported now."""
        return getattr(importlib.import_module(f"albert_lab.analysis.{self.module}"), name or self.function)

    def units(self, bundle: Any, inputs: Any, **options: Any) -> float:
        """The units of work of `bundle` (anything with a .spec, where the cost's units need no more) on `inputs`
        (a pair: A and B) with `options`, as the record's Cost counts them (and the estimate benchmark times them)."""
        assert self.cost is not None and self.cost.units is not None, f"{self.name} has no cost units"
        return self.cost.units(bundle, *(inputs if self.inputs == "pair" else (inputs,)), **options)

    def default(self, name: str, bundle: Any = None) -> Any:
        """An option's default; for one that follows the checkpoint, `bundle`'s."""
        option = self.option(name)
        return self.load(option.follows)(bundle) if option.follows and bundle is not None else option.default


# ---- the options several analyses share ------------------------------------------------------------------
SEQ_LEN = AnalysisOption("max_len", int, MAX_LEN, flag="--seq-len", bounds=Range(MIN_SEQ_LEN))


def repeat(default: int = 1) -> AnalysisOption:
    return AnalysisOption("repeat", int, default, bounds=Range(1, MAX_REPEAT), metavar="K",
                          help=f"apply a shared block K x L times, K = 1..{MAX_REPEAT} (default {{default}}); "
                               "unshared models stay at L")


MASKING = (AnalysisOption("mask_rate", float, 0.15, help="share of each text's tokens masked (default {default})"),
           # mask_rate's bounds (0 <= rate < 1) are reapply.encode's check
           AnalysisOption("seed", int, 0, bounds=Range(0, MAX_SEED), help="seed of the masked positions"))


# ---- units of work, for the time estimates -----------------------------------------------------------------
REFERENCE_COST = 256 ** 2 * 6  # albert-sop's forward cost per token (H = 256, L = 6): size 1
REFERENCE_TOKENS = 24  # a typed pair of two short sentences, with [CLS] and two [SEP]s


def size(spec: ModelSpec) -> float:
    """A model's forward cost per token relative to albert-sop's, the size the guesses are timed at."""
    return forward_cost(spec) / REFERENCE_COST


def text_units(spec: ModelSpec, texts: int) -> float:
    """`texts` texts (up to MAX_LEN tokens each) through a model: one unit per text at albert-sop's size."""
    return texts * size(spec)


def attribution_units(spec: ModelSpec, steps: int, tokens: int) -> float:
    """Integrated gradients: `steps` forward and backward passes over the pair's `tokens`."""
    return steps * size(spec) * max(tokens, 8) / REFERENCE_TOKENS


def relaxation_units(spec: ModelSpec, ranks: int, pairs: int) -> float:
    """The relaxation curve (analysis/relaxation.curve_and_energy): each rank's model and the source
    read `pairs` held-out pairs for MLM and again for the pair task, then the oscillation's sample
    (about as long as 16 pairs: 2 s of the 12 s a model took at 64 pairs, bert-nsp on 2 busy cores)."""
    return (ranks + 1) * (pairs + 16) * size(spec)


def texts_units(bundle: Any, texts: Sequence[str], repeat: int = 1, **_: Any) -> float:
    """Texts through a model, `repeat` times its layers (extrapolation's K): text_units x K."""
    return text_units(bundle.spec, len(texts)) * repeat


def pairs_units(bundle: Any, pairs: Any, **_: Any) -> float:
    """A pairs file, each pair read both ways: one unit per pair at albert-sop's size."""
    return len(pairs) * size(bundle.spec)


def applied_units(bundle: Any, texts: Sequence[str], **_: Any) -> float:
    """Gradient flow on the page's 16 texts: a unit per million applied parameters."""
    from albert_lab.params import count

    return count(bundle.spec).applied / 1e6


def pair_units(bundle: Any, a: str, b: str, n_steps: int = 50, **_: Any) -> float:
    """Integrated gradients of one pair (attribution_units): its tokens as the bundle's tokenizer cuts them."""
    return attribution_units(bundle.spec, n_steps, len(bundle.tokenizer(a, b)["input_ids"]))


def held_out_units(bundle: Any, pairs: Any, limit: int | None = None, **_: Any) -> float:
    """Table 5: one unit per held-out pair scored (evaluation.pairs_scored) at albert-sop's size."""
    return EVALUATE.load("pairs_scored")(bundle, EVALUATE.load("pair_sets")(pairs), limit) * size(bundle.spec)


# ---- the Depth lab's nets (analysis/depth.py): the page's options, within what its two cores train in minutes ----------
Init = Literal["gaussian", "pytorch", "he"]  # gaussian: N(0, init_std^2), the notes' "naive" initialisation
Variant = Literal["none", "batchnorm_before", "batchnorm_after", "layernorm", "residual"]
# The disc MLP's (depth.DepthConfig's fields; the defaults, the lecture notes' toy, are the page's first view)
DISC_OPTIONS = (
    AnalysisOption("depth", int, 16, bounds=Range(1, 48), help="hidden layers"),
    AnalysisOption("width", Literal[8, 16, 32, 64, 128], 32),
    AnalysisOption("init", Init, "gaussian"),
    AnalysisOption("init_std", float, 0.1, bounds=Range(0.001, 2.0)),
    AnalysisOption("steps", int, 300, bounds=Range(50, 2000), help="SGD steps at lr 0.1"),
    AnalysisOption("dropout", float, 0.0, bounds=Range(0.0, 0.8)),
    AnalysisOption("variants", tuple, ("none", "batchnorm_before", "residual"), help="the nets compared (Variant)"))
# The VGG nets' (depth.train_vgg's keywords; the defaults are shipped)
VGG_OPTIONS = (AnalysisOption("steps", int, 300, bounds=Range(50, 600)),
               AnalysisOption("lr", Literal[0.01, 0.02, 0.05, 0.1, 0.2], 0.1, help="SGD's learning rate"))


# ---- the analyses, in the order `albert-lab --help` lists them ------------------------------------------
# Seconds per unit: the median over albert-sop, albert-sop-minilm and bert-nsp of benchmarks/bench_estimates.py on
# 2 cores (docs/benchmarks.md, "The time estimates", has each run); a busier server takes longer, and a bar's time
# left follows the work's own pace from 10% on, and the server's own pace once it has timed one.
EVALUATE = Analysis(
    "evaluate", "intrinsic MLM / NSP / SOP accuracy on held-out pairs, with 95% intervals (paper Table 5)",
    "evaluation", "evaluate", "held-out",
    (AnalysisOption("corpus", str, "long-mix", use="inputs", help="held-out documents of this corpus are used (default {default})"),
     SEQ_LEN,
     AnalysisOption("limit", int, bounds=Range(1), help="at most this many pairs per task (a fixed random sample)"),
     AnalysisOption("by_source", bool, False, help="also one row per source"),
     AnalysisOption("out_of_domain", bool, True, flag="--no-ood", use="inputs", help="skip the out-of-domain source")),
    report="report", progress=True,
    # a unit is one pair of one task: the page's 100 pairs per task are 600 units (3 tasks, held-out and out-of-domain)
    cost=Cost("table5", 0.04, "one held-out pair scored, one forward pass (MLM, NSP or SOP), at albert-sop's size "
                              "(evaluation.pairs_scored)", first=2.0, units=held_out_units))

OSCILLATION = Analysis(
    "oscillation", "L2 distance and angle between each layer's input and output (paper Figure 1)",
    "oscillation", "oscillation", "texts",
    (SEQ_LEN, AnalysisOption("aggregate", Aggregate, "mean")),
    columns=("checkpoint", "layer", "l2", "angle_deg", "l2_spread", "angle_spread", "norm_out"), report="report",
    cost=Cost("oscillation", 0.008, "one text through a model of albert-sop's size (text_units)", units=texts_units),
    figure="oscillation.oscillation_figure", reading="oscillation.reading")

GRADFLOW = Analysis(
    "gradflow", "mean and max |grad| per layer, per application of shared layers",
    "gradflow", "gradient_flow", "texts",
    (SEQ_LEN,
     AnalysisOption("objective", Objective, None, follows="default_objective", help="pair loss to add (default: the checkpoint's)"),
     AnalysisOption("seed", int, 0, bounds=Range(0, MAX_SEED), help="seed of the pairs and masks")),
    most=1,
    cost=Cost("gradflow", 0.06, "a million applied parameters, on the page's 16 texts", units=applied_units),
    figure="gradient_flow.gradflow_figure")

SCORE = Analysis(
    "score", "P(original order) / P(is next) from SOP and NSP heads for sentence pairs",
    "pairs", "score_pairs", "pairs",
    (AnalysisOption("pairs", Path, flag="pairs", use="inputs",
                    help=".csv (or .txt)/.tsv/.jsonl with sentence_a, sentence_b[, label]; - reads them from standard input"),
     AnalysisOption("out", Path, use="output", help="write the scores as CSV"),
     SEQ_LEN,
     AnalysisOption("max_rows", int, MAX_PAIR_ROWS, bounds=Range(1), use="inputs",
                    help=f"score at most this many rows (default {{default:,}}); files up to {MAX_UPLOAD_MB} MB, "
                         "as in the browser")),
    report="report",
    cost=Cost("score_upload", 0.009, "one pair, read both ways, at albert-sop's size", units=pairs_units),
    epilog=("Precision: on a GPU (CUDA) a float32 model (the default --dtype) scores with TF32 matmuls, or under bf16 "
            f"autocast where that too keeps every score within {SCORE_TOLERANCE} of full float32's; in full float32 where "
            "neither would (a bound from the model's depth and its pair head's weights: albert_lab/analysis/pairs.py). "
            "On the CPU, in --dtype's precision."), figure="sentence_pairs.scores_figure", reading="sentence_pairs.reading")

EXTRAPOLATE = Analysis(
    "extrapolate", "run a shared block for K x L applications: distances, angles, MLM accuracy, verdict",
    "extrapolation", "extrapolate", "texts", (SEQ_LEN, repeat(2), *MASKING),
    report="report", notes=True,
    columns=("checkpoint", "application", "l2_step", "angle_step_deg", "l2_to_depth_L", "l2_return", "mlm_accuracy",
             "beyond_L"),
    cost=Cost("extrapolation", 0.009, "one text through a model of albert-sop's size at K = 1 (text_units x K)",
              units=texts_units),
    figure="shared_block.extrapolation_figure")

LOGIT_LENS = Analysis(
    "logit-lens", "masked-token accuracy of every layer's state read through the model's own MLM head",
    "lens", "logit_lens", "texts", (SEQ_LEN, repeat(), *MASKING),
    notes=True, columns=("checkpoint", "application", "mlm_accuracy", "nll", "agrees_with_last", "beyond_L"),
    figure="shared_block.lens_figure")

LENS_TOP = Analysis(
    "lens-top", "top-k predictions for one token after every layer application (first text only)",
    "lens", "lens_predictions", "text",
    (SEQ_LEN, repeat(),
     AnalysisOption("position", int, help="token index to watch (default: a typed [MASK], else the middle token)"),
     AnalysisOption("top_k", int, 5, bounds=Range(1, 100)),
     AnalysisOption("mask_position", bool, True, flag="--no-mask", help="watch the token as it is instead of masking it")),
    columns=("checkpoint", "application", "rank", "token", "probability", "watched", "target_rank"),
    figure="shared_block.top_k_figure")

ATTENTION = Analysis(
    "attention", "attention entropy per layer application and head; maps (raw, norm-weighted) as CSV",
    "attention", "attention_entropy", "texts",
    (SEQ_LEN, repeat(),
     AnalysisOption("maps_out", Path, use="output", writes="attention_maps",
                    help="write the maps of the first text (raw and norm-weighted) as CSV")),
    notes=True, columns=("checkpoint", "application", "inner", "head", "entropy", "entropy_norm_weighted", "entropy_share"),
    figure="shared_block.entropy_figure")

CKA = Analysis(
    "cka", "linear CKA between layer applications: one checkpoint, or two (across models)",
    "cka", "cka_between", "texts",
    (SEQ_LEN, repeat(),
     AnalysisOption("max_tokens", int, 1024, bounds=Range(2, MAX_CKA_TOKENS),
                    help=f"tokens drawn for CKA, 2..{MAX_CKA_TOKENS:,} (default {{default}})")),
    report="report", most=2,
    most_words="cka compares one checkpoint with itself or two with each other; give --checkpoint once or twice",
    figure="shared_block.cka_figure")

ATTRIBUTION = Analysis(
    "attribution", "token attributions (integrated gradients) of a pair head's decision for one pair",
    "attribution", "attribute_pair", "pair",
    (AnalysisOption("target", Literal[0, 1], 0, help="the label explained: 0 in order / is next, 1 the other"),
     AnalysisOption("n_steps", int, 50, bounds=Range(10, 200), help="integration steps"),
     SEQ_LEN),
    most=1, command=False,
    # the first in a process imports captum and builds its hooks (first=)
    cost=Cost("attribution", 0.0035, f"one integration step of a {REFERENCE_TOKENS}-token pair at albert-sop's size",
              first=1.0, units=pair_units))  # captum's import: 0.2-0.25 s from the page cache, longer from a cold disk

# The Parameters page's relaxation curve: `albert-lab relax --ranks` on the command line, so no record of its own.
RELAXATION_COST = Cost("relaxation", 0.037, "one held-out pair through one model of the curve at albert-sop's size "
                                           "(relaxation_units)")

ANALYSES: tuple[Analysis, ...] = (EVALUATE, OSCILLATION, GRADFLOW, SCORE, EXTRAPOLATE, LOGIT_LENS, LENS_TOP, ATTENTION, CKA,
                                  ATTRIBUTION)


def analysis(name: str) -> Analysis:
    return next(a for a in ANALYSES if a.name == name)


def text_table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Plain-text table; numeric columns right-aligned."""
    numeric = [all(isinstance(row[i], (int, float)) for row in rows) for i in range(len(header))]
    cells = [list(map(str, header))] + [[f"{c:,}" if isinstance(c, int) else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric)) for r in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])
