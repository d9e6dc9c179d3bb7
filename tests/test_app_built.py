"""Figures built once for every visitor (app/shell/built.py): twenty visitors of a page drew
twenty builds of the same figures from the same kept results, most of what the pages' scripts did
with the GIL held during benchmarks/bench_class.py."""

import copy
import threading

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io
import pytest
from conftest import CEILING, charts, goto, start

from albert_lab.figures import sentence_pairs
from albert_lab.figures.look import APP, DARK, LIGHT, Theme
from app.shell import built, draw
from app.shell.built import built_once, fingerprint


def frame(**changes) -> pd.DataFrame:
    data = {"checkpoint": ["a", "a", "b"], "layer": [1, 2, 1], "l2": [0.5, 0.25, 0.75]}
    data.update(changes)
    return pd.DataFrame(data)


def counted():
    calls = []

    @built_once
    def figure(data: pd.DataFrame, title: str, *, height: int = 400) -> dict:
        calls.append(title)
        return {"title": title, "rows": len(data)}

    return figure, calls


def test_equal_inputs_give_the_one_figure_built_and_others_a_new_one():
    figure, calls = counted()
    first = figure(frame(), "t")
    assert figure(frame(), "t") is first and figure(frame().copy(), "t") is first and len(calls) == 1
    for other in (figure(frame(l2=[0.5, 0.25, 0.7]), "t"), figure(frame(), "u"), figure(frame(), "t", height=300)):
        assert other is not first
    assert len(calls) == 4


def test_fingerprints_tell_apart_what_a_figure_could_show_differently():
    base = fingerprint(frame())
    assert fingerprint(frame()) == base
    different = [frame(l2=[0.5, 0.25, 0.7500001]), frame().rename(columns={"l2": "angle"}), frame(layer=[1.0, 2.0, 1.0]),
                 frame().set_axis([5, 6, 7]), frame()[["layer", "checkpoint", "l2"]], frame().iloc[:2],
                 frame(checkpoint=["a", "b", "b"])]
    prints = [fingerprint(f) for f in different]
    assert base not in prints and len(set(prints)) == len(prints)
    assert fingerprint(np.arange(4)) != fingerprint(np.arange(4).reshape(2, 2)) != fingerprint(np.arange(4.0))
    assert fingerprint((1, "1")) != fingerprint(("1", 1)) and fingerprint(True) != fingerprint(1)
    assert fingerprint(LIGHT) != fingerprint(APP) != fingerprint(DARK) and fingerprint(Theme()) == fingerprint(APP)


def test_inputs_it_cannot_fingerprint_build_afresh():
    figure, calls = counted()
    unpicklable = pd.DataFrame({"lock": [threading.Lock(), None]})
    with pytest.raises(built._Unknown):
        fingerprint(unpicklable)
    figure(unpicklable, "t"), figure(unpicklable, "t"), figure(frame(), object())
    assert len(calls) == 3
    pieces = pd.DataFrame({"pieces": [[1, 2], [3]]})  # cells pandas cannot hash: told apart by their pickle
    assert fingerprint(pieces) == fingerprint(pieces.copy(deep=True)) != fingerprint(pd.DataFrame({"pieces": [[1, 2], [4]]}))


