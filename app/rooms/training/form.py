"""The Training page's 'New run' form: a preset and its architecture, or a checkpoint to
start from (uptraining), the corpus (built in, installed or uploaded) and the recipe's
settings; 'Start training' checks them and launches the run (training.jobs.start_run)."""

from __future__ import annotations

from typing import get_args

import pandas as pd
import streamlit as st

from albert_lab.data.corpora import DEFAULT, PLUS, default_installed, describe_corpora, mix_installed
from albert_lab.data.corpus import save_corpus_upload
from albert_lab.data.textfile import MAX_UPLOAD_MB
from albert_lab.errors import AlbertLabError
from albert_lab.limits import APP_CACHE_QUOTA, APP_RUN_MEMORY_SHARE, MAX_ACTIVE_RUNS, MAX_RUNS_PER_VISITOR, check_disk_quota
from albert_lab.paths import runs_dir
from albert_lab.spec import PRESETS, SHARING_LABELS, Objective
from albert_lab.training import jobs
from albert_lab.training.config import browser_config, uptrain_config
from albert_lab.training.runs import QueueBudget, check_queue_room, discard_upload
from app import links, owner, ui
from app.guard import guard
from app.rooms.training import views as run_views
from app.selection import Selection

TRAINABLE = ["lab-tiny", "lab-albert", "lab-bert"]
UPLOAD = "upload a .txt / .jsonl file"
NEW = "random weights"
NO_TEACHER = "no teacher"
BUDGET = QueueBudget(overall=MAX_ACTIVE_RUNS, per_owner=MAX_RUNS_PER_VISITOR, cache_quota=APP_CACHE_QUOTA,
                     memory_share=APP_RUN_MEMORY_SHARE)  # runs queued or running at once
ARCHITECTURE = {"tr_h": "hidden_size", "tr_l": "num_layers", "tr_e": "embedding_size", "tr_heads": "num_heads", "tr_sharing": "sharing"}


@st.cache_data(show_spinner=False, ttl=600)
def corpora_table() -> pd.DataFrame:
    return pd.DataFrame(describe_corpora())


SCRATCH_LR, UPTRAIN_LR = 3e-3, 1e-3  # the form's learning rate from random weights, and from a checkpoint


def _start_changed() -> None:
    """A checkpoint to start from gets a gentler learning rate while the field holds the
    from-scratch default (4 steps at 3e-3 undid part of what albert-sop knew), and back."""
    uptraining = st.session_state.get("tr_start") != NEW
    if st.session_state.get("tr_lr", SCRATCH_LR) == (SCRATCH_LR if uptraining else UPTRAIN_LR):
        st.session_state["tr_lr"] = UPTRAIN_LR if uptraining else SCRATCH_LR


def apply_preset() -> None:
    """The architecture fields follow the preset picked (before the form reads them)."""
    spec = PRESETS[st.session_state.tr_preset]
    for key, field in ARCHITECTURE.items():
        st.session_state[key] = getattr(spec, field)


