"""Training: launch short pretraining runs (MLM + SOP / NSP / none), watch them live, cancel,
compare. Runs are separate processes; this page only reads their files."""

from typing import get_args

import pandas as pd
import streamlit as st

from albert_lab.data.corpora import DEFAULT, default_installed, describe_corpora
from albert_lab.data.corpus import save_corpus_upload
from albert_lab.data.textfile import MAX_UPLOAD_MB
from albert_lab.errors import AlbertLabError
from albert_lab.params import count
from albert_lab.paths import runs_dir
from albert_lab.spec import PRESETS, SHARING_LABELS, Objective
from albert_lab.training.config import browser_config
from albert_lab.training.jobs import cancel_run, start_run
from albert_lab.training.runs import list_runs, read_run, single_user
from app import links, owner, training_figures, ui
from app.guard import guard
from app.text import fmt_duration, fmt_tokens

st.title("Training")
TRAINABLE = ["lab-tiny", "lab-albert", "lab-bert"]
UPLOAD = "upload a .txt / .jsonl file"
ARCHITECTURE = {"tr_h": "hidden_size", "tr_l": "num_layers", "tr_e": "embedding_size", "tr_heads": "num_heads", "tr_sharing": "sharing"}


@st.cache_data(show_spinner=False, ttl=600)
def corpora_table() -> pd.DataFrame:
    return pd.DataFrame(describe_corpora())


def apply_preset() -> None:
    """The architecture fields follow the preset picked (before the form reads them)."""
    spec = PRESETS[st.session_state.tr_preset]
    for key, field in ARCHITECTURE.items():
        st.session_state[key] = getattr(spec, field)


