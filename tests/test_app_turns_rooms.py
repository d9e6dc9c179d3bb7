"""The rooms' heavy work that is no analysis of the sidebar's checkpoints takes the heavy lane's turns
with another visitor's heavy analysis (app/shell/runner.py): a Depth lab training, albertize, relax and
a probe, each asked in AppTest while another visitor's oscillation holds the lane (a plain thread, as
its script's thread). Each waits in the queue, starts only once the analysis has ended, and runs in a
turn of its own, so the next visitor waits for it in turn. They ran in the script thread beside any
analysis before (the Depth lab in a turn of its own making). Every wait is on an event: the analysis
ends once this visitor's work is queued behind it. Tiny models and settings."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from conftest import CEILING, TEXTS, goto, opened_by_link, wait_until
from streamlit.testing.v1 import AppTest

from app.shell import runner

ENDED = "the other visitor's analysis ended"


@contextmanager
def another_visitors_analysis(source, log: list) -> Iterator[None]:
    """Another visitor's heavy analysis (oscillation of the checkpoint at `source`) in its turn of the heavy
    lane; it ends, logging ENDED, once a computation waits in the lane behind it (or when the block ends)."""
    from albert_lab.analysis.oscillation import oscillation
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(source)
    holds, release = threading.Event(), threading.Event()

    def analysis() -> None:
        with runner.TURNS.turn(visitor="another visitor"):
            oscillation([bundle], TEXTS)
            holds.set()
            release.wait(CEILING)
            log.append(ENDED)

    def end_it() -> None:  # once this visitor's work is queued behind the analysis
        wait_until(lambda: runner.TURNS.waiting() > 0 or release.is_set(), "a computation queued behind the analysis")
        release.set()

    other = threading.Thread(target=analysis, daemon=True)
    other.start()
    assert holds.wait(CEILING), "the other visitor's analysis never had its turn"
    threading.Thread(target=end_it, daemon=True).start()
    try:
        yield
    finally:
        release.set()  # never left holding the lane for the next test
        other.join(CEILING)


def spied(monkeypatch, module, name: str, log: list) -> None:
    """`module.name` logs whether its thread holds a turn of the heavy lane when it starts, then works."""
    real = getattr(module, name)

    def work(*args, **kwargs):
        log.append(f"{name} starts, in a turn: {runner.TURNS.holds()}")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, work)


def depth_lab(app: AppTest) -> Callable[[], AppTest]:
    at = goto(app, "depth_lab")
    at.slider(key="dl_depth").set_value(2)
    at.multiselect(key="dl_variants").set_value(["none"])
    return lambda: at.slider(key="dl_steps").set_value(50).run()  # settings nothing shipped holds: trained now


def albertize(app: AppTest) -> Callable[[], AppTest]:
    at = goto(app, "model_card")
    at.selectbox(key="card_checkpoint").set_value("bert-nsp").run()
    at.number_input(key="card_albertize_e").set_value(8)
    return lambda: next(b for b in at.button if b.label == "Convert (seconds)").click().run()


def relaxed(app: AppTest) -> Callable[[], AppTest]:
    at = opened_by_link({"params_tab": "On real weights", "calc_real_view": "relaxed", "calc_relax_source": "bert-nsp",
                         "calc_relax_ranks": "0,2"}, "parameters")
    at.button(key="calc_relax_go").click().run()  # the curve first: a rank's model is made from it
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    at.selectbox(key="calc_relax_make_rank").set_value("2")
    return lambda: at.button(key="calc_relax_make").click().run()


def fitted(app: AppTest) -> Callable[[], AppTest]:
    at = goto(app, "model_card")
    at.selectbox(key="card_checkpoint").set_value("hub-albert").run()
    for key, value in (("card_probe_train", 100), ("card_probe_held", 100), ("card_probe_steps", 10)):
        at.number_input(key=key).set_value(value)
    return lambda: next(b for b in at.button if b.label.startswith("Fit the probe")).click().run()


@pytest.fixture
def few_pairs(small_corpus, monkeypatch):
    """The relaxation curve's held-out pairs: a few from the tiny corpus."""
    import albert_lab.analysis.relaxation as relaxation
    from albert_lab.data.heldout import build_eval_pairs

    pairs = build_eval_pairs(small_corpus.train[:40]).assign(domain="in")
    monkeypatch.setattr(relaxation, "evaluation_pairs", lambda out_of_domain=True: pairs)
    monkeypatch.setattr(relaxation, "DEFAULT_PAIRS", 8)


# the page's work, and the library function it runs (by its module: `albert_lab.relax` is also the front door's verb)
WORK = {"depth lab training": (depth_lab, "albert_lab.analysis.depth", "train_disc"),
        "albertize": (albertize, "albert_lab.convert", "albertize_into"),
        "relax": (relaxed, "albert_lab.relax", "relax_into"), "probe": (fitted, "albert_lab.training.probe", "probe_into")}


@pytest.mark.parametrize("work", list(WORK))
def test_a_rooms_heavy_work_takes_its_turn_after_another_visitors_analysis(app, shipped, few_pairs, monkeypatch, work):
    opened, module, name = WORK[work]
    ask = opened(app)  # the page open, its inputs set, before the other visitor computes
    log: list[str] = []
    spied(monkeypatch, importlib.import_module(module), name, log)
    with another_visitors_analysis(shipped / "albert-sop", log):
        at = ask()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert log[:2] == [ENDED, f"{name} starts, in a turn: True"], log  # one after the other, never side by side
    assert runner.TURNS.busy() == 0