def test_many_visitors_at_once_share_one_figure():
    figure, calls = counted()
    got, gate = [], threading.Barrier(8)

    def visitor():
        gate.wait()
        got.append(figure(frame(), "t"))

    threads = [threading.Thread(target=visitor) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(CEILING)
    assert len(got) == 8 and len({id(f) for f in got}) == 1  # those who built at once keep the first one kept
    assert 1 <= len(calls) <= 8


LINK = '<a href="javascript:alert(1)">c</a>'  # a visitor's text that plotly would draw as a live link
ESCAPED = '&lt;a href="javascript:alert(1)">c&lt;/a>'


@built_once
def raw_figure(title: str) -> go.Figure:
    """A shared figure no library function escaped: draw.chart escapes it itself."""
    return go.Figure(go.Bar(x=[LINK, "b"], y=[1, 2], name=LINK), layout=dict(title=dict(text=title)))


def test_a_shared_figure_is_fitted_once_per_width_and_what_is_sent_of_it_never_changes():
    title = f"A long title of many words that a phone's column cannot hold on one line {LINK}"
    fig = raw_figure(title)
    assert built.is_shared(fig) and not built.is_shared(go.Figure())
    wide = draw._fitted(fig, 1.0)
    sent = wide.to_dict()
    before = copy.deepcopy(sent)
    assert sent["data"][0]["name"] == ESCAPED and sent["data"][0]["x"] == [ESCAPED, "b"] and LINK not in str(sent)
    assert draw._fitted(raw_figure(title), 1.0) is wide  # a second visitor: the dict made for the first
    narrow = draw._fitted(fig, 0.3)  # another width: fitted again, a dict of its own
    assert narrow is not wide and draw._fitted(fig, 0.3) is narrow
    lines = [s.to_dict()["layout"]["title"]["text"].count("<br>") for s in (wide, narrow)]
    assert lines[1] > lines[0] >= 1 and LINK not in str(narrow.to_dict())
    plotly.io.to_json(wide, validate=False)  # what st.plotly_chart does with it, for every visitor
    assert wide.to_dict() == before  # read, never changed: not by the narrower fitting either
    own = go.Figure(go.Bar(x=[LINK], y=[1]))  # this run's own figure: escaped in place, sent as it is
    assert draw._fitted(own, 1.0) is own and own.data[0].x == (ESCAPED,)


def test_what_is_sent_of_a_shared_figure_is_keyed_on_its_inputs_and_theme():
    figures = built.shared(sentence_pairs)
    scores = pd.DataFrame({"checkpoint": [LINK, "bert-nsp"], "head": ["sop", "nsp"], "p_ab": [0.61, 0.93], "p_ba": [0.42, 0.95]})
    app_theme, light = figures.pair_figure(scores), figures.pair_figure(scores, theme=LIGHT)
    other = figures.pair_figure(scores.assign(p_ab=[0.6, 0.93]))
    assert figures.pair_figure(scores.copy()) is app_theme and len({id(app_theme), id(light), id(other)}) == 3
    sent = [draw._fitted(f, 1.0).to_dict() for f in (app_theme, light, other)]
    assert sent[0]["layout"]["template"] != sent[1]["layout"]["template"] == LIGHT_TEMPLATE()
    assert sent[2]["data"] != sent[0]["data"]
    assert all(LINK not in str(s) and ESCAPED in str(s) for s in sent)


def LIGHT_TEMPLATE() -> dict:
    return go.Figure(layout=dict(template=LIGHT.template)).to_dict()["layout"]["template"]


def as_json(value) -> str:
    """`value`'s JSON as plotly writes it (numpy arrays and all), without changing it."""
    return plotly.io.json.to_json_plotly(value)


def kept_figures() -> list[go.Figure]:
    """Every figure built once for every visitor (a builder returns one, or a tuple or dict of them)."""
    found: list[go.Figure] = []
    for value in built._BUILT.values():
        found.extend(value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value])
    return [f for f in found if built.is_shared(f)]


def test_a_second_visitor_of_a_page_is_drawn_the_figures_the_first_was_built(app):
    first = goto(app, "oscillation")
    specs = [c.proto.spec for c in charts(first)]
    kept = set(built._BUILT)
    assert len(kept) >= 3  # the L2 and angle panels, the roughness bars: kept as built
    figures = kept_figures()
    sent = {id(f): dict(f.__dict__.get("_sent", {})) for f in figures}
    assert sum(map(len, sent.values())) >= 3  # each drawn figure's dict, made once for its width
    copies = {i: {share: as_json(s.to_dict()) for share, s in by.items()} for i, by in sent.items()}
    built_as = [as_json(f.to_plotly_json()) for f in figures]
    second = start("oscillation")  # another session: kept results, and now kept figures
    assert not second.exception
    assert [c.proto.spec for c in charts(second)] == specs and len(specs) >= 3
    assert set(built._BUILT) == kept  # nothing built anew
    assert {id(f): f.__dict__.get("_sent", {}) for f in figures} == sent  # the same dicts sent, none made anew
    assert {i: {share: as_json(s.to_dict()) for share, s in by.items()} for i, by in sent.items()} == copies  # nor changed
    assert [as_json(f.to_plotly_json()) for f in figures] == built_as  # the second visitor's script changed no shared figure