def new_run_form() -> None:
    before = st.session_state.get("tr_preset")
    links.from_url("tr_preset", TRAINABLE[1], options=TRAINABLE)
    if "tr_h" not in st.session_state or st.session_state.tr_preset != before:  # first run, or a link's preset
        apply_preset()
    corpora = corpora_table()
    mix_ready = default_installed()
    trainable = [DEFAULT] * mix_ready + [r.name for r in corpora.itertuples() if r.role == "train" and r.installed]
    cols = st.columns(3)
    preset = cols[0].selectbox("Model", TRAINABLE, key="tr_preset", on_change=apply_preset,
                               help="lab-tiny: seconds per step; lab-albert / lab-bert: the shipped sizes")
    links.share(tr_preset=preset)
    bert = PRESETS[preset].family == "bert"
    with st.form("train_form"):
        cols = st.columns(2)
        objective = cols[0].radio("Inter-sentence loss", get_args(Objective), horizontal=True, key="tr_objective",
                                  index=get_args(Objective).index(PRESETS[preset].objective))
        name = cols[1].text_input("Run name", key="tr_name", placeholder="e.g. tiny-sop")
        with st.expander(f"Architecture ({preset})", expanded=True):
            a = st.columns(4)
            hidden = a[0].number_input("H (hidden size)", 16, 1024, step=16, key="tr_h")
            layers = a[1].number_input("L (layers)", 1, 24, key="tr_l")
            embedding = a[2].number_input("E (embedding size)", 8, 1024, step=16, key="tr_e", disabled=bert,
                                          help="BERT ties E to H" if bert else None)
            heads = a[3].number_input("Attention heads", 1, 16, key="tr_heads")
            sharing = st.selectbox("Cross-layer sharing", list(SHARING_LABELS), format_func=SHARING_LABELS.get, key="tr_sharing",
                                   disabled=bert, help="BERT shares nothing" if bert else None)
        corpus = st.selectbox("Corpus", [*trainable, UPLOAD], key="tr_corpus",
                              help=f"{DEFAULT}: the built-in mix of long documents (see 'Corpora' below)")
        if not mix_ready:
            st.caption(f":material/info: {DEFAULT}, the default mix, needs its long-document sources, not installed here: "
                       "`albert-lab corpora --install` fetches them (pinned and checked; the README's commands do).")
        upload = st.file_uploader("Corpus file (.txt: documents separated by blank lines; .jsonl: a 'text' field)",
                                  type=["txt", "jsonl"], key="tr_upload", max_upload_size=MAX_UPLOAD_MB)
        b = st.columns(5)
        steps = b[0].number_input("Steps", 1, 1_000_000, 200, key="tr_steps")
        minutes = b[1].number_input("or minutes (0: off)", 0.0, 600.0, 0.0, key="tr_minutes")
        lr = b[2].number_input("Learning rate", 0.0, 1.0, 3e-3, format="%.4f", key="tr_lr")
        batch = b[3].number_input("Batch size", 1, 512, 32, key="tr_batch")
        seed = b[4].number_input("Seed", 0, 1_000_000, 0, key="tr_seed")
        c = st.columns(5)
        seq_len = c[0].number_input("Sequence length", 16, 512, 128, step=16, key="tr_seq")
        vocab = c[1].number_input("Vocabulary (new tokenizer)", 100, 32000, 8000, step=500, key="tr_vocab")
        optimizer = c[2].selectbox("Optimizer", ["lamb", "adamw"], key="tr_opt")
        warmup = c[3].number_input("Warm-up steps", 0, 100_000, 50, key="tr_warmup")
        chunk_start = c[4].selectbox("Pairs start at", ["document", "random"], key="tr_chunk",
                                     help="document: each document's first segment, as in the paper; random: a random "
                                          "segment, so more pairs come from inside documents")
        submitted = st.form_submit_button("Start training", type="primary")
    with st.expander("Corpora"):
        shown = corpora[["name", "role", "megabytes", "documents", "sentences_per_doc", "interior_pairs", "licence"]].assign(
            installed=corpora.installed.map({True: "yes", False: "no: albert-lab corpora --install"}))
        st.dataframe(shown, hide_index=True, width="stretch",
                     column_config={"megabytes": st.column_config.NumberColumn("MB", format="%.1f"),
                                    "documents": st.column_config.NumberColumn(format="localized"),
                                    "sentences_per_doc": st.column_config.NumberColumn("sentences / doc", format="%.0f"),
                                    "interior_pairs": st.column_config.NumberColumn("interior pairs", format="localized")})
        st.caption("5% of each source's documents are held out for evaluation; 'ood' sources are never trained on.")
    if not submitted:
        return
    with guard("starting the run"):
        if corpus == UPLOAD:
            if upload is None:
                raise AlbertLabError("choose a corpus file to upload, or pick a built-in corpus")
            corpus = str(save_corpus_upload(upload.name, ui.read_upload(upload), runs_dir() / "uploads"))
        config = browser_config(preset, objective, hidden=int(hidden), layers=int(layers), embedding=int(embedding),
                                heads=int(heads), sharing=sharing, corpus=corpus, steps=int(steps), minutes=float(minutes),
                                vocab=int(vocab), max_seq_len=int(seq_len), batch_size=int(batch), lr=float(lr),
                                optimizer=optimizer, warmup_steps=int(warmup), seed=int(seed), name=name, chunk_start=chunk_start)
        with st.spinner("Checking the settings, preparing corpus and tokenizer: the first start with a corpus and "
                        "vocabulary size trains a tokenizer (about 40 s on two cores), later ones take seconds",
                        show_time=True):
            info = start_run(config)
        st.session_state["watch_select"] = info.id  # the Runs tab follows the new run
        owner.claim(info.id)  # this browser may cancel it, after a reload too
        spec = config.model_spec()
        st.success(f"Run {info.id} started: {spec.label}, {count(spec).total:,} parameters, a vocabulary of "
                   f"{config.vocab_size:,} pieces. Follow it under 'Runs'.")
        if config.max_steps is not None and config.warmup_steps >= config.max_steps:
            st.info(f"The warm-up ({config.warmup_steps:,} steps) is as long as the run ({config.max_steps:,}): the learning "
                    f"rate climbs all the way and never reaches {config.lr:g}. For a short run, lower the warm-up.",
                    icon=":material/trending_up:")


