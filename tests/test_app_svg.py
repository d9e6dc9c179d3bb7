"""The landing page's server-drawn chart (app/rooms/model_card/svg.py): values, scale, hover text, escaping."""

import xml.etree.ElementTree as ET

import pytest

from app.rooms.model_card.svg import grouped_bars, nice_ticks
from app.shell.text import si

NS = "{http://www.w3.org/2000/svg}"


def bars(svg: str) -> dict[str, float]:
    """Hover text -> drawn width of every bar."""
    root = ET.fromstring(svg)  # also proves the document is well-formed XML
    return {rect.find(f"{NS}title").text: float(rect.get("width")) for rect in root.iter(f"{NS}rect")
            if rect.find(f"{NS}title") is not None}


@pytest.mark.parametrize("top, expected", [(4.7e6, [0, 1e6, 2e6, 3e6, 4e6, 5e6]), (3.16e6, [0, 1e6, 2e6, 3e6, 4e6]),
                                           (514, [0, 200, 400, 600]), (1, [0, 0.2, 0.4, 0.6, 0.8, 1.0]), (0, [0, 1])])
def test_ticks_are_round_and_cover_the_data(top, expected):
    assert nice_ticks(top) == pytest.approx(expected)


def test_si_labels_read_like_plotlys():
    assert [si(v) for v in (0, 514, 16_896, 1_024_000, 3_158_016, 669_805.3e6, 2.5e13)] == ["0", "514", "16.9k", "1.02M", "3.16M", "670G", "25T"]


def test_bars_are_to_scale_and_name_their_values():
    svg = grouped_bars(["FFN", "pooler <&>"], {"held": [526_336, 65_792], "applied": [3_158_016, 65_792]},
                       ["#000", "#fff"], title="A & B", x_title="parameters (count)", unit=" parameters")
    widths = bars(svg)
    assert set(widths) == {"FFN, held: 526,336 parameters", "FFN, applied: 3,158,016 parameters",
                           "pooler <&>, held: 65,792 parameters", "pooler <&>, applied: 65,792 parameters"}
    assert widths["FFN, applied: 3,158,016 parameters"] / widths["FFN, held: 526,336 parameters"] == pytest.approx(6, rel=1e-3)
    assert widths["pooler <&>, held: 65,792 parameters"] == widths["pooler <&>, applied: 65,792 parameters"]
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert texts[0] == "A & B" and "parameters (count)" in texts and "4M" in texts  # title, axis title, last tick
    assert root.get("fill") == "currentColor" and root.get("font-family") is None  # the page's colour and font


def test_held_and_applied_keep_their_colours_between_the_card_and_the_calculator():
    """The model card (SVG) and the Parameters page (plotly, whose dark theme orders its colours the other way) drew
    'held in memory' and 'applied per forward pass' in each other's colours."""
    import pandas as pd

    from albert_lab.figures.parameters import parameter_bars
    from app.rooms.model_card.svg import parameters_by_component

    rows = pd.DataFrame({"component": ["attention", "FFN"], "unique": [10, 20], "applied": [30, 60]})
    root = ET.fromstring(parameters_by_component(rows))
    swatches = [r.get("fill") for r in root.iter(f"{NS}rect") if r.get("y") == "28"]  # the legend, left to right
    names = [t.text for t in root.iter(f"{NS}text") if t.get("y") == "39"]
    card = dict(zip(names, swatches, strict=True))
    calculator = {trace.name: trace.marker.color for trace in parameter_bars(rows, "bars").data}
    assert card == calculator and len(set(card.values())) == 2
