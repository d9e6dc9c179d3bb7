"""The one runner of the pages' analyses (app/shell/runner.py), seen from a page (AppTest): a
checkpoint that fails gets its note while the others are drawn, finished results are kept for
the next run of the page, and when every checkpoint fails the page's guard says it once; and
(plain threads) a quick computation's lane beside the heavy one."""

import json
import time

from conftest import CEILING, charts, goto, held

from albert_lab.errors import DataError


def drawn_curves(at) -> set[str]:
    return {t["name"] for c in charts(at) if "L2 distance ||h_l" in c.proto.spec for t in json.loads(c.proto.spec)["data"]
            if t.get("name")}


def test_a_checkpoint_that_fails_gets_its_note_and_the_others_are_drawn(app, monkeypatch):
    import albert_lab.analysis.oscillation as library

    real, asked, broken = library.oscillation, [], set()

    def oscillation(bundles, texts, aggregate="mean"):
        asked.append(bundles[0].name)
        if bundles[0].name in broken:
            raise DataError("its texts cannot be read")
        return real(bundles, texts, aggregate=aggregate)

    monkeypatch.setattr(library, "oscillation", oscillation)
    picked = app.sidebar.multiselect(key="picked").value
    at = goto(app, "oscillation")
    assert not at.error and drawn_curves(at) == set(picked) and sorted(asked) == sorted(picked)

    broken.add(picked[1])
    asked.clear()
    at.selectbox(key="osc_agg").set_value("median").run()  # new inputs: computed again, one checkpoint fails
    assert [e.value for e in at.error] == [f"{picked[1]}: its texts cannot be read"]
    assert drawn_curves(at) == set(picked) - {picked[1]} and sorted(asked) == sorted(picked)

    asked.clear()
    at.run()  # the page again: the finished ones are kept, the failed one is asked again
    assert asked == [picked[1]] and drawn_curves(at) == set(picked) - {picked[1]}

    broken.update(picked)
    asked.clear()
    at.selectbox(key="osc_agg").set_value("mean").run()  # kept from the first run: nothing computed, nothing fails
    assert not at.error and drawn_curves(at) == set(picked) and asked == []
    at.radio(key="osc_input").set_value("My text").run()  # new inputs, every checkpoint fails: the guard says it once
    assert [e.value for e in at.error] == ["oscillation: its texts cannot be read"] and not drawn_curves(at)


def test_a_stopped_computation_is_said_and_computed_after_all_when_asked(app):
    """One computation (gradient flow) stopped before it finished: the page says so instead of
    drawing, with a button that computes it after all (here kept already: drawn at once)."""
    at = goto(app, "gradient_flow")
    drawn = len(charts(at))
    assert drawn >= 3
    state = at.session_state["_shell"].each["gradflow"]  # app.shell.state.Shell: changed in place
    assert len(state["done"]) == 1 and not state["stopped"]
    state.update(done=[], stopped=True)  # as if Stop came during the computation
    at.run()
    (info,) = [i.value for i in at.info if i.value.startswith("Stopped")]
    assert info.startswith("Stopped before it finished: gradients of ") and info.endswith(" on 16 texts.")
    assert not charts(at)
    next(b for b in at.button if b.label == "Compute it after all").click().run()
    assert len(charts(at)) == drawn and not any(i.value.startswith("Stopped") for i in at.info)


def test_typed_pairs_never_wait_for_a_long_computation_and_are_scored_together():
    """Typed pairs (runner.together) while an upload holds the heavy lane: scored at once in a lane
    of their own; those asked while the quick lane is busy are computed in one pass, each given its
    own result; one visitor's bad item fails only that visitor. Plain threads."""
    import threading

    from app.shell import batches, runner

    passes, results = [], {}

    def many(items):
        passes.append(list(items))
        if "bad" in items:
            raise DataError("a bad pair")
        return [item.upper() for item in items]

    def ask(item):
        try:
            results[item] = batches.together(("typed", item), "models", item, many, "the typed pair")
        except DataError as err:
            results[item] = err

    release_upload = held(runner.TURNS)  # an upload
    ask("first")  # this thread: while the upload holds the heavy lane
    assert results == {"first": "FIRST"} and passes == [["first"]]

    release_lane = held(runner.QUICK)  # another visitor's pair, while three visitors ask
    askers = [threading.Thread(target=ask, args=(item,), daemon=True) for item in ("a", "bad", "c")]
    for thread in askers:
        thread.start()
    deadline = time.monotonic() + CEILING
    while len(batches._TOGETHER.get("models", [])) < 3:
        assert time.monotonic() < deadline, "the three asks never queued"
        time.sleep(0.01)
    release_lane.set()
    for thread in askers:
        thread.join(CEILING)
    release_upload.set()
    assert sorted(passes[1]) == ["a", "bad", "c"]  # one pass for the three, then each alone after its error
    assert sorted(map(tuple, passes[2:])) == [("a",), ("bad",), ("c",)]
    assert results["a"] == "A" and results["c"] == "C" and isinstance(results["bad"], DataError)
    assert batches.together(("typed", "a"), "models", "a", many, "the typed pair") == "A" and len(passes) == 5  # kept