def progress_panel(run_id: str) -> None:
    info = read_run(runs_dir() / run_id)
    rows = info.metrics()
    train = pd.DataFrame([r for r in rows if r.get("kind") == "train"])
    evals = pd.DataFrame([r for r in rows if r.get("kind") == "eval"])
    total = info.total_steps or 0
    last = train.iloc[-1] if len(train) else None
    status = {"queued": ":material/schedule:", "running": ":material/sync:", "succeeded": ":material/check_circle:",
              "failed": ":material/error:", "cancelled": ":material/cancel:"}[info.status]
    st.markdown(f"{status} **{info.name}**: {info.status}, step {info.step:,}" + (f" of {total:,}" if total else ""))
    if last is not None:
        done = min(1.0, info.step / total) if total else 0.0
        st.progress(done, text=f"{done:.0%}")
        m = st.columns(4)
        m[0].metric("Loss", f"{last['loss']:.3f}")
        rate = last.get("run_tokens_per_s", last["tokens_per_s"])  # the run's rate, not the last interval's
        m[1].metric("Tokens / s (whole run)", f"{rate:,.0f}")
        m[2].metric("Time left", fmt_duration(last["eta_s"]) if info.active else "-")
        m[3].metric("Tokens seen", fmt_tokens(last["tokens"]))
        left, right = st.columns(2)
        resumes = [r["step"] for r in rows if r.get("kind") == "resume"]
        ui.chart(training_figures.loss_figure(train, resumes), f"loss-{run_id}", key=f"loss-{run_id}", container=left)
        ui.chart(training_figures.accuracy_figure(train, evals), f"accuracy-{run_id}", key=f"acc-{run_id}", container=right)
    if info.status == "failed":
        st.error(info.message or "the run failed", icon=":material/error:")
    mine = owner.owns(run_id) or single_user()
    if info.active and not mine:
        st.caption("Started in another browser or from the command line: shown read-only here. Cancel it with "
                   f"`albert-lab runs --cancel {run_id}`, or serve the app with ALBERT_LAB_SINGLE_USER=1.")
    if info.active and mine and st.button("Cancel this run", key=f"cancel-{run_id}"):
        with guard("cancelling"):
            cancel_run(info.path)
            st.toast("Cancel requested: the run saves its checkpoint and stops.")
    if info.status in ("succeeded", "cancelled") and (info.folder.checkpoint / "config.json").is_file():
        st.caption(f"Its checkpoint is listed in the sidebar as run:{info.id}.")


def runs_view() -> None:
    """The runs table and the watched run, refreshed together (every 2 s while a run is active)."""
    runs = list_runs(runs_dir())
    table = pd.DataFrame([{"run": r.id, "name": r.name, "status": r.status, "step": r.step,
                           "objective": r.config.get("objective"), "spec": r.raw.get("spec_label", "")} for r in runs])
    st.dataframe(table, hide_index=True, width="stretch", column_config={"step": st.column_config.NumberColumn(format="localized")})
    ids = [r.id for r in runs]
    if st.session_state.get("watch_select") not in ids:
        st.session_state["watch_select"] = ids[0]
    run_id = st.selectbox("Watch", ids, key="watch_select")
    progress_panel(run_id)


tab_new, tab_runs, tab_compare = st.tabs(["New run", "Runs", "Compare runs"])
with tab_new:
    new_run_form()
    ui.paper_note("The recipe follows the paper: MLM with n-gram masking (n <= 3, p(n) proportional to 1/n), SOP "
                  "(swap two consecutive segments) or BERT's NSP (segment from another document), LAMB with linear "
                  "warm-up and decay, no dropout. One run trains at a time; others wait in the queue.")

with tab_runs:
    if not list_runs(runs_dir()):
        st.info("No runs yet: start one under 'New run'.")
    else:
        active = any(r.active for r in list_runs(runs_dir()))
        st.fragment(run_every=2 if active else None)(runs_view)()

with tab_compare:
    runs = list_runs(runs_dir())
    if not runs:
        st.info("No runs to compare yet: start one under 'New run'.")
    picked = st.multiselect("Runs", [r.id for r in runs], default=[r.id for r in runs[:3]], key="compare_runs")
    titles = {"loss": "loss (nats)", "mlm_loss": "MLM loss (nats)", "pair_loss": "pair loss (nats)", "mlm_acc": "MLM accuracy",
              "pair_acc": "pair accuracy", "tokens_per_s": "tokens / s"}
    metric = st.selectbox("Metric", list(titles), format_func=titles.get, key="cmp_metric")
    frames = []
    for run_id in picked:
        info = read_run(runs_dir() / run_id)
        rows = [r for r in info.metrics() if r.get("kind") == "train"]
        if rows:
            frames.append(pd.DataFrame(rows).assign(run=f"{info.name} ({info.config.get('objective')})"))
    if frames:
        frame = pd.concat(frames)
        ui.chart(training_figures.runs_figure(frame, metric, titles[metric]), f"runs-{metric}")
        ui.download(frame, "runs.csv")
