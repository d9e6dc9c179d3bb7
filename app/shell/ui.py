"""Pieces shared by every page: the sidebar (checkpoints, device, dtype), cached
loaders and small chart helpers (the error guard, the link's state and the presets have
their own modules: app/shell/guard.py, app/shell/links.py, app/shell/presets.py). Pages stay thin: read widgets, call
one library function, draw."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from albert_lab.checkpoint.discover import CheckpointSummary, discover_checkpoints, summarize_checkpoint
from albert_lab.checkpoint.files import is_local_source, stamp
from albert_lab.data.textfile import check_size
from albert_lab.paths import runs_dir
from albert_lab.torch_build import known_devices
from app.shell import look
from app.shell.serve import import_in_background, import_model_code
from app.shell.state import shell, widget
from app.shell.text import plural

if TYPE_CHECKING:
    from albert_lab.checkpoint.load import ModelBundle

# An emoji favicon is drawn inline by the browser; a ":material/...:" one is fetched
# from fonts.gstatic.com on every page load.
PAGE_ICON = "\U0001F9EA"  # test tube


# ---- checkpoints ---------------------------------------------------------------------------
@st.cache_data(ttl=5, show_spinner=False)
def available_checkpoints() -> list[dict[str, Any]]:
    return [{"name": c.name, "path": str(c.path), "origin": c.origin, "label": c.label, "objective": c.objective,
             "uptrained": c.uptrained, "title": c.card.get("name") if c.origin == "run" else None}
            for c in discover_checkpoints()]


SIDEBAR_CASING = "{casing} given in the sidebar"  # where a release's casing came from, in its card


@st.cache_resource(max_entries=8, show_spinner="Loading checkpoint ...")
def _load(source: str, device: str, dtype: str, name: str | None, stamp: float, casing: str | None) -> ModelBundle:
    from albert_lab.checkpoint.load import load_checkpoint

    return load_checkpoint(source, device=device, dtype=dtype, name=name, casing=casing,
                           casing_given=casing and SIDEBAR_CASING.format(casing=casing))


@st.cache_data(max_entries=32, show_spinner=False)
def _summary(source: str, name: str | None, stamp: float) -> CheckpointSummary | None:
    return summarize_checkpoint(source, name)


def summary(source: str, name: str | None) -> CheckpointSummary | None:
    """What a local checkpoint's files say (no model loaded); None for hub ids and folders
    only loading can tell. Raises CheckpointError for a folder that cannot load."""
    return _summary(source, name, stamp(source)) if is_local_source(source) else None


def checkpoint_card(source: str, name: str | None, device: str, dtype: str, casing: str | None = None) -> dict[str, Any]:
    """The model card, from the folder's files when they say enough (no model loaded:
    the first page paints before torch and transformers are imported), else loaded.
    Device, dtype and a release's casing are the sidebar's (app.shell.selection.Selection.card
    passes them); the card says where the casing came from."""
    from albert_lab.card import model_card
    from albert_lab.checkpoint.release import with_casing

    described = summary(source, name)
    if described is None:
        return model_card(load_bundle(source, name, device, dtype, casing))
    card = model_card(described, device=device_name(device), dtype=dtype)
    return with_casing(card, casing, casing and SIDEBAR_CASING.format(casing=casing))


# ---- devices and threads (torch is imported only when a page computes) -------------------------
def device_options() -> list[str]:
    """What the sidebar offers: 'auto', then the devices torch can use. A CPU-only torch
    says so in its build files, so the first page does not wait for torch to import."""
    known = known_devices()
    if known is None:
        from albert_lab.devices import available_devices

        known = available_devices()
    return ["auto", *known]


def device_name(choice: str) -> str:
    """The device 'auto' (or the choice) stands for: 'cpu', 'cuda', 'mps'."""
    known = known_devices()
    if known is not None and choice in ("auto", *known):
        return known[0] if choice == "auto" else choice
    from albert_lab.devices import resolve_device

    return str(resolve_device(choice))


VISITING = 300.0  # seconds after a browser session's last script run that it still counts as here
_SEEN: dict[str, float] = {}  # browser session -> when its script last ran (monotonic), with _SEEN_LOCK
_SEEN_LOCK = threading.Lock()


def visitors() -> int:
    """Browser sessions whose script ran in the last VISITING seconds, this one counted (main.py
    marks each run through use_threads)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    now = time.monotonic()
    with _SEEN_LOCK:
        if ctx is not None:
            _SEEN[ctx.session_id] = now
        for session, seen in list(_SEEN.items()):
            if now - seen > VISITING:
                del _SEEN[session]
        return max(len(_SEEN), 1)


