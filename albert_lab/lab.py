"""The front door: the verbs `import albert_lab as al` offers (docs/library.md).

`al.load` a checkpoint; one verb per analysis of the registry (albert_lab.analysis.registry.ANALYSES),
made in one loop as the command line makes its commands, so a new analysis gets its verb with its
record: `al.oscillation(models, texts)`, `al.score(models, pairs)`, ... each returning a Result (its
frame, `figure()`, `reading`); `al.head_view`, `al.params`, `al.relax`, `al.albertize`, `al.train`.
A checkpoint is a ModelBundle, a shipped name ('albert-sop'), a folder, a Google release's folder or
archive, or a hub id (online); the command line's names and numbers are the same."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from albert_lab.analysis.registry import ANALYSES, Analysis
from albert_lab.errors import AlbertLabError
from albert_lab.result import Result

Models = Any  # a ModelBundle, a name, folder, archive or hub id, or a list of them



def load(source: Models, *, device: str = "auto", dtype: str = "float32", allow_pickle: bool = False,
         name: str | None = None, casing: str | None = None) -> Any:
    """A checkpoint loaded, as `albert-lab ... --checkpoint SOURCE` loads it: a shipped or trained name
    ('albert-sop', 'run:ID'), a folder, a Google release's folder or archive (converted once, cached), or
    a hub id (online). Returns a ModelBundle (.model, .tokenizer, .spec, .heads, .card); one given is
    returned as it is."""
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.checkpoint.load import ModelBundle, load_checkpoint

    if isinstance(source, ModelBundle):
        return source
    text = str(source)
    return load_checkpoint(resolve_checkpoint(text), device=device, dtype=dtype, allow_pickle=allow_pickle,
                           name=name or (text if "/" not in text else None), casing=casing)  # type: ignore[arg-type]


def load_all(models: Models, **how: Any) -> list:
    """Each checkpoint of `models` (one or a list) loaded; names made distinct as the command line makes them."""
    from albert_lab.cli.inputs import distinct_labels

    given = [models] if isinstance(models, (str, Path)) or not isinstance(models, Sequence) else list(models)
    bundles = [load(m, **how) for m in given]
    for bundle, label in zip(bundles, distinct_labels([b.name for b in bundles], [b.source for b in bundles]), strict=True):
        bundle.name = label
    return bundles


def checkpoints() -> pd.DataFrame:
    """The checkpoints found here (shipped, trained, converted), as `albert-lab checkpoints` lists them."""
    from dataclasses import asdict

    from albert_lab.checkpoint.discover import discover_checkpoints

    return pd.DataFrame([{k: str(v) if isinstance(v, Path) else v for k, v in asdict(c).items()} for c in discover_checkpoints()])


# ---- a verb per analysis record -----------------------------------------------------------------------
def analysis_verb(record: Analysis) -> Callable[..., Result]:
    """The verb of one record: its checkpoints, its inputs, its options (keywords, with the record's defaults and bounds)."""
    options = {o.name: o for o in record.options if o.use != "output"}

    def verb(models: Models, inputs: Any = None, /, **given: Any) -> Result:
        unknown = sorted(set(given) - set(options) - {"device", "dtype", "progress"})
        if unknown:
            raise AlbertLabError(f"{record.name} takes no option {', '.join(unknown)}; its options: {', '.join(options) or 'none'}")
        for name, value in given.items():
            if name in options and (problem := options[name].problem(value)):
                raise AlbertLabError(f"{name} {problem}")
        how = {k: given.pop(k) for k in ("device", "dtype") if k in given}
        bundles = load_all(models, **how)
        if record.most and len(bundles) > record.most:
            raise AlbertLabError(record.most_words or f"{record.name} takes at most {record.most} checkpoint(s)")
        data = read_inputs(record, inputs, {k: v for k, v in given.items() if k in options and options[k].use == "inputs"})
        run = {k: v for k, v in given.items() if k not in options or options[k].use == "run"}
        given_models = bundles[0] if record.most == 1 else bundles
        out = record.load()(given_models, *(data if record.inputs == "pair" else (data,)), **run)  # a pair: A and B
        return as_result(record, out, bundles)

    verb.__name__ = verb.__qualname__ = record.name.replace("-", "_")
    verb.__doc__ = verb_doc(record)
    params = [inspect.Parameter("models", inspect.Parameter.POSITIONAL_ONLY),
              inspect.Parameter(INPUT_NAMES[record.inputs], inspect.Parameter.POSITIONAL_ONLY, default=None)]
    params += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default) for o in options.values()
               if o.name != INPUT_NAMES[record.inputs]]
    verb.__signature__ = inspect.Signature(params, return_annotation=Result)  # type: ignore[attr-defined]
    return verb


