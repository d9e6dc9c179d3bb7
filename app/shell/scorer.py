"""Pairs scored in a process of their own (albert_lab.analysis.pairs.score_pairs), so that their
torch operations take no turns for the GIL with the visitors' scripts.

A torch operation lets go of the GIL while it computes and takes it back to return; in the
server, twenty visitors' scripts and an upload's thread take it in between, so a typed pair
that computes in 0.2 s alone took 1.4-4.3 s in the quick lane with a class on the server
(benchmarks/bench_class.py, docs/benchmarks.md), and the upload's thousands of operations
took the scripts' turns. Here a child process (`python -c ...main()`: the server's interpreter,
working folder and environment) loads the checkpoints asked for once and scores each request
sent down its pipe; the server's thread waits for the answer in a read, without the GIL.

A request with `progress` hears it before each batch, as score_pairs' own callback: the child's
computation waits there for the answer, so a Stop or a visitor who left (the callback raising)
ends it, and a heavy lane's turn passed to another visitor (app/shell/turns.py) leaves it
waiting while that visitor's request, maybe another upload, computes in the same child beside it
(each request has a thread of its own there; one computes at a time, as the lanes decide).

An error in the child comes back as the same class with the same message (a checkpoint that
cannot load is the user's error there as here); a child that died (killed, out of memory) is
said as one error to each request it had and started afresh for the next one. The child ends
when the server does (its pipe closes)."""

from __future__ import annotations

import itertools
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

