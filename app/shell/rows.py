"""Every control from its row: a room's options drawn from the library's option rows (an analysis record's
`AnalysisOption`, a training `Option`, a spec row, the Depth lab's nets), restored from a link and written
back into it. The row says what an option is (its type, bounds, choices, default, the command line's help);
a `Widget` says how a page shows it (its label, a slider or a box, the page's own narrower range). A room
declares its shown rows once, `Form(key, {"depth": (row, Widget("Hidden layers", kind="slider"))})`, and
gets from it the widget (`form.draw(where, "depth")`), its link's control (`form.controls()`: the name in
the link is the widget's key, `key("depth")`, or a `param` given for links made before keys were derived)
and how a link's text is read (from the row's type and the widget's range)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from albert_lab.fields import OptionRow, Range
from app.shell import links
from app.shell.state import has_widget, set_widget, widget

Kind = Literal["box", "radio", "slider", "select_slider", "multiselect", "text_area"]


@dataclass(frozen=True)
class Widget:
    """How a page shows an option row. A number box (or a slider) takes the row's bounds (an open low bound
    as the smallest number its format shows), or `low`/`high` where the page narrows them; the row's choices
    (or the page's own, `options`) are a select box, a radio, a select slider or a list to pick from."""

    label: str
    help: str | None = None
    default: Any = None  # the page's starting value where it is not the row's (a short run); None: the row's
    state: bool = False  # the page sets the value itself (from a preset, a link): the widget gets no starting value
    low: float | None = None  # the page's own range, inside the row's bounds
    off: float | None = None  # the number that stands for None, no limit (0 minutes)
    high: float | None = None
    step: float | None = None
    format: str | None = None
    radio: bool = False  # choices as a radio rather than a select box (kind="radio")
    placeholder: str | None = None
    kind: Kind = "box"
    options: tuple[Any, ...] | None = None  # the page's own choices, where the row has none (a list's values, a slider's stops)
    names: Callable[[Any], str] | None = None  # how a choice is shown (format_func)
    param: str | None = None  # the name in links made before keys were derived; None: the widget's key
    height: int | None = None  # a text area's

    def range(self, row: OptionRow) -> tuple[float | None, float | None]:
        """The number box of `row`: the page's own range where it narrows the row's, else the row's
        bounds (an open low bound: the smallest number the box's format shows above it)."""
        bounds = getattr(row, "bounds", None) or Range()
        low = next((v for v in (self.off, self.low) if v is not None), bounds.low)
        if self.off is None and self.low is None and bounds.open and low is not None:
            low += 1 if row.base is int else 10.0 ** -_decimals(self.format or "%.2f")  # Streamlit's float format
        high = self.high if self.high is not None else bounds.high
        return (row.base(low) if low is not None else None), (row.base(high) if high is not None else None)

    def choices(self, row: OptionRow) -> tuple[Any, ...] | None:
        return self.options if self.options is not None else row.choices


def _decimals(fmt: str) -> int:
    """The digits after the point a printf format shows ('%.4f' -> 4)."""
    return int(fmt.split(".")[1].rstrip("f")) if "." in fmt else 0


def parse(row: OptionRow, shown: Widget) -> Callable[[str], Any]:
    """How a link's text becomes the widget's value, or None (ignored) where the widget would refuse it."""
    choices = shown.choices(row)
    if shown.kind == "multiselect":
        return links.parse_list(list(choices or ()))
    if choices is not None:
        kinds = {type(c) for c in choices}
        return next(iter(kinds)) if len(kinds) == 1 and kinds <= {int, float} else str
    if row.base is bool:
        return links.parse_bool
    low, high = shown.range(row)
    if row.base is int:  # a slider refuses a value off its steps; a number box takes it
        return links.parse_int(int(low if low is not None else -2 ** 63), int(high if high is not None else 2 ** 63),
                               int(shown.step or 1) if shown.kind == "slider" else 1)
    if row.base is float:
        return links.parse_float(float(low if low is not None else "-inf"), float(high if high is not None else "inf"))
    return str


class Form:
    """A room's shown option rows, by the option's name in the room (the rest of its widget key: 'agg' of
    oscillation's aggregate is osc_agg). `linked` forms restore their values from the link before drawing
    (`controls().restore()`), so a widget gets no starting value of its own; others start at the row's default (or
    the widget's), and with `persist` keep their values after another page (the Training form)."""

    def __init__(self, key: Callable[..., str], shown: Mapping[str, tuple[OptionRow, Widget]], linked: bool = True,
                 persist: bool = False) -> None:
        self.key, self.shown, self.linked, self.persist = key, dict(shown), linked, persist

    def row(self, name: str) -> OptionRow:
        return self.shown[name][0]

    def widget(self, name: str) -> Widget:
        return self.shown[name][1]

    def default(self, name: str) -> Any:
        row, shown = self.shown[name]
        default = row.default if shown.default is None else shown.default
        return list(default) if shown.kind == "multiselect" else default  # a list to pick from holds a list

    def control(self, name: str, default: Any = None, *names: object) -> links.Control:
        """The link's control of `name` (`names` tell apart one widget a preset, its link name staying the option's)."""
        row, shown = self.shown[name]
        choices = shown.choices(row)
        options = None if choices is None or shown.kind == "multiselect" else list(choices)
        param = shown.param or (self.key(name) if names else None)
        return links.Control(self.key(name, *names), self.default(name) if default is None else default, parse(row, shown),
                             options=options, param=param, option=name)

    def controls(self, *names: str, defaults: Mapping[str, Any] | None = None) -> links.Controls:
        """The controls of `names` (every row shown, when none), their defaults the row's or `defaults`."""
        return links.Controls(*(self.control(n, (defaults or {}).get(n)) for n in names or self.shown))

    def draw(self, where: Any, name: str, *names: object, **given: Any) -> Any:
        """The widget of `name` in `where` (`st`, a column), its value read; `given`: what the page adds (choices it
        knows, `disabled`, `on_change`). A number box's `off` number is None."""
        row, shown = self.shown[name]
        widget_key = self.key(name, *names)
        args = {"key": widget_key, "help": shown.help, **given}
        if self.persist:
            args.setdefault("persist_state", "session")  # as left, after another page
        starts = not (self.linked or shown.state)  # a starting value of its own
        choices = list(args.pop("options", shown.choices(row) or ()))
        if shown.names is not None:
            args.setdefault("format_func", shown.names)
        if shown.kind == "multiselect":
            return where.multiselect(shown.label, choices, **args)
        if choices:
            return _choice(where, shown, widget_key, choices, self.default(name) if starts else None, args)
        if shown.kind == "text_area":
            return where.text_area(shown.label, height=shown.height, **args)
        if row.base is str:
            return where.text_input(shown.label, placeholder=shown.placeholder, **args)
        if starts:
            args.setdefault("value", self.default(name))
        low, high = shown.range(row)
        step = args.pop("step", shown.step)
        if shown.kind == "slider":
            return where.slider(shown.label, low, high, step=step, format=shown.format, **args)
        value = where.number_input(shown.label, low, high, step=step, format=shown.format, **args)
        return None if shown.off is not None and value == shown.off else row.base(value)


def _choice(where: Any, shown: Widget, widget_key: str, choices: list, start: Any, args: dict[str, Any]) -> Any:
    """A choice of `choices`: a select slider, a radio or a select box; `start` its starting value (None: the session's)."""
    if has_widget(widget_key) and widget(widget_key) not in choices:  # a checkpoint unpicked since
        set_widget(widget_key, start if start in choices else choices[0])
    if shown.kind == "select_slider":
        return where.select_slider(shown.label, choices, **({"value": start} if start in choices else {}), **args)
    if "index" not in args and start in choices:
        args["index"] = choices.index(start)
    if shown.radio or shown.kind == "radio":
        return where.radio(shown.label, choices, horizontal=True, **args)
    return where.selectbox(shown.label, choices, **args)