INPUT_NAMES = {"texts": "texts", "text": "text", "pairs": "pairs", "held-out": "pairs", "pair": "pair"}
INPUT_WORDS = {"texts": "a text or a list of texts (default: the built-in sample of held-out Wikipedia leads)",
               "text": "one text (default: the first of the built-in sample)",
               "pairs": "a DataFrame with sentence_a, sentence_b[, label], or a .csv/.tsv/.jsonl file of them",
               "held-out": "held-out pairs (default: built from `corpus`)",
               "pair": "a pair of sentences (A, B)"}


def verb_doc(record: Analysis) -> str:
    """The verb's docstring from its record: what it does, its inputs, its options' help."""
    many = "exactly one" if record.most == 1 else f"at most {record.most}" if record.most else "any number"
    lines = [f"{record.help[0].upper()}{record.help[1:]}.", "",
             f"models: a checkpoint or a list ({many}); {INPUT_NAMES[record.inputs]}: {INPUT_WORDS[record.inputs]}."]
    for option in record.options:
        if option.use != "output":
            words = option.help.replace("{default:,}", "{default}").format(default=option.default) if option.help else ""
            kind = f"one of {', '.join(map(repr, option.choices))}" if option.choices else getattr(option.type, "__name__", "")
            lines.append(f"{option.name}: {words or kind} (default {option.default!r})")
    lines += ["", f"Returns a Result: .frame (as `albert-lab {record.name} --json`), .figure(), .reading, .save(path)."]
    return "\n".join(lines)


def read_inputs(record: Analysis, inputs: Any, options: dict[str, Any]) -> Any:
    """What the analysis reads, from what the caller gave: texts, a text, pairs (a frame or a file), held-out pairs, one pair."""
    from albert_lab.data.samples import sample_texts

    if record.inputs == "texts":
        return [inputs] if isinstance(inputs, str) else list(inputs) if inputs is not None else sample_texts()
    if record.inputs == "text":
        return inputs if isinstance(inputs, str) else (list(inputs) if inputs is not None else sample_texts())[0]
    if record.inputs == "pairs":
        return read_pairs(inputs, options.get("max_rows", record.option("max_rows").default))
    if record.inputs == "held-out":
        if inputs is not None:
            return inputs
        from albert_lab.analysis.evaluation import evaluation_pairs

        return evaluation_pairs(**options)
    if inputs is None or len(inputs) != 2:
        raise AlbertLabError(f"{record.name} reads one pair: give (sentence A, sentence B)")
    return tuple(inputs)


def read_pairs(pairs: Any, max_rows: int) -> pd.DataFrame:
    """Pairs to score: a frame (sentence_a, sentence_b[, label], columns of one's own) or a file, read as
    `albert-lab score FILE` reads it (a frame as the CSV it would be saved as): the same checks, the same rows."""
    from albert_lab.data import csvfile
    from albert_lab.data.pairs_file import read_pairs as parse
    from albert_lab.data.textfile import read_user_file

    if isinstance(pairs, pd.DataFrame):
        data, name = csvfile.to_csv(pairs, raw=True).encode(), "pairs.csv"
    elif pairs is None:
        raise AlbertLabError("score reads pairs: give a DataFrame (sentence_a, sentence_b[, label]) or a file")
    else:
        path = Path(pairs).expanduser()
        data, name = read_user_file(path), path.name
    parsed = parse(data, name, max_rows)
    for problem in parsed.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return parsed.pairs


