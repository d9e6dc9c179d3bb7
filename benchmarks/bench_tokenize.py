"""Tokenising an upload for scoring: today's path against the one before, interleaved in one run.

The upload: a 5,000-row pairs file of about 4.9 MB (under the 5 MB limit), read by read_pairs as
the app reads it. Its cells are plain text from the built-in corpus (60%) and hostile text: digit-
comma runs ("1,2,3,..."), U+FDFA repeated (NFKD makes each one 18 characters), Hangul, stacked
combining marks, very long words and control characters (8% each). `--kind` makes every cell one kind.

Two release tokenizers, built from this repository's own files (no network): BERT's
(ReleaseBertTokenizer on checkpoints/bert-sop-minilm/vocab.txt, 30,522 WordPiece tokens) and
ALBERT's (ReleaseAlbertTokenizer on checkpoints/albert-sop/spiece.model).

- before: what score_pairs did until this change: the pairs through the tokenizer's Python path
  once to count their tokens, then every sentence again for A->B and again for B->A;
- now: analysis.pair_encoding.tokenize_segments (each sentence once, the release's fast path, in batches
  with a progress report between them) and analysis.pairs.both_orders.
Both give the same token counts, unknown shares and model inputs (checked here each round). For
reference, now's path with transformers' fast tokenizer of the same folder (whose ids differ from
the release's code on some text: the reason releases have their own).

They run in turn for several rounds, the order reversed every other round; the median [min-max] of
each and of the ratio before / now within a round are printed. Then before and now run once more,
each in a fresh process, for its peak memory (VmHWM less the process's size just before).

"now" starts cold each round (its tables of characters and words made again) unless --warm.

Run: .venv/bin/python benchmarks/bench_tokenize.py [--rounds 3] [--rows 5000] [--kind mixed] [--only NAME]
"""

from __future__ import annotations

import argparse
import csv
import io
import multiprocessing
import random
import statistics
import time
from functools import partial
from pathlib import Path

from transformers import AutoTokenizer

from albert_lab.analysis.pair_encoding import EncodedPairs, tokenize_segments, truncated_lengths
from albert_lab.analysis.pairs import both_orders, pair_columns, unknown_shares
from albert_lab.data.corpus import MAX_LEN, MAX_SEGMENT_CHARS, load_builtin
from albert_lab.data.pairs_file import read_pairs
from albert_lab.tokenizer import release_tokenizer

ROOT = Path(__file__).resolve().parent.parent
TOKENIZERS = {"BERT release": (ROOT / "checkpoints" / "bert-sop-minilm" / "vocab.txt", "bert"),
              "ALBERT release": (ROOT / "checkpoints" / "albert-sop" / "spiece.model", "albert")}
KINDS = {"plain": 0.6, "digits": 0.08, "fdfa": 0.08, "hangul": 0.08, "marks": 0.08, "long": 0.04, "control": 0.04}
CELL_BYTES = (170, 790)  # each cell's UTF-8 size, drawn uniformly: 10,000 cells make about 4.8 MB of text


def cell(kind: str, size: int, rng: random.Random, sentences: list[str]) -> str:
    """About `size` UTF-8 bytes of `kind`."""
    def fill(unit) -> str:
        text = ""
        while len(text.encode()) < size:
            text += unit()
        return text.encode()[:size].decode(errors="ignore")
    if kind == "plain":
        return fill(lambda: rng.choice(sentences) + " ")
    if kind == "digits":
        start = rng.randrange(1000)
        return ",".join(str(start + i) for i in range(size // 4))
    if kind == "fdfa":
        return "\ufdfa" * (size // 3)
    if kind == "hangul":
        return fill(lambda: rng.choice(["한국어 문장입니다. ", "서울은 한국의 수도입니다 ", "안녕하세요, 세계! "]))
    if kind == "marks":
        return fill(lambda: rng.choice("aeiouzxy") + "".join(chr(rng.randrange(0x300, 0x370)) for _ in range(rng.randrange(1, 9))))
    if kind == "long":
        return fill(lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.choice((60, 99, 150, 400)))) + " ")
    return fill(lambda: rng.choice(sentences)[:40] + rng.choice(["\x01", "\x08", "\x0b", "\x1f", "\x7f", "\x85", "\u200b",
                                                                 "\ufeff", "\t", "\u2028"]))


def upload(rows: int, kind: str, seed: int = 0) -> tuple[list[str], list[str], int]:
    """(A sides, B sides, the file's bytes) of a pairs file read as the app reads an upload."""
    rng = random.Random(seed)
    sentences = [s for d in load_builtin().train for s in d.segments][:20000]
    kinds = list(KINDS) if kind == "mixed" else [kind]
    weights = list(KINDS.values()) if kind == "mixed" else [1]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["sentence_a", "sentence_b"])
    for _ in range(rows):
        writer.writerow([cell(rng.choices(kinds, weights)[0], rng.randint(*CELL_BYTES), rng, sentences) for _ in "ab"])
    data = out.getvalue().encode()
    pairs = read_pairs(data, "upload.csv").pairs
    return list(pairs.sentence_a), list(pairs.sentence_b), len(data)


