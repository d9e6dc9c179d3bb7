"""The checkpoints a page works on: the sidebar's list, a checkpoint's card (from its files when
they say enough, so the first page paints before torch is imported) and its loaded model, each
cached on everything that changes it (its file stamp, device, dtype, casing); what the device
'auto' is; the model code imported in the background after the first page."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import streamlit as st

from albert_lab.checkpoint.discover import CheckpointSummary, discover_checkpoints, summarize_checkpoint
from albert_lab.checkpoint.files import is_local_source, stamp
from albert_lab.torch_build import known_devices
from app.shell.pace import use_threads
from app.shell.serve import import_in_background, import_model_code
from app.shell.state import shell

if TYPE_CHECKING:
    from albert_lab.checkpoint.load import ModelBundle

__all__ = ["import_model_code"]  # the pages' import of the model code, as the server's warm-up does it


@st.cache_data(ttl=5, show_spinner=False)
def available_checkpoints() -> list[dict[str, Any]]:
    return [{"name": c.name, "path": str(c.path), "origin": c.origin, "family": c.family, "label": c.label,
             "objective": c.objective, "uptrained": c.uptrained, "title": c.card.get("name") if c.origin == "run" else None}
            for c in discover_checkpoints()]


SIDEBAR_CASING = "{casing} given in the sidebar"  # where a release's casing came from, in its card


@st.cache_resource(max_entries=8, show_spinner="Loading checkpoint ...")
def _load(source: str, device: str, dtype: str, name: str | None, stamp: float, casing: str | None) -> ModelBundle:
    from albert_lab.checkpoint.load import load_checkpoint

    return load_checkpoint(source, device=device, dtype=dtype, name=name, casing=casing,
                           casing_given=casing and SIDEBAR_CASING.format(casing=casing))


SUMMARIES = 32  # checkpoints' summaries kept, the least recently read first out
_SUMMARIES: OrderedDict[tuple[str, str | None, float], CheckpointSummary | None] = OrderedDict()
_SUMMARIES_LOCK = threading.Lock()


def summary(source: str, name: str | None) -> CheckpointSummary | None:
    """What a local checkpoint's files say (no model loaded); None for hub ids and folders
    only loading can tell. Raises CheckpointError for a folder that cannot load. Kept per
    (source, name, the files' stamp) and shared, read-only, by every visitor: the sidebar reads
    each pick's on every script run, and st.cache_data unpickled a copy each time (4% of the
    time the pages' scripts held the GIL with 20 visitors, py-spy --gil)."""
    if not is_local_source(source):
        return None
    key = (source, name, stamp(source))
    with _SUMMARIES_LOCK:
        if key in _SUMMARIES:
            _SUMMARIES.move_to_end(key)
            return _SUMMARIES[key]
    found = summarize_checkpoint(source, name)  # an error is raised each time, as the files say
    with _SUMMARIES_LOCK:
        _SUMMARIES[key] = found
        while len(_SUMMARIES) > SUMMARIES:
            _SUMMARIES.popitem(last=False)
    return found


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


def need_checkpoints(minimum: int = 1) -> bool:
    if len(shell().selected) < minimum:
        st.info("Pick a checkpoint in the sidebar (shipped ones are listed under 'Compare').", icon=":material/info:")
        return False
    return True