def as_result(record: Analysis, out: Any, bundles: list) -> Result:
    """The analysis's return as a Result: its frame, its figure and its page's words."""
    from albert_lab.analysis.attribution import Attribution

    if isinstance(out, Attribution):
        return attribution_result(out)
    draw = named(f"albert_lab.figures.{record.figure}") if record.figure else None
    return Result(record.name, out, (lambda theme=None: draw(out, theme=theme)) if draw else None,
                  reading_of(record, out, {b.name: b.card for b in bundles}))


def reading_of(record: Analysis, frame: pd.DataFrame, cards: dict[str, Any]) -> str:
    """What the page says of `frame` where the page says something, else what the command line says beside its table."""
    if record.reading:
        return named(f"albert_lab.readings.{record.reading}")(frame, cards)
    if record.report is None:
        return ""
    report = record.load(record.report)(frame)
    said = "\n".join([*([report.text] if report.text else []), *report.after, *report.remarks])
    return f"```\n{said}\n```" if said else ""  # the command line's words, in their columns


def attribution_result(out: Any) -> Result:
    """An Attribution as a Result: its tokens' frame, the shaded tokens as its view, what the numbers say."""
    from albert_lab.analysis.attribution import attribution_html

    reading = (f"P(label {out.target}) of the {out.head.upper()} head: {out.probability:.3f} for the pair, "
               f"{out.baseline_probability:.3f} for the baseline ({out.baseline}); the attributions sum to the "
               f"difference within {abs(out.delta):.2g} (convergence delta). Green pushes label {out.target} up, red down.")
    return Result("attribution", out.tokens, None, reading, view=attribution_html(out.tokens), value=out)


def named(dotted: str) -> Callable[..., Any]:
    """The function a dotted name ('albert_lab.figures.oscillation.oscillation_figure') names, imported now."""
    import importlib

    module, _, function = dotted.rpartition(".")
    return getattr(importlib.import_module(module), function)


VERBS: dict[str, Callable[..., Result]] = {record.name.replace("-", "_"): analysis_verb(record) for record in ANALYSES}
globals().update(VERBS)  # al.oscillation, al.score, ...: one per record


# ---- verbs beyond the registry's analyses ------------------------------------------------------------
def slices(scores: Result | pd.DataFrame, by: str = "label") -> Result:
    """A scored file (al.score's Result or its frame) sliced `by` 'label', 'length', 'unknown pieces' or one
    of the file's own columns: each group's accuracy with its 95% interval per checkpoint, as the Sentence
    pairs page draws it (analysis.slices.slice_accuracy), with what each interval allows (`reads`) and the
    page's words under the table (`reading`)."""
    from albert_lab.analysis.slices import slice_accuracy, slice_names
    from albert_lab.figures.sentence_pairs import slice_figure
    from albert_lab.readings.sentence_pairs import slices_reading, with_reads

    frame = scores.frame if isinstance(scores, Result) else scores
    if by not in slice_names(frame):
        raise AlbertLabError(f"no slice {by!r}; these pairs slice by {', '.join(slice_names(frame))}")
    table = with_reads(slice_accuracy(frame, by), by)
    return Result("slices", table, lambda theme=None: slice_figure(table, by, theme=theme), slices_reading(table, by))


def head_view(model: Models, text: str, application: int = 1, value: str = "weight", repeat: int = 1,
              heads: Sequence[int] | None = None) -> Result:
    """bertviz's head view of one layer application: each head's attention from each token (left) to
    each token (right), `value` 'weight' or 'norm_weighted'; `heads` the heads shown at first (None: the
    sharpest), a square per head shows or hides the others. Returns a Result whose frame is the maps
    (albert_lab.analysis.attention.attention_maps, first text only) and whose `view` is the head view's
    HTML (a word hovered keeps its lines; `save('view.html')` writes it)."""
    from albert_lab.analysis.attention import attention_maps
    from albert_lab.figures.head_view import HEAD_VIEW_TOKENS, head_view_html
    from albert_lab.figures.shared_block import first_tokens

    [bundle] = load_all(model)
    maps = attention_maps([bundle], text, repeat=repeat)
    shown, _ = first_tokens(maps[maps.application == application], HEAD_VIEW_TOKENS)
    if shown.empty:
        raise AlbertLabError(f"application {application} is not among {bundle.name}'s 1..{int(maps.application.max())}")
    return Result("head_view", maps, view=head_view_html(shown, application, value, heads))