def new_run_form() -> None:
    """The form, its corpora beside it, and the run it starts (training.jobs.start_run), or why not."""
    before = st.session_state.get("tr_preset")
    links.from_url("tr_preset", TRAINABLE[1], options=TRAINABLE)
    if "tr_h" not in st.session_state or st.session_state.tr_preset != before:  # first run, or a link's preset
        apply_preset()
    corpora = corpora_table()
    mix_ready = default_installed()
    trainable = ([DEFAULT] * mix_ready + [PLUS] * mix_installed(PLUS)
                 + [r.name for r in corpora.itertuples() if r.role == "train" and r.installed])
    cols = st.columns(3)
    preset = cols[0].selectbox("Model", TRAINABLE, key="tr_preset", on_change=apply_preset,
                               help="lab-tiny: seconds per step; lab-albert / lab-bert: the shipped sizes")
    links.share(tr_preset=preset)
    sources = dict(Selection.read().checkpoints)
    start = cols[1].selectbox("Start from", [NEW, *sources], key="tr_start", on_change=_start_changed,
                              help="random weights, or a checkpoint picked in the sidebar (uptraining: its weights, "
                                   "architecture and tokenizer; heads it lacks are added)")
    teacher = cols[2].selectbox("Distil from", [NO_TEACHER, *sources], key="tr_teacher", disabled=start == NEW,
                                help="while uptraining, also match this checkpoint's hidden state after every layer and, "
                                     "where its MLM head is trained, its MLM predictions (same width and tokenizer); "
                                     "its pair head is never copied")
    bert = PRESETS[preset].family == "bert"
    with st.form("train_form"):
        cols = st.columns([2, 1, 2])
        objective = cols[0].radio("Inter-sentence loss", get_args(Objective), horizontal=True, key="tr_objective",
                                  index=get_args(Objective).index(PRESETS[preset].objective))
        pair_weight = cols[1].number_input("Its weight", 0.01, 100.0, 1.0, key="tr_pair_weight",
                                           help="the loss is MLM + weight x pair loss (the paper: 1). An uptrained encoder's "
                                                "MLM and distillation gradients can be hundreds of times the pair loss's, "
                                                "which can then leave the pair loss at chance for the whole run")
        name = cols[2].text_input("Run name", key="tr_name", placeholder="e.g. tiny-sop")
        if start != NEW:
            st.caption(f"Starting from **{start}**: its architecture and tokenizer, no dropout; the Model, Architecture "
                       "and Vocabulary fields are not used.")
        with st.expander(f"Architecture ({preset})", expanded=start == NEW):
            a = st.columns(4)
            hidden = a[0].number_input("H (hidden size)", 16, 1024, step=16, key="tr_h")
            layers = a[1].number_input("L (layers)", 1, 24, key="tr_l")
            embedding = a[2].number_input("E (embedding size)", 8, 1024, step=16, key="tr_e", disabled=bert,
                                          help="BERT ties E to H" if bert else None)
            heads = a[3].number_input("Attention heads", 1, 16, key="tr_heads")
            sharing = st.selectbox("Cross-layer sharing", list(SHARING_LABELS), format_func=SHARING_LABELS.get, key="tr_sharing",
                                   disabled=bert, help="BERT shares nothing" if bert else None)
        corpus = st.selectbox("Corpus", [*trainable, UPLOAD], key="tr_corpus",
                              help=f"{DEFAULT}: the built-in mix of long documents; {PLUS}: it and four software manuals, "
                                   "twice the text, when installed (see 'Corpora' below)")
        if not mix_ready:
            st.caption(f":material/info: {DEFAULT}, the default mix, needs its long-document sources, not installed here: "
                       "`albert-lab corpora --install` fetches them (pinned and checked; the README's commands do).")
        upload = st.file_uploader("Corpus file (.txt: documents separated by blank lines; .jsonl: a 'text' field)",
                                  type=["txt", "jsonl"], key="tr_upload", max_upload_size=MAX_UPLOAD_MB)
        b = st.columns(5)
        steps = b[0].number_input("Steps", 1, 1_000_000, 200, key="tr_steps")
        minutes = b[1].number_input("or minutes (0: off)", 0.0, 600.0, 0.0, key="tr_minutes")
        st.session_state.setdefault("tr_lr", UPTRAIN_LR if start != NEW else SCRATCH_LR)  # _start_changed moves it
        lr = b[2].number_input("Learning rate", 0.0, 1.0, format="%.4f", key="tr_lr",
                               help=f"{SCRATCH_LR:g} from random weights; {UPTRAIN_LR:g} when starting from a checkpoint "
                                    "(set when you pick one): a from-scratch rate can undo what a checkpoint knows. The "
                                    "shipped MiniLM models were uptrained with AdamW at 2e-4 (BERT) and 1.5e-3 (ALBERT).")
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
    run_views.corpora_expander(corpora)
    if not submitted or not run_views.warmup_checked(int(warmup), int(steps) if not minutes else None, float(lr)):
        return
    with guard("starting the run"):
        saved = None
        check_queue_room(runs_dir(), BUDGET, owner.digest())  # a full queue refuses before the upload is kept
        if corpus == UPLOAD:
            if upload is None:
                raise AlbertLabError("choose a corpus file to upload, or pick a built-in corpus")
            data = ui.read_upload(upload)
            check_disk_quota(runs_dir(), len(data), what="this upload")
            corpus = str(saved := save_corpus_upload(upload.name, data, runs_dir() / "uploads"))
        else:
            check_disk_quota(runs_dir(), what="a new run")
        try:
            options = dict(max_seq_len=int(seq_len), batch_size=int(batch), lr=float(lr), optimizer=optimizer,
                           warmup_steps=int(warmup), seed=int(seed), name=name, chunk_start=chunk_start,
                           pair_weight=float(pair_weight))
            if start != NEW:
                teacher_folder = sources.get(teacher) if teacher != NO_TEACHER else None
                config = uptrain_config(sources[start], objective, corpus=corpus, steps=int(steps), minutes=float(minutes),
                                        distil_from=str(teacher_folder) if teacher_folder else None, **options)
            else:
                config = browser_config(preset, objective, hidden=int(hidden), layers=int(layers), embedding=int(embedding),
                                        heads=int(heads), sharing=sharing, corpus=corpus, steps=int(steps),
                                        minutes=float(minutes), vocab=int(vocab), **options)
            with st.spinner(run_views.start_words(config), show_time=True):  # measured: app.costs.START_SECONDS
                # looked up in its module at each start, where a test stands in for it
                info = jobs.start_run(config, owner=owner.digest(), budget=BUDGET)
        except BaseException:
            if saved is not None:
                discard_upload(runs_dir(), saved)  # a refused run keeps nothing of the visitor's
            raise
        run_views.started(info, config)
