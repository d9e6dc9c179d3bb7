"""The Depth lab page (AppTest): its first views shipped, diverged nets shown as such, the VGG comparison."""

import json
import re
import time

import pandas as pd
from conftest import charts, goto, opened_by_link
from streamlit.testing.v1 import AppTest

import albert_lab.analysis.depth as depth
from app.rooms.depth_lab import cache as depth_cache
from app.rooms.depth_lab import runs as depth_runs


def test_depth_lab(app):
    at = goto(app, "depth_lab")
    assert len(mlp_charts(at)) == 4
    at.multiselect(key="dl_variants").set_value(["none", "layernorm"]).run()
    assert not at.exception and len(mlp_charts(at)) == 4


def mlp_charts(at: AppTest) -> list:
    """The MLP tab's charts (the VGG tab's, drawn at once from the shipped cache, are 'VGG-...')."""
    return [c for c in charts(at) if '"VGG-' not in c.proto.spec]


def _figure_names(at: AppTest) -> set[str]:
    import json

    return {trace.get("name", "") for c in mlp_charts(at) for trace in json.loads(c.proto.spec)["data"]}


def test_depth_lab_first_view_trains_nothing(app, monkeypatch):
    import albert_lab.analysis.depth as depth

    def refuse(*args, **kwargs):
        raise AssertionError("the default view should come from app/rooms/depth_lab/default.json")

    monkeypatch.setattr(depth, "train_disc", refuse)
    start = time.perf_counter()
    at = goto(app, "depth_lab")
    assert not at.error and len(mlp_charts(at)) == 4
    assert time.perf_counter() - start < 10
    assert "MLP depth 16 (plain)" in _figure_names(at)


def test_depth_lab_marks_a_diverged_model_instead_of_dropping_it(app):
    at = goto(app, "depth_lab")
    at.multiselect(key="dl_variants").set_value(["none", "batchnorm_before"])
    at.number_input(key="dl_std").set_value(2.0)
    at.slider(key="dl_steps").set_value(50).run()
    assert not at.exception and not at.error
    assert any("MLP depth 16 (plain) diverged at step" in w.value for w in at.warning)
    names = _figure_names(at)
    assert any(n.startswith("MLP depth 16 (plain) (diverged at step") for n in names), names
    assert "MLP depth 16 + batchnorm before" in names  # the model that trains keeps its plain name
    assert at.selectbox(key="dl_heat").value == "MLP depth 16 + batchnorm before"  # the heatmap opens on one that trained


def test_divergence_cuts_the_trace_at_the_first_bad_step():
    import pandas as pd

    from albert_lab.figures.depth_lab import cut_at_divergence, divergence, legend_names

    history = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 2, "step": [1, 10, 20, 23, 1, 10],
                            "loss": [0.7, 5e4, float("nan"), float("nan"), 0.7, 0.6]})
    assert divergence(history) == {"a": 10}
    assert list(cut_at_divergence(history, {"a": 10}).step) == [1, 1, 10]
    assert legend_names(["a", "b"], {"a": 10}) == {"a": "a (diverged at step 10)", "b": "b"}


def test_layer_axes_tick_every_layer_only_while_that_reads():
    """VGG-38's and a 48-layer MLP's layer axes had a tick per layer (labels smeared into
    each other); a model that diverged at step 1 drew a one-column heatmap ticked 0.6, 0.8, ..."""
    import pandas as pd
    import plotly.express as px

    from albert_lab.figures.depth_lab import flow_heatmap
    from albert_lab.figures.look import style

    def axis(layers: int):
        frame = pd.DataFrame({"layer": range(1, layers + 1), "mean_abs": [1e-3] * layers})
        return style(px.line(frame, x="layer", y="mean_abs"), layers=True).layout.xaxis

    assert axis(6).dtick == 1 and axis(6).tickformat == "d"
    assert axis(40).dtick is None and axis(40).tickformat == "d"
    flow = pd.DataFrame({"model": "none", "layer": [1, 2, 3], "step": 0, "mean_abs": [1e-3, 1e-4, 1e-5]})
    heat = flow_heatmap(flow, "none").layout
    assert list(heat.xaxis.tickvals) == [0] and heat.yaxis.dtick == 1


