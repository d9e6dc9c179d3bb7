"""The one runner of the pages' analyses (app/shell/runner.py), seen from a page (AppTest): a
checkpoint that fails gets its note while the others are drawn, finished results are kept for
the next run of the page, and when every checkpoint fails the page's guard says it once; and
(plain threads) a quick computation's lane beside the heavy one."""

import json

from conftest import charts, goto

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


def test_a_quick_computation_never_waits_for_a_long_one():
    """A typed pair (quick) while an upload holds the heavy lane: scored at once, in a lane of its
    own, while a second heavy computation waits for the upload's turn. Plain threads."""
    import threading

    from app.shell import runner
    from app.shell.runner import Part

    holding, release, done = threading.Event(), threading.Event(), {}

    def upload() -> None:
        with runner.TURNS.turn():
            holding.set()
            release.wait(10)

    def ask(what: str, quick: bool) -> None:
        done[what] = runner.run([Part(what, (what,), lambda _: what)], keep=False, quick=quick)

    threading.Thread(target=upload, daemon=True).start()
    assert holding.wait(10)
    heavy = threading.Thread(target=ask, args=("heavy", False), daemon=True)
    heavy.start()
    ask("typed pair", quick=True)  # in this thread: returns while the upload holds its turn
    assert done == {"typed pair": ["typed pair"]}
    heavy.join(0.3)
    assert heavy.is_alive() and "heavy" not in done  # the heavy lane is the upload's
    release.set()
    heavy.join(10)
    assert done["heavy"] == ["heavy"]
