"""Pairs scored in a process of their own (albert_lab.analysis.pairs.score_pairs), so that the
quick lane's typed pairs take no turns for the GIL with the visitors' scripts.

A torch operation lets go of the GIL while it computes and takes it back to return; in the
server, twenty visitors' scripts and an upload's thread take it in between, so a typed pair
that computes in 0.2 s alone took 1.4-4.3 s in the quick lane with a class on the server
(benchmarks/bench_class.py, docs/benchmarks.md). Here the models of the pairs asked are loaded
once in a child process (`python -c ...main()`, the server's interpreter, working folder and
environment) and each request goes down a pipe and its frame comes back up it: the server's
thread waits in a read, without the GIL.

One request at a time per `Scorer` (its lock; the quick lane already takes one at a time).
An error in the child comes back as the same class with the same message (a checkpoint that
cannot load is the user's error there as here); a child that died (killed, out of memory)
is said as one error and started afresh for the next request. The child ends when the
server does (its pipe closes) and computes on one thread: a moment's work on cores others use
(albert_lab.devices.one_thread says why)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

ROOT = Path(__file__).resolve().parents[2]  # where `app` is imported from, in the child too
LOADED = 8  # checkpoints the child keeps loaded, the least recently used out first


@dataclass(frozen=True)
class Load:
    """How a checkpoint is loaded (albert_lab.checkpoint.load.load_checkpoint's arguments), in
    words that cross a pipe; Selection.loads gives the sidebar's."""

    source: str
    name: str | None = None
    device: str = "auto"
    dtype: str = "float32"
    casing: str | None = None
    casing_given: str | None = None


class ScorerError(RuntimeError):
    """The scoring process ended before it answered."""


class Scorer:
    def __init__(self) -> None:
        self._child: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the child now (it imports torch and the model code: seconds), not at the first request."""
        with self._lock:
            self._started()

    def score(self, loads: list[Load], pairs: pd.DataFrame) -> pd.DataFrame:
        """score_pairs(the checkpoints `loads` names, pairs), computed in the child."""
        with self._lock:
            child = self._started()
            try:
                pickle.dump((loads, pairs), child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                child.stdin.flush()
                ok, answer = pickle.load(child.stdout)
            except BaseException as err:  # died, or this thread was interrupted mid-exchange: never reuse it
                self._stop()
                if isinstance(err, (EOFError, OSError, pickle.UnpicklingError)):
                    raise ScorerError("the scoring process ended before it answered; it is started again for "
                                      "the next pair") from err
                raise
        if not ok:
            raise _rebuilt(*answer)
        return answer

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _started(self) -> subprocess.Popen:
        if self._child is None or self._child.poll() is not None:
            self._child = subprocess.Popen(
                [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); from app.shell.scorer import main; main()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self._child

    def _stop(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.wait()
            self._child = None


def _rebuilt(module: str, name: str, message: str) -> BaseException:
    """The child's error as the same class with the same message (errors whose __init__ takes other
    arguments too: made without it), else a RuntimeError naming it."""
    cls = getattr(sys.modules.get(module), name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        err = cls.__new__(cls)
        err.args = (message,)
        return err
    return RuntimeError(f"{name}: {message}")


# ---- the child ----------------------------------------------------------------------------
def main() -> None:
    """Answer requests from stdin until it closes: (True, frame) or (False, (module, class, message))."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the libraries print goes to the server's log, never into the answers
    requests = sys.stdin.buffer
    imported = threading.Thread(target=_import, name="imports", daemon=True)
    imported.start()  # while the first request is awaited
    bundles: OrderedDict[tuple, Any] = OrderedDict()
    while True:
        try:
            loads, pairs = pickle.load(requests)
        except EOFError:
            os._exit(0)  # the server ended: nothing to finish, not even the imports
        imported.join()
        from albert_lab.analysis.pairs import score_pairs

        try:
            answer = True, score_pairs([_bundle(bundles, load) for load in loads], pairs)
        except Exception as err:
            answer = False, (type(err).__module__, type(err).__qualname__, str(err))
        _send(answers, answer)


def _import() -> None:
    import torch

    import albert_lab.analysis.pairs
    import albert_lab.checkpoint.load  # noqa: F401

    torch.set_num_threads(1)


def _bundle(bundles: OrderedDict[tuple, Any], load: Load) -> Any:
    from albert_lab.checkpoint.files import stamp
    from albert_lab.checkpoint.load import load_checkpoint

    key = (load, stamp(load.source))  # a folder rewritten in place (a run that saved again) is loaded again
    if key not in bundles:
        bundles[key] = load_checkpoint(load.source, device=load.device, dtype=load.dtype, name=load.name,
                                       casing=load.casing, casing_given=load.casing_given)
        while len(bundles) > LOADED:
            bundles.popitem(last=False)
    bundles.move_to_end(key)
    return bundles[key]


def _send(answers: IO[bytes], answer: tuple) -> None:
    pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
    answers.flush()


TYPED = Scorer()  # the quick lane's typed pairs (app/rooms/sentence_pairs/typed.py); started by ui.warm_up
