"""Training: launch short pretraining runs (MLM + SOP / NSP / none), watch them live, cancel,
compare. Runs are separate processes; this page only reads their files."""

import hashlib
from typing import get_args

import pandas as pd
import plotly.express as px
import streamlit as st

from albert_lab.errors import AlbertLabError
from albert_lab.params import count
from albert_lab.paths import runs_dir
from albert_lab.spec import PRESETS, SHARING_LABELS, Objective
from albert_lab.training.config import TrainConfig
from albert_lab.training.jobs import cancel_run, start_run
from albert_lab.training.runs import list_runs, read_run
from app import ui

st.title("Training")
TRAINABLE = ["lab-tiny", "lab-albert", "lab-bert"]


def save_upload(uploaded) -> str:
    data = ui.read_upload(uploaded)
    if not uploaded.name.lower().endswith((".txt", ".jsonl")):
        raise AlbertLabError(f"{uploaded.name}: upload a .txt (documents separated by blank lines) or .jsonl corpus")
    folder = runs_dir() / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(data).hexdigest()[:12]}-{uploaded.name}"
    path.write_bytes(data)
    return str(path)


def new_run_form() -> None:
    with st.form("train_form"):
        cols = st.columns(3)
        preset = cols[0].selectbox("Model", TRAINABLE, key="tr_preset",
                                   help="lab-tiny: seconds per step; lab-albert / lab-bert: the shipped sizes")
        objective = cols[1].radio("Inter-sentence loss", get_args(Objective), horizontal=True, key="tr_objective")
        name = cols[2].text_input("Run name", key="tr_name", placeholder="e.g. tiny-sop")
        with st.expander("Architecture"):
            base = PRESETS[preset]
            a = st.columns(4)
            hidden = a[0].number_input("H", 16, 1024, base.hidden_size, step=16, key="tr_h")
            layers = a[1].number_input("L", 1, 24, base.num_layers, key="tr_l")
            embedding = a[2].number_input("E (ALBERT)", 8, 1024, base.embedding_size, step=16, key="tr_e")
            heads = a[3].number_input("Heads", 1, 16, base.num_heads, key="tr_heads")
            sharing = st.selectbox("Sharing (ALBERT)", list(SHARING_LABELS), format_func=SHARING_LABELS.get, key="tr_sharing",
                                   index=list(SHARING_LABELS).index(base.sharing))
        corpus_kind = st.radio("Corpus", ["Built-in Wikipedia (10k lead sections)", "Upload .txt / .jsonl"],
                               horizontal=True, key="tr_corpus")
        upload = st.file_uploader("Corpus file", type=["txt", "jsonl"], key="tr_upload")
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
    if not submitted:
        return
    with ui.guard("starting the run"):
        family = PRESETS[preset].family
        spec = PRESETS[preset].replace(hidden_size=int(hidden), num_layers=int(layers), num_heads=int(heads),
                                       embedding_size=int(hidden) if family == "bert" else int(embedding),
                                       sharing="none" if family == "bert" else sharing, num_groups=None)
        if corpus_kind.startswith("Upload"):
            if upload is None:
                raise AlbertLabError("choose a corpus file to upload, or pick the built-in corpus")
            corpus = save_upload(upload)
        else:
            corpus = "wiki-vital"
        config = TrainConfig(spec=spec.to_dict(), objective=objective, corpus=corpus, vocab_size=int(vocab),
                             max_seq_len=int(seq_len), batch_size=int(batch), lr=float(lr), optimizer=optimizer,
                             warmup_steps=int(warmup), max_steps=int(steps), max_minutes=float(minutes) or None,
                             seed=int(seed), name=name, chunk_start=chunk_start, eval_every=max(10, int(steps) // 5),
                             checkpoint_every=max(10, int(steps) // 5), gradflow_every=max(10, int(steps) // 10),
                             command=f"browser: {preset}, {objective}")
        with st.spinner("Checking the settings, preparing corpus and tokenizer ..."):
            info = start_run(config)
        st.session_state["watch_run"] = info.id
        st.success(f"Run {info.id} started ({count(config.model_spec()).total:,} parameters). Follow it under 'Runs'.")


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
        done = min(1.0, last["step"] / total) if total else 0.0
        st.progress(done, text=f"{done:.0%}")
        m = st.columns(4)
        m[0].metric("Loss", f"{last['loss']:.3f}")
        m[1].metric("Tokens / s", f"{last['tokens_per_s']:,.0f}")
        m[2].metric("ETA", f"{last['eta_s'] / 60:.1f} min" if info.active else "-")
        m[3].metric("Tokens seen", f"{last['tokens'] / 1e6:.2f}M")
        left, right = st.columns(2)
        fig = px.line(train, x="step", y=["loss", "mlm_loss", "pair_loss"], title="Training loss")
        for resume in (r["step"] for r in rows if r.get("kind") == "resume"):
            fig.add_vline(x=resume, line_dash="dot", annotation_text="resumed")
        left.plotly_chart(fig, width="stretch", key=f"loss-{run_id}")
        acc_cols = [c for c in ("eval_mlm_acc", "eval_nsp_acc", "eval_sop_acc", "eval_sop_interior_acc") if c in evals]
        if len(evals) and acc_cols:
            right.plotly_chart(px.line(evals, x="step", y=acc_cols, markers=True, range_y=[0, 1],
                                       title="Held-out accuracy (MLM, NSP, SOP, SOP interior)"),
                               width="stretch", key=f"acc-{run_id}")
        else:
            right.plotly_chart(px.line(train, x="step", y=["mlm_acc", "pair_acc"], range_y=[0, 1],
                                       title="Training accuracy"), width="stretch", key=f"tacc-{run_id}")
    if info.status == "failed":
        st.error(info.message or "the run failed", icon=":material/error:")
    if info.active and st.button("Cancel this run", key=f"cancel-{run_id}"):
        with ui.guard("cancelling"):
            cancel_run(info.path)
            st.toast("Cancel requested: the run saves its checkpoint and stops.")
    if info.status in ("succeeded", "cancelled") and (info.folder.checkpoint / "config.json").is_file():
        st.caption(f"Its checkpoint is listed in the sidebar as run:{info.id}.")


tab_new, tab_runs, tab_compare = st.tabs(["New run", "Runs", "Compare runs"])
with tab_new:
    new_run_form()
    ui.paper_note("The recipe follows the paper: MLM with n-gram masking (n <= 3, p(n) proportional to 1/n), SOP "
                  "(swap two consecutive segments) or BERT's NSP (segment from another document), LAMB with linear "
                  "warm-up and decay, no dropout. One run trains at a time; others wait in the queue.")

with tab_runs:
    runs = list_runs(runs_dir())
    if not runs:
        st.info("No runs yet: start one under 'New run'.")
    else:
        table = pd.DataFrame([{"run": r.id, "name": r.name, "status": r.status, "step": r.step,
                               "objective": r.config.get("objective"), "spec": r.raw.get("spec_label", "")} for r in runs])
        st.dataframe(table, hide_index=True, width="stretch")
        ids = [r.id for r in runs]
        default = st.session_state.get("watch_run")
        run_id = st.selectbox("Watch", ids, index=ids.index(default) if default in ids else 0, key="watch_select")
        active = read_run(runs_dir() / run_id).active
        st.fragment(run_every=2 if active else None)(progress_panel)(run_id)

with tab_compare:
    runs = list_runs(runs_dir())
    picked = st.multiselect("Runs", [r.id for r in runs], default=[r.id for r in runs[:3]], key="compare_runs")
    metric = st.selectbox("Metric", ["loss", "mlm_loss", "pair_loss", "mlm_acc", "pair_acc", "tokens_per_s"], key="cmp_metric")
    frames = []
    for run_id in picked:
        info = read_run(runs_dir() / run_id)
        rows = [r for r in info.metrics() if r.get("kind") == "train"]
        if rows:
            frames.append(pd.DataFrame(rows).assign(run=f"{info.name} ({info.config.get('objective')})"))
    if frames:
        frame = pd.concat(frames)
        st.plotly_chart(px.line(frame, x="step", y=metric, color="run", title=f"{metric} by run"), width="stretch")
        ui.download(frame, "runs.csv")
