"""The page's state in its link: `from_url` gives a widget the link's value before it is
drawn, `share` writes the page's inputs (and the picked checkpoints) back, so an
address reproduces the view. A page declares its controls once (`Control`: widget key,
default, name in the link, how a link's text is read) and gets all three from `Controls`; a control of an
option row comes from the row (app/shell/rows.py). A link names a control by its key (`key("depth")`,
dl_depth), so a page never types a link's name: `Controls.share` takes the options' own names."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from albert_lab.fields import ascii_float, ascii_int
from app.shell.state import has_widget, set_widget, shell, widget

URL_TEXT_LIMIT = 1500  # characters of typed text that go into a shareable link


def from_url(key: str, default: Any, parse: Callable[[str], Any] = str, param: str | None = None,
             options: Sequence[Any] | None = None) -> bool:
    """Give widget `key` its value before it is drawn: from the link (?param=...) when
    the link carries a value not yet applied in this session (a shared link, a preset),
    else the default on the first run. Bad values in a link are ignored. True when the
    link's value was given now."""
    param = param or key
    applied = shell().url_applied
    raw = st.query_params.get(param)
    if raw is not None and applied.get(param) != raw:
        applied[param] = raw
        try:
            value = parse(raw)
        except (TypeError, ValueError):
            value = None
        if value is not None and (options is None or value in options):
            set_widget(key, value)
            return True
    if not has_widget(key):
        set_widget(key, default)
    return False


def keep() -> None:
    """Every run, before the page: each restored control's value set again as the session's own.
    Streamlit forgets a widget's value after a run that does not draw it (a page draws no controls
    while no checkpoint is picked, a text area is hidden behind 'Built-in sample'): a teacher's typed
    text went back to the default once the sidebar's list was cleared and picked again."""
    for key in shell().kept_controls:
        if has_widget(key):
            set_widget(key, widget(key))


def share(**params: Any) -> None:
    """This page's inputs for the link (replacing other pages' ones), checkpoints included, so
    the address reproduces the view. A page that shares twice in one run (a form and a tab's
    controls) gets both into the link; `publish` writes it after the page, so a control read
    after an earlier `share` still finds the link's value (a Training link's runs were wiped
    by the form's share before Compare runs read them)."""
    from app.shell.selection import Selection

    earlier = shell().shared_now if shell().shared else {}
    values = {**earlier, "ckpt": Selection.read().link()}
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, str) and len(value) > URL_TEXT_LIMIT:  # links stay short enough to paste anywhere
            st.caption(f"Texts over {URL_TEXT_LIMIT:,} characters are not put in the page's link.")
            continue
        values[name] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    # the link's values are this run's own once it is written (publish): a run stopped before that by the
    # visitor's next click wrote nothing, and the next run's link is still the old one, not a new link
    own = {name: values[name] for name in ("ckpt", *params) if name in values}
    shell().url_pending = {**(shell().url_pending if shell().shared else {}), **own}
    shell().shared, shell().shared_now = True, values


def carry(*names: str) -> None:
    """Link values of controls this run does not draw, kept in the link as they came and not yet applied:
    a link made on an upload's view (its slice, its filters) opens before the visitor uploads a file, and
    the view takes them once one is."""
    if not shell().shared:
        share()
    waiting = {name: raw for name in names if (raw := st.query_params.get(name)) is not None
               and shell().url_applied.get(name) != raw}
    shell().shared_now = {**shell().shared_now, **waiting}


def publish() -> None:
    """After the page: what it shared into the link (a page without inputs of its own still
    links the checkpoints picked)."""
    if not shell().shared:
        share()
    values = shell().shared_now
    shell().url_applied.update(shell().url_pending)
    if dict(st.query_params) != values:
        st.query_params.from_dict(values)


