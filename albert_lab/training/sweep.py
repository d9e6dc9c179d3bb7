"""The uptraining sweep: what each rank of a relaxed model recovers once it has trained (Bae et al.,
ICLR 2025), told apart from what the training alone buys.

One run, one turn of the queue, trains one model after another from the same data, seed and
number of steps (so the same batches and the same tokens): the relaxed model of each rank (rank 0
is the pure ALBERT albertize makes), BERTs of fewer of the source's layers where asked (shallow.py:
a BERT of a relaxed model's size), and the source itself. Each trains as `albert-lab train
--init-from` its starting checkpoint would (the member's `command`), in a run folder of its own:

runs/<run-id>/
  run.json            the source's training config, the plan (`sweep`), status, step of all members
  before.json         the curve of the starting models (analysis/relaxation.measure)
  after.json          the curve of the trained models, against the source as it was
  members/<member>/   a run folder each: run.json, metrics.jsonl, checkpoint/; init/, its starting checkpoint

Resumable: the starting checkpoints, the curve before, each member's training and the curve after
are written one by one, atomically; a resume (jobs.resume_run: the worker hands a sweep to
run_sweep) skips what is done and resumes a member's training from its last checkpoint, as any run
resumes. Cancelling the sweep cancels the member that trains (its checkpoint kept).
"""

from __future__ import annotations

import dataclasses
import json
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from albert_lab.errors import RunError
from albert_lab.runfolder import RunFolder, write_json_atomic
from albert_lab.training.config import TrainConfig
from albert_lab.training.runs import HEARTBEAT_S, RunInfo, read_run, update_run
from albert_lab.training.sweep_plan import AFTER, BEFORE, SWEEP, Member, SweepPlan, check_plan, member_dir, start_folder


# ---- the launch ----------------------------------------------------------------------------------
def start_sweep(config: TrainConfig, plan: SweepPlan, root: Path | None = None, run_id: str | None = None,
                foreground: bool = False, announce: Callable[[RunInfo], None] | None = None, command: str = "",
                **launch: Any) -> RunInfo:
    """Launch a sweep as a run (jobs.start_run: validated, prepared, queued; `launch`: its owner, budget
    and address), its plan and `command` in run.json and its steps those of all its members."""
    from albert_lab.training.jobs import start_run

    check_plan(plan, config)
    extra = {SWEEP: plan.to_dict(), "sweep_command": command, "total_steps": (config.max_steps or 0) * len(plan.members())}
    return start_run(config, root, run_id, foreground, announce, extra=extra, **launch)


def is_sweep(run_dir: Path) -> bool:
    return SWEEP in RunFolder(run_dir).read()


def list_sweeps(root: Path, source: str | Path | None = None) -> list[RunInfo]:
    """The sweeps in a runs folder, newest first; of one source's folder where given."""
    from albert_lab.training.runs import list_runs

    want = Path(source).resolve() if source is not None else None
    return [r for r in list_runs(root) if isinstance(r.raw.get(SWEEP), dict)
            and (want is None or Path(str(r.raw[SWEEP].get("source", ""))).resolve() == want)]


# ---- the worker ----------------------------------------------------------------------------------
def run_sweep(run_dir: Path, config: TrainConfig, prepared=None) -> str:
    """Run (or resume) the sweep in `run_dir` in this process, holding the training slot; returns its status."""
    import torch

    from albert_lab.training.prepare import prepare

    if config.threads:  # measured with the run's threads too: another count sums in another order
        torch.set_num_threads(config.threads)
    folder = RunFolder(run_dir)
    raw = folder.read()
    plan = SweepPlan.from_dict(raw[SWEEP])
    members = plan.members()
    steps = config.max_steps or 0
    watch = Watch(run_dir, members, steps)
    update_run(run_dir, status="running", started=time.time(), heartbeat=time.time(), message="making the starting models")
    watch.start()
    try:
        for member in members:
            make_start(run_dir, plan, member, config, raw.get("sweep_command", ""))
        if not (run_dir / BEFORE).is_file():
            watch.say("measuring the starting models")
            started = time.time()
            write_curve(run_dir / BEFORE, measure_members(run_dir, plan, config, members, trained=False), started)
        base = prepared or prepare(config, checked=True)
        for index, member in enumerate(members):
            if folder.cancel.exists():
                return _ended(run_dir, watch, "cancelled")
            watch.member = index
            watch.say(f"training {member.name}")
            if train_member(run_dir, config, plan, member, base) == "cancelled":
                return _ended(run_dir, watch, "cancelled")
        watch.member = len(members)
        if not (run_dir / AFTER).is_file():
            watch.say(f"measuring the {len(members)} trained models")
            started = time.time()
            write_curve(run_dir / AFTER, measure_members(run_dir, plan, config, members, trained=True), started)
        return _ended(run_dir, watch, "succeeded")
    finally:
        watch.stop()


