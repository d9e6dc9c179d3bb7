"""The training loop: `train(run_dir, config)`, run by the worker process (or in the
foreground, or under torchrun with DDP).

Each step: batch(step) (made ahead by a worker process) -> MLM + pair loss under
bf16 autocast where the hardware has it, compiled on a GPU for long runs -> clip -> LAMB/AdamW step with warm-up and
linear decay. Every `log_every` steps a metrics line; every `eval_every` held-out MLM/NSP/SOP accuracy; every
`gradflow_every` (and at the last step) a per-layer gradient-flow snapshot; every `checkpoint_every` an
atomic checkpoint with the trainer state, so a killed run resumes where it was.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import torch

from albert_lab.analysis.gradflow import gradient_flow_on_batch
from albert_lab.analysis.intrinsic import card_metrics, flat_metrics
from albert_lab.checkpoint.store import recover_checkpoint_dir, save_checkpoint
from albert_lab.data.batching import Batch, BatchesAhead, PretrainingData, Shapes
from albert_lab.data.masking import masking_config
from albert_lab.devices import fast_bf16, resolve_device
from albert_lab.distil import load_teacher
from albert_lab.errors import RunError
from albert_lab.kernels import autocast, tune_for_training
from albert_lab.models import Parts, build_model
from albert_lab.objective import PretrainingLoss
from albert_lab.paths import use_compile_folders
from albert_lab.runfolder import RunFolder, append_jsonl, loss_words
from albert_lab.training.config import TrainConfig
from albert_lab.training.distributed import DistContext
from albert_lab.training.evaluation import HeldOut
from albert_lab.training.init import load_init_weights, standardize_pooler
from albert_lab.training.late import LateScalars
from albert_lab.training.optim import Lamb, build_optimizer, lr_factor
from albert_lab.training.prepare import Prepared, prepare
from albert_lab.training.progress import Progress
from albert_lab.training.provenance import run_card
from albert_lab.training.runs import HEARTBEAT_S, update_run
from albert_lab.training.state import has_trainer_state, resume_checkpoint, save_trainer_state

COMPILE_BACKEND = "inductor"
STANDARDIZE_BATCHES = 8  # batches whose [CLS] states set a standardized pooler (512 pairs at batch 64)


class Cancelled(Exception):
    pass


class Trainer:
    def __init__(self, run_dir: Path, config: TrainConfig, prepared: Prepared | None = None, stop_file: Path | None = None,
                 final_evaluation: bool = True):
        """`stop_file`: another file whose existence cancels the run, as its own cancel file does (a sweep's);
        `final_evaluation`: score the held-out pairs at the end (a sweep measures its models itself)."""
        self.run_dir, self.config = run_dir, config
        self.stop_file, self.final_evaluation = stop_file, final_evaluation
        self.folder = RunFolder(run_dir)
        self.dist = DistContext.from_env()
        if config.threads:
            torch.set_num_threads(config.threads)
        self.prepared = prepared or prepare(config, checked=True)  # a run folder exists only for a checked config
        self.device = self.dist.device(resolve_device("auto"))
        use_bf16 = config.precision == "bf16" or (config.precision == "auto" and fast_bf16(self.device))
        self.dtype = torch.bfloat16 if use_bf16 else None
        self.compiled = config.compiled(self.device.type)
        if self.compiled:  # before torch.compile reads them (inductor reads one as it is imported)
            use_compile_folders()
        model = build_model(self.prepared.spec, seed=config.seed)
        self.init_card = load_init_weights(model, self.prepared.tokenizer_dir) if config.init_from else None
        self.model = tune_for_training(model, self.device).to(self.device).train()
        eval_pairs = self.prepared.eval_pairs
        if not self._pair_head_measures():  # a seeded head nothing trained: its held-out accuracy is chance, not a measurement
            eval_pairs = eval_pairs[eval_pairs.task == "mlm"]
        self.held_out = HeldOut(self.model, self.prepared.tokenizer, eval_pairs, config.max_seq_len, self.dtype)
        parts = Parts.of(self.model)
        if config.heads_only:  # a probe: the encoder stays as loaded (the MLM decoder is the frozen word embeddings)
            parts.encoder.requires_grad_(False)
            parts.encoder.pooler.requires_grad_(True)
        if config.objective == "none":  # no pair loss: the pooler and pair head get no gradient at all
            for module in (parts.encoder.pooler, parts.pair_head):
                module.requires_grad_(False)
        if config.pooler_init == "standardize":  # before DDP copies rank 0's weights; a resumed run then loads its own
            self.init_card = {**(self.init_card or {}), "pooler_standardized": standardize_pooler(
                self.model, [self._data(rank=0, world_size=1).batch(i).to(self.device) for i in range(STANDARDIZE_BATCHES)])}
        self.teacher = (load_teacher(config.distil_from, self.prepared.spec, self.prepared.tokenizer, self.device,
                                     pair=config.distil_pair, seq_len=config.max_seq_len) if config.distil_from else None)
        loss = PretrainingLoss(self.model, config.objective, self.teacher, config.distil_weight, config.pair_weight)
        if self.compiled:
            loss.compile_core(COMPILE_BACKEND)
        self.loss_fn = self.dist.wrap(loss)
        self.optimizer = build_optimizer(self.model, config.optimizer, config.lr, config.weight_decay)
        if self.compiled and isinstance(self.optimizer, Lamb):  # fused AdamW is one kernel already
            self.optimizer.compile_update(COMPILE_BACKEND)
        self.progress = Progress()
        self.data = self._data(self.dist.rank, self.dist.world_size)
        self.budget_s = config.max_minutes * 60 if config.max_minutes else None
        self.cancel = threading.Event()
        self.lock = threading.Lock()

    def _pair_head_measures(self) -> bool:
        """Whether the pair head means something: this run trains it (SOP or NSP), or it came with the
        checkpoint the run starts from. A run without a pair loss from scratch, or from a checkpoint
        without a pair head, has a seeded head nothing trained: no held-out NSP or SOP accuracy."""
        if self.config.objective != "none":
            return True
        return self.init_card is not None and not any(head.endswith(("sop_classifier", "seq_relationship"))
                                                      for head in self.init_card["heads_added"])

    def _data(self, rank: int, world_size: int) -> PretrainingData:
        """The run's batches, a pure function of (seed, step), as rank `rank` of `world_size` sees them."""
        config, tok = self.config, self.prepared.tokenizer
        masking = masking_config(tok, config.max_predictions)
        shapes = Shapes.bucketed(config.max_seq_len, masking) if self.compiled else Shapes()  # few shapes, few graphs
        return PretrainingData(self.prepared.train_docs, config.objective, masking,
                               (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id), config.max_seq_len,
                               config.batch_size, config.seed, config.short_seq_prob, rank, world_size, config.chunk_start,
                               shapes)

    # ---- run.json ----------------------------------------------------------------------
    def update_run(self, **changes: Any) -> None:
        if self.dist.is_main:
            with self.lock:
                update_run(self.run_dir, **changes)

    def _heartbeat(self, stop: threading.Event) -> None:
        while not stop.wait(HEARTBEAT_S):
            self.update_run(heartbeat=time.time(), step=self.progress.step)

    # ---- the run -----------------------------------------------------------------------
    def run(self) -> str:
        checkpoint = self.folder.checkpoint
        if self.dist.is_main:
            recover_checkpoint_dir(checkpoint)
        self.dist.barrier()
        if has_trainer_state(checkpoint):
            self._resume(checkpoint)
        self.update_run(status="running", pid=os.getpid(), started=time.time(), heartbeat=time.time(),
                        step=self.progress.step, total_steps=self.config.max_steps, device=str(self.device),
                        precision="bf16" if self.dtype else "fp32", world_size=self.dist.world_size, message="")
        stop = threading.Event()
        threading.Thread(target=self._heartbeat, args=(stop,), daemon=True, name="heartbeat").start()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.cancel.set())
        threads = torch.get_num_threads()
        scored = (f" (scored on {self.prepared.eval_documents:,} documents of {self.config.eval_corpus})"
                  if self.config.eval_corpus else "")
        self._say(f"training {self.prepared.spec.label} on {self.prepared.corpus.describe()}{scored}; device {self.device}, "
             f"{'bf16 autocast' if self.dtype else 'fp32'}{', compiled' if self.compiled else ''}, "
             f"{threads} thread{'s' if threads != 1 else ''}, "
             f"world size {self.dist.world_size}" + (f"; resuming at step {self.progress.step}" if self.progress.step else ""))
        try:
            self._loop()
            status = "succeeded"
        except Cancelled:
            status = "cancelled"
        finally:
            stop.set()
        if self.dist.is_main and self.progress.window.get("steps"):
            self._log_window(self.optimizer.param_groups[0]["lr"])  # the last steps, when not a multiple of log_every
        if self.dist.is_main:
            table, evaluated = self._final_evaluation() if status == "succeeded" and self.final_evaluation else (None, None)
            if table is not None:
                self._metrics({"kind": "eval", "step": self.progress.step, "final": True, **evaluated,
                               **{f"eval_{k}": v for k, v in flat_metrics(table).items()}})
            # with intervals and n, as the shipped cards; and how many of the held-out pairs
            self._save(card_metrics(table) if table is not None else {}, evaluated)
            self.update_run(status=status, finished=time.time(), step=self.progress.step, heartbeat=time.time(),
                            message="" if status == "succeeded" else "cancelled; the checkpoint holds the last step")
        # Every rank waits here for rank 0's evaluation and save: a rank that tore down its gloo
        # group while rank 0 still held one made a process abort at exit now and then
        # ('terminate called without an active exception'), after a run that had succeeded.
        # Bounded: ranks that saw a cancel or the time budget a step apart never meet here.
        try:
            self.dist.barrier(timeout_s=300)
        except RuntimeError as err:
            _log(f"rank {self.dist.rank}: the ranks did not meet at the end ({err}); closing anyway")
        self.dist.close()
        self._say(f"run {status} at step {self.progress.step}")
        return status

    def _say(self, message: str) -> None:
        """Progress in the log, from rank 0 only (under torchrun every rank printed every line)."""
        if self.dist.is_main:
            _log(message)

    def _fraction(self) -> float:
        """Progress through the budget in [0, 1]: steps, or time, whichever is further."""
        by_steps = self.progress.step / self.config.max_steps if self.config.max_steps else 0.0
        by_time = self.progress.elapsed / self.budget_s if self.budget_s else 0.0
        return max(by_steps, by_time)

    def _loop(self) -> None:
        with BatchesAhead(self.data, self.progress.step, self.device) as batches:  # made off this thread
            self._steps(batches)

    def _steps(self, batches: BatchesAhead) -> None:
        params = [p for p in self.model.parameters() if p.requires_grad]
        clip = self.config.clip_norm or float("inf")
        last = time.perf_counter()
        self.scalars = LateScalars(self.device)
        while (fraction := self._fraction()) < 1.0:
            if self.cancel.is_set() or self.folder.cancel.exists() or (self.stop_file is not None and self.stop_file.exists()):
                raise Cancelled
            lr = self.config.lr * lr_factor(self.progress.step, fraction, self.config.warmup_steps)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            batch = batches.take(self.progress.step)
            with autocast(self.device, self.dtype):
                out = self.loss_fn(batch)
            out.loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(params, clip)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            # The step's numbers: one tensor, read one step late (training/late.py), or now where this step needs them
            distil = out.distil_loss.detach() if out.distil_loss is not None else out.loss.new_zeros(())
            values = torch.stack([t.detach().float() for t in (out.loss, out.mlm_loss, out.pair_loss, grad_norm, out.mlm_correct,
                                                               out.pair_correct, distil)])
            now = time.perf_counter()
            tokens = batch.step_tokens  # every rank's, counted on the host: no collective, no wait
            self._account(self.scalars.take())  # the step before's, long done
            p = self.progress
            self.scalars.put(values, (p.step, dict(time=now - last, tokens=tokens, steps=1, mlm_n=out.mlm_count,
                                                    pair_n=out.pair_count)))
            p.step, p.tokens, p.elapsed = p.step + 1, p.tokens + tokens, p.elapsed + now - last
            if self._due():
                self._account(self.scalars.take(now=True))
                if self.dist.is_main:
                    self._periodic(batch, lr)
            last = time.perf_counter()  # evaluation and checkpoint time is not step time
        self._account(self.scalars.take())

    def _due(self) -> bool:
        """Whether this step logs, evaluates, saves, snapshots its gradients or is the last: it reads its numbers now."""
        step, config = self.progress.step, self.config
        return (step == 1 or self._fraction() >= 1.0 or
                any(step % every == 0 for every in (config.log_every, config.gradflow_every, config.eval_every,
                                                     config.checkpoint_every)))

    def _account(self, taken: tuple[list[float], Any] | None) -> None:
        """A step's numbers into the progress window; a loss that is not finite ends the run."""
        if taken is None:
            return
        (loss, mlm_loss, pair_loss, norm, mlm_hits, pair_hits, distil_loss), (step, counts) = taken
        if not math.isfinite(loss):
            raise RunError(f"the loss became {loss} at step {step}; settings that can cause it: "
                           f"{self.config.divergence_causes()}")
        self.progress.add(**counts, loss=loss, mlm_loss=mlm_loss, pair_loss=pair_loss, grad_norm=norm, mlm_hits=mlm_hits,
                          pair_hits=pair_hits, distil_loss=distil_loss)

    def _periodic(self, batch: Batch, lr: float) -> None:
        step, config = self.progress.step, self.config
        if step % config.log_every == 0 or step == 1:
            self._log_window(lr)
        if step % config.gradflow_every == 0 or self._fraction() >= 1.0:  # and the last step, whatever its number
            frame = gradient_flow_on_batch(self.model, self.prepared.spec, batch, config.objective, self.dtype)
            append_jsonl(self.folder.gradflow, {"step": step, "rows": frame.to_dict(orient="records")})
        if step % config.eval_every == 0:
            metrics = self.held_out.metrics(limit=config.eval_limit)
            self._metrics({"kind": "eval", "step": step, **{f"eval_{k}": v for k, v in metrics.items()}})
        if step % config.checkpoint_every == 0:
            self._save({})

    def _log_window(self, lr: float) -> None:
        step = self.progress.step
        row = self.progress.train_row(lr, self.data.epoch_of(step), self.config.max_steps, self.budget_s, bool(self.teacher))
        self._metrics(row)
        self._say(f"step {step}: {loss_words(row)}, {row['tokens_per_s']:,.0f} tok/s, eta {row['eta_s']:,.0f} s")

    def _metrics(self, row: dict[str, Any]) -> None:
        append_jsonl(self.folder.metrics, {**row, "time": time.time()})

    def _final_evaluation(self) -> tuple[Any, dict[str, Any] | None]:
        """The held-out evaluation at the end of a run, its progress in the log and run.json's message."""
        return self.held_out.final(self.progress.elapsed, self.config.full_eval, self._say,
                                   lambda words: self.update_run(message=words))

    # ---- checkpoints -------------------------------------------------------------------
    def _save(self, metrics: dict[str, dict[str, float]], evaluated: dict[str, Any] | None = None) -> None:
        """Weights, tokenizer, card and trainer state in one atomic checkpoint folder."""
        p, prep = self.progress, self.prepared
        card = run_card(self.config, self.run_dir.name, prep, p.step, p.tokens, p.elapsed, metrics, self.init_card,
                        self.teacher.describe() if self.teacher else None, self.device)
        if evaluated:
            card["evaluation"] = evaluated
        scalars = {"step": p.step, "tokens": p.tokens, "elapsed": p.elapsed}
        save_checkpoint(self.model, prep.tokenizer, prep.spec, self.folder.checkpoint, card,
                        tokenizer_source=prep.tokenizer_dir,
                        extra=lambda folder: save_trainer_state(folder, self.optimizer, scalars))

    def _resume(self, checkpoint: Path) -> None:
        step, tokens, elapsed = resume_checkpoint(checkpoint, self.model, self.optimizer, self.device)
        self.progress.step, self.progress.tokens, self.progress.elapsed = step, tokens, elapsed
        if self.dist.is_main:
            self._metrics({"kind": "resume", "step": self.progress.step})
        self._say(f"resumed from {checkpoint} at step {self.progress.step}")


def train(run_dir: Path, config: TrainConfig, prepared: Prepared | None = None) -> str:
    """Run (or resume) the run in `run_dir`; returns the final status."""
    return Trainer(run_dir, config, prepared).run()


def _log(message: str) -> None:
    print(time.strftime("%H:%M:%S"), message, flush=True)
