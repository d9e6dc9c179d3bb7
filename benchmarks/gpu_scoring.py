"""bench_gpu.py's second and third parts, and what its figures share: `albert-lab score` of many
pairs both ways against the loop a user would write (the command with its process start, the
loop in this process, interleaved), the analyses on an ALBERT-xxlarge-shaped model, and the
median [min-max] of a list of timings. Run through bench_gpu.py."""

from __future__ import annotations

import csv
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from albert_lab.models import build_model
from albert_lab.params import count
from albert_lab.spec import PRESETS, ModelSpec

ROOT = Path(__file__).resolve().parent.parent
MINILM = ROOT / "checkpoints" / "bert-sop-minilm"
SMALL = dict(embedding_size=16, hidden_size=32, num_layers=2, num_heads=2, ffn_size=64)  # --smoke's shapes


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def fmt(s: dict[str, float], spec: str) -> str:
    return f"{format(s['median'], spec)} [{format(s['min'], spec)}-{format(s['max'], spec)}]"


# ---- scoring and analyses ------------------------------------------------------------------------
def word_list(tokenizer, n: int = 4000) -> list[str]:
    vocab = [w for w in tokenizer.get_vocab() if w.isalpha() and w.islower() and len(w) > 2]
    return sorted(vocab)[:n]


def sentences(words: list[str], count_: int, seed: int, lo: int = 4, hi: int = 30) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, size=int(rng.integers(lo, hi)))).capitalize() + "." for _ in range(count_)]


def save_random(spec: ModelSpec, folder: Path) -> Path:
    """Random weights of `spec` at MiniLM's vocabulary, saved with MiniLM's tokenizer, heads marked trained."""
    from albert_lab.checkpoint.store import save_checkpoint
    from albert_lab.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(MINILM)
    spec = spec.replace(vocab_size=len(tokenizer))
    model = build_model(spec, seed=0).eval()
    return save_checkpoint(model, tokenizer, spec, folder, {"name": folder.name, "heads": {"mlm": "trained", "pair": "trained"}})


def loop_scores(folder: Path, a: list[str], b: list[str], device: torch.device) -> np.ndarray:
    """The stock model, both orders, pairs sorted by length in batches of 64, fp32."""
    from transformers import AlbertForPreTraining, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AlbertForPreTraining.from_pretrained(folder, attn_implementation="sdpa").to(device).eval()
    out = np.empty((len(a), 2))
    order = np.argsort([len(x) + len(y) for x, y in zip(a, b)], kind="stable")
    with torch.inference_mode():
        for column, (first, second) in enumerate(((a, b), (b, a))):
            for lo in range(0, len(order), 64):
                idx = order[lo:lo + 64]
                enc = tokenizer([first[i] for i in idx], [second[i] for i in idx], padding=True, truncation=True,
                                max_length=128, return_tensors="pt", return_token_type_ids=True).to(device)
                out[idx, column] = torch.softmax(model(**enc).sop_logits.float(), -1)[:, 0].cpu().numpy()
    return out


def compare_scoring(work: Path, device: torch.device, sizes: list[int], rounds: int, smoke: bool) -> list[dict]:
    """The command (a process of its own, started each round) against the loop, interleaved, on random ALBERT-base
    weights (--smoke: tiny), for each number of pairs in `sizes`: a few pairs show the fixed costs."""
    from albert_lab.analysis.pairs import BF16_PER_MATMUL, TF32_PER_MATMUL, rounding_bound, scoring_precision
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.tokenizer import load_tokenizer

    folder = save_random(PRESETS["albert-base"].replace(**(SMALL if smoke else {})), work / "albert-base-random")
    bundle = load_checkpoint(folder, device=device.type)
    dtype, tf32 = scoring_precision(bundle)
    precision = "bf16 autocast" if dtype == torch.bfloat16 else "fp32, TF32 matmuls" if tf32 else "fp32"
    per_matmul = BF16_PER_MATMUL if dtype == torch.bfloat16 else TF32_PER_MATMUL if tf32 else None
    bound = rounding_bound(bundle.model, per_matmul) if per_matmul else None
    words = word_list(load_tokenizer(MINILM))
    return [score_both(work, folder, words, n, device, rounds, precision, bound) for n in sizes]


