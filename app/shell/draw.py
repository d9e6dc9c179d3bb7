"""What pages draw alike: a chart (its export named, its title wrapped to its column), a CSV
download, a note of what the literature says, an upload read within its cap, and the warnings
about typed text the picked models will not read as typed. Pages stay thin: read widgets, call
one library function, draw."""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from albert_lab.data import csvfile
from albert_lab.data.textfile import check_size
from albert_lab.figures.look import text_only
from app.shell import built, look
from app.shell.loading import load_bundle
from app.shell.state import shell, widget
from app.shell.text import plain, plural

# An emoji favicon is drawn inline by the browser; a ":material/...:" one is fetched
# from fonts.gstatic.com on every page load.
PAGE_ICON = "\U0001F9EA"  # test tube


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
        said = "; ".join(f"{token} (by {plain(', '.join(names))})" for token, names in sorted(readers.items()))
        st.warning(f"Typed in the text and read as special tokens, not as words: {said}. A [SEP] separates segments, "
                   "[PAD] is padding, [MASK] a masked token.", icon=":material/code:")


def paper_note(text: str, source: str = "the paper") -> None:
    """What the literature says beside a view, and which literature ('the lecture notes', ...)."""
    st.markdown(f":material/menu_book: **From {source}.** {text}")


def download(frame: pd.DataFrame, name: str, label: str = "Download the data (CSV)") -> None:
    """The frame as CSV, written when the button is clicked (Streamlit's deferred download): written
    on every script run, it was encoded for every visitor on every click, and kept as a file the
    browser checked for and could find already replaced by the next run (a 404 in the console). Text a
    spreadsheet would run as a formula is written with a leading ' (csvfile.to_csv)."""
    st.download_button(label, lambda: csvfile.to_csv(frame).encode(), file_name=file_name(name), mime="text/csv",
                       key=f"download-{name}", on_click="ignore")


MAX_FILE_NAME = 120


def file_name(name: str) -> str:
    """A download's name safe on any disk: its stem's ASCII letters, digits, dots and underscores, runs of anything
    else (a visitor's column or run name: quotes, bars, slashes, spaces) one '-', no leading dot, bounded."""
    stem, suffix = os.path.splitext(name)
    stem = "-".join(re.findall(r"[A-Za-z0-9._]+", stem)).lstrip(".-")[:MAX_FILE_NAME] or "data"
    return stem + "".join(re.findall(r"\.?[A-Za-z0-9]+", suffix))[:9]


def read_upload(uploaded) -> bytes:
    """Bytes of an uploaded file, refusing files over the size cap."""
    data = uploaded.getvalue()
    check_size(len(data), uploaded.name)  # the one limit, MAX_UPLOAD_BYTES; the uploaders are given it too
    return data


def chart(fig, name: str, key: str | None = None, container=None, share: float = 1.0) -> None:
    """A plotly figure, full width of its container, whose camera icon saves PNG or SVG as
    `name`; `share`: how much of the main column the container is (its title is wrapped to fit it, and a phone)."""
    config = look.chart_config(file_name(name), widget("image_format", "png"))  # a column's name may be in it
    (container or st).plotly_chart(_fitted(fig, share), width="stretch", config=config, key=key)


def _fitted(fig, share: float):
    """`fig` with a visitor's text in it drawn as text (no live link), its title wrapped and its legend given room
    for `share` of the main column. A figure built once for every visitor (app.shell.built) is fitted once per
    share, and what Streamlit sends of it (plotly's dict of it) made then: plotly's to_dict copies every trace and
    converts its arrays to base64 each time it is asked, 8 ms for seven lines of 24 points, where the JSON of the
    dict takes 0.6 ms; with a class of 50, drawing charts was a fifth of the time the pages' scripts held the GIL
    (py-spy --gil, 20 visitors). The figure is built for its inputs and theme (built_once's key), so the dict is
    keyed on all that changes it: inputs, theme and share."""
    if not built.is_shared(fig):  # this run's own figure: nobody else reads it
        _fit(fig, share)
        return fig
    with _DRAWING:  # fitted by one visitor while no other reads it
        sent = fig.__dict__.setdefault("_sent", {})
        if share not in sent:
            _fit(fig, share)  # in place, and again harmless at another share: a wrapped title fits
            sent[share] = _as_sent(fig.to_dict())
        return sent[share]


def _fit(fig, share: float) -> None:
    """`fig`, in place: a visitor's names, tokens and columns drawn as text (idempotent; the library did it too), the
    title wrapped to `share` of the main column and a phone, room for the legend's rows."""
    text_only(fig)
    look.wrap_title(fig, look.fitting_chars(share))
    look.fit_legend(fig, share)


def _as_sent(as_dict: dict[str, Any]):
    """A figure whose to_dict() is `as_dict` itself, which Streamlit only reads, to make its JSON: what
    plotly_chart accepts, without copying the figure again. The traces' uids, which plotly's to_json removes
    from the dict it is given, are removed here, once: visitors' threads read it at once."""
    for trace in as_dict.get("data", []):
        trace.pop("uid", None)
    figure = _sent_class()()  # empty: nothing validated again
    figure._as_dict = as_dict
    return figure


@functools.cache
def _sent_class() -> type:
    import plotly.graph_objects as go  # loaded before the first page (app.shell.serve); the card draws no plotly

    class Sent(go.Figure):
        def to_dict(self) -> dict[str, Any]:
            return self._as_dict

    return Sent


_DRAWING = threading.Lock()  # shared figures fitted one at a time