def test_a_diverged_net_does_not_stretch_the_depth_labs_loss_axis():
    """At 32 layers the residual net's one loss before it diverged (24.5) stretched the axis
    to 25 and flattened the curves of the nets that trained."""
    from albert_lab.figures.depth_lab import depth_figures

    steps = [1, 10, 20]
    history = pd.DataFrame(dict(model=["plain"] * 3 + ["residual"] * 3, step=steps * 2,
                                loss=[0.69, 0.6, 0.5, 24.5, float("nan"), float("nan")],
                                test_accuracy=[0.5, 0.6, 0.7, 0.5, float("nan"), float("nan")]))
    flow = pd.DataFrame(dict(model=["plain", "residual"], step=1, layer=1, mean_abs=1e-3, max_abs=1e-2))
    loss = depth_figures(history, flow)["loss"]
    assert loss.layout.yaxis.range[1] < 1.0
    assert "residual (diverged at step 10) up to 24.5" in loss.layout.annotations[0].text


def test_vgg_comparison_at_its_default_settings_trains_nothing(app, monkeypatch):
    """The button promised half a minute and took half an hour on a busy machine: the
    default settings' four nets ship with the app and draw at once."""
    def refuse(*args, **kwargs):
        raise AssertionError("the default VGG comparison should come from app/rooms/depth_lab/default.json")

    monkeypatch.setattr(depth, "_train", refuse)
    at = goto(app, "depth_lab")
    assert any("Ready for these settings" in c.value and "drawn below" in c.value for c in at.caption)
    # drawn without a click ('it draws at once' showed nothing until Train), and no Train button for nothing to train
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "dl_vgg_run"]
    names = {t["name"] for c in charts(at) if "8x8 digits" in c.proto.spec for t in json.loads(c.proto.spec)["data"]}
    assert names == {"VGG-8", "VGG-8 + BatchNorm", "VGG-38", "VGG-38 + BatchNorm"}


def test_the_vgg_caption_says_what_its_curves_show(app):
    """The caption spoke only of BatchNorm letting VGG-38 learn, while the shipped chart shows plain VGG-8 at
    chance for all 300 steps too: it now reads each curve off the data drawn."""
    at = goto(app, "depth_lab")
    (caption,) = [m.value for m in at.markdown if m.value.startswith("Test accuracy at SGD learning rate 0.1 over 300 steps")]
    assert "**VGG-8** stays at chance" in caption and "**VGG-38** stays at chance" in caption, caption
    assert "**VGG-8 + BatchNorm** learns" in caption and "**VGG-38 + BatchNorm** learns" in caption, caption
    assert "without BatchNorm not even 8 layers learn, and with it both depths do" in caption, caption
    from albert_lab.analysis.depth import VGG_NETS
    from albert_lab.readings.depth_lab import reading
    from app.rooms.depth_lab.cache import shipped_vgg

    nets = [shipped_vgg(depth, bn, 300, 0.1) for depth, bn in VGG_NETS]  # the curves drawn, as compare_vgg returns them
    history, flow = (pd.concat([net[i] for net in nets], ignore_index=True) for i in (0, 1))
    assert reading(history, flow, 300, 0.1) == caption  # a notebook reading these frames says what the page says


def test_the_vgg_caption_follows_other_curves():
    """Histories of other settings get their own words: the coursework's case (depth alone stops the plain
    net), a net that rises and falls back, and a stopped comparison (no summary of nets not trained)."""
    from albert_lab.readings.depth_lab import vgg_caption

    def history(curves: dict[str, list[float]]) -> pd.DataFrame:
        return pd.DataFrame([dict(model=name, step=20 * i, loss=1.0, test_accuracy=a)
                             for name, accs in curves.items() for i, a in enumerate(accs)])

    learns, chance, back = [0.1, 0.5, 0.8, 0.9, 0.9, 0.9], [0.1, 0.09, 0.11, 0.1, 0.08, 0.1], [0.1, 0.4, 0.3, 0.1, 0.1, 0.1]
    coursework = vgg_caption(history({"VGG-8": learns, "VGG-8 + BatchNorm": learns, "VGG-38": back,
                                      "VGG-38 + BatchNorm": learns}), 100, 0.05)
    assert coursework.startswith("Test accuracy at SGD learning rate 0.05 over 100 steps (chance 0.1): **VGG-8** learns")
    assert "**VGG-38** rises to 0.40, then falls back to 0.10, near chance" in coursework
    assert "depth alone stops the plain net here, and BatchNorm lets VGG-38 learn" in coursework
    stopped = vgg_caption(history({"VGG-8": chance, "VGG-8 + BatchNorm": learns}), 100, 0.05)
    assert "**VGG-8** stays at chance (0.08-0.11 at every record)" in stopped and " So " not in stopped


