"""The figures' shared look (albert_lab/figures/look.py) is the same however a figure is built; the app lays them
out (app/shell/look.py)."""

import pandas as pd
import plotly.graph_objects as go

from albert_lab.figures.look import chance_line, style, styled
from albert_lab.figures.sentence_pairs import ORDER_COLOURS, ORDERS, pair_figure

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


def test_a_legend_of_seven_checkpoints_stays_off_the_title_on_a_phone():
    """On a phone (390 x 844) with seven checkpoints picked, Oscillation's legend wrapped into four rows above the
    plot and covered its two-line title (measured in Chromium: legend top 30 px above the title's bottom). The top
    margin now holds the rows beyond two, as Chromium draws them: 29 px each, the names packed as plotly packs them."""
    from albert_lab.figures.oscillation import oscillation_panels
    from app.shell.look import PHONE_PX, fit_legend, fitting_chars, legend_rows, wrap_title

    names = ["albert-sop", "albert-nsp", "albert-none", "albert-sop-minilm", "albert-nsp-minilm", "bert-nsp",
             "bert-sop-minilm"]
    frame = pd.DataFrame([dict(checkpoint=n, family="bert" if n.startswith("bert") else "albert", layer=layer, l2=1.0,
                               l2_spread=0.1, angle_deg=10.0, angle_spread=1.0) for n in names for layer in (1, 2)])
    fig = go.Figure(oscillation_panels(frame)[0])
    assert legend_rows(fig, PHONE_PX) == 4  # albert-sop, albert-nsp | albert-none, albert-sop-minilm | ... | bert-sop-minilm
    assert legend_rows(fig, 800) == 2 and legend_rows(go.Figure(oscillation_panels(frame.head(2))[0]), PHONE_PX) == 0
    wrap_title(fig, fitting_chars(0.5))
    lines = fig.layout.title.text.count("<br>") + 1
    assert lines == 2 and fig.layout.margin.t == 110 + 20  # the title's second line only, so far
    fit_legend(fig, 0.5)
    assert fig.layout.margin.t == 110 + 20 + 2 * 29
    assert fit_legend(fig, 0.5).layout.margin.t == 110 + 20 + 2 * 29  # again harmless (a figure built once for all)
    three = go.Figure(oscillation_panels(frame[frame.checkpoint.isin(names[:3])])[0])
    assert fit_legend(three, 0.5).layout.margin.t == 110  # two rows: the margin holds them


def test_a_visitors_tags_in_a_figure_are_drawn_as_text_and_the_figures_own_stay():
    import numpy as np

    from albert_lab.figures.look import text_only

    link = '<a href="javascript:alert(1)">c</a>'
    fig = go.Figure(go.Bar(x=np.array([link, "b"], dtype=object), y=[1, 2], name=link, customdata=[[link], ["b"]],
                           hovertemplate="%{x}<br>%{customdata[0]}<extra></extra>"))
    fig.update_layout(title=f"<b>T</b><br><sup>{link}</sup>", xaxis_ticktext=[link],
                      annotations=[dict(text=link, x=0, y=0)], legend_title_text="<i>runs</i>")
    before = fig.to_plotly_json()
    text_only(fig)
    escaped = '&lt;a href="javascript:alert(1)">c&lt;/a>'
    assert list(fig.data[0].x) == [escaped, "b"] and fig.data[0].name == escaped
    assert fig.data[0].customdata[0][0] == escaped and fig.layout.annotations[0].text == escaped
    assert fig.layout.title.text == f"<b>T</b><br><sup>{escaped}</sup>" and fig.layout.xaxis.ticktext == (escaped,)
    assert fig.data[0].hovertemplate == before["data"][0]["hovertemplate"] and fig.layout.legend.title.text == "<i>runs</i>"
    assert text_only(fig).to_plotly_json() == fig.to_plotly_json()  # idempotent