def _ended(run_dir: Path, watch: Watch, status: str) -> str:
    watch.stop()
    message = "" if status == "succeeded" else "cancelled; each member keeps its last checkpoint: resume to go on"
    update_run(run_dir, status=status, finished=time.time(), heartbeat=time.time(), step=watch.steps_done(), message=message)
    print(time.strftime("%H:%M:%S"), f"sweep {status}", flush=True)
    return status


class Watch:
    """The sweep's progress in its run.json (step of all members, a message), every heartbeat."""

    def __init__(self, run_dir: Path, members: list[Member], steps: int):
        self.run_dir, self.members, self.steps = run_dir, members, steps
        self.member, self.words = 0, ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="sweep-progress")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """No more updates once this returns (a final status written after it is never overwritten)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def say(self, words: str) -> None:
        self.words = words
        print(time.strftime("%H:%M:%S"), words, flush=True)
        self.update()

    def member_step(self, index: int) -> int:
        try:
            return int(RunFolder(member_dir(self.run_dir, self.members[index])).read().get("step", 0))
        except (OSError, ValueError, TypeError):
            return 0

    def steps_done(self) -> int:
        done = sum(self.member_step(i) for i in range(min(self.member, len(self.members))))
        return done + (self.member_step(self.member) if self.member < len(self.members) else 0)

    def update(self) -> None:
        message = self.words
        if self.member < len(self.members) and self.words.startswith("training"):
            m = self.members[self.member]
            message = (f"training {m.name} ({self.member + 1} of {len(self.members)}): step "
                       f"{self.member_step(self.member):,} of {self.steps:,}")
        update_run(self.run_dir, heartbeat=time.time(), step=self.steps_done(), message=message)

    def _loop(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self.update()


def make_start(run_dir: Path, plan: SweepPlan, member: Member, config: TrainConfig, command: str) -> Path:
    """The member's starting checkpoint, made once (relax or shallow; a save is atomic: present is complete);
    `command`: the sweep's, which a shallow BERT's card names (no command of its own makes one)."""
    from albert_lab.relax import parse_rank, relax
    from albert_lab.shallow import shallow

    out = start_folder(run_dir, plan, member)
    if member.kind == "source" or out.is_dir():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    if member.kind == "relaxed":
        return relax(plan.source, out, parse_rank(member.value), None, None, plan.embedding_size, plan.sharing, plan.groups,
                     plan.init, config.seed, command=f"albert-lab relax --checkpoint {plan.source} --rank {member.value} "
                     f"--sharing {plan.sharing} --init {plan.init} --seed {config.seed} --out {out}")
    return shallow(plan.source, out, int(member.value), config.seed, command=command)


def member_config(config: TrainConfig, run_dir: Path, plan: SweepPlan, member: Member) -> TrainConfig:
    """The sweep's settings for one member: its start, its spec (that start's, the run's objective, no
    dropout) and the `albert-lab train` command that makes the same model."""
    from albert_lab.training.init import uptrain_spec
    from albert_lab.training.recipe import train_command

    folder, spec = uptrain_spec(start_folder(run_dir, plan, member), config.objective, dropout=0.0)
    own = dataclasses.replace(config, spec=spec.to_dict(), init_from=str(folder), name=f"{config.name or 'sweep'} {member.name}")
    return dataclasses.replace(own, command=train_command(["--init-from", folder, "--objective", config.objective,
                                                           "--dropout", 0], own))


def train_member(run_dir: Path, config: TrainConfig, plan: SweepPlan, member: Member, base) -> str:
    """Train (or resume, or skip when done) one member in its run folder, on the sweep's data (`base`:
    the source's preparation; every member has its tokenizer)."""
    from albert_lab.training.loop import Trainer

    folder = RunFolder(member_dir(run_dir, member))
    if folder.is_run() and folder.read().get("status") == "succeeded" and (folder.checkpoint / "config.json").is_file():
        return "succeeded"
    own = member_config(config, run_dir, plan, member)
    if not folder.is_run():
        folder.path.mkdir(parents=True, exist_ok=True)
        write_json_atomic(folder.run_json, {"id": member.slug, "status": "queued", "created": time.time(), "pid": None,
                                            "config": own.to_dict(), "step": 0, "total_steps": own.max_steps})
    prepared = dataclasses.replace(base, config=own, spec=own.model_spec(), tokenizer_dir=Path(own.init_from))
    cancel = RunFolder(run_dir).cancel
    try:
        status = Trainer(folder.path, own, prepared, stop_file=cancel, final_evaluation=False).run()
    except BaseException as err:
        update_run(folder.path, status="failed", finished=time.time(), message=f"{type(err).__name__}: {err}")
        raise
    finally:
        if threading.current_thread() is threading.main_thread():  # the trainer's handler cancelled only itself
            signal.signal(signal.SIGTERM, lambda *_: cancel.touch())
    return status


