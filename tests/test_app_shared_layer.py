"""The Shared layer page (AppTest): its four sections, their figures, its link, a model shared by two sessions."""

import numpy as np
import pandas as pd
from conftest import goto, opened_by_link

from albert_lab.figures.shared_block import attention_figure


def test_page(app):
    at = goto(app, "shared_block")
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 1  # the first visit computes one section: depth extrapolation
    verdicts = [m.value for m in at.markdown if m.value.startswith("**")]
    assert any(v in " ".join(verdicts) for v in ("converges", "cycles", "slows down", "drifts")) and "not judged" in " ".join(verdicts)
    charts, downloads = 1, len(at.get("download_button"))
    sections = at.radio(key="sb_section").options
    for section, expected in zip(sections[1:], (4, 2, 1)):  # lens + 3 top-k; attention + entropy; CKA
        at.radio(key="sb_section").set_value(section).run()
        assert not at.exception and not at.error, (section, [e.value for e in at.error])
        assert len(at.get("plotly_chart")) == expected, section
        charts, downloads = charts + expected, downloads + len(at.get("download_button"))
        if section.startswith("3."):
            at.slider(key="sb_app").set_value(6).run()
        if section.startswith("4."):
            at.selectbox(key="sb_cka_y").set_value("bert-nsp").run()
        assert not at.exception and not at.error, [e.value for e in at.error]
    assert charts >= 8 and downloads >= 5
    at.radio(key="sb_section").set_value(sections[0]).run()
    at.radio(key="sb_input").set_value("My text").run()
    at.text_area(key="sb_text").set_value("   ").run()
    assert not at.exception and any("no text" in e.value for e in at.error)


def test_shared_layer_cka_compare_with_travels_in_the_link(app):
    """'Compare with' was not in the link: a shared CKA view opened on a model against itself."""

    at = goto(app, "shared_block")
    at.radio(key="sb_section").set_value("4. Layer similarity (linear CKA)").run()
    at.selectbox(key="sb_cka_y").set_value("bert-nsp").run()
    at.run()
    link = {k: v if isinstance(v, str) else v[0] for k, v in at.query_params.items()}
    assert link.get("sb_cka_y") == "bert-nsp" and link.get("sb_cka_x") == "albert-sop", link
    fresh = opened_by_link(link, "shared_block")  # the link opens the page itself
    assert not fresh.exception and fresh.selectbox(key="sb_cka_y").value == "bert-nsp"


def test_shared_layer_figures_can_be_read():
    """Top-k heatmaps labelled every sixth application, attention maps had no colour scale,
    and ALBERT vs BERT's CKA heatmap was a small square."""
    from albert_lab.figures.shared_block import attention_figure, cka_figure, top_k_figure

    top = pd.DataFrame([dict(checkpoint="m", application=a, depth_L=6, rank=r, token=f"w{a}{r}", probability=0.1,
                             watched="x [MASK]") for a in range(25) for r in range(1, 4)])
    text = top_k_figure(top, "m").data[0].text
    assert all(cell for row in text for cell in row)  # every application's words at k = 4
    tokens = ["[CLS]", "a", "[SEP]"]
    maps = pd.DataFrame([dict(checkpoint="m", application=1, head=0, inner=0, query=q, key=k, key_token=tokens[k],
                              weight=1 / 3, norm_weighted=0.5) for q in range(3) for k in range(3)])
    assert [t.showscale is not False for t in attention_figure(maps, 1, 0).data] == [True, True]
    cka = pd.DataFrame([dict(application_x=i, application_y=j, cka=0.5, checkpoint_x="albert-sop", checkpoint_y="bert-nsp",
                             unit="token", n=1024) for i in range(7) for j in range(7)])
    fig = cka_figure(cka)
    assert fig.layout.height >= 420 and fig.layout.yaxis.scaleanchor is None  # full width, not a fixed square


