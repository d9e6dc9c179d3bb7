"""The sidebar's checkpoint picker, shared by all pages: shipped checkpoints, finished runs
and folders or hub ids a user adds, in the link (?ckpt=a,b); device and precision."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import streamlit as st

from albert_lab.checkpoint.files import is_local_source
from albert_lab.errors import AlbertLabError
from albert_lab.figures.look import register_checkpoints
from albert_lab.paths import check_typed_path
from app.shell import loading, look
from app.shell.guard import guard, without_server_paths
from app.shell.links import from_url
from app.shell.loading import available_checkpoints, device_options
from app.shell.pace import active_run
from app.shell.places import cased_form, check_local_folder, link_form, split_casing, typed_folder
from app.shell.state import set_widget, shell, widget
from app.shell.text import plain

# As albert_lab.devices.fast_bf16 finds (training's auto precision times it): AVX512-BF16 alone is no speed-up.
MAX_LINK_CHECKPOINTS = 16  # checkpoints a link may name; each is checked (and maybe loaded) on opening it
CASINGS = {"release": "as the release says", "cased": "cased", "uncased": "uncased"}  # the 'Add' field's casing choice


def sidebar() -> None:
    """The model picker shared by all pages, plus device and dtype. The picked
    checkpoints travel in the link (?ckpt=a,b)."""
    found = available_checkpoints()
    by_name = {c["name"]: c for c in found}
    extra = shell().extra_sources
    options = list(by_name) + [n for n in extra if n not in by_name]
    shipped = look.shipped_first(found)  # the model card opens on a model whose heads all work
    register_checkpoints([c["name"] for c in shipped] + [c["name"] for c in found] + list(extra))
    default = [c["name"] for c in shipped][:4] or options[:1]
    if (pending := shell().pending_pick) is not None:  # set by "Add" on the previous run
        shell().pending_pick = None
        set_widget("picked", pending[0])
        st.toast(pending[1], icon=":material/check:")
    if new := _link_sources(options, extra):  # folders a shared link names, added by its sender
        options += new
    casings = shell().casings  # a link names an added folder by link_form, after its casing given in the sidebar
    names = {cased_form(link_form(source), casings.get(name)): name for name, source in extra.items()}
    from_url("picked", [n for n in default if n in options], param="ckpt",
             parse=lambda raw: [n for n in (names.get(e, e) for e in link_entries(raw)) if n in options][:MAX_LINK_CHECKPOINTS])
    set_widget("picked", [n for n in widget("picked") if n in options])
    shell().selected = [(n, by_name[n]["path"] if n in by_name else extra[n]) for n in widget("picked")]
    with st.sidebar:
        st.markdown("### Checkpoints")
        titles = {n: f"{c['title']} · {n}" for n, c in by_name.items() if c.get("title") and c["title"] != n.removeprefix("run:")}
        st.fragment(_pick)(options, titles)
        with st.expander("Add a folder or hub id"):
            text = st.text_input("Folder (inside checkpoints/ or runs/) or hub id", key="add_source")
            casing = st.selectbox("Casing", list(CASINGS), key="add_casing", format_func=CASINGS.get,
                                  help="For Google's original releases (a folder or archive): whether the tokenizer "
                                       "lower-cases the text. Other checkpoints' tokenizers carry their own casing.")
            if st.button("Add", key="add_button") and text.strip():
                with guard("adding"):
                    _add_source(text, extra, None if casing == "release" else casing)
        device = st.selectbox("Device", device_options(), key="device", help="CUDA, then MPS, then CPU when 'auto'")
        _big_models_note(shell().selected, device)
        st.selectbox("Precision", ["float32", "bfloat16"], key="dtype", on_change=_bf16_checked,
                     help="bfloat16 is faster only where the CPU runs it natively (AVX512-BF16/AMX), as measured once "
                          "on this machine; attributions always run in float32")
        if refused := shell().bf16_refused:
            shell().bf16_refused = None
            st.warning(f"{refused}: float32 it is.", icon=":material/speed:")
        elif widget("dtype") == "bfloat16" and (note := _bf16_verdict(device)[1]):
            st.caption(note)
        st.radio("Save figures as", ["png", "svg"], key="image_format", horizontal=True, format_func=str.upper,
                 help="The camera icon above each figure saves it in this format")
        # redrawn every 5 s while a run is active, so the note goes when the run ends (it stayed until the next click);
        # without a run, no fragment: the note has nothing to say until the next click, and a fragment costs each run
        if active_run():
            st.fragment(run_every=5)(_run_note)()
        st.caption("Wikipedia text: CC BY-SA 4.0 (Wikipedia contributors).")


def _pick(options: list[str], titles: dict[str, str]) -> None:
    """The picks, a fragment: each removal or addition reruns only this, and 'Apply' the page, once
    (swapping four picks for two reran the page's analysis six times). Any other rerun of the page
    applies them too."""
    picked = st.multiselect("Compare", options, key="picked", format_func=lambda n: titles.get(n, n),
                            help="Shipped checkpoints, finished training runs, and folders you add below. "
                                 "Pages that show one model use the first.")
    if picked != [name for name, _ in shell().selected] and st.button(
            "Apply", key="apply_picks", type="primary", icon=":material/check:",
            help=f"The page shows {', '.join(name for name, _ in shell().selected) or 'no checkpoint'} until then"):
        st.rerun()


BIG = 50  # times albert-sop's work per token past which an analysis on a CPU takes minutes (ALBERT-large: 64, xxlarge: 512)


def _big_models_note(selected: list[tuple[str, str]], device: str) -> None:
    """Say under the device when a picked model is one whose analyses take minutes on this CPU
    (Google's ALBERT-large to -xxlarge): each page still runs, with its progress and Stop."""
    if loading.device_name(device) != "cpu":
        return
    from albert_lab.spec import forward_cost  # the cost the pages' estimates are weighted by

    big = []
    for name, source in selected:
        try:
            described = loading.summary(source, name)
        except AlbertLabError:  # a folder that cannot load says so on the page that loads it
            continue
        if described is not None and (times := forward_cost(described.spec) / (256 ** 2 * 6)) >= BIG:
            spec = described.spec
            big.append(f"{name} (H = {spec.hidden_size:,}, L = {spec.num_layers}: about {times:,.3g} times albert-sop's work)")
    if big:
        st.caption(f":material/hourglass_top: On this CPU every analysis of {plain(', '.join(big))} takes minutes; each page shows "
                   "its progress and a Stop. A CUDA GPU takes seconds.")


def _run_note() -> None:
    if active_run():
        st.caption(":material/model_training: A training run is using the CPU; analyses here run on one thread.")


def _link_sources(options: list[str], extra: dict[str, str]) -> list[str]:
    """A link not yet applied in this session may name folders or hub ids (what its
    sender added in the sidebar): each is checked as if typed into 'Add', and offered;
    one that cannot be opened here is named in a warning, never dropped in silence."""
    raw = st.query_params.get("ckpt")
    if raw is None or shell().url_applied.get("ckpt") == raw:
        return []
    added: list[str] = []
    entries = [e for e in dict.fromkeys(e.strip() for e in link_entries(raw)) if e]
    if len(entries) > MAX_LINK_CHECKPOINTS:
        st.warning(f"This link names {len(entries):,} checkpoints; the first {MAX_LINK_CHECKPOINTS} are opened, the "
                   "others left out.", icon=":material/link_off:")
        entries = entries[:MAX_LINK_CHECKPOINTS]
    for entry in entries:
        if entry in options or entry in extra.values():
            continue
        try:
            added.append(_offer_from_link(entry, extra))
        except AlbertLabError as err:
            shown = repr(entry if len(entry) <= 60 else entry[:60] + "...")
            st.warning(f"This link names the checkpoint {plain(shown)}, which is left out: "
                       f"{plain(without_server_paths(str(err)))}", icon=":material/link_off:")
    return [name for name in added if name not in options]


def link_entries(raw: str) -> list[str]:
    """The names and folders a link's ?ckpt= carries (Selection.link escapes a comma or '%' in a folder's path)."""
    return [unquote(entry) for entry in raw.split(",")]


def _offer_from_link(entry: str, extra: dict[str, str]) -> str:
    from albert_lab.checkpoint.archive import is_archive, is_unpacked
    from albert_lab.checkpoint.discover import summarize_checkpoint

    if entry.startswith("run:"):
        raise AlbertLabError("no training run of that name has a checkpoint on this machine")
    loading.import_model_code()  # it may load the checkpoint: never beside the warm-up's import
    entry, casing = split_casing(check_typed_path(entry))
    local = (folder := typed_folder(entry)) or is_local_source(entry)
    if casing is not None and not local:
        raise AlbertLabError("Casing applies to Google's original releases; a hub checkpoint's tokenizer carries its own")
    if not local:
        from albert_lab.checkpoint.load import hub_reachable

        if not hub_reachable():
            raise AlbertLabError("it looks like a hub id, and the model hub is unreachable from this machine (offline)")
        name, source = entry, entry
    else:
        source = check_local_folder(folder or entry)
        if (known := listed_as(source, casing)) is not None:
            return known
        if is_archive(Path(source)) and not is_unpacked(Path(source)):  # gigabytes unpacked by opening a link: no
            raise AlbertLabError("it is a release archive not unpacked on this machine yet; add it with 'Add a folder "
                                 "or hub id' in the sidebar (unpacking it takes a while), or give the unpacked folder")
        if casing is not None:
            _check_release(entry, source, local)
        summary = summarize_checkpoint(source)  # the folder checked from its files, no model loaded
        if summary is None:
            from albert_lab.checkpoint.load import load_checkpoint

            name = load_checkpoint(source, device="cpu", casing=casing).name
        else:
            name = summary.name
        name += f"-{casing}" if casing else ""
    base, k = name, 2
    while name in _listed():
        name, k = f"{base}-{k}", k + 1
    extra[name] = source
    if casing is not None:
        shell().casings[name] = casing
    return name


def _add_source(text: str, extra: dict[str, str], casing: str | None = None) -> None:
    """Add what was typed into 'Add'; `casing` ('cased', 'uncased'; None: the release's own) is
    kept with it, for Google's original releases only (one line refuses it for any other)."""
    text = check_typed_path(text)  # a NUL byte, 5,000 characters: a message; ~ is check_local_folder's
    loading.import_model_code()  # it loads the checkpoint: never beside the warm-up's import (the sidebar draws before it)
    from albert_lab.checkpoint.load import hub_reachable, load_checkpoint

    local = (folder := typed_folder(text)) or is_local_source(text)
    source = check_local_folder(folder or text) if local else text
    if casing is not None:
        _check_release(text, source, local)
    if (known := listed_as(source, casing)) is None:  # a listed one is picked as it is, without loading it again
        if not local and not hub_reachable():
            raise AlbertLabError(f"{text!r} looks like a hub id, but the model hub is unreachable (offline)")
        bundle = load_checkpoint(source, device="cpu", casing=casing,  # validates now, with a clear message
                                 casing_given=casing and loading.SIDEBAR_CASING.format(casing=casing))
        known = (bundle.name if local else text) + (f"-{casing}" if casing else "")
    add_checkpoint(known, source, casing)


def _check_release(text: str, source: str, local: bool) -> None:
    """Refuse a casing for anything but one of Google's original releases, as --cased/--uncased are."""
    from albert_lab.checkpoint.loadable import make_loadable
    from albert_lab.tokenizer import release_tokenization

    if not local or release_tokenization(make_loadable(Path(source))) is None:
        raise AlbertLabError(f"{text!r}: Casing applies to Google's original releases; this checkpoint's tokenizer "
                             "carries its own casing (add it with 'as the release says')")


def _listed() -> dict[str, str]:
    """Name -> source of every checkpoint the picker offers."""
    return {**{c["name"]: c["path"] for c in available_checkpoints()}, **shell().extra_sources}


def listed_as(source: str, casing: str | None = None) -> str | None:
    """The name under which `source` (a folder or a hub id) is already offered, if it is, with
    the casing given in the sidebar (None: the release's own)."""
    casings = shell().casings
    return next((name for name, listed in _listed().items() if _same_source(listed, source) and casings.get(name) == casing),
                None)


def _same_source(a: str, b: str) -> bool:
    return a == b or (is_local_source(a) and is_local_source(b) and Path(a).resolve() == Path(b).resolve())


def add_checkpoint(name: str, source: str, casing: str | None = None) -> None:
    """Offer a checkpoint in the sidebar and pick it (from the next run on: the
    multiselect is already drawn in this one), then rerun. A folder already listed (with
    the same casing) is picked under its listed name; another folder whose name is taken
    gets 'name-2': two entries of one name would merge their rows in every analysis.
    `casing` (a release's, given in the sidebar) is kept with the name (Shell.casings)."""
    extra = shell().extra_sources
    listed = _listed()
    if known := listed_as(source, casing):
        name, note = known, f"{known} is already listed; it is picked."
    else:
        base, k = name, 2
        while name in listed:
            name, k = f"{base}-{k}", k + 1
        extra[name], note = source, f"Added {name}."
        if casing is not None:
            shell().casings[name] = casing
    picked = widget("picked", [])
    shell().pending_pick = (picked if name in picked else [*picked, name], note)
    st.rerun()


def _bf16_verdict(device: str) -> tuple[bool, str | None]:
    """devices.bf16_verdict for the sidebar's device (measured once per machine); torch is
    imported only once bfloat16 is picked, never beside the warm-up's import."""
    loading.import_model_code()
    from albert_lab.devices import bf16_verdict, resolve_device

    return bf16_verdict(resolve_device(loading.device_name(device)))


def _bf16_checked() -> None:
    """Precision's on_change: bfloat16 where it is too slow to use here goes back to float32, saying why."""
    if widget("dtype") == "bfloat16":
        usable, note = _bf16_verdict(widget("device", "auto"))
        if not usable:
            set_widget("dtype", "float32")
            shell().bf16_refused = note