def test_vgg_comparison_says_how_long_and_keeps_what_a_stop_left(app, monkeypatch):
    """Other settings say how long they take before the click, train one net at a time
    behind the runner's progress bar, and a Stop keeps the nets already trained."""
    trained = []

    def quick(depth_, batchnorm, steps, lr, record_every=20, progress=None, **kwargs):
        trained.append((depth_, batchnorm))
        for step in range(1, steps + 1):
            progress(step)
        frame = pd.DataFrame(dict(model=depth.vgg_label(depth_, batchnorm), step=[1, steps], loss=[2.3, 1.0],
                                  test_accuracy=[0.1, 0.5]))
        flow = pd.DataFrame(dict(model=frame.model.iloc[0], step=steps, layer=[1, 2], mean_abs=[1e-3, 1e-3],
                                 max_abs=[1e-2, 1e-2]))
        return frame, flow

    monkeypatch.setattr(depth, "train_vgg", quick)
    at = goto(app, "depth_lab")
    at.slider(key="dl_vgg_steps").set_value(100).run()
    caption = next(c.value for c in at.caption if "conv nets of 100 steps" in c.value)
    # 'about 5 s on an idle 2-core CPU' was a guess 4 to 90 times too short: the measured cost (bench_estimates.py)
    from app.shell.costs import VGG_COST, vgg_units
    from app.shell.text import fmt_duration

    assert f"about {fmt_duration(VGG_COST.seconds * vgg_units(100, depth.VGG_NETS))} on two cores" in caption, caption
    assert "Stop keeps" in caption
    at.button(key="dl_vgg_run").click().run()
    assert len(trained) == 4 and not at.exception
    assert not at.get("progress")  # the bar is gone once the nets are trained
    stopped_during_the_last(at, depth_runs.vgg_parts(100, 0.1), "vgg")
    at.run()
    assert any("Stopped: 3 of 4 nets trained for these settings." in i.value for i in at.info)
    assert len(trained) == 4  # a stopped comparison trains nothing more until asked
    assert any("8x8 digits" in c.proto.spec for c in charts(at))
    next(b for b in at.button if b.label == "Train the others").click().run()
    assert trained[4:] == [(38, True)] and not any(i.value.startswith("Stopped") for i in at.info)


def stopped_during_the_last(at: AppTest, parts: list, kind: str) -> None:
    """As if Stop came while the last of `parts` trained: the others kept for every visitor, the last not, and
    the session's Stop of `kind` (app.shell.runner's: Shell.each) holding for these parts, all but the last done."""
    from app.shell.results import store

    store()[0].pop(parts[-1].key)
    at.session_state["_shell"].each[kind] = {"request": tuple(p.key for p in parts), "done": [p.name for p in parts[:-1]],
                                             "stopped": True}


def test_mlp_training_shows_its_step_and_keeps_what_a_stop_left(app, monkeypatch):
    """Depth 48 and 2,000 steps read 'about 1 s left' for 160 s, then '5 min', and nothing could stop it. The nets are
    the runner's parts: its bar (the net, its step, the time left), its Stop, its note and button for the others."""
    from app.shell import runner

    trained, texts = [], []
    real_empty = runner.st.empty

    def quick(cfg, label=None, progress=None):
        trained.append(cfg)
        for step in range(1, cfg.steps + 1):
            progress(step)
        frame = pd.DataFrame(dict(model=depth.describe(cfg), step=[1, cfg.steps], loss=[0.7, 0.3],
                                  test_accuracy=[0.5, 0.9]))
        flow = pd.DataFrame(dict(model=frame.model.iloc[0], step=cfg.steps, layer=[1, 2], mean_abs=[1e-3, 1e-3],
                                 max_abs=[1e-2, 1e-2]))
        return frame, flow

    def spy_empty():  # the runner's bar is a placeholder's progress
        slot = real_empty()
        original = slot.progress
        slot.progress = lambda v, text=None: (texts.append(text), original(v, text=text))[1]
        return slot

    monkeypatch.setattr(depth, "train_disc", quick)
    monkeypatch.setattr(runner.st, "empty", spy_empty)
    at = goto(app, "depth_lab")
    at.multiselect(key="dl_variants").set_value(["none", "layernorm"])
    at.slider(key="dl_steps").set_value(150).run()
    assert len(trained) == 2 and not at.exception and not at.get("progress")
    # the time left as the runner says it, at this server's pace as learned so far (under a second once it is fast)
    shown = re.compile(r"Training MLP depth 16 \(plain\) \(1 of 2\): step 1 of 150; (about .+|under a second) left")
    assert any(shown.fullmatch(t) for t in texts), texts[:3]
    assert any("(2 of 2): step" in t and t.endswith(" left") for t in texts), texts
    configs = [depth_cache.config(v, 16, 32, "gaussian", 0.1, 150, 0.0) for v in ["none", "layernorm"]]
    stopped_during_the_last(at, [depth_runs.Part.call(f"Training {depth.describe(c)}", depth_runs.train_mlp, c,
                                                      progress=True) for c in configs], "depth")
    at.run()
    assert any("Stopped: 1 of 2 networks trained for these settings." in i.value for i in at.info)
    assert len(trained) == 2 and len(mlp_charts(at)) == 4  # nothing trained until asked; the one kept is drawn
    next(b for b in at.button if b.label == "Train the others").click().run()
    assert len(trained) == 3 and trained[-1] == configs[-1] and not at.info


