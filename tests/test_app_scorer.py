"""The typed pairs' process of their own (app/shell/scorer.py): what it answers is score_pairs'
answer (tests/test_app_sentence_pairs.py compares the numbers), its errors are the library's
errors, and a process that died is said once and replaced."""

from __future__ import annotations

import subprocess
import sys

import pytest

from albert_lab.analysis.pairs import pairs_frame
from albert_lab.errors import CheckpointError, SpecError
from app.shell import scorer as scorer_module
from app.shell.scorer import Load, Scorer, ScorerError, _rebuilt

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


def stand_in(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def test_a_process_that_dies_is_said_once_and_replaced(scorer, bundles):
    scorer.close()
    scorer._child = stand_in("import sys; sys.stdin.buffer.read(1)")  # dies with the request half read
    with pytest.raises(ScorerError, match="ended before it answered"):
        scorer.score([Load(bundles[0].source)], PAIRS)
    assert scorer._child is None
    scorer._child = dead = stand_in("pass")  # died between two requests (killed, out of memory)
    dead.wait()
    scores = scorer.score([Load(bundles[0].source, "again")], PAIRS)
    assert list(scores.checkpoint) == ["again"] and scorer._child is not dead


def test_the_process_ends_when_its_server_does():
    scorer = Scorer()
    scorer.start()
    child = scorer._child
    child.stdin.close()  # what the server's end does to the pipe: it ends at once, even while importing
    assert child.wait(timeout=30) == 0
