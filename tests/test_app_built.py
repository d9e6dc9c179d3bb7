"""Figures built once for every visitor (app/shell/built.py): twenty visitors of a page drew
twenty builds of the same figures from the same kept results, most of what the pages' scripts did
with the GIL held during benchmarks/bench_class.py."""

import threading

import numpy as np
import pandas as pd
import pytest
from conftest import CEILING, charts, goto, start

from app.shell import built
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


def test_inputs_it_cannot_fingerprint_build_afresh():
    figure, calls = counted()
    unhashable = pd.DataFrame({"pieces": [[1, 2], [3]]})
    with pytest.raises(built._Unknown):
        fingerprint(unhashable)
    figure(unhashable, "t"), figure(unhashable, "t"), figure(frame(), object())
    assert len(calls) == 3


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


def test_a_second_visitor_of_a_page_is_drawn_the_figures_the_first_was_built(app):
    first = goto(app, "oscillation")
    specs = [c.proto.spec for c in charts(first)]
    kept = set(built._BUILT)
    assert len(kept) >= 3  # the L2 and angle panels, the roughness bars: kept as built
    second = start("oscillation")  # another session: kept results, and now kept figures
    assert not second.exception
    assert [c.proto.spec for c in charts(second)] == specs and len(specs) >= 3
    assert set(built._BUILT) == kept  # nothing built anew