def score_both(work: Path, folder: Path, words: list[str], pairs: int, device: torch.device, rounds: int,
               precision: str, bound: float | None) -> dict:
    """`albert-lab score` of `pairs` pairs against loop_scores, interleaved over `rounds`; the largest difference
    of their probabilities, beside the bound of the reduced precision the command scored in (None in fp32)."""
    a, b = sentences(words, pairs, 1), sentences(words, pairs, 2)
    csv_path, out_csv = work / f"pairs-{pairs}.csv", work / f"scores-{pairs}.csv"
    with csv_path.open("w", newline="") as f:
        csv.writer(f).writerows([("sentence_a", "sentence_b"), *zip(a, b)])
    command = [sys.executable, "-m", "albert_lab", "score", str(csv_path), "--checkpoint", str(folder),
               "--device", device.type, "--out", str(out_csv)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ALBERT_LAB_ALLOWED_DIRS": str(work)}
    ours_s, loop_s = [], []
    for r in range(rounds):
        for side in (("ours", "loop") if r % 2 == 0 else ("loop", "ours")):
            sync(device)
            start = time.perf_counter()
            if side == "ours":
                subprocess.run(command, check=True, capture_output=True, env=env, cwd=ROOT)
                ours_s.append(time.perf_counter() - start)
            else:
                expected = loop_scores(folder, a, b, device)
                sync(device)
                loop_s.append(time.perf_counter() - start)
    with out_csv.open() as f:
        rows = list(csv.DictReader(f))
    got = np.array([[float(r["p_ab"]), float(r["p_ba"])] for r in rows])
    diff = float(np.abs(got - expected).max()) if got.shape == expected.shape else float("nan")
    row = {"pairs": pairs, "albert_lab_command_s": spread(ours_s), "loop_s": spread(loop_s),
           "ratio": spread([o / lp for o, lp in zip(ours_s, loop_s)]), "precision": precision,
           "max_abs_difference": diff, "bound": bound}
    print(f"  score {pairs:,} pairs both ways: `albert-lab score` {fmt(row['albert_lab_command_s'], '.1f')} s "
          f"(process start included; {precision}), loop {fmt(row['loop_s'], '.2f')} s (fp32), "
          f"ratio {fmt(row['ratio'], '.2f')}x; largest difference {diff:.1e}" + (f" (bound {bound:.1e})" if bound else ""),
          flush=True)
    return row


def time_analyses(work: Path, device: torch.device, smoke: bool, rounds: int) -> dict:
    from albert_lab.analysis.gradflow import gradient_flow
    from albert_lab.analysis.lens import logit_lens
    from albert_lab.analysis.oscillation import oscillation
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.tokenizer import load_tokenizer

    spec = PRESETS["albert-xxlarge"].replace(**(SMALL if smoke else {}))
    folder = save_random(spec, work / "albert-xxlarge-random")
    bundle = load_checkpoint(folder, device=device.type)
    words = word_list(load_tokenizer(MINILM))
    texts = [" ".join(sentences(words, 6, 10 + i, 4, 18)) for i in range(8)]
    runs = {"oscillation": lambda: oscillation(bundle, texts), "gradient_flow": lambda: gradient_flow(bundle, texts),
            "logit_lens": lambda: logit_lens(bundle, texts)}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(rounds + 1):  # the first round warms up (kernels, caches): not recorded
        for name, fn in runs.items():
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            if r:
                times[name].append(time.perf_counter() - start)
    row = {"model": f"ALBERT-xxlarge shape ({count(bundle.spec).total / 1e6:.0f}M parameters, random)",
           **{f"{k}_s": spread(v) for k, v in times.items()}}
    print(f"  {row['model']}: " + ", ".join(f"{k.replace('_', ' ')} {fmt(row[k + '_s'], '.2f')} s" for k in runs), flush=True)
    return row


# ---- output --------------------------------------------------------------------------------------
