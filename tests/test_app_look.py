"""The figures' shared look (app/shell/look.py) is the same however a figure is built."""

import pandas as pd
import plotly.graph_objects as go

from app.rooms.sentence_pairs.figures import ORDER_COLOURS, ORDERS, pair_figure
from app.shell.look import chance_line, style, styled

TRACES = [dict(type="bar", name="a", x=["m1", "m2"], y=[0.2, 0.7]), dict(type="bar", name="b", x=["m1"], y=[0.9])]
LAYOUT = dict(barmode="group", title=dict(text="A title"), yaxis=dict(range=[0, 1], title=dict(text="P")),
              margin=dict(t=90), annotations=[dict(text="a note", x=0, y=1, showarrow=False)])


def test_a_figure_built_from_dicts_looks_as_one_styled_after():
    """styled() (one check of plain dicts, for figures built per visitor) gives the layout that
    style() and chance_line() give a figure built first: legend, margins, title, the chance line."""
    fast = styled(TRACES, LAYOUT, legend_title="order", chance=0.5).to_plotly_json()
    slow = chance_line(style(go.Figure([go.Bar(t) for t in TRACES], LAYOUT), legend_title="order")).to_plotly_json()
    assert fast["layout"] == slow["layout"]
    assert fast["data"] == slow["data"]
    assert styled(TRACES, {}).to_plotly_json()["layout"] == style(go.Figure([go.Bar(t) for t in TRACES])).to_plotly_json()["layout"]


def test_the_pair_figure_has_a_bar_per_order_for_each_scored_checkpoint():
    scores = pd.DataFrame({"checkpoint": ["albert-sop", "hub-albert", "bert-nsp"], "head": ["sop", "none", "nsp"],
                           "p_ab": [0.61, None, 0.93], "p_ba": [0.42, None, 0.95]})
    fig = pair_figure(scores)
    assert [(t.name, list(t.x), list(t.y), t.marker.color) for t in fig.data] == [
        (ORDERS["p_ab"], ["albert-sop", "bert-nsp"], [0.61, 0.93], ORDER_COLOURS[ORDERS["p_ab"]]),
        (ORDERS["p_ba"], ["albert-sop", "bert-nsp"], [0.42, 0.95], ORDER_COLOURS[ORDERS["p_ba"]])]
    assert list(fig.data[0].customdata) == ["sop", "nsp"]  # the hover names each bar's head
    assert fig.layout.barmode == "group" and list(fig.layout.yaxis.range) == [0, 1]
    assert fig.layout.legend.title.text == "order" and fig.layout.annotations[0].text == "chance"