def parse_int(low: int, high: int, step: int = 1) -> Callable[[str], int | None]:
    """A link's integer in ASCII digits (fields.ascii_int), or None (ignored) when it is none, is outside
    [low, high] or off the widget's steps: a widget given such a value raises instead of drawing."""
    return lambda raw: value if (value := ascii_int(raw)) is not None and low <= value <= high \
        and (value - low) % step == 0 else None


def parse_float(low: float, high: float) -> Callable[[str], float | None]:
    """A link's number in ASCII (fields.ascii_float), or None (ignored) when it is none or is outside [low, high]."""
    return lambda raw: value if (value := ascii_float(raw)) is not None and low <= value <= high else None


def parse_bool(raw: str) -> bool | None:
    """A link's switch, as `share` writes it ("True", "False"), or None (ignored)."""
    return {"True": True, "False": False}.get(raw)


def parse_list(options: Sequence[str]) -> Callable[[str], list[str]]:
    return lambda raw: [v for v in raw.split(",") if v in options]


@dataclass(frozen=True)
class Control:
    """One control of a page, declared once: the widget's key, its default, its name in
    the link (the key unless given) and how the link's text becomes a value (with the
    values allowed; a value the widget would refuse is ignored)."""

    key: str
    default: Any
    parse: Callable[[str], Any] = str
    options: Sequence[Any] | None = None
    param: str | None = None  # the name in links made before the keys were derived (params_tab); None: the key
    option: str | None = None  # the option's name in its room; None: the key after the room's prefix

    @property
    def name(self) -> str:
        return self.param or self.key

    @property
    def short(self) -> str:
        """The option's name in its room ('depth' of dl_depth): what `Controls.share` is given."""
        return self.option or self.key.partition("_")[2]

    def restore(self) -> bool:
        """The value before the widget is drawn: the link's, else this session's, else the default.
        A session's value no longer among the options (a checkpoint unpicked) goes back to the default.
        From now on the value outlives runs that do not draw its widget (`keep`). True when the link's
        value was given now (a visitor opened a link)."""
        linked = from_url(self.key, self.default, self.parse, self.name, self.options)
        if self.options is not None and not isinstance(self.value, list) and self.value not in self.options:
            set_widget(self.key, self.default)
        shell().kept_controls.add(self.key)
        return linked

    @property
    def value(self) -> Any:
        return widget(self.key, self.default)


class Controls:
    """A page's controls: restored from the link before the widgets are drawn, read by key,
    and written back into the link after them."""

    def __init__(self, *controls: Control) -> None:
        self._controls = {c.key: c for c in controls}

    def __getitem__(self, key: str) -> Any:
        """The control's value."""
        return self._controls[key].value

    def __add__(self, other: Controls) -> Controls:
        return Controls(*self, *other)

    def __iter__(self) -> Iterator[Control]:
        return iter(self._controls.values())

    def restore(self) -> None:
        for control in self._controls.values():
            control.restore()

    def share(self, **overrides: Any) -> None:
        """Every control's value into the link; `overrides`, by the option's name in the room ('seed', never
        its link's name), replace a value in the link's form, and None leaves it out (an input the view does
        not use)."""
        by_option = {c.short: c for c in self._controls.values()}
        unknown = sorted(set(overrides) - set(by_option))
        assert not unknown, f"no such control: {unknown}"
        values = {c.name: c.value for c in self._controls.values()}
        share(**{**values, **{by_option[name].name: value for name, value in overrides.items()}})


def tabs(labels: Sequence[str], key: str) -> tuple[list, bool]:
    """A page's tabs, the open one in the link (a link made on a page's third tab opened on its
    first): restored before they are drawn, a click reruns the page so the link follows it. Every
    tab's body still runs unless it asks `tab.open`. Also whether the link's tab was given now."""
    control = Control(key, labels[0], options=list(labels))
    linked = control.restore()
    drawn = st.tabs(list(labels), key=key, on_change="rerun")
    share(**{control.name: control.value})
    return drawn, linked
