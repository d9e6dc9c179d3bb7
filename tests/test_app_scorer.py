"""The typed pairs' process of their own (app/shell/scorer.py): what it answers is score_pairs'
answer (tests/test_app_sentence_pairs.py compares the numbers), its errors are the library's
errors, and a process that died is said once and replaced."""

from __future__ import annotations

import sys
import threading

import pytest

from albert_lab.analysis.pairs import pairs_frame
from albert_lab.errors import CheckpointError, SpecError
from app.shell import scorer as scorer_module
from app.shell.scorer import Load, Scorer, ScorerError, _Child, _rebuilt

PAIRS = pairs_frame(["The river ran north."], ["Then it turned to the sea."])


@pytest.fixture
def scorer():
    """The server's own (the app's tests in this process use it too: one child started, not one each)."""
    return scorer_module.TYPED


def test_a_checkpoint_that_cannot_load_is_the_same_error_with_the_same_message(scorer, tmp_path, bundles):
    missing = tmp_path / "nothing-here"
    with pytest.raises(CheckpointError, match="nothing-here: no such folder"):
        scorer.score([Load(str(missing))], PAIRS)
    albert = bundles[0]
    scores = scorer.score([Load(albert.source, "mine")], PAIRS)  # the same child, still answering
    assert list(scores.checkpoint) == ["mine"] and scores.p_ab.between(0, 1).all()


def test_errors_whose_init_takes_other_arguments_come_back_with_their_message():
    err = _rebuilt(SpecError.__module__, "SpecError", "hidden_size: must be a multiple of heads")
    assert isinstance(err, SpecError) and str(err) == "hidden_size: must be a multiple of heads"
    err = _rebuilt("no.such.module", "Oops", "what happened")
    assert type(err) is RuntimeError and str(err) == "Oops: what happened"


def stand_in(code: str) -> _Child:
    """A child that runs `code` instead of answering."""
    return _Child([sys.executable, "-c", code])


def test_a_process_that_dies_is_said_once_and_replaced(scorer, bundles):
    scorer.close()
    scorer._child = stand_in("import sys; sys.stdin.buffer.read(1)")  # dies with the request half read
    with pytest.raises(ScorerError, match="ended before it answered"):
        scorer.score([Load(bundles[0].source)], PAIRS)
    scorer._child = dead = stand_in("pass")  # died between two requests (killed, out of memory)
    dead.process.wait()
    scores = scorer.score([Load(bundles[0].source, "again")], PAIRS)
    assert list(scores.checkpoint) == ["again"] and scorer._child is not dead


def test_the_process_ends_when_its_server_does():
    scorer = Scorer()
    scorer.start()
    child = scorer._child.process
    child.stdin.close()  # what the server's end does to the pipe: it ends at once, even while importing
    assert child.wait(timeout=30) == 0


class Left(Exception):
    """What Streamlit raises in a script whose visitor left or pressed Stop, here a plain one."""


def test_progress_is_heard_and_a_stop_ends_the_computation_there(scorer, bundles):
    """An upload in the child: the server hears each report before its batch (as score_pairs'
    callback), and one that raises there (a Stop, a visitor who left) ends the child's computation
    at that report, raises here, and leaves the child answering the next request."""
    loads = [Load(bundle.source, bundle.name) for bundle in bundles]
    heard = []
    scores = scorer.score(loads, PAIRS, lambda fraction, words: heard.append((fraction, words)), threads=1)
    assert len(scores) == 2 and [f for f, _ in heard] == sorted(f for f, _ in heard) and len(heard) >= 2
    assert heard[0][0] == 0.0 and bundles[0].name in heard[0][1]

    def stop(fraction, words):
        raise Left(words)

    with pytest.raises(Left):
        scorer.score(loads, PAIRS, stop, threads=1)
    assert list(scorer.score(loads, PAIRS).checkpoint) == [bundles[0].name, bundles[1].name]


def test_a_request_waiting_at_its_report_leaves_the_child_to_another(scorer, bundles):
    """A long computation passes its turn at a report (app/shell/turns.py) to another visitor's, maybe
    another upload: that one is scored by the same child while the first waits, then the first goes on."""
    loads = [Load(bundle.source, bundle.name) for bundle in bundles]
    other, order = [], []

    def pass_turn(fraction, words):
        if not other:
            helper = threading.Thread(target=lambda: other.append(scorer.score(loads[:1], PAIRS, lambda *_: None)))
            helper.start()
            helper.join(120)
            assert other, "the second request never came back while the first waited at its report"
        order.append(fraction)

    first = scorer.score(loads, PAIRS, pass_turn)
    assert list(first.checkpoint) == [bundles[0].name, bundles[1].name] and len(order) >= 2
    assert list(other[0].checkpoint) == [bundles[0].name]