def test_a_depth_lab_link_reproduces_its_settings(app):
    fresh = opened_by_link({"dl_depth": "4", "dl_steps": "50", "dl_variants": "none,layernorm,bogus"}, "depth_lab")
    assert not fresh.exception and not fresh.error
    assert fresh.slider(key="dl_depth").value == 4 and fresh.multiselect(key="dl_variants").value == ["none", "layernorm"]


def test_when_every_variant_diverges_at_once_the_page_says_so_instead_of_empty_charts(app):
    """48 layers of std 2.0: both variants diverged at step 1, and three empty charts were drawn
    (one titled 'at the last step before any divergence', of which there was none)."""
    at = goto(app, "depth_lab")
    at.slider(key="dl_depth").set_value(48)
    at.multiselect(key="dl_variants").set_value(["none"])
    at.number_input(key="dl_std").set_value(2.0)
    at.slider(key="dl_steps").set_value(50).run()
    assert not at.exception
    (error,) = [e.value for e in at.error if e.value.startswith("Every variant diverged at its first step")]
    assert "48 layers and a Gaussian initialisation of std 2" in error and "Try a smaller std (e.g. 0.1)" in error
    assert not _figure_names(at) and not [s for s in at.selectbox if s.key == "dl_heat"]


def test_depth_lab_trains_in_its_turn_after_another_visitors_computation(app, monkeypatch):
    """Its four networks trained beside another visitor's computation, on every core, outside the queue:
    now a training waits for the heavy lane's turn, and starts only once the computation holding it ends."""
    import threading
    import time

    from conftest import held, wait_until

    from app.shell import runner

    times, real = {}, depth.train_disc

    def train_disc(cfg, *args, **kwargs):
        times.setdefault("trained", time.perf_counter())
        return real(cfg, *args, **kwargs)

    monkeypatch.setattr(depth, "train_disc", train_disc)
    at = goto(app, "depth_lab")
    release = held(runner.TURNS)  # another visitor's computation in the heavy lane

    def end_it():  # once the page's training waits in the queue behind it
        wait_until(lambda: runner.TURNS.waiting() > 0, "the Depth lab's training to queue")
        times["released"] = time.perf_counter()
        release.set()

    threading.Thread(target=end_it, daemon=True).start()
    at.slider(key="dl_steps").set_value(50).run()  # settings nothing shipped holds: trained now
    assert not at.exception, [e.value for e in at.exception]
    assert times["trained"] > times["released"], times  # one after the other, not side by side



def test_the_vgg_caption_reads_the_gradient_panel_beside_it(app):
    """VGG-38's first layers at about 1e-20 against VGG-8's 1e-6 is the depth lesson the panel draws; no text said it."""
    from albert_lab.readings.depth_lab import gradient_words

    def flow(first: dict[str, float]) -> pd.DataFrame:
        return pd.DataFrame([dict(model=m, step=s, layer=layer, mean_abs=v * (1 if s == 300 else 9) * 10 ** (layer - 1))
                             for m, v in first.items() for s in (1, 300) for layer in (1, 2, 3)])

    said = gradient_words(flow({"VGG-8": 1e-6, "VGG-38": 1e-20, "VGG-38 + BatchNorm": 3e-6}))
    assert said.startswith("First layer's mean |dL/dW| at the last step: VGG-8 1.0e-06; VGG-38 1.0e-20;")
    assert "1e+14 times smaller than VGG-8's: it vanishes on its way down 38 layers" in said
    assert "With BatchNorm, VGG-38's first layer gets 3.0e-06: the gradient reaches the first layers again." in said
    assert "vanishes" not in gradient_words(flow({"VGG-8": 1e-6, "VGG-38": 1e-7}))  # the same order: nothing vanished
    at = goto(app, "depth_lab")  # the shipped view's caption reads its own panel
    assert any("First layer's mean |dL/dW| at the last step: " in m.value for m in at.markdown)