def test_figures_of_a_block_applied_24_times_stay_readable():
    """At k = 4 the top-k heatmap had 25 columns of words and the axes ticks at -1 and 25."""
    from albert_lab.figures.shared_block import cka_figure, lens_figure, top_k_figure

    apps = range(25)
    top = pd.DataFrame([dict(checkpoint="m", application=a, depth_L=6, rank=r, token=f"t{a}{r}", probability=0.5 / r,
                             watched="x") for a in apps for r in (1, 2, 3)])
    fig = top_k_figure(top, "m")
    worded = [a for a in apps if fig.data[0].text[0][a]]
    # every application worded (every sixth was too few to follow a word; issue 26), in smaller type
    assert worded == list(apps) and list(fig.layout.xaxis.range) == [-0.5, 24.5] and fig.data[0].textfont.size == 9
    long = top.assign(token=lambda f: "\u2581established", checkpoint="n", probability=0.9)  # an ALBERT's piece
    shown = top_k_figure(pd.concat([top, long]), "n")
    assert shown.data[0].text[0][3] == "estab\u2026"  # the run-in 'knownestablish...': cut, its mark gone
    assert shown.data[0].customdata[0][3] == "\u2581established"  # whole on hover
    both = top_k_figure(pd.concat([top, long]), "m")
    assert both.data[0].zmin == 0 and both.data[0].zmax == shown.data[0].zmax == 0.9  # one colour scale for all
    lens = pd.DataFrame([dict(checkpoint="m", family="albert", application=a, depth_L=6, mlm_accuracy=0.1, nll=5.0)
                         for a in apps])
    fig = lens_figure(lens)
    assert list(fig.layout.xaxis.range) == [-0.5, 24.5] and fig.layout.yaxis.tickformat == ".0%"
    cka = pd.DataFrame([dict(application_x=i, application_y=j, cka=0.5, checkpoint_x="m", checkpoint_y="m", unit="token",
                             n=100) for i in apps for j in apps])
    assert not cka_figure(cka).data[0].texttemplate
    small = cka[(cka.application_x < 7) & (cka.application_y < 7)]
    assert cka_figure(small).data[0].texttemplate


def test_attention_panels_share_one_set_of_row_labels():
    """The right panel's token labels ran into the left panel."""
    tokens = ["[CLS]", "a", "b"]
    maps = pd.DataFrame([dict(checkpoint="m", application=1, head=0, inner=0, query=q, key=k, key_token=tokens[k],
                              weight=1 / 3, norm_weighted=0.5) for q in range(3) for k in range(3)])
    fig = attention_figure(maps, 1, 0)
    assert fig.layout.yaxis2.matches == "y" and fig.layout.yaxis2.showticklabels is False


