"""The Training page's views of runs: a new run's checks and words, the runs table and one run's
progress (refreshed while it trains). Runs compared are compare.py's."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_lab.figures import training
from albert_lab.params import count
from albert_lab.paths import runs_dir
from albert_lab.training.config import TrainConfig
from albert_lab.training.jobs import cancel_run
from albert_lab.training.queue import single_user
from albert_lab.training.runs import RunInfo, list_runs, read_run, running_run
from app.rooms.training.state import TrainingState
from app.shell import costs, draw, owner
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.state import kept, set_widget, widget
from app.shell.text import fmt_duration, fmt_tokens, plain

training_figures = shared(training)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys


def corpora_expander(corpora: pd.DataFrame) -> None:
    """The corpora to train on (data.corpora.describe_corpora), with what each holds."""
    with st.expander("Corpora"):
        shown = corpora[["name", "role", "megabytes", "documents", "sentences_per_doc", "interior_pairs", "licence"]].assign(
            installed=[("yes" if ok else f"no: {how}") for ok, how in zip(corpora.installed, corpora.install)])
        st.dataframe(shown, hide_index=True, width="stretch",
                     column_config={"megabytes": st.column_config.NumberColumn("MB", format="%.1f"),
                                    "documents": st.column_config.NumberColumn(format="localized"),
                                    "sentences_per_doc": st.column_config.NumberColumn("sentences / doc", format="%.0f"),
                                    "interior_pairs": st.column_config.NumberColumn("interior pairs", format="localized")})
        st.caption("5% of each source's documents are held out for evaluation; 'ood' sources are never trained on.")


def warmup_checked(warmup: int, steps: int | None, lr: float) -> bool:
    """Whether a run of these settings may start now: a warm-up that fills the whole run is
    said before the run starts (it was said only after), and the run starts when Start is
    pressed again with the same settings."""
    note = warmup_note(warmup, steps, lr) if steps is not None else None
    if note is None or kept(TrainingState).warmup_seen == (warmup, steps, lr):
        return True
    kept(TrainingState).warmup_seen = (warmup, steps, lr)
    st.warning(f"{note} Nothing is started yet: press Start training again to train with this warm-up anyway.",
               icon=":material/trending_up:")
    return False


def start_words(config: TrainConfig) -> str:
    """What the Start's spinner says, from app.shell.costs' measured Start: seconds where the run's
    tokenizer is made (at install, by an earlier run, or the checkpoint's own), about 40 more
    where this corpus and vocabulary size need one trained first."""
    from albert_lab.data.corpora import load_corpus
    from albert_lab.training.prepare import cached_tokenizer_dir

    made = (config.init_from or config.tokenizer
            or (cached_tokenizer_dir(load_corpus(config.corpus), config) / "tokenizer_config.json").is_file())
    if made:
        return (f"Checking the settings and preparing the corpus: about {fmt_duration(costs.START_SECONDS['tokenizer made'])} "
                "on two cores")
    return (f"Checking the settings, then training a tokenizer of {config.vocab_size:,} pieces for this corpus, once: "
            f"about {fmt_duration(costs.START_SECONDS['new tokenizer'])} for long-mix on two cores (measured), longer "
            "for a bigger corpus or on a busy machine; later starts with it take seconds")


def started(info: RunInfo, config: TrainConfig) -> None:
    """What a run just started is."""
    set_widget(key("watch"), info.id)  # the Runs tab follows the new run
    owner.claim(info.id)  # this browser may cancel it, after a reload too
    spec = config.model_spec()
    st.success(f"Run {info.id} started: {spec.label}, {count(spec).total:,} parameters, a vocabulary of "
               f"{config.vocab_size:,} pieces. Follow it under 'Runs'.")
    skipped_lines(info)


def skipped_lines(info: RunInfo, expanded: bool = True) -> None:
    """The lines of a run's corpus file that were skipped (not JSON, no text field ...), the first of them named."""
    warnings = info.raw.get("warnings", [])
    count = info.raw.get("skipped_lines", len(warnings))  # a run.json of before the count lists them all
    if not count:
        return
    with st.expander(f"{count:,} line{'s' * (count != 1)} of its corpus skipped", icon=":material/warning:",
                     expanded=expanded):
        st.text("\n".join(warnings) + (f"\n... and {count - len(warnings):,} more" if count > len(warnings) else ""))


def warmup_note(warmup: int, steps: int, lr: float) -> str | None:
    """A word when the linear warm-up fills the whole run (step s of 0..steps-1 runs at
    lr * (s + 1) / warmup, optim.lr_factor): its last step is the highest rate it reaches."""
    if warmup < steps:
        return None
    if warmup == steps:
        return (f"The warm-up ({warmup:,} steps) is as long as the run: the learning rate climbs for the whole run "
                f"and reaches the {lr:g} asked for only at its last step, with no decay. For a short run, lower the warm-up.")
    return (f"The warm-up ({warmup:,} steps) is longer than the run ({steps:,}): the learning rate climbs for the whole "
            f"run and reaches only {lr * steps / warmup:.2g}, not the {lr:g} asked for. For a short run, lower the warm-up.")


def progress_panel(run_id: str) -> None:
    info = read_run(runs_dir() / run_id)
    rows = info.metrics()  # read once: the frames, the step and the resumes below
    of_kind = lambda kind: [r for r in rows if r.get("kind") == kind]
    train, evals = pd.DataFrame(of_kind("train")), pd.DataFrame(of_kind("eval"))
    total, step = info.total_steps or 0, info.latest_step(rows)
    last = train.iloc[-1] if len(train) else None
    status = {"queued": ":material/schedule:", "running": ":material/sync:", "succeeded": ":material/check_circle:",
              "failed": ":material/error:", "cancelled": ":material/cancel:"}[info.status]
    st.markdown(f"{status} **{plain(info.name)}**: {info.status}, step {step:,}" + (f" of {total:,}" if total else ""))
    if info.status == "queued":
        ahead = running_run(info.path.parent)
        st.caption("One run trains at a time in this runs folder: " + (f"this one starts when **{plain(ahead.name)}** ends."
                   if ahead else "this one starts as soon as it has loaded the corpus and the model."))
    if evaluating := info.evaluating:
        st.caption(f"All steps done; now the {info.message} (with 95% intervals, as in the checkpoint's card).")
    if last is not None:
        done = min(1.0, step / total) if total else 0.0
        st.progress(done, text=f"{done:.0%}")
        m = st.columns(4)
        m[0].metric("Loss", f"{last['loss']:.3f}")
        rate = last.get("run_tokens_per_s", last["tokens_per_s"])  # the run's rate, not the last interval's
        m[1].metric("Tokens / s (whole run)", f"{rate:,.0f}")
        m[2].metric("Time left", "evaluating" if evaluating else fmt_duration(last["eta_s"]) if info.active else "-",
                    help=f"Steps done; the {info.message}" if evaluating else None)
        m[3].metric("Tokens seen", fmt_tokens(last["tokens"]))
        left, right = st.columns(2)
        resumes = [r["step"] for r in of_kind("resume")]
        draw.chart(training_figures.loss_figure(train, resumes), f"loss-{run_id}", key=key("loss", run_id), container=left, share=0.5)
        draw.chart(training_figures.accuracy_figure(train, evals), f"accuracy-{run_id}", key=key("accuracy", run_id), container=right, share=0.5)
    if info.status == "failed":
        st.error(plain(info.message or "the run failed"), icon=":material/error:")
    skipped_lines(info, expanded=False)
    mine = owner.owns(run_id) or single_user()
    if info.active and not mine:
        st.caption("Started in another browser or from the command line: shown read-only here. Cancel it with "
                   f"`albert-lab runs --cancel {run_id}`, or serve the app with ALBERT_LAB_SINGLE_USER=1.")
    if info.active and mine and evaluating:
        st.caption("Its steps are done and saved; the evaluation ends on its own (a cancel would not stop it).")
    elif info.active and mine and st.button("Cancel this run", key=key("cancel", run_id)):
        with guard("cancelling"):
            cancel_run(info.path)
            st.toast(cancel_words(info.status, step))
    if info.status in ("succeeded", "cancelled") and (info.folder.checkpoint / "config.json").is_file():
        st.caption(f"Its checkpoint is listed in the sidebar as run:{info.id}.")


def cancel_words(status: str, step: int) -> str:
    """What a Cancel does to a run at `step`: one that has trained saves its checkpoint; one queued or at
    step 0 has none to save (the toast promised one)."""
    if status == "queued" or step <= 0:
        return "Cancel requested: the run stops before its first step, with no checkpoint (it had none to save)."
    return f"Cancel requested: the run saves its checkpoint (step {step:,} or the next) and stops."


def runs_view() -> None:
    """The runs table and the watched run, refreshed together (every 2 s while a run is active)."""
    runs = list_runs(runs_dir())
    table = pd.DataFrame([{"run": r.id, "name": r.name, "status": r.status, "step": r.latest_step() if r.active else r.step,
                           "objective": r.config.get("objective"), "spec": r.raw.get("spec_label", "")} for r in runs])
    st.dataframe(table, hide_index=True, width="stretch", column_config={"step": st.column_config.NumberColumn(format="localized")})
    ids = [r.id for r in runs]
    if widget(key("watch")) not in ids:
        set_widget(key("watch"), ids[0])
    run_id = st.selectbox("Watch", ids, key=key("watch"))
    progress_panel(run_id)