# ---- measuring -----------------------------------------------------------------------------------
def measure_members(run_dir: Path, plan: SweepPlan, config: TrainConfig, members: list[Member], trained: bool) -> pd.DataFrame:
    """The curve of the members' starting (or trained) models, each against the source as it was
    (analysis/relaxation.measure), on held-out pairs of the sweep's corpus."""
    from albert_lab.analysis.evaluation import evaluation_pairs
    from albert_lab.analysis.relaxation import CurveModel, curve_frame, measure
    from albert_lab.checkpoint.files import read_card
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.data.corpus import MAX_LEN
    from albert_lab.params import count
    from albert_lab.relax import card_facts, load_source

    reference = load_source(plan.source)
    models = []
    for m in members:
        where = member_dir(run_dir, m) / "checkpoint" if trained else start_folder(run_dir, plan, m)
        bundle = load_checkpoint(where, device="cpu", name=m.name)
        facts = card_facts(read_card(start_folder(run_dir, plan, m))) or {}
        energy = 1.0 if m.kind == "source" else float(facts.get("energy_kept", float("nan")))
        models.append(CurveModel(bundle, m.rank, bundle.spec, energy, m.end))
    held = evaluation_pairs(config.eval_corpus or config.corpus, out_of_domain=False)
    mlm = reference.heads.mlm != "missing" and all(m.bundle.heads.mlm != "missing" for m in models)
    task = config.objective if config.objective != "none" else None  # the task every member's pair head trained for
    measured = measure([m.bundle for m in models], reference, held, plan.pairs, min(MAX_LEN, reference.spec.max_positions),
                       mlm=mlm, pair_task=task)
    return curve_frame(models, measured, task, count(reference.spec).total)


def write_curve(path: Path, curve: pd.DataFrame, started: float) -> None:
    """A measured curve, with when and in how many seconds it was measured."""
    write_json_atomic(path, {"curve": json.loads(curve.to_json(orient="records")), "written": time.time(),
                             "seconds": round(time.time() - started, 1)})


@dataclass(frozen=True)
class SweepResult:
    """A sweep as its readers see it: the run, its plan, the curves so far (None until measured)."""

    run: RunInfo
    plan: SweepPlan
    before: pd.DataFrame | None
    after: pd.DataFrame | None
    tokens: int | None  # the tokens each member trained on (the same for all: the same batches)
    seconds: dict[str, float]  # each member's training time


def read_sweep(run_dir: Path) -> SweepResult:
    """The sweep in `run_dir`; RunError for a run folder that holds no sweep."""
    from albert_lab.analysis.relaxation import COLUMNS

    run = read_run(run_dir)
    if SWEEP not in run.raw:
        raise RunError(f"{run_dir}: a training run, not a sweep (made by albert-lab relax --uptrain)")
    plan = SweepPlan.from_dict(run.raw[SWEEP])

    def curve(name: str) -> pd.DataFrame | None:
        path = run_dir / name
        return pd.DataFrame(json.loads(path.read_text())["curve"], columns=COLUMNS) if path.is_file() else None

    tokens, seconds = None, {}
    for m in plan.members():
        card = member_dir(run_dir, m) / "checkpoint" / "albert_lab.json"
        if card.is_file():
            provenance = json.loads(card.read_text()).get("provenance", {})
            tokens, seconds[m.name] = provenance.get("tokens", tokens), provenance.get("wall_time_s", 0.0)
    return SweepResult(run, plan, curve(BEFORE), curve(AFTER), tokens, seconds)