def model_view(model: Models, text: str, value: str = "weight", repeat: int = 1) -> Result:
    """bertviz's model view: a thumbnail per layer application (rows) and head (columns)."""
    from albert_lab.analysis.attention import attention_maps
    from albert_lab.figures.shared_block import MODEL_VIEW_TOKENS, first_tokens, model_view_figure

    [bundle] = load_all(model)
    maps = attention_maps([bundle], text, repeat=repeat)
    shown, _ = first_tokens(maps, MODEL_VIEW_TOKENS)
    return Result("model_view", maps, lambda theme=None: model_view_figure(shown, value, theme=theme))


def params(spec: Any = "albert-base", seq_len: int = 512, **changes: Any) -> Result:
    """Exact parameter and FLOP counts of a spec (a ModelSpec or a preset's name: 'albert-base',
    'bert-base', ...; `changes` replace fields, e.g. embedding_size=64), without weights, as
    `albert-lab params`. Returns a Result: .frame one row per component, .value the count
    (.total, .total_with_heads, .applied, .flops_per_token), .figure() parameters by component."""
    from albert_lab.figures.parameters import parameter_bars
    from albert_lab.params import count
    from albert_lab.spec import ModelSpec

    spec = ModelSpec.from_name(spec) if isinstance(spec, str) else spec
    report = count(spec.replace(**changes) if changes else spec, seq_len=seq_len)
    frame = pd.DataFrame([{"component": c.name, "unique": c.unique, "applied": c.applied, "flops_per_token": c.flops_per_token}
                          for c in report.components])
    title = f"{report.spec.label}: parameters by component (log scale)"
    return Result("params", frame, lambda theme=None: parameter_bars(frame, title, theme=theme),
                  f"total (encoder incl. pooler, the paper's count): {report.total:,}; with pretraining heads: "
                  f"{report.total_with_heads:,}; applied per forward pass: {report.applied:,}", value=report)


def relax(source: Models, ranks: Sequence[int | str] | None = None, *, rank: int | str | None = None, out: str | Path | None = None,
          pairs: int | None = None, **options: Any) -> Any:
    """Between a BERT and its ALBERT. With `ranks` (e.g. [0, 4, 16, 'full']): the curve, each rank's
    relaxed model measured against the source on held-out text (`albert-lab relax --ranks`), as a
    Result (.frame the curve, .extra['energy'] the energy each rank keeps, .figure() the curve). With
    `rank` and `out`: one relaxed checkpoint written to `out` and loaded (`albert-lab relax --rank`)."""
    from albert_lab.analysis.relaxation import DEFAULT_PAIRS, curve_and_energy
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.figures.parameters import relaxation_figure

    folder = resolve_checkpoint(str(source))
    if ranks is None:
        if rank is None or out is None:
            raise AlbertLabError("relax: give ranks=[...] for the curve, or rank= and out= for one model")
        from albert_lab.relax import relax as relax_one

        return load(relax_one(folder, out, rank, **options))
    curve, energy = curve_and_energy(folder, list(ranks), pairs=pairs or DEFAULT_PAIRS, **options)
    title = f"{source}: what each rank gives back"
    return Result("relax", curve, lambda theme=None: relaxation_figure(curve, "parameters", title, theme=theme),
                  extra={"energy": energy})


def albertize(source: Models, out: str | Path, embedding_size: int = 128, sharing: str = "all", **options: Any) -> Any:
    """A BERT made an ALBERT (`albert-lab albertize`): its embedding factorised to `embedding_size`, its
    layers averaged into shared blocks; written to `out` and loaded (a ModelBundle)."""
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.convert import albertize as convert

    convert(resolve_checkpoint(str(source)), out, embedding_size=embedding_size, sharing=sharing, **options)  # type: ignore[arg-type]
    return load(out)


