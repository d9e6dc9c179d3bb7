"""The Training page's 'New run' form: a preset and its architecture, or a checkpoint to
start from (uptraining), the corpus (built in, installed or uploaded) and the recipe's
settings; 'Start training' launches the run (training.jobs.start_run, which checks them).
Each widget is a row of the options table (training/options.py: its type, bounds, choices and
default) shown as the page's own table says (widgets.py); this file only places them."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from albert_lab.data.corpora import DEFAULT, PLUS, default_installed, describe_corpora, mix_installed
from albert_lab.data.corpus import save_corpus_upload
from albert_lab.data.textfile import MAX_UPLOAD_MB
from albert_lab.errors import AlbertLabError
from albert_lab.limits import check_disk_quota
from albert_lab.paths import runs_dir
from albert_lab.spec import PRESETS, SHARING_LABELS
from albert_lab.training import jobs
from albert_lab.training.config import OPTIONS, SCRATCH_LR, UPTRAIN_LR
from albert_lab.training.options import SPEC_OPTIONS
from albert_lab.training.queue import app_budget, check_queue_room, discard_upload
from albert_lab.training.recipe import browser_config, uptrain_config
from app.rooms.training import views as run_views
from app.rooms.training.widgets import WIDGETS
from app.shell import links, owner, rows
from app.shell.draw import read_upload
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.selection import Selection
from app.shell.state import default_widget, has_widget, set_widget, widget
from app.shell.text import plain

key = keys(__file__)  # this room's widget keys; an option's is its row's name: key("lr") is tr_lr
TRAINABLE = ["lab-tiny", "lab-albert", "lab-bert"]
UPLOAD = "upload a .txt / .jsonl file"
NEW = "random weights"
NO_TEACHER = "no teacher"
BUDGET = app_budget()  # runs queued or running at once, per browser and address; their steps and minutes
ROWS = {row.name: row for row in OPTIONS if row.name in WIDGETS}  # the options the form shows (the run's over the spec's)
# the spec the form sets (browser_config); vocab_size is the run's: the size of the tokenizer it trains
SPEC_FIELDS = tuple(row.name for row in SPEC_OPTIONS if row.name in WIDGETS and ROWS[row.name] is row)
# Where the widgets sit: the lines of the form, by field. A row of the table with a widget that no line
# names is drawn in lines of five after the recipe's, so that a new option needs no edit here.
TOP = ("objective", "pair_weight", "name")
ARCHITECTURE_LINES = (("hidden_size", "num_layers", "embedding_size", "num_heads"), ("sharing",))
RECIPE = (("max_steps", "max_minutes", "lr", "batch_size", "seed"), ("max_seq_len", "vocab_size", "optimizer", "warmup_steps", "chunk_start"))
OWN_CHOICES = ("init_from", "distil_from", "corpus")  # their choices are the sidebar's checkpoints and the installed corpora
PLACED = {*TOP, *(n for line in ARCHITECTURE_LINES + RECIPE for n in line), *OWN_CHOICES}
LR = key("lr")
FORM = rows.Form(key, {name: (row, WIDGETS[name]) for name, row in ROWS.items()}, linked=False, persist=True)
PRESET = links.Control(key("preset"), TRAINABLE[1], options=TRAINABLE)


@st.cache_data(show_spinner=False, ttl=600)
def corpora_table() -> pd.DataFrame:
    return pd.DataFrame(describe_corpora())


def _start_changed() -> None:
    """A checkpoint to start from gets a gentler learning rate while the field holds the
    from-scratch default (4 steps at 3e-3 undid part of what albert-sop knew), and back."""
    uptraining = widget(key("init_from")) != NEW
    if widget(LR, SCRATCH_LR) == (SCRATCH_LR if uptraining else UPTRAIN_LR):
        set_widget(LR, UPTRAIN_LR if uptraining else SCRATCH_LR)


def apply_preset() -> None:
    """The architecture fields follow the preset picked (before the form reads them)."""
    spec = PRESETS[widget(key("preset"))]
    for name in SPEC_FIELDS:
        if WIDGETS[name].state:
            set_widget(key(name), getattr(spec, name))


def draw(where: Any, name: str, **given: Any) -> Any:
    """The widget of the table's row `name` in `where`, its value read (`given`: what the page adds,
    such as the choices it knows or `disabled`)."""
    return FORM.draw(where, name, **given)


def new_run_form() -> None:
    """The form, its corpora beside it, and the run it starts (training.jobs.start_run), or why not."""
    before = widget(key("preset"))
    links.from_url(PRESET.key, PRESET.default, options=PRESET.options)
    if not has_widget(key("hidden_size")) or widget(key("preset")) != before:  # first run, or a link's preset
        apply_preset()
    corpora = corpora_table()
    mix_ready = default_installed()
    trainable = ([DEFAULT] * mix_ready + [PLUS] * mix_installed(PLUS)
                 + [r.name for r in corpora.itertuples() if r.role == "train" and r.installed])
    cols = st.columns(3)
    preset = cols[0].selectbox("Model", TRAINABLE, key=key("preset"), on_change=apply_preset, persist_state="session",
                               help="lab-tiny: seconds per step; lab-albert / lab-bert: the shipped sizes")
    links.Controls(PRESET).share()
    sources = dict(Selection.read().checkpoints)
    start = draw(cols[1], "init_from", options=[NEW, *sources], on_change=_start_changed)
    teacher = draw(cols[2], "distil_from", options=[NO_TEACHER, *sources], disabled=start == NEW)
    bert = PRESETS[preset].family == "bert"
    given = {"objective": {"index": list(ROWS["objective"].choices).index(PRESETS[preset].objective)},
             "embedding_size": {"disabled": bert, "help": "BERT ties E to H" if bert else None},
             "sharing": {"disabled": bert, "help": "BERT shares nothing" if bert else None, "format_func": SHARING_LABELS.get}}
    with st.form(key("form"), enter_to_submit=False):  # Enter in a field starts nothing: only the button does
        values = {name: draw(col, name, **given.get(name, {})) for col, name in zip(st.columns([2, 1, 2]), TOP)}
        if start != NEW:
            st.caption(f"Starting from **{plain(start)}**: its architecture and tokenizer, no dropout; the Model, Architecture "
                       "and Vocabulary fields are not used.")
        with st.expander(f"Architecture ({plain(preset)})", expanded=start == NEW):
            for line in ARCHITECTURE_LINES:
                where = st.columns(4) if len(line) > 1 else [st]
                values |= {name: draw(col, name, **given.get(name, {})) for col, name in zip(where, line)}
        corpus = draw(st, "corpus", options=[*trainable, UPLOAD])
        if not mix_ready:
            st.caption(f":material/info: {DEFAULT}, the default mix, needs its long-document sources, not installed here: "
                       "`albert-lab corpora --install` fetches them (pinned and checked; the README's commands do).")
        upload = st.file_uploader("Corpus file (.txt: documents separated by blank lines; .jsonl: a 'text' field)",
                                  type=["txt", "jsonl"], key=key("upload"), max_upload_size=MAX_UPLOAD_MB)
        default_widget(LR, UPTRAIN_LR if start != NEW else SCRATCH_LR)  # _start_changed moves it
        more = [name for name in ROWS if name not in PLACED]
        for line in (*RECIPE, *(more[i:i + 5] for i in range(0, len(more), 5))):
            values |= {name: draw(col, name) for col, name in zip(st.columns(5), line)}
        submitted = st.form_submit_button("Start training", type="primary")
    run_views.corpora_expander(corpora)
    if not submitted or not run_views.warmup_checked(int(values["warmup_steps"]), None if values["max_minutes"] else
                                                     int(values["max_steps"]), float(values["lr"])):
        return
    with guard("starting the run"):
        saved = None
        check_queue_room(runs_dir(), BUDGET, owner.digest(), owner.address())  # a full queue refuses before the upload is kept
        if corpus == UPLOAD:
            if upload is None:
                raise AlbertLabError("choose a corpus file to upload, or pick a built-in corpus")
            data = read_upload(upload)
            check_disk_quota(runs_dir(), len(data), what="this upload")
            corpus = str(saved := save_corpus_upload(upload.name, data, runs_dir() / "uploads"))
        else:
            check_disk_quota(runs_dir(), what="a new run")
        try:
            spec = {name: values.pop(name) for name in SPEC_FIELDS}
            budget = dict(corpus=corpus, steps=values.pop("max_steps"), minutes=values.pop("max_minutes"))
            vocab = values.pop("vocab_size")  # a run from a checkpoint keeps its tokenizer
            if start != NEW:
                teacher_folder = sources.get(teacher) if teacher != NO_TEACHER else None
                config = uptrain_config(sources[start], spec["objective"], **budget,
                                        distil_from=str(teacher_folder) if teacher_folder else None, **values)
            else:
                config = browser_config(preset, spec["objective"], hidden=spec["hidden_size"], layers=spec["num_layers"],
                                        embedding=spec["embedding_size"], heads=spec["num_heads"], sharing=spec["sharing"],
                                        vocab=vocab, **budget, **values)
            with st.spinner(run_views.start_words(config), show_time=True):  # measured: app.shell.costs.START_SECONDS
                # looked up in its module at each start, where a test stands in for it
                info = jobs.start_run(config, owner=owner.digest(), budget=BUDGET, address=owner.address())
        except BaseException:
            if saved is not None:
                discard_upload(runs_dir(), saved)  # a refused run keeps nothing of the visitor's
            raise
        run_views.started(info, config)