def test_a_long_computation_waits_between_its_steps_while_typed_pairs_are_scored(monkeypatch):
    """An upload's step report (Shown.progress in the heavy lane) waits while the quick lane
    computes, so the typed pairs have the cores, and goes on when they are done; at most
    YIELD_SECONDS a step when they never end; a computation in the quick lane never waits for
    itself. Plain threads; every wait is on its event, the quick lane's waits recorded."""
    import threading

    from app.shell import runner

    waits, waiting = [], threading.Event()
    wait_idle = runner.QUICK.wait_idle

    def recorded(timeout):
        waiting.set()
        waits.append((timeout, wait_idle(timeout)))  # (how long it may wait, whether the lane went idle)
        return waits[-1][1]

    monkeypatch.setattr(runner.QUICK, "wait_idle", recorded)
    monkeypatch.setattr(runner, "YIELD_SECONDS", CEILING)
    heavy = runner.Shown(None, False, [], runner.TURNS)
    heavy.progress(0.5, "scoring")
    assert waits == []  # nothing in the quick lane: on at once

    release = held(runner.QUICK)  # typed pairs being scored, done once the step waits for them
    threading.Thread(target=lambda: waiting.wait(CEILING) and release.set(), daemon=True).start()
    heavy.progress(0.5, "scoring")
    assert waits == [(CEILING, True)]  # waited, and went on because the typed pairs were done

    release = held(runner.QUICK)  # typed pairs that never end
    monkeypatch.setattr(runner, "YIELD_SECONDS", 0.3)
    heavy.progress(0.5, "scoring")
    assert waits[1:] == [(0.3, False)]  # held a step YIELD_SECONDS at most, then went on
    quick = runner.Shown(None, False, [], runner.QUICK)
    quick.progress(0.5, "scoring")
    assert len(waits) == 2  # the quick lane never waits for itself
    release.set()


def test_a_typed_pair_whose_visitor_leaves_while_waiting_hands_its_batch_on(monkeypatch):
    """The first asker takes the quick lane for those who ask after it; if its visitor leaves while
    it waits (Streamlit raises in its script), the next asker computes the batch: nobody waits forever."""
    import threading

    from app.shell import batches, runner

    class Left(Exception):
        pass

    leaver = threading.current_thread  # set below to the leaving thread
    lane_held, release_lane, results = threading.Event(), threading.Event(), {}

    def waiting(self, ahead, yours=0):  # the leader's visitor leaves once another has asked after it
        if threading.current_thread() is leaver and len(batches._TOGETHER.get("g", [])) == 2:
            raise Left

    monkeypatch.setattr(runner.Shown, "waiting", waiting)

    def holder():
        with runner.QUICK.turn():
            lane_held.set()
            release_lane.wait(CEILING)

    def ask(item):
        try:
            results[item] = batches.together(("typed", item), "g", item, lambda items: [i * 2 for i in items], "pair")
        except Left:
            results[item] = "left"

    threading.Thread(target=holder, daemon=True).start()
    assert lane_held.wait(CEILING)
    first = threading.Thread(target=ask, args=("x",), daemon=True)
    leaver = first
    first.start()
    deadline = time.monotonic() + CEILING
    while len(batches._TOGETHER.get("g", [])) < 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    second = threading.Thread(target=ask, args=("y",), daemon=True)
    second.start()  # follows the first, which leaves while waiting for the lane
    first.join(CEILING)
    assert results == {"x": "left"} and batches._TOGETHER["g"][0].leads  # the lead handed on
    release_lane.set()
    second.join(CEILING)
    assert results == {"x": "left", "y": "yy"} and "g" not in batches._TOGETHER


def test_the_quick_lane_computes_on_one_thread_and_gives_the_others_back():
    """A team of torch threads waits for every member at every operation: beside an upload, on cores
    the browsers share, a batch of typed pairs took seconds on two threads. The quick lane computes on
    the calling thread alone (albert_lab.devices.one_thread), and the thread gets its threads back."""
    import torch

    from app.shell import batches

    torch.set_num_threads(2)
    seen = []
    assert batches.together(("threads", 1), "threads", 1, lambda items: seen.append(torch.get_num_threads()) or items,
                            "the typed pair") == 1
    assert seen == [1] and torch.get_num_threads() == 2


def test_a_computation_leaves_a_core_to_the_other_visitors(monkeypatch):
    """A long computation on every core took the pages' and typed pairs' share of a 2-core server with
    twenty visitors: while another browser session has run its script in the last VISITING seconds, a
    computation uses all cores but one; alone, all of them; with a training run, one."""
    from types import SimpleNamespace

    import streamlit.runtime.scriptrunner as scriptrunner
    import torch

    from app.shell import pace

    before = torch.get_num_threads()
    session, clock = SimpleNamespace(session_id="teacher"), [1000.0]
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda **_: session)
    monkeypatch.setattr(pace.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(pace.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(pace, "active_run", lambda: False)
    monkeypatch.setattr(pace, "_SEEN", {})
    try:
        pace.use_threads()
        assert torch.get_num_threads() == 4 and pace.visitors() == 1
        session.session_id = "student"
        pace.use_threads()
        assert torch.get_num_threads() == 3 and pace.visitors() == 2
        clock[0] += pace.VISITING + 1  # the teacher's tab closed five minutes ago: the student alone
        pace.use_threads()
        assert torch.get_num_threads() == 4 and pace.visitors() == 1
        monkeypatch.setattr(pace, "active_run", lambda: True)
        pace.use_threads()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
