"""TrainConfig: everything a pretraining run needs, validated once before any process starts;
its fields are the rows of the options table (training/options.py). The recipe of a run started
from the Training page is `training.recipe`; its learning rates are here, where the Learning rate
row's help quotes them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from albert_lab.data.corpora import BUILTIN, DEFAULT, builtin_limit
from albert_lab.errors import RunError
from albert_lab.fields import check_types, field_names, unknown_field
from albert_lab.limits import MAX_SEED, max_threads
from albert_lab.params import fit_problem
from albert_lab.spec import ModelSpec, Objective
from albert_lab.training.options import SPEC_OPTIONS, Option, Range, option, rows_of

Precision = Literal["auto", "fp32", "bf16"]
PoolerInit = Literal["keep", "standardize"]
Compile = Literal["auto", "on", "off"]
COMPILE_MIN_STEPS = 2000
MAX_LR = 1.0  # above it these models diverge at once (LAMB and AdamW alike); 1e30 or inf is a typo
# The recipe of a run started from the Training page (browser_config, uptrain_config): its learning rate from
# random weights, and from a checkpoint (4 steps at 3e-3 undid part of what albert-sop knew).
SCRATCH_LR, UPTRAIN_LR = 3e-3, 1e-3
_AT_LEAST_1 = Range(1)


@dataclass
class TrainConfig:
    """A run's settings. Each field made with `option` is a row of the options table
    (training/options.py): its flag, help, bounds, its place in the recorded command. The
    command line shows the rows in this order; the Training page's form, those its own
    table shows (app/rooms/training/widgets.py)."""

    spec: dict[str, Any] = field(default_factory=lambda: ModelSpec.from_name("lab-tiny").to_dict())
    objective: Objective = "sop"  # inter-sentence loss (overrides spec.objective); the spec's --objective sets it
    corpus: str = option(DEFAULT, "--corpus", record="always",
                         help="{default} (the default; `albert-lab corpora`), wiki-vital, a source, a .txt/.jsonl file, or hf:NAME")
    eval_corpus: str | None = option(
        None, "--eval-corpus", metavar="CORPUS",
        help="evaluate on this corpus's held-out documents (default: the training corpus's); none of them may be a training "
             "document (e.g. --corpus long-mix-plus --eval-corpus long-mix)")
    tokenizer: str | None = option(None, "--tokenizer", help="folder of a trained tokenizer to reuse (default: train one, cached)")
    init_from: str | None = option(
        None, "--init-from", metavar="CHECKPOINT", record="never",  # the recorded command starts with it
        help="start from this checkpoint's weights, spec and tokenizer (uptraining); only --objective and --dropout of the "
             "spec flags apply; heads it lacks are added")
    heads_only: bool = option(
        False, "--heads-only",
        help="with --init-from: train only the MLM and pair heads on the frozen encoder (a probe of what it knows)")
    distil_from: str | None = option(
        None, "--distil-from", metavar="TEACHER",
        help="distil from this checkpoint while training: match its hidden state after every layer and, where its MLM head is "
             "trained, its MLM distributions (same width and tokenizer as the model)")
    distil_weight: float = option(1.0, "--distil-weight", bounds=Range(0, open=True), help="the distillation term's weight in the loss")
    distil_pair: bool = option(
        False, "--distil-pair",
        help="with --distil-from: also match the teacher's pair (SOP/NSP) distribution; only from a teacher whose pair head "
             "was trained for the same task")
    pair_weight: float = option(
        1.0, "--pair-weight", bounds=Range(0, open=True),
        help="the pair (SOP/NSP) loss's weight against MLM's (paper: 1); more lets the order signal reach an encoder whose MLM "
             "and distillation gradients are hundreds of times larger")
    pooler_init: PoolerInit = option(
        "keep", "--pooler-init",
        help="with --init-from: keep the checkpoint's pooler, or standardize it on the run's first batches (pooled = tanh(0.5 "
             "(h_cls - mean) / std)), so that the pair loss reaches a [CLS] that hardly varies")
    vocab_size: int = option(
        8000, "--vocab-size", bounds=Range(100),
        help="pieces of the tokenizer trained for the run (default {default:,}; not with --init-from)")
    lowercase: bool = option(True, "--cased", help="keep case (default: lower-case, as ALBERT)")
    max_seq_len: int = option(128, "--seq-len", bounds=Range(16), help="tokens per pair (default {default})")
    batch_size: int = option(64, "--batch-size", bounds=_AT_LEAST_1, help="pairs per step (default {default})")
    lr: float = option(
        1e-3, "--lr", bounds=Range(0, MAX_LR, open=True), noun="learning rate",
        help="peak learning rate, after the warm-up, decayed linearly to 0 over the budget (default {default:g})")
    optimizer: Literal["lamb", "adamw"] = option("lamb", "--optimizer", help="LAMB (the paper's) or AdamW (default {default})")
    weight_decay: float = option(0.01, "--weight-decay", bounds=Range(0), help="(default {default:g})")
    warmup_steps: int = option(100, "--warmup", bounds=Range(0), help="warm-up steps (default {default})")
    max_steps: int | None = option(  # budget in optimizer steps ...
        1000, "--steps", bounds=_AT_LEAST_1, record="always", help="budget in optimizer steps (default {default} unless --minutes)")
    max_minutes: float | None = option(  # ... or in minutes (the first reached ends the run)
        None, "--minutes", bounds=Range(0, open=True),
        help="budget in minutes (with --steps: whichever comes first; the learning rate decays over the one further along)")
    seed: int = option(0, "--seed", bounds=Range(0, MAX_SEED), help="weights, batches and masks (default {default})")
    clip_norm: float | None = option(1.0)  # gradients clipped to this global norm; None: not clipped
    chunk_start: Literal["document", "random"] = option(  # random: not in the paper
        "document", "--chunk-start", help="where each document's pairs start: its first segment (paper) or a random one")
    short_seq_prob: float = option(0.1, bounds=Range(0.0, 1.0))  # share of shorter sequences (paper: 10%)
    max_predictions: int = option(20, bounds=_AT_LEAST_1)  # MLM predictions per sequence at most
    precision: Precision = option("auto", "--precision", help="auto: bf16 autocast where the machine runs it fast, else fp32")
    compile: Compile = option(
        "auto", "--compile",
        help="run the model compiled (torch.compile; batch widths in a few buckets): auto compiles on a GPU for runs of "
             f"{COMPILE_MIN_STEPS:,} steps or more, where the minutes spent compiling pay back")
    threads: int | None = option(None, "--threads", bounds=Range(1, max_threads()),  # torch intra-op threads; None = all cores
                                 help=f"CPU threads, 1..{max_threads()} (default: torch's choice)")
    eval_every: int = option(200, "--eval-every", bounds=_AT_LEAST_1, help="steps between held-out evaluations (default {default})")
    full_eval: bool = option(
        False, "--full-eval", help="end with the evaluation on every held-out pair (default: a sample sized to cost about a "
                                   "quarter of the training time, its 95% intervals in the log and the card)")
    eval_limit: int = option(256, "--eval-limit", bounds=_AT_LEAST_1, help="held-out pairs per task in evaluations during training")
    checkpoint_every: int = option(200, "--checkpoint-every", bounds=_AT_LEAST_1,
                                   help="steps between saved checkpoints, which a resume starts from (default {default})")
    gradflow_every: int = option(100, "--gradflow-every", bounds=_AT_LEAST_1,
                                 help="steps between gradient-flow records (default {default})")
    log_every: int = option(10, "--log-every", bounds=_AT_LEAST_1, help="steps between log lines (default {default})")
    name: str = option("", "--name", help="the run's name, in its folder name and card")
    command: str = ""  # how the run was started, for the checkpoint's provenance

    def compiled(self, device_type: str) -> bool:
        """Whether the run's model runs compiled on a device of this type."""
        if self.compile != "auto":
            return self.compile == "on"
        return device_type == "cuda" and (self.max_steps or 0) >= COMPILE_MIN_STEPS

    def model_spec(self) -> ModelSpec:
        return ModelSpec.from_dict({**self.spec, "objective": self.objective})

    def sized_spec(self) -> ModelSpec:
        """model_spec with the vocabulary the run will have: a new tokenizer's size (vocab_size),
        or the given tokenizer's, which the spec already holds. What its memory is counted on."""
        spec = self.model_spec()
        return spec if self.tokenizer is not None else spec.replace(vocab_size=self.vocab_size)

    def validate(self, flags: bool = False) -> TrainConfig:
        """Raise RunError/SpecError naming the field (with `flags`, the `albert-lab train` flag);
        returns self for chaining. A launch calls it once (jobs.create_run, or the command line
        before it); the worker trusts run.json's config, which passed it."""
        say = (lambda name: FLAGS.get(name, name)) if flags else (lambda name: name)
        spec = self.model_spec()
        for corpus in (self.corpus, self.eval_corpus):
            if isinstance(corpus, str) and corpus.strip().startswith(f"{BUILTIN}["):
                builtin_limit(corpus.strip())  # wiki-vital[:abc], [:], [:-5] refused in words
        checks = [  # what no single row can say: one option against another, or against the spec
            ("max_seq_len", not isinstance(self.max_seq_len, int) or 16 <= self.max_seq_len <= spec.max_positions,
             f"must be between 16 and the model's max_positions ({spec.max_positions}), got {self.max_seq_len}"),
            ("budget", self.max_steps is not None or self.max_minutes is not None, f"give {say('max_steps')} or {say('max_minutes')}"),
            ("pooler_init", self.pooler_init != "standardize" or (self.init_from is not None and self.objective != "none"),
             "standardize sets up the pooler of a run that starts from a checkpoint and trains a pair head"),
            ("distil_from", not (self.distil_from and self.heads_only), "a probe trains only the heads: it distils nothing"),
            ("distil_pair", not self.distil_pair or (self.distil_from is not None and self.objective != "none"),
             f"matches a teacher's pair head: needs {say('distil_from')} and a pair objective"),
            ("heads_only", not self.heads_only or self.init_from is not None,
             f"a frozen random encoder says nothing: heads-only runs need {say('init_from')}"),
        ]
        checks += [(row.name, (problem := row.problem(getattr(self, row.name))) is None, problem) for row in OPTIONS_OF_CONFIG]
        for name, ok, message in checks:
            if not ok:
                raise RunError(f"{say(name)}: {message}")
        if problem := fit_problem(self.sized_spec(), self.batch_size, self.max_seq_len):
            raise RunError(f"spec: {problem}")
        return self

    def divergence_causes(self) -> str:
        """The settings of this run that can make its loss NaN or infinite, most likely first,
        for the message of a run that diverged."""
        spec = self.model_spec()
        causes = []
        if spec.dropout >= 0.5:
            causes.append(f"dropout {spec.dropout:g} (it zeroes {spec.dropout:.0%} of activations and scales the rest "
                          f"by {1 / (1 - spec.dropout):.3g}; ALBERT uses 0, BERT 0.1)")
        causes.append(f"the learning rate {self.lr:g} (try {self.lr / 10:g})")
        if self.warmup_steps == 0:
            causes.append("no warm-up (try --warmup 100)")
        if self.clip_norm is None:
            causes.append("no gradient clipping")
        if self.precision == "bf16":
            causes.append("bf16 precision (try fp32)")
        return "; ".join(causes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        check_types(cls, data, lambda name, message: RunError(f"{name}: {message}"), "config")
        if (unknown := unknown_field(cls, data)) is not None:  # '' is a key too
            raise RunError(f"{unknown}: unknown training option; allowed: {field_names(cls)}")
        config = cls(**data)
        config.model_spec()  # raises SpecError naming the bad field
        return config


OPTIONS_OF_CONFIG: tuple[Option, ...] = rows_of(TrainConfig)
OPTIONS: tuple[Option, ...] = SPEC_OPTIONS + OPTIONS_OF_CONFIG  # the table: the spec's rows, then the run's
# field -> `albert-lab train` flag, for errors in the command line's words; 'budget' is the pair of them
FLAGS = {row.name: row.flag for row in OPTIONS_OF_CONFIG if row.flag} | {"budget": "--steps or --minutes"}