def before(tokenizer, a: list[str], b: list[str], length: int) -> tuple[list[int], list[float], list[list[int]]]:
    """score_pairs's tokenisation until this change: a counting pass of the pairs, then every sentence
    again for A->B and again for B->A, the rows as lists (the unknown shares by today's function)."""
    ids = tokenizer(a, b, truncation=False)["input_ids"]
    tokens, unknown = [len(i) for i in ids], unknown_shares(ids, tokenizer)
    first, second = (tokenizer([t[:MAX_SEGMENT_CHARS] for t in side], add_special_tokens=False)["input_ids"]
                     for side in (a + b, b + a))
    rows = []
    for x, y in zip(first, second):
        lx, ly = truncated_lengths(len(x), len(y), length - 3)
        rows.append([tokenizer.cls_token_id, *x[:lx], tokenizer.sep_token_id, *y[:ly], tokenizer.sep_token_id])
    return tokens, unknown, rows


def now(tokenizer, a: list[str], b: list[str], length: int, warm: bool = False) -> tuple[list[int], list[float], EncodedPairs]:
    """Today's: each sentence once (the release's fast path), both orders from its first ids."""
    if not warm:  # as a fresh server's first upload: the fast path's tables (characters, words) made again
        tokenizer.__dict__.pop("_albert_lab_fast", None)
    seg = tokenize_segments(tokenizer, a + b, length, progress=lambda f, words: None)
    tokens, unknown = pair_columns(seg)
    return list(tokens), unknown, both_orders(tokenizer, seg, length)


def same(old: tuple, new: tuple) -> bool:
    """Whether before's and now's tokens, unknown shares and rows are equal."""
    return old[:2] == new[:2] and old[2] == [row.tolist() for row in new[2].ids]


def peak_memory(path: str, name: str, a: list[str], b: list[str], queue) -> None:
    """In a fresh child process: the path's peak resident memory over the child's own before it, in MB
    (the tokenizer loaded, the upload received; the fast path's tables are made within)."""
    status = Path("/proc/self/status")

    def field(key: str) -> float:
        return next(int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith(key)) / 1024

    file, family = TOKENIZERS[name]
    tokenizer = release_tokenizer(file, family, True)
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from here
    start = field("VmRSS:")
    {"before": before, "now": now}[path](tokenizer, a, b, MAX_LEN)
    queue.put(field("VmHWM:") - start)


def spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--kind", choices=["mixed", *KINDS], default="mixed")
    parser.add_argument("--no-memory", action="store_true", help="skip the child processes that measure peak memory")
    parser.add_argument("--warm", action="store_true", help="keep the fast path's tables between rounds (cold by default)")
    parser.add_argument("--only", choices=list(TOKENIZERS), help="one tokenizer")
    args = parser.parse_args()
    a, b, size = upload(args.rows, args.kind)
    print(f"upload: {len(a):,} rows, {size / 1e6:.2f} MB ({args.kind}), {sum(map(len, a + b)) / 1e6:.2f} M characters; "
          f"{args.rounds} rounds, the order turned each round; median [min-max]")
    for name, (file, family) in TOKENIZERS.items():
        if args.only not in (None, name):
            continue
        tokenizer = release_tokenizer(file, family, True)
        stock = AutoTokenizer.from_pretrained(str(file.parent))  # transformers' fast tokenizer of the same folder
        paths = {"before": partial(before, tokenizer, a, b, MAX_LEN), "now": partial(now, tokenizer, a, b, MAX_LEN, args.warm),
                 "transformers' fast tokenizer, now's path": partial(now, stock, a, b, MAX_LEN)}
        times: dict[str, list[float]] = {path: [] for path in paths}
        for r in range(args.rounds):
            results = {}
            for path in (list(paths) if r % 2 == 0 else list(paths)[::-1]):
                start = time.perf_counter()
                results[path] = paths[path]()
                times[path].append(time.perf_counter() - start)
            assert same(results["before"], results["now"]), f"{name}: the two paths differ"
        ratios = [x / y for x, y in zip(times["before"], times["now"])]
        print(f"{name}: before {spread(times['before'], '.2f')} s, now {spread(times['now'], '.2f')} s, "
              f"before / now {spread(ratios, '.1f')}x (the same tokens, unknown shares and model inputs); "
              f"transformers' fast tokenizer (other ids on some text) {spread(times[list(paths)[2]], '.2f')} s")
        if not args.no_memory:
            context = multiprocessing.get_context("spawn")  # a fresh interpreter: no free memory of the rounds to reuse
            for path in ("before", "now"):
                queue = context.Queue()
                child = context.Process(target=peak_memory, args=(path, name, a, b, queue))
                child.start()
                print(f"  peak memory, {path}: {queue.get():.0f} MB over the process's before it")
                child.join()


if __name__ == "__main__":
    main()