ROOT = Path(__file__).resolve().parents[2]  # where `app` is imported from, in the child too
LOADED = 8  # checkpoints a child keeps loaded, the least recently used out first


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
    """One child process and the requests sent to it; `score` from any thread."""

    def __init__(self) -> None:
        self._child: _Child | None = None
        self._lock = threading.RLock()  # the child's start and every message sent to it
        self._jobs = itertools.count()

    def start(self) -> None:
        """Start the child now (it imports torch and the model code: seconds), not at the first request."""
        with self._lock:
            self._started()

    def score(self, loads: list[Load], pairs: pd.DataFrame, progress: Callable[[float, str], None] | None = None,
              threads: int = 1) -> pd.DataFrame:
        """score_pairs(the checkpoints `loads` names, pairs, progress) on `threads` torch threads, in the child."""
        job, box = next(self._jobs), queue.Queue()
        with self._lock:
            while not (child := self._started()).register(job, box):  # it died just now: another
                pass
            self._send(child, ("score", job, loads, pairs, threads, progress is not None))
        try:
            while True:
                kind, answer = box.get()
                if kind == "progress":
                    try:
                        progress(*answer)
                    except BaseException:  # a Stop, a visitor who left: the child's computation ends too
                        self._send(child, ("stop", job))
                        while box.get()[0] not in _FINAL:
                            pass
                        raise
                    self._send(child, ("go", job))
                elif kind == "done":
                    return answer
                elif kind == "error":
                    raise _rebuilt(*answer)
                else:  # died
                    raise ScorerError("the scoring process ended before it answered; it is started again for the "
                                      "next request")
        finally:
            child.boxes.pop(job, None)

    def close(self) -> None:
        with self._lock:
            if self._child is not None:
                self._child.end()
                self._child = None

    def _started(self) -> _Child:
        if self._child is None or self._child.dead.is_set() or self._child.process.poll() is not None:
            self._child = _Child()
        return self._child

    def _send(self, child: _Child, message: tuple) -> None:
        with self._lock:
            try:
                pickle.dump(message, child.process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                child.process.stdin.flush()
            except (OSError, ValueError):  # its pipe closed: the reader tells each request
                child.end()


_FINAL = ("done", "error", "stopped", "died")


class _Child:
    """The process, a thread reading its answers into each request's box, and the boxes."""

    def __init__(self, command: list[str] | None = None) -> None:
        main_here = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from app.shell.scorer import main; main()"
        self.process = subprocess.Popen(command or [sys.executable, "-c", main_here], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE)
        self.boxes: dict[int, queue.Queue] = {}  # each request's answers, with lock
        self.dead, self.lock = threading.Event(), threading.Lock()
        threading.Thread(target=self._read, name="scorer-answers", daemon=True).start()

    def register(self, job: int, box: queue.Queue) -> bool:
        """Whether the request's box will hear its answers, or that the child died (False: it is dead)."""
        with self.lock:
            if not self.dead.is_set():
                self.boxes[job] = box
            return not self.dead.is_set()

    def _read(self) -> None:
        try:
            while True:
                kind, job, answer = pickle.load(self.process.stdout)
                if (box := self.boxes.get(job)) is not None:
                    box.put((kind, answer))
        except Exception:  # EOF, or an answer cut short: the process is gone or no longer to be trusted
            with self.lock:
                self.dead.set()
                boxes = list(self.boxes.values())
            self.end()
            for box in boxes:
                box.put(("died", None))

    def end(self) -> None:
        self.dead.set()
        self.process.kill()
        self.process.wait()


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
class _Stopped(BaseException):
    """The server said stop at a progress report."""


def main() -> None:
    """Answer the server's requests until its end of the pipe closes, each in a thread of its own.
    Down the pipe: ("score", job, loads, pairs, threads, reports), ("go" | "stop", job, None);
    up it: ("progress", job, (fraction, words)) and one of ("done", job, frame),
    ("error", job, (module, class, message)), ("stopped", job, None)."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the libraries print goes to the server's log, never into the answers
    requests = sys.stdin.buffer
    imported = threading.Thread(target=_import, name="imports", daemon=True)
    imported.start()  # while the first request is awaited
    child = _Serving(answers, imported)
    while True:
        try:
            kind, job, *rest = pickle.load(requests)
        except EOFError:
            os._exit(0)  # the server ended: nothing to finish, not even the imports
        if kind == "score":
            child.replies[job] = queue.Queue()
            threading.Thread(target=child.score, args=(job, *rest), name=f"job-{job}", daemon=True).start()
        elif (replies := child.replies.get(job)) is not None:
            replies.put(kind)


def _import() -> None:
    import torch

    import albert_lab.analysis.pairs
    import albert_lab.checkpoint.load  # noqa: F401

    torch.set_num_threads(1)


class _Serving:
    def __init__(self, answers: IO[bytes], imported: threading.Thread) -> None:
        self.answers, self.imported = answers, imported
        self.replies: dict[int, queue.Queue] = {}  # job -> the server's "go" or "stop" after each report
        self.bundles: OrderedDict[tuple, Any] = OrderedDict()
        self.loading, self.sending = threading.Lock(), threading.Lock()

    def score(self, job: int, loads: list[Load], pairs: pd.DataFrame, threads: int, reports: bool) -> None:
        self.imported.join()
        import torch

        from albert_lab.analysis.pairs import score_pairs

        def told(fraction: float, words: str) -> None:
            self.send(("progress", job, (fraction, words)))
            if self.replies[job].get() == "stop":
                raise _Stopped
            torch.set_num_threads(threads)  # another request may have set its own while this one waited

        try:
            with self.loading:
                bundles = [self.bundle(load) for load in loads]
            torch.set_num_threads(threads)
            answer = "done", score_pairs(bundles, pairs, progress=told if reports else None)
        except _Stopped:
            answer = "stopped", None
        except Exception as err:
            answer = "error", (type(err).__module__, type(err).__qualname__, str(err))
        finally:
            self.replies.pop(job, None)
        self.send((answer[0], job, answer[1]))

    def bundle(self, load: Load) -> Any:
        from albert_lab.checkpoint.files import stamp
        from albert_lab.checkpoint.load import load_checkpoint

        key = (load, stamp(load.source))  # a folder rewritten in place (a run that saved again) is loaded again
        if key not in self.bundles:
            self.bundles[key] = load_checkpoint(load.source, device=load.device, dtype=load.dtype, name=load.name,
                                                casing=load.casing, casing_given=load.casing_given)
            while len(self.bundles) > LOADED:
                self.bundles.popitem(last=False)
        self.bundles.move_to_end(key)
        return self.bundles[key]

    def send(self, message: tuple) -> None:
        with self.sending:
            pickle.dump(message, self.answers, protocol=pickle.HIGHEST_PROTOCOL)
            self.answers.flush()


TYPED = Scorer()  # the quick lane's typed pairs (app/rooms/sentence_pairs/typed.py); started by serve.import_in_background
UPLOADS = Scorer()  # the heavy lane's uploads (app/rooms/sentence_pairs/upload.py); started by the first
