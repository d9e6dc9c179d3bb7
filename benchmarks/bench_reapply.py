"""Latency of the "shared block applied again" analyses on an albert-base-sized model.

ALBERT-base (H=768, L=12, E=128, all-shared) and BERT-base-sized (for the across-model
analyses), random init, the shipped SentencePiece vocabulary; 8 held-out texts of 128
tokens each. Prints seconds per analysis (target < 3 s each) and the same as a multiple
of the plain transformers forward passes it needs (extrapolation at k = 1, 2 and 4: k x L
applications cost k forward passes), so that a machine busy with other work, which slows
the forward passes too, can be told apart from overhead of the analyses.

Threads: 1 by default, as the app runs while a training run holds the cores. On this
2-core machine shared with a training run, 2 threads were measured 2x slower for the plain
forward (2.97 s vs 1.51 s) and 100x slower for a torch.stack of 49 slices (3.1 s vs 0.03 s):
each parallel region waits for a thread the OS has descheduled.

Run: .venv/bin/python benchmarks/bench_reapply.py [--threads N] [--dtype float32|bfloat16 ...]
"""

from __future__ import annotations

import argparse
import time

import torch

from albert_lab.analysis.attention import attention_entropy, attention_maps
from albert_lab.analysis.cka import layer_cka
from albert_lab.analysis.extrapolation import extrapolate
from albert_lab.analysis.lens import lens_predictions, logit_lens
from albert_lab.checkpoint.heads import HeadStatus
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.samples import sample_texts
from albert_lab.kernels import tune_for_inference
from albert_lab.models import build_model
from albert_lab.paths import PROJECT_ROOT
from albert_lab.spec import PRESETS
from albert_lab.tokenizer import load_tokenizer


def bundle(preset: str, tokenizer, dtype: torch.dtype) -> ModelBundle:
    spec = PRESETS[preset].replace(vocab_size=len(tokenizer), max_positions=512)
    model = tune_for_inference(build_model(spec, seed=0).eval()).to(dtype)
    heads = HeadStatus(mlm="trained", pair="untrained", pair_kind="sop" if spec.family == "albert" else "nsp")
    return ModelBundle(name=preset, source="random", model=model, tokenizer=tokenizer, spec=spec, heads=heads, dtype=dtype)


def texts_of_128_tokens(tokenizer, n: int = 8) -> list[str]:
    """n texts that fill 128 tokens (held-out lead sections, joined until long enough)."""
    pool, out, current = sample_texts(64), [], ""
    for text in pool:
        current = f"{current} {text}".strip()
        if len(tokenizer(current)["input_ids"]) >= 128:
            out.append(current)
            current = ""
        if len(out) == n:
            return out
    raise SystemExit("not enough held-out text")


def forward_seconds(bundle: ModelBundle, texts: list[str]) -> float:
    """The plain transformers encoder forward on the same inputs (best of 2): the floor
    every analysis stands on, so a busy machine shows up here as well."""
    enc = bundle.tokenizer(texts, truncation=True, max_length=128, padding=True, return_token_type_ids=True,
                           return_tensors="pt")
    encoder = bundle.model.albert if bundle.spec.family == "albert" else bundle.model.bert
    best = float("inf")
    with torch.inference_mode():
        for _ in range(2):
            start = time.perf_counter()
            encoder(**enc)
            best = min(best, time.perf_counter() - start)
    return best


def timed(label: str, run, floor: float) -> None:
    """Seconds, and the same in plain forward passes' worth (what the analysis needs at least)."""
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    print(f"{label:<52} {seconds:6.2f} s  {'ok' if seconds < 3 else 'over 3 s'}  "
          f"({seconds / floor:4.2f} x its plain forward passes; {len(result):,} rows)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1; see above)")
    parser.add_argument("--dtype", action="append", choices=["float32", "bfloat16"],
                        help="weights' precision, as the app's Precision setting loads them (default: both)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = load_tokenizer(PROJECT_ROOT / "checkpoints" / "albert-sop")
    for name in args.dtype or ["float32", "bfloat16"]:
        run(tokenizer, name, args.threads)


def run(tokenizer, dtype_name: str, threads: int) -> None:
    dtype = getattr(torch, dtype_name)
    albert, bert = bundle("albert-base", tokenizer, dtype), bundle("bert-base", tokenizer, dtype)
    texts = texts_of_128_tokens(tokenizer)
    enc = tokenizer(texts, truncation=True, max_length=128, padding=True)
    print(f"albert-base and bert-base, random init, V = {len(tokenizer)}, {len(texts)} x "
          f"{len(enc['input_ids'][0])} tokens, {threads} threads, {dtype_name}")
    extrapolate(albert, texts[:1], repeat=1)  # warm-up: first-call allocations and kernel choices
    fa, fb = forward_seconds(albert, texts), forward_seconds(bert, texts)
    one_a, one_b = forward_seconds(albert, texts[:1]), forward_seconds(bert, texts[:1])
    print(f"plain transformers forward, 8 x 128: albert-base {fa:.2f} s, bert-base {fb:.2f} s; one text: "
          f"{one_a:.2f} s, {one_b:.2f} s")
    for k in (1, 2, 4):
        timed(f"extrapolate albert-base, k = {k} ({12 * k} applications)", lambda k=k: extrapolate(albert, texts, repeat=k),
              k * fa)
    timed("logit lens, albert-base + bert-base", lambda: logit_lens([albert, bert], texts), fa + fb)
    timed("lens top-5 of one token, albert-base + bert-base", lambda: lens_predictions([albert, bert], texts[0]), one_a + one_b)
    timed("attention maps (one text), albert-base", lambda: attention_maps(albert, texts[0]), one_a)
    timed("attention entropy, albert-base", lambda: attention_entropy(albert, texts), fa)
    timed("CKA within albert-base", lambda: layer_cka(albert, texts), fa)
    timed("CKA albert-base vs bert-base", lambda: layer_cka(albert, texts, bert), fa + fb)


if __name__ == "__main__":
    main()