# ---- training: start a run, follow it ---------------------------------------------------------------
class Run:
    """A training run's folder (runs/<run-id>/), followed as it trains: `status`, `wait()`, `metrics()`,
    `figure()` (its losses), `figures()` (losses and accuracy), `cancel()`, `load()` (its checkpoint).
    The run trains in its own process and lives on after the notebook closes: Run(path) follows it again."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @property
    def info(self) -> Any:
        """The run's RunInfo, read now (status, step, total_steps, config, message)."""
        from albert_lab.training.runs import read_run

        return read_run(self.path)

    @property
    def status(self) -> str:
        """queued, running, succeeded, failed or cancelled."""
        return self.info.status

    def wait(self, timeout: float | None = None, every: float = 0.5) -> Run:
        """Wait until the run has ended (each `every` seconds, at most `timeout`); a failed or cancelled run raises, with its log's end."""
        import time

        start = time.monotonic()
        while (info := self.info).active:
            if timeout is not None and time.monotonic() - start > timeout:
                raise AlbertLabError(f"run {info.id} still {info.status} after {timeout:g} s (step {info.latest_step()})")
            time.sleep(every)
        if info.status != "succeeded":
            raise AlbertLabError(f"run {info.id} {info.status}: {info.message}\n{info.log_tail(8)}")
        return self

    def metrics(self, kind: str = "train") -> pd.DataFrame:
        """The run's metric rows of one kind ('train': losses and accuracies per log step; 'eval': held-out)."""
        return pd.DataFrame(self.info.metrics(kind))

    def figures(self, theme: Any = None) -> dict[str, Any]:
        """Its losses and its accuracy, as the Training page draws them (albert_lab.figures.training)."""
        from albert_lab.figures.training import accuracy_figure, loss_figure

        info = self.info
        train, evals = self.metrics("train"), self.metrics("eval")
        resumes = [int(r["step"]) for r in info.metrics("resume") if "step" in r]
        return {"loss": loss_figure(train, resumes, theme=theme), "accuracy": accuracy_figure(train, evals, theme=theme)}

    def figure(self, theme: Any = None) -> Any:
        """Its training losses by step."""
        return self.figures(theme)["loss"]

    def result(self, which: str = "loss") -> Result:
        """One of its curves as a Result ('loss' or 'accuracy'), shown in Jupyter as the Training page draws it:
        .frame the metric rows it is drawn from ('train', or 'eval' for held-out accuracy once evaluated)."""
        if which not in ("loss", "accuracy"):
            raise AlbertLabError(f"a run's curves are 'loss' and 'accuracy', not {which!r}")
        evals = self.metrics("eval")
        frame = evals if which == "accuracy" and len(evals) else self.metrics("train")
        return Result(f"run {self.path.name}: {which}", frame, lambda theme=None: self.figures(theme)[which])

    def cancel(self) -> Run:
        """Ask the run to stop (it saves its checkpoint first)."""
        from albert_lab.training.jobs import cancel_run

        cancel_run(self.path)
        return self

    def load(self, **how: Any) -> Any:
        """The run's checkpoint, loaded (a ModelBundle)."""
        return load(self.path / "checkpoint", **how)

    def _repr_html_(self) -> str:
        from albert_lab.result import figure_html

        info = self.info
        head = f"<p>run <b>{info.id}</b>: {info.status}, step {info.latest_step()} of {info.total_steps or '?'}</p>"
        return head + ("".join(figure_html(f) for f in self.figures().values()) if len(self.metrics()) else "")

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"


def train(spec: Any = "lab-tiny", *, root: str | Path | None = None, foreground: bool = False, **options: Any) -> Run:
    """Start a pretraining run (`albert-lab train`): `spec` a ModelSpec or a preset's name, `options` the
    TrainConfig's fields (objective='sop', corpus=..., max_steps=40, batch_size=..., vocab_size=...). It
    trains in its own process (in this one with foreground=True) into `root` (default: the runs folder);
    returns a Run to follow (`run.wait()`, `run.figure()`)."""
    from albert_lab.spec import ModelSpec
    from albert_lab.training.config import TrainConfig
    from albert_lab.training.jobs import start_run

    spec = ModelSpec.from_name(spec) if isinstance(spec, str) else spec
    config = TrainConfig(spec=spec.to_dict() if isinstance(spec, ModelSpec) else dict(spec), **options)
    info = start_run(config, root=Path(root) if root is not None else None, foreground=foreground)
    return Run(info.path)