def test_attention_of_one_cached_model_from_two_threads_at_once(shipped):
    """Two sessions (or a rerun overlapping the run it replaces) on the shared-layer page
    use the same cached model: each thread's hooks caught the other's q/k/v ('The size of
    tensor a (19) must match the size of tensor b (128)')."""
    import threading

    from albert_lab.analysis.attention import attention_entropy
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(shipped / "albert-sop", device="cpu")
    texts = {"long": ["The Nile is a river in Africa. " * 12], "short": ["The river flows through the old town."]}
    alone = {name: attention_entropy(bundle, t, 2) for name, t in texts.items()}
    results, errors, start = {}, [], threading.Barrier(2)

    def work(name: str) -> None:
        start.wait()
        try:
            for _ in range(40):  # a tiny model: many rounds, so that the two threads overlap
                results[name] = attention_entropy(bundle, texts[name], 2)
        except Exception as err:  # pragma: no cover - the failure being tested
            errors.append(repr(err))

    threads = [threading.Thread(target=work, args=(name,)) for name in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for name in texts:
        pd.testing.assert_frame_equal(results[name], alone[name])


def test_k_and_the_seed_take_their_bounds_and_defaults_from_the_analysis_record(app):
    """K (1..4, written inline before) and the seed (capped at 10,000, while the command line
    takes 0..2**32-1) read extrapolate's option rows, the same rows logit-lens and the rest use."""
    from albert_lab.analysis.registry import EXTRAPOLATE, LOGIT_LENS
    from albert_lab.limits import MAX_REPEAT, MAX_SEED

    at = goto(app, "shared_block")
    repeat, seed = at.slider(key="sb_repeat"), at.number_input(key="sb_seed")
    k, masks = EXTRAPOLATE.option("repeat"), EXTRAPOLATE.option("seed")
    assert (repeat.min, repeat.max, repeat.value) == (k.bounds.low, k.bounds.high, k.default) == (1, MAX_REPEAT, 2)
    assert (seed.min, seed.max, seed.value) == (masks.bounds.low, masks.bounds.high, masks.default) == (0, MAX_SEED, 0)
    assert LOGIT_LENS.option("seed") == masks and LOGIT_LENS.option("repeat").bounds == k.bounds  # one control for all
    assert "4,294,967,295" in seed.help


def _maps_of_shipped(shipped, text: str = "The river flows through the old town."):
    from albert_lab.analysis.attention import attention_maps
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(shipped / "albert-sop", device="cpu")
    pieces = bundle.tokenizer.convert_ids_to_tokens(bundle.tokenizer(text)["input_ids"])
    return attention_maps(bundle, text, 2), pieces


def test_model_view_draws_every_application_and_head_with_the_library_weights(shipped):
    """bertviz's model view: a thumbnail per (application, head), its values the frame's, its
    labels the tokenizer's pieces, hover naming application, head and tokens; one colour scale."""
    from albert_lab.figures.shared_block import first_tokens, model_view_figure

    maps, pieces = _maps_of_shipped(shipped)
    applications, heads = sorted(maps.application.unique()), sorted(maps["head"].unique())
    assert (len(applications), len(heads)) == (6, 2)  # 3 layers applied twice (k = 2), 2 heads
    for value in ("weight", "norm_weighted"):
        fig = model_view_figure(maps, value)
        assert [t.type for t in fig.data] == ["heatmap"] * len(applications) * len(heads)
        for trace in fig.data:
            application, head = (int(w.split(" ")[-1]) for w in trace.name.split(", "))
            grid = maps[(maps.application == application) & (maps["head"] == head)].pivot(index="query", columns="key",
                                                                                           values=value)
            np.testing.assert_array_equal(np.asarray(trace.z), grid.to_numpy())
            assert list(trace.x) == list(trace.y) == [f"{i} {p}" for i, p in enumerate(pieces)]
            assert f"application {application}, head {head}" in trace.hovertemplate and trace.coloraxis == "coloraxis"
        assert fig.layout.coloraxis.cmax == maps[value].max() and fig.layout.coloraxis.cmin == 0
        # 6 applications of a 3-layer model: its trained depth marked between rows 3 and 4 (12 rows read as 12 layers)
        [line] = fig.layout.shapes
        row = {a: fig.layout[f"yaxis{'' if i == 0 else i * len(heads) + 1}"].domain for i, a in enumerate(applications)}
        assert row[4][1] < line.y0 == line.y1 < row[3][0]
        assert any(n.text == "trained depth L = 3; below, the block applied again" for n in fig.layout.annotations)
    assert not model_view_figure(maps[maps.application <= 3]).layout.shapes  # no mark where nothing is applied again
    long = pd.concat([maps.assign(query=maps["query"] + t * len(pieces), key=maps["key"] + t * len(pieces))
                      for t in range(5)])  # not real maps: only which rows survive the cut matters here
    cut, tokens = first_tokens(long, 32)
    assert tokens == 5 * len(pieces) > 32 and cut["query"].max() == cut["key"].max() == 31


def test_head_view_draws_each_heads_lines_between_the_pieces_one_head_at_first(shipped):
    """bertviz's head view, as data: the pieces left and right, a square per head of the chosen application,
    a line for every value over FAINTEST of the largest as opaque as its share, faint ones first; one head shown
    at first (every head at once was a tangle), the sharpest unless `heads` names others."""
    from albert_lab.figures.head_view import FAINTEST, head_view_data, head_view_html

    maps, pieces = _maps_of_shipped(shipped)
    data = head_view_data(maps, 4, "weight")
    assert data["tokens"] == pieces and data["heads"] == [0, 1] and len(data["colours"]) == 2
    part = maps[maps.application == 4]
    top = part.weight.max()
    for head, lines in zip(data["heads"], data["lines"]):
        weights = part[part["head"] == head].set_index(["query", "key"]).weight
        assert {(q, k) for q, k, _ in lines} == set(weights[weights >= FAINTEST * top].index)
        assert all(opacity == round(max(0.1, weights[q, k] / top), 2) for q, k, opacity in lines)
        assert [o for _, _, o in lines] == sorted(o for _, _, o in lines)  # the strong lines drawn last, on top
    sharpest = [part[part["head"] == h].groupby("query").weight.max().mean() for h in data["heads"]]
    assert data["shown"] == [int(np.argmax(sharpest))]  # its tokens' largest weights, on average, the highest
    assert head_view_data(maps, 4, "weight", heads=[1, 7])["shown"] == [1]  # a head the model lacks is left out
    grid = part[part["head"] == 1].pivot(index="query", columns="key", values="weight").to_numpy()
    strongest = int(grid[2].argmax())
    assert data["q"][2][1].startswith(f"{strongest} {pieces[strongest]} ({grid[2, strongest]:.2f})")
    page = head_view_html(maps, 4, "norm_weighted", heads=[0, 1])
    assert page.count("<button") == 2 and page.count('aria-pressed="true"') == 2 and "norm-weighted" in page


def test_a_visitors_text_in_the_head_view_stays_text():
    """A piece or a checkpoint's name that looks like markup is drawn as typed: escaped in the HTML, and unable
    to close the view's script from inside its data."""
    from albert_lab.figures.head_view import head_view_data, head_view_html

    pieces = ["[CLS]", "<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>", "&amp;", "[SEP]"]
    rows = [dict(checkpoint="<b>mine</b>", application=1, inner=0, head=h, query=q, key=k, key_token=pieces[k],
                 weight=1 / len(pieces)) for h in range(2) for q in range(len(pieces)) for k in range(len(pieces))]
    maps = pd.DataFrame(rows)
    page = head_view_html(maps, 1)
    assert "<img" not in page and "<b>mine" not in page and page.count("</script>") == 1 and "&lt;b&gt;mine" in page
    assert head_view_data(maps, 1)["tokens"] == pieces  # the data the script draws with textContent, unchanged


def test_head_and_model_views_draw_and_travel_in_the_link(app):
    at = goto(app, "shared_block")
    at.radio(key="sb_section").set_value("3. Attention at every application").run()
    at.radio(key="sb_att_view").set_value("Head view").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 1  # the entropy; the head view is a view of its own
    [view] = [h for h in at.get("html") if 'class="alhv"' in h.proto.body]
    assert "application 1" in view.proto.body and view.proto.unsafe_allow_javascript
    at.slider(key="sb_app").set_value(5).run()
    at.radio(key="sb_att_values").set_value("norm-weighted").run()
    at.selectbox(key="sb_att_model").set_value("bert-nsp").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.slider(key="sb_app").max == 3  # BERT stops at L
    at.radio(key="sb_att_view").set_value("Model view").run()
    assert not at.exception and not at.error and len(at.get("plotly_chart")) == 2
    assert "sb_app" not in [s.key for s in at.slider]  # every application is drawn
    link = {k: v if isinstance(v, str) else v[0] for k, v in at.query_params.items()}
    assert (link["sb_att_view"], link["sb_att_values"], link["sb_att_model"]) == ("Model view", "norm-weighted", "bert-nsp")
    fresh = opened_by_link({**link, "sb_att_view": "Head view", "sb_att_model": "albert-sop", "sb_app": "5"}, "shared_block")
    assert not fresh.exception and not fresh.error, [e.value for e in fresh.error]
    assert (fresh.radio(key="sb_att_view").value, fresh.radio(key="sb_att_values").value) == ("Head view", "norm-weighted")
    assert fresh.selectbox(key="sb_att_model").value == "albert-sop" and fresh.slider(key="sb_app").value == 5
    assert any("application 5: norm-weighted" in h.proto.body for h in fresh.get("html"))
    elsewhere = opened_by_link({**link, "sb_section": "1."}, "shared_block")
    assert "sb_att_view" not in {k for k in elsewhere.query_params}  # the section's controls travel with it only