def use_threads(wait: bool = True) -> None:
    """While a training run uses the cores, the app computes on one thread (see the notes on
    2-vCPU machines in the reference); while other visitors are here, on all cores but one, which
    their pages and typed pairs keep (a long computation on every core took their share: at 20
    visitors on 2 cores, see docs/benchmarks.md); alone, on all of them. With wait=False (every
    script run) only if torch is imported already: a page that has not needed torch does not
    import it, nor wait for the background import (load_bundle calls this before computing)."""
    cores = max(1, os.cpu_count() or 1)
    threads = 1 if active_run() else max(1, cores - 1) if visitors() > 1 else cores
    torch = sys.modules.get("torch")
    # A module another thread is still importing is in sys.modules, its spec marked _initializing.
    if not wait and (torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", False)):
        return
    if wait:
        import_model_code()  # never beside the warm-up's import
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def warm_up() -> None:
    """Import torch's and transformers' model code in the background, once per server
    process, after the first page has been drawn: the next page that loads a model
    does not wait for ~3 s of imports."""
    global _WARMING
    if _WARMING is None:  # a second's delay: imports hold the GIL, and the page is still being sent
        _WARMING = threading.Timer(1.0, import_in_background)
        _WARMING.name, _WARMING.daemon = "albert-lab-warm-up", True
        _WARMING.start()


_WARMING: threading.Timer | None = None


def load_bundle(source: str, name: str | None, device: str, dtype: str, casing: str | None = None) -> ModelBundle:
    """Cached per (checkpoint, its file stamp, device, dtype, casing); app.shell.selection.Selection passes
    the sidebar's device and dtype, and the casing given in the sidebar for a release (None: its own)."""
    use_threads()
    return _load(source, device, dtype, name, stamp(source), casing)


UNREADABLE = 0.2  # share of a text's pieces unknown to the vocabulary above which what a model does with it says little


def warn_unreadable(texts: Sequence[str]) -> None:
    """Warn about typed texts the picked models will not read as typed: mostly pieces
    unknown to a vocabulary (Chinese or emoji for an English SentencePiece: each becomes
    one unknown piece; each picked model's vocabulary is asked, not only the first's),
    longer than the MAX_LEN tokens the analyses read (the rest was cut without a word;
    counted by the first model's pieces), or holding special tokens ("[SEP]" typed is a
    separator)."""
    from albert_lab.analysis.pairs import unknown_shares
    from albert_lab.data.corpus import MAX_LEN
    device, dtype = widget("device", "auto"), widget("dtype", "float32")  # the sidebar's, as Selection.read reads them
    casings = shell().casings
    tokenizers = {name: load_bundle(source, name, device, dtype, casings.get(name)).tokenizer for name, source in shell().selected}
    pieces = {name: [tokenizer(text)["input_ids"] for text in texts] for name, tokenizer in tokenizers.items()}
    unreadable = []
    for name, tokenizer in tokenizers.items():
        (share,) = unknown_shares([[i for row in pieces[name] for i in row]], tokenizer)
        if share >= UNREADABLE:
            unreadable.append(f"{name} ({share:.0%} of them)")
    if unreadable:
        st.warning(f"Many of this text's pieces are unknown to the vocabulary, learned from English text, of "
                   f"{', '.join(unreadable)}: what {'that model does' if len(unreadable) == 1 else 'those models do'} "
                   "with it says little.", icon=":material/translate:")
    name, ids = next(iter(pieces.items()))
    long = [(i, len(row)) for i, row in enumerate(ids, 1) if len(row) > MAX_LEN]
    if long:
        which = "; ".join(f"text {i}: {n:,}" for i, n in long[:5]) + (" ..." if len(long) > 5 else "")
        st.warning(f"The models read the first {MAX_LEN} tokens of each text, and {plural(len(long), 'text')} "
                   f"{'is' if len(long) == 1 else 'are'} longer ({which} tokens for {name}): the rest is not looked at. "
                   "Separate texts with a blank line to have all of it read.", icon=":material/content_cut:")
    warn_special_tokens(texts, tokenizers)


def warn_special_tokens(texts: Sequence[str], tokenizers: dict[str, Any]) -> None:
    """Say so when typed text holds special tokens, and which models read them as such (a
    typed [PAD] is padding to a WordPiece model, four ordinary pieces to a SentencePiece one)."""
    readers: dict[str, list[str]] = {}
    for name, tokenizer in tokenizers.items():
        for token in tokenizer.all_special_tokens:
            if any(token in text for text in texts):
                readers.setdefault(token, []).append(name)
    if readers:
        said = "; ".join(f"{token} (by {', '.join(names)})" for token, names in sorted(readers.items()))
        st.warning(f"Typed in the text and read as special tokens, not as words: {said}. A [SEP] separates segments, "
                   "[PAD] is padding, [MASK] a masked token.", icon=":material/code:")


def need_checkpoints(minimum: int = 1) -> bool:
    if len(shell().selected) < minimum:
        st.info("Pick a checkpoint in the sidebar (shipped ones are listed under 'Compare').", icon=":material/info:")
        return False
    return True


def active_run() -> bool:
    from albert_lab.training.runs import list_runs

    return any(r.active for r in list_runs(runs_dir()))


# ---- drawing -------------------------------------------------------------------------------
def paper_note(text: str, source: str = "the paper") -> None:
    """What the literature says beside a view, and which literature ('the lecture notes', ...)."""
    st.markdown(f":material/menu_book: **From {source}.** {text}")


def download(frame: pd.DataFrame, name: str, label: str = "Download the data (CSV)") -> None:
    """The frame as CSV, written when the button is clicked (Streamlit's deferred download): written
    on every script run, it was encoded for every visitor on every click, and kept as a file the
    browser checked for and could find already replaced by the next run (a 404 in the console)."""
    st.download_button(label, lambda: frame.to_csv(index=False).encode(), file_name=name, mime="text/csv",
                       key=f"download-{name}", on_click="ignore")


def read_upload(uploaded) -> bytes:
    """Bytes of an uploaded file, refusing files over the size cap."""
    data = uploaded.getvalue()
    check_size(len(data), uploaded.name)  # the one limit, MAX_UPLOAD_BYTES; the uploaders are given it too
    return data


def chart(fig, name: str, key: str | None = None, container=None, share: float = 1.0) -> None:
    """A plotly figure, full width of its container, whose camera icon saves PNG or SVG as
    `name`; `share`: how much of the main column the container is (its title is wrapped to fit)."""
    config = look.chart_config(name, widget("image_format", "png"))
    with _DRAWING:  # a figure may be every visitor's (app.shell.built): wrapped by one while no other reads it
        look.wrap_title(fig, look.title_chars(share))  # in place, and again harmless: a wrapped title fits
        (container or st).plotly_chart(fig, width="stretch", config=config, key=key)


_DRAWING = threading.Lock()  # charts drawn one at a time (the GIL ran them one at a time anyway)


# ---- progress --------------------------------------------------------------------------------
_SECONDS: dict[str, float] = {}  # what a kind of work took per unit last time, this process


def estimate(kind: str, units: float, guess_per_unit: float) -> float:
    return _SECONDS.get(kind, guess_per_unit) * units


def measured(kind: str) -> bool:
    """Whether `estimate` answers from this process's own timing rather than the guess."""
    return kind in _SECONDS


def learn(kind: str, seconds: float, units: float) -> None:
    if units > 0:
        _SECONDS[kind] = seconds / units
